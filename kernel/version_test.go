package kernel

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// validVersionSlow is the version label rule as first written: 1 to 128
// bytes, letters, digits and "._:+/-", starting with a letter or digit.
func validVersionSlow(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && !strings.ContainsRune("._:+/-", rune(c)) {
			return false
		}
	}
	return true
}

// validVersion's table agrees with the rule for every byte in every
// position and for drawn labels, of every length around the limit.
func TestValidVersionIsTheRule(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "v" + string([]byte{byte(c)}), "v" + string([]byte{byte(c)}) + "1"} {
			if validVersion(s) != validVersionSlow(s) {
				t.Fatalf("%q: %v, the rule says %v", s, validVersion(s), validVersionSlow(s))
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("aZ09._:+/-@ é\x00")), 0, 130, -1).Draw(rt, "s")
		if validVersion(s) != validVersionSlow(s) {
			rt.Fatalf("%q: %v, the rule says %v", s, validVersion(s), validVersionSlow(s))
		}
	})
}
