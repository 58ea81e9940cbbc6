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

// plainMaskExact is the exact "some byte" form plainMask was written as
// before it dropped the terms that only clear false positives: the high
// bit of a byte is set exactly where that byte is not plain.
func plainMaskExact(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := (x - lo*0x20) &^ x
	above := (x + lo) | x
	q := x ^ (lo * '"')
	bs := x ^ (lo * '\\')
	quote := (q - lo) &^ q
	slash := (bs - lo) &^ bs
	return (below | above | quote | slash) & hi
}

// wordBytes are the bytes around each limit plainMask tests, and a few
// plain ones: every word made of them meets the borrows and carries the
// dropped terms used to clear.
var wordBytes = []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', 0x23, 0x5b, '\\', 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0x9f, 0xa0, 0xa2, 0xdc, 0xdf, 0xe0, 0xfe, 0xff, 'a', '0'}

func TestPlainMaskIsExact(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, b []byte) {
		x := uint64(0)
		for i := 7; i >= 0; i-- {
			x = x<<8 | uint64(b[i])
		}
		if got, want := plainMask(x) == 0, plainBytes(string(b)); got != want {
			t.Fatalf("plainMask(%#x) == 0 is %v, byte by byte %v", x, got, want)
		}
		if got, want := plainMask(x) == 0, plainMaskExact(x) == 0; got != want {
			t.Fatalf("plainMask(%#x) == 0 is %v, the exact form %v", x, got, want)
		}
	}
	// Every pair of limit bytes at every pair of positions in a plain word.
	for i := range 8 {
		for j := i; j < 8; j++ {
			for _, a := range wordBytes {
				for _, c := range wordBytes {
					b := []byte("abcdefgh")
					b[i], b[j] = a, c
					check(t, b)
				}
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		b := make([]byte, 8)
		for i := range b {
			if rapid.Bool().Draw(rt, "limit") {
				b[i] = rapid.SampledFrom(wordBytes).Draw(rt, "byte")
			} else {
				b[i] = rapid.Byte().Draw(rt, "byte")
			}
		}
		check(rt, b)
	})
}

// TestShortStringsArePlainBytes runs every string of one to seven bytes
// drawn from the limit bytes at each length through Plain and
// AppendQuoted: the four-to-seven-byte ones are tested as one word of
// their first and last four bytes.
func TestShortStringsArePlainBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.SampledFrom(wordBytes), 0, 7).Draw(t, "b")
		s := string(b)
		if got, want := Plain(s), plainBytes(s); got != want {
			t.Fatalf("Plain(%q) = %v, byte by byte %v", s, got, want)
		}
		got, gotASCII := AppendQuoted([]byte("x"), s)
		want, wantASCII := quotedBytes([]byte("x"), s)
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

// denseString draws strings in which bytes to escape, or above 0x7f, sit
// in most words, at any distance apart: an atom's text, a JSON text held
// as a string, UTF-8 between plain runs.
var denseString = rapid.Custom(func(t *rapid.T) string {
	parts := rapid.SliceOfN(rapid.SampledFrom([]string{
		"a", "refund", "r-17", "payee-3", "0123456789abcdef", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f",
		"é", "€", "\xff", "(", ",", ")", "{", ":",
	}), 0, 40).Draw(t, "parts")
	return strings.Join(parts, "")
})

func TestAppendQuotedDenseIsByteByByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := denseString.Draw(t, "s")
		prefix := []byte(rapid.StringN(0, 3, -1).Draw(t, "prefix"))
		got, gotASCII := AppendQuoted(append([]byte(nil), prefix...), s)
		want, wantASCII := quotedBytes(append([]byte(nil), prefix...), s)
		if string(got) != string(want) || gotASCII != wantASCII {
			t.Fatalf("AppendQuoted(%q) = %q %v, byte by byte %q %v", s, got, gotASCII, want, wantASCII)
		}
	})
}

// quotedInputs are strings AppendQuoted escapes in: an atom's text, as a
// state's supports and a decision's notes hold it, and a JSON text held
// as a string.
var quotedInputs = []string{
	`refund_requested("r-17",42,"payee-3")`,
	`{"amount":42,"payee":"payee-3","reason":"damaged item","refund_id":"r-17"}`,
}

func BenchmarkAppendQuotedEscaped(b *testing.B) {
	buf := make([]byte, 0, 256)
	for b.Loop() {
		for _, s := range quotedInputs {
			buf, _ = AppendQuoted(buf[:0], s)
		}
	}
	scanSink += len(buf)
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
