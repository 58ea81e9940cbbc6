package logic

import (
	"testing"

	"pgregory.net/rapid"
)

// plainPrefix stops at or before the first control byte, quote or
// backslash, at a multiple of eight, and passes every whole word before
// such a byte; appendSym's bytes are the byte-by-byte quoting's.
func TestPlainPrefixIsTheByteScan(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.OneOf(rapid.RuneFrom([]rune("ab09:-_.\"\\\n\t\r\x00\x1f é")), rapid.Rune())).Draw(t, "s")
		first := len(s)
		for k := 0; k < len(s); k++ {
			if special(s[k]) {
				first = k
				break
			}
		}
		if got, want := plainPrefix(s), first/8*8; got != want {
			t.Fatalf("plainPrefix(%q) = %d, want %d", s, got, want)
		}
		want := []byte{'"'}
		for k := 0; k < len(s); k++ {
			switch c := s[k]; c {
			case '"', '\\':
				want = append(want, '\\', c)
			case '\n':
				want = append(want, `\n`...)
			case '\t':
				want = append(want, `\t`...)
			case '\r':
				want = append(want, `\r`...)
			default:
				want = append(want, c)
			}
		}
		want = append(want, '"')
		if got := appendSym(nil, s); string(got) != string(want) {
			t.Fatalf("appendSym(%q) = %s, want %s", s, got, want)
		}
	})
}
