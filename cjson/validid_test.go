package cjson

import (
	"testing"

	"pgregory.net/rapid"
)

// validIDSlow is the identifier rule as first written:
// ^[A-Za-z0-9][A-Za-z0-9._:/-]*$, at most MaxIDLength bytes.
func validIDSlow(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && c != '.' && c != '_' && c != ':' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

// ValidID's table agrees with the rule for every byte in every position
// and for drawn identifiers of every length around the limit.
func TestValidIDIsTheRule(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "v" + string([]byte{byte(c)}), "v" + string([]byte{byte(c)}) + "1"} {
			if ValidID(s) != validIDSlow(s) {
				t.Fatalf("%q: %v, the rule says %v", s, ValidID(s), validIDSlow(s))
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("aZ09._:+/-@ é\x00")), 0, 130, -1).Draw(rt, "s")
		if ValidID(s) != validIDSlow(s) {
			rt.Fatalf("%q: %v, the rule says %v", s, ValidID(s), validIDSlow(s))
		}
	})
}
