package cjson

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// quotedBytes is the byte-at-a-time definition of AppendQuoted: every byte
// below 0x20, '"' and '\\' escaped (the short forms where JSON has them),
// everything else copied; ascii says whether no byte is 0x80 or above.
func quotedBytes(dst []byte, s string) ([]byte, bool) {
	dst = append(dst, '"')
	ascii := true
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
			if c >= utf8.RuneSelf {
				ascii = false
			}
			dst = append(dst, c)
		}
	}
	return append(dst, '"'), ascii
}

// scanString draws strings that the word tests meet at every offset: long
// plain runs with one byte of each kind the scan must catch (a control
// byte, '"', '\\', DEL, a byte above 0x7f, the bytes next to the limits)
// placed anywhere, at lengths around the word and pair boundaries.
var scanString = rapid.Custom(func(t *rapid.T) string {
	n := rapid.IntRange(0, 80).Draw(t, "n")
	b := []byte(strings.Repeat("a", n))
	for i := range b {
		b[i] = byte(rapid.IntRange(0x20, 0x7e).Draw(t, "plain"))
		if b[i] == '"' || b[i] == '\\' {
			b[i] = 'z'
		}
	}
	for k := rapid.IntRange(0, 3).Draw(t, "odd"); k > 0 && n > 0; k-- {
		at := rapid.IntRange(0, n-1).Draw(t, "at")
		b[at] = rapid.SampledFrom([]byte{0, 0x1f, '"', '\\', 0x7f, 0x80, 0xc3, 0xff, '\n', 0x20, 0x7e, '!', '#', '[', ']'}).Draw(t, "byte")
	}
	return string(b)
})

func TestPlainIsPlainBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := scanString.Draw(t, "s")
		if got, want := Plain(s), plainBytes(s); got != want {
			t.Fatalf("Plain(%q) = %v, byte by byte %v", s, got, want)
		}
	})
}

func TestAppendQuotedIsByteByByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := scanString.Draw(t, "s")
		prefix := []byte(rapid.StringN(0, 3, -1).Draw(t, "prefix"))
		got, gotASCII := AppendQuoted(append([]byte(nil), prefix...), s)
		want, wantASCII := quotedBytes(append([]byte(nil), prefix...), s)
		if string(got) != string(want) || gotASCII != wantASCII {
			t.Fatalf("AppendQuoted(%q) = %q %v, byte by byte %q %v", s, got, gotASCII, want, wantASCII)
		}
	})
}

func FuzzStringScans(f *testing.F) {
	for _, s := range []string{"", "a", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "sixteen bytes!!!", "fifteen bytes!!", "seventeen bytes!!", "a\"b", "tab\there", "caf\u00e9 au lait, sixteen+", strings.Repeat("x", 31) + "\x7f", strings.Repeat("y", 33) + "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Plain(s), plainBytes(s); got != want {
			t.Fatalf("Plain(%q) = %v, byte by byte %v", s, got, want)
		}
		got, gotASCII := AppendQuoted(nil, s)
		want, wantASCII := quotedBytes(nil, s)
		if string(got) != string(want) || gotASCII != wantASCII {
			t.Fatalf("AppendQuoted(%q) = %q %v, byte by byte %q %v", s, got, gotASCII, want, wantASCII)
		}
	})
}

// scanInputs are the strings a decision's records are mostly made of:
// a digest, an id, a short symbol and a sentence.
var scanInputs = []string{
	"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	"ticket:refund-agent:run-17:1",
	"refund",
	"Refund 42.00 EUR to payee-3 for order r-17: the item arrived damaged.",
}

var scanSink int

func BenchmarkPlain(b *testing.B) {
	for b.Loop() {
		for _, s := range scanInputs {
			if Plain(s) {
				scanSink++
			}
		}
	}
}

func BenchmarkAppendQuoted(b *testing.B) {
	buf := make([]byte, 0, 256)
	for b.Loop() {
		for _, s := range scanInputs {
			buf, _ = AppendQuoted(buf[:0], s)
		}
	}
	scanSink += len(buf)
}
