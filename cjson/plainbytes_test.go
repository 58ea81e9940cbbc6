package cjson

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestValidDigestBytesIsValidDigest holds ValidDigestBytes to
// ValidDigest: every byte value at every position of a valid digest, and
// lengths around it.
func TestValidDigestBytesIsValidDigest(t *testing.T) {
	valid := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for pos := 0; pos < len(valid); pos++ {
		for c := 0; c < 256; c++ {
			s := valid[:pos] + string([]byte{byte(c)}) + valid[pos+1:]
			if got, want := ValidDigestBytes([]byte(s)), ValidDigest(s); got != want {
				t.Fatalf("ValidDigestBytes(%q) = %v", s, got)
			}
		}
	}
	for _, s := range []string{"", "sha256:", valid[:len(valid)-1], valid + "0", "SHA256:" + valid[7:]} {
		if got, want := ValidDigestBytes([]byte(s)), ValidDigest(s); got != want {
			t.Fatalf("ValidDigestBytes(%q) = %v", s, got)
		}
	}
}

// PlainEnd finds the first byte that is not plain as a byte-by-byte scan
// does: every byte value at every position of words and their tails, from
// every start, and drawn texts.
func TestPlainEndIsBytewise(t *testing.T) {
	bytewise := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if c := b[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return i
			}
		}
		return i
	}
	base := []byte("abcdefghijklmnopqrstu")
	for pos := range base {
		for c := 0; c < 256; c++ {
			b := slices.Clone(base)
			b[pos] = byte(c)
			for start := 0; start <= len(b); start++ {
				if got, want := PlainEnd(b, start), bytewise(b, start); got != want {
					t.Fatalf("PlainEnd(%q, %d) = %d, want %d", b, start, got, want)
				}
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.SampledFrom([]byte{'a', '"', '\\', 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff, 0})).Draw(t, "text")
		start := rapid.IntRange(0, len(b)).Draw(t, "start")
		if got, want := PlainEnd(b, start), bytewise(b, start); got != want {
			t.Fatalf("PlainEnd(%q, %d) = %d, want %d", b, start, got, want)
		}
	})
}
