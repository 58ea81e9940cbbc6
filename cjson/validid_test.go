package cjson

import (
	"testing"

	"pgregory.net/rapid"
)

// validIDSlow is the identifier rule as first written:
// ^[A-Za-z0-9][A-Za-z0-9._:/-]*$, at most MaxIDLength bytes; with plus,
// the version rule, which also admits '+' after the first byte.
func validIDSlow(s string, plus bool) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && c != '.' && c != '_' && c != ':' && c != '/' && c != '-' && (!plus || c != '+') {
			return false
		}
	}
	return true
}

// ValidID's and ValidVersion's table agrees with each rule for every byte
// in every position and for drawn strings of every length around the
// limit.
func TestValidIDAndVersionAreTheRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		valid func(string) bool
		plus  bool
	}{{"ValidID", ValidID, false}, {"ValidVersion", ValidVersion, true}} {
		t.Run(c.name, func(t *testing.T) {
			for b := range 256 {
				for _, s := range []string{string([]byte{byte(b)}), "v" + string([]byte{byte(b)}), "v" + string([]byte{byte(b)}) + "1"} {
					if c.valid(s) != validIDSlow(s, c.plus) {
						t.Fatalf("%q: %v, the rule says %v", s, c.valid(s), validIDSlow(s, c.plus))
					}
				}
			}
			rapid.Check(t, func(rt *rapid.T) {
				s := rapid.StringOfN(rapid.SampledFrom([]rune("aZ09._:+/-@ é\x00")), 0, 130, -1).Draw(rt, "s")
				if c.valid(s) != validIDSlow(s, c.plus) {
					rt.Fatalf("%q: %v, the rule says %v", s, c.valid(s), validIDSlow(s, c.plus))
				}
			})
		})
	}
}
