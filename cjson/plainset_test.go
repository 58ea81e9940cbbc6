package cjson

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestAppendPlainSetIsTheEncoders holds AppendPlainSet to Marshal's set
// ordering: for drawn strings (prefixes of each other, bytes around the
// quote, repeats, some needing escape) it writes what Marshal writes for a
// set member, refuses exactly the sets with a repeat or an element that is
// not plain, and leaves its argument's order alone.
func TestAppendPlainSetIsTheEncoders(t *testing.T) {
	elem := rapid.SampledFrom([]string{"", "a", "a!", "a#", "a\"", "ab", "b", "sha256:00", "sha256:0", "é", "a\n", "z", "A", "a b"})
	rapid.Check(t, func(rt *rapid.T) {
		ss := rapid.SliceOfN(elem, 0, 9).Draw(rt, "set")
		before := slices.Clone(ss)
		got, ok := AppendPlainSet([]byte("x"), ss)
		if !slices.Equal(ss, before) {
			rt.Fatalf("the argument was reordered: %q, was %q", ss, before)
		}
		plain, dup := true, false
		for i, s := range ss {
			plain = plain && Plain(s)
			dup = dup || slices.Contains(ss[:i], s)
		}
		if ok != (plain && !dup) {
			rt.Fatalf("AppendPlainSet(%q) ok=%v; plain=%v repeat=%v", ss, ok, plain, dup)
		}
		if !ok {
			return
		}
		want, err := Marshal(map[string]any{"kind": "ActionReceipt", "output_digests": ss})
		if err != nil {
			rt.Fatalf("Marshal refused a set AppendPlainSet took: %v", err)
		}
		if w := `{"kind":"ActionReceipt","output_digests":` + string(got[1:]) + `}`; w != string(want) {
			rt.Fatalf("AppendPlainSet(%q) = %s; Marshal wrote %s", ss, got[1:], want)
		}
	})
}
