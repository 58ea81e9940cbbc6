package logic

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// validIDByRanges is validID as it was written before the byte classes
// were read from a table: each byte compared with the ranges.
func validIDByRanges(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if i == 0 && !alnum {
			return false
		}
		if !alnum && c != '.' && c != '_' && c != ':' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

// validID answers as the range comparisons do for every byte first and
// second, at every length around the limit, and for drawn strings.
func TestValidIDIsByRanges(t *testing.T) {
	for a := range 256 {
		for _, s := range []string{string([]byte{byte(a)}), "a" + string([]byte{byte(a)}), string([]byte{byte(a)}) + "a"} {
			if got, want := validID(s), validIDByRanges(s); got != want {
				t.Fatalf("validID(%q) = %v, want %v", s, got, want)
			}
		}
	}
	for n := 0; n <= 130; n++ {
		s := strings.Repeat("a", n)
		if got, want := validID(s), validIDByRanges(s); got != want {
			t.Fatalf("validID of %d letters = %v, want %v", n, got, want)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`[A-Za-z0-9._:/\-+ é]{0,140}`)).Draw(rt, "s")
		if got, want := validID(s), validIDByRanges(s); got != want {
			rt.Fatalf("validID(%q) = %v, want %v", s, got, want)
		}
	})
}
