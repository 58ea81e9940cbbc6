package frontier

import (
	"testing"

	"pgregory.net/rapid"
)

// validTokenSlow is the token rule as first written: 1 to 128 bytes,
// letters, digits and "._:/-" (and '+' when plus), starting with a letter
// or digit.
func validTokenSlow(s string, plus bool) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i == 0:
			return false
		case c == '.' || c == '_' || c == ':' || c == '/' || c == '-':
		case plus && c == '+':
		default:
			return false
		}
	}
	return true
}

// validToken's table agrees with the rule for every byte in every
// position, with and without '+', and for drawn tokens of every length
// around the limit.
func TestValidTokenIsTheRule(t *testing.T) {
	for _, plus := range []bool{false, true} {
		for c := range 256 {
			for _, s := range []string{string([]byte{byte(c)}), "v" + string([]byte{byte(c)}), "v" + string([]byte{byte(c)}) + "1"} {
				if validToken(s, plus) != validTokenSlow(s, plus) {
					t.Fatalf("%q (plus %v): %v, the rule says %v", s, plus, validToken(s, plus), validTokenSlow(s, plus))
				}
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("aZ09._:+/-@ é\x00")), 0, 130, -1).Draw(rt, "s")
		plus := rapid.Bool().Draw(rt, "plus")
		if validToken(s, plus) != validTokenSlow(s, plus) {
			rt.Fatalf("%q (plus %v): %v, the rule says %v", s, plus, validToken(s, plus), validTokenSlow(s, plus))
		}
	})
}
