package workflow

import (
	"bytes"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// appendChecked writes AppendString's bytes and reports exactly what
// CheckString reports, over strings of ASCII (control bytes and quotes
// included), non-ASCII runes, decomposed accents (not NFC) and bytes that
// are not UTF-8, after a prefix it must leave as it is.
func TestAppendCheckedIsCheckThenAppend(t *testing.T) {
	pieces := []string{"a", "id:1", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "e\u0301", "\u00e9\u0301", "\xff", "\xc3", "日本", "\U0001F600", "                "}
	rapid.Check(t, func(t *rapid.T) {
		var s string
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 12).Draw(t, "pieces") {
			s += p
		}
		if rapid.Bool().Draw(t, "any") {
			s = rapid.String().Draw(t, "s")
		}
		prefix := []byte(rapid.SampledFrom([]string{"", "{\"k\":", "[1,"}).Draw(t, "prefix"))
		got, ok := appendChecked(append([]byte(nil), prefix...), s)
		want := cjson.AppendString(append([]byte(nil), prefix...), s)
		if !bytes.Equal(got, want) || ok != (cjson.CheckString(s, "") == nil) {
			t.Fatalf("%q: appended %q (%v), want %q (%v)", s, got, ok, want, cjson.CheckString(s, ""))
		}
	})
}
