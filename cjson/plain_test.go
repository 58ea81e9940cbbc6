package cjson

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// nearBytes are the bytes at every boundary the word tests draw: control
// characters, the quote, the backslash, DEL, and the first non-ASCII bytes.
var nearBytes = []byte{0x00, 0x01, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x1f, 0x20, 0x21, '"', 0x23, '0', ':', '\\', 'a', 0x7e, 0x7f, 0x80, 0xc3, 0xff}

// mostlyPlain draws a string of plain bytes with up to four odd ones
// anywhere, so every word test meets a lone odd byte in an otherwise
// plain word, the tail included.
func mostlyPlain(t *rapid.T) string {
	b := rapid.SliceOfN(rapid.SampledFrom([]byte("abcxyz019:-/ ")), 0, 80).Draw(t, "base")
	for i := rapid.IntRange(0, 4).Draw(t, "odd"); i > 0 && len(b) > 0; i-- {
		b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] = rapid.SampledFrom(nearBytes).Draw(t, "byte")
	}
	return string(b)
}

// appendStringBytewise is AppendString's definition, one byte at a time.
func appendStringBytewise(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func TestPlainMatchesBytewise(t *testing.T) {
	for _, s := range []string{"", "a", "sha256:" + strings.Repeat("0", 64), "abcdefgh", "abcdefg\"", "abcdefg\\",
		"abc\x7fdefg", "abcdefgh\x1f", "\x80bcdefgh", "~~~~~~~~~", "        "} {
		if Plain(s) != plainBytes(s) {
			t.Errorf("Plain(%q) = %v", s, Plain(s))
		}
	}
	for _, gen := range []*rapid.Generator[string]{rapid.Custom(mostlyPlain), rapid.String(),
		rapid.Custom(func(t *rapid.T) string {
			return string(rapid.SliceOfN(rapid.SampledFrom(nearBytes), 0, 80).Draw(t, "s"))
		})} {
		rapid.Check(t, func(t *rapid.T) {
			if s := gen.Draw(t, "s"); Plain(s) != plainBytes(s) {
				t.Fatalf("Plain(%q) = %v, bytewise %v", s, Plain(s), plainBytes(s))
			}
		})
	}
}

// TestAppendQuotedMatchesBytewise holds the word-at-a-time writer to the
// byte-at-a-time definition, and a plain string to its verbatim form.
func TestAppendQuotedMatchesBytewise(t *testing.T) {
	check := func(t *rapid.T, s string) {
		got, ascii := AppendQuoted([]byte("x"), s)
		if want := appendStringBytewise([]byte("x"), s); string(got) != string(want) {
			t.Fatalf("AppendQuoted(%q) = %q, want %q", s, got, want)
		}
		if ascii != isASCII(s) {
			t.Fatalf("AppendQuoted(%q) reports ascii %v", s, ascii)
		}
		if Plain(s) && string(got) != `x"`+s+`"` {
			t.Fatalf("plain %q written as %q", s, got)
		}
		if utf8.ValidString(s) && CheckString(s, "") == nil {
			enc, err := Encode(s)
			if err != nil || string(enc) != string(got[1:]) {
				t.Fatalf("Encode(%q) = %q, %v; AppendQuoted wrote %q", s, enc, err, got[1:])
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) { check(t, mostlyPlain(t)) })
	rapid.Check(t, func(t *rapid.T) { check(t, rapid.String().Draw(t, "s")) })
}

func BenchmarkAppendStringDigest(b *testing.B) {
	s := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	buf := make([]byte, 0, 128)
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}

// asciiString, a word at a time, is isASCII.
func TestASCIIStringMatchesBytewise(t *testing.T) {
	for _, gen := range []*rapid.Generator[string]{rapid.Custom(mostlyPlain), rapid.String()} {
		rapid.Check(t, func(t *rapid.T) {
			if s := gen.Draw(t, "s"); asciiString(s) != isASCII(s) {
				t.Fatalf("asciiString(%q) = %v", s, asciiString(s))
			}
		})
	}
}
