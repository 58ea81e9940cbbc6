package cjson

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// validDigestBytewise is ValidDigest's definition, byte by byte.
func validDigestBytewise(s string) bool {
	if len(s) != 7+64 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TestValidDigestIsBytewise holds the word-at-a-time digest check to the
// byte-by-byte one: every byte value at every position of a digest
// otherwise valid, and drawn strings around the limits.
func TestValidDigestIsBytewise(t *testing.T) {
	valid := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for pos := 0; pos < len(valid); pos++ {
		for c := 0; c < 256; c++ {
			s := valid[:pos] + string([]byte{byte(c)}) + valid[pos+1:]
			if got, want := ValidDigest(s), validDigestBytewise(s); got != want {
				t.Fatalf("ValidDigest(%q) = %v", s, got)
			}
		}
	}
	limits := []byte{'/', '0', '9', ':', '`', 'a', 'f', 'g', 'A', 'F', 0x00, 0x7f, 0x80, 0xb0, 0xe1, 0xff}
	rapid.Check(t, func(rt *rapid.T) {
		tail := rapid.SliceOfN(rapid.SampledFrom(limits), 64, 64).Draw(rt, "tail")
		s := "sha256:" + string(tail)
		if got, want := ValidDigest(s), validDigestBytewise(s); got != want {
			rt.Fatalf("ValidDigest(%q) = %v", s, got)
		}
	})
}
