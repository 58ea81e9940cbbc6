package cjson

import (
	"bytes"
	"testing"
)

// IsCanonical says yes exactly when Canonicalize returns the text itself.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, `{"b":1,"a":2}`, `{"a":1,"a":1}`, `{ "a":1}`, `[1,2]`, `"x"`, `-0`, `0`, `01`, `1.5`, `1e3`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`, `12345678901234567890`,
		`"a\nb"`, `"a\u000ab"`, `"a\u001fb"`, `"a\u001Fb"`, `"\/"`, `"/"`, `"\u0041"`, `"\""`, `"\\"`, `"é"`, "\"e\u0301\"", "\"\xff\"",
		`{"é":1}`, `{"kind":"EffectIntent","preconditions":["b","a"]}`, `{"kind":"EffectIntent","preconditions":["a","b"]}`,
		`{"kind":"EffectIntent","preconditions":["a","a"]}`, `{"kind":"input","preconditions":["b","a"]}`, `{"kind":1}`,
		`{"a":{"kind":"EffectIntent","preconditions":["b","a"]}}`, "\xef\xbb\xbf{}", `{}`, `[]`, ``, `tru`, `{"a":1}x`, "\"\\n\u0301\"",
		`{"a\"b":1,"a\\b":2}`, `{"a\nb":1}`,
		// Strings longer than a word, whose first byte that is not plain
		// (a DEL, an escape, a control character, UTF-8, the end of the
		// text) comes after runs of plain ones.
		"\"sixteen bytes!!!\x7f and after\"", `"sixteen bytes!!!\n"`, `"sixteen bytes!!!\u0001x"`, "\"sixteen bytes!!!\x01\"",
		`"sixteen bytes!!!é and more"`, "\"sixteen bytes!!!e\u0301\"", `{"a long key name":"a long value here"}`, `"unterminated long string`,
		`{"key":"sixteen bytes!!!\/"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Canonicalize(b)
		want := err == nil && bytes.Equal(out, b)
		if got := IsCanonical(b); got != want {
			t.Fatalf("IsCanonical(%q) = %v; Canonicalize gives %q, %v", b, got, out, err)
		}
	})
}

// Nesting deeper than MaxDepth is refused as Canonicalize refuses it.
func TestIsCanonicalDepth(t *testing.T) {
	for _, n := range []int{MaxDepth - 1, MaxDepth, MaxDepth + 1} {
		b := append(bytes.Repeat([]byte("["), n), bytes.Repeat([]byte("]"), n)...)
		out, err := Canonicalize(b)
		if want := err == nil && bytes.Equal(out, b); IsCanonical(b) != want {
			t.Fatalf("depth %d: IsCanonical %v, Canonicalize %v", n, !want, want)
		}
	}
}

// IsCanonical reads a root object's kind in place: a canonical text with
// a kind (every accepted input's record, every receipt) is checked
// without an allocation.
func TestIsCanonicalOfAKindAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	b := []byte(`{"a":1,"body":{"x":"y"},"kind":"input","z":[1,2]}`)
	if !IsCanonical(b) {
		t.Fatal("not canonical")
	}
	if n := testing.AllocsPerRun(100, func() { IsCanonical(b) }); n != 0 {
		t.Fatalf("%v allocations a check", n)
	}
}
