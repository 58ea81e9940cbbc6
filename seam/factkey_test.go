package seam

import (
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// TestFactKeyArrayIsTheDigest holds the fact key kept as an array to the
// digest of the atom's M2FactKeyPreimage as a string, and its quoted
// bytes in an evidence row to cjson's encoding of that string.
func TestFactKeyArrayIsTheDigest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var args []any
		for _, a := range rapid.SliceOfN(rapid.OneOf(
			rapid.Map(rapid.StringMatching(`[a-z0-9:-]{0,20}`), func(s string) any { return s }),
			rapid.Map(rapid.Int64(), func(n int64) any { return n })), 0, 4).Draw(rt, "args") {
			args = append(args, a)
		}
		atom, err := AtomOfFact(rapid.StringMatching(`[a-z_]{1,12}`).Draw(rt, "predicate"), args)
		if err != nil {
			rt.Skip()
		}
		want := cjson.DigestWritten(func(b []byte) []byte {
			b = append(b, `{"atom":`...)
			b = append(b, atom.canon...)
			b = append(b, `,"contract_version":`...)
			b = cjson.AppendString(b, LContractVersion)
			return append(b, `,"kind":"M2FactKeyPreimage"}`...)
		})
		var k factKey
		atom.factKeyInto(&k)
		if string(k[:]) != want || atom.FactKey() != want {
			rt.Fatalf("fact key %s (%s), want %s", k[:], atom.FactKey(), want)
		}
		row := append(append(append([]byte(nil), '"'), k[:]...), '"')
		if string(row) != string(cjson.AppendChecked(nil, want)) {
			rt.Fatalf("quoted %s, want %s", row, cjson.AppendChecked(nil, want))
		}
	})
}
