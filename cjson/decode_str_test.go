package cjson

import (
	"testing"

	"pgregory.net/rapid"
)

// TestStrFastPathMatchesSlow holds the decoder's one-copy string path to
// the byte-by-byte one: same value, same error, same position after, on
// literals drawn from bytes that hit every branch (quotes, backslashes,
// control bytes, multi-byte and broken UTF-8, surrogate escapes).
func TestStrFastPathMatchesSlow(t *testing.T) {
	pieces := []string{"a", "Z", " ", "\"", "\\", "\\\"", "\\n", "\\u00e9", "\\ud800", "\\ud83d\\ude00", "\x01", "\x1f",
		"é", "e\u0301", "東", "\xff", "\xed\xa0\x80", "\xe2\x82", "\U0001F600", "\\x", "\\u12"}
	rapid.Check(t, func(t *rapid.T) {
		var src []byte
		src = append(src, '"')
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 8).Draw(t, "pieces") {
			src = append(src, p...)
		}
		if rapid.IntRange(0, 4).Draw(t, "open") != 0 {
			src = append(src, '"')
		}
		src = append(src, rapid.SampledFrom([]string{"", ",", " }"}).Draw(t, "tail")...)
		fast, slow := decoder{src: src}, decoder{src: src}
		fs, ferr := fast.str(at{base: "/p"})
		ss, serr := slow.strSlow(at{base: "/p"})
		if fs != ss || fast.pos != slow.pos || (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
			t.Fatalf("%q: fast %q %v at %d, slow %q %v at %d", src, fs, ferr, fast.pos, ss, serr, slow.pos)
		}
		v1, e1 := Decode(src)
		if e1 == nil {
			if s, ok := v1.(string); !ok || s != ss {
				t.Fatalf("%q: Decode %#v, slow %q", src, v1, ss)
			}
		}
	})
}
