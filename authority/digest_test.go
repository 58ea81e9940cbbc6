package authority

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestIsDigestMatchesPattern(t *testing.T) {
	good := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{"", good, good + "\n", good[:70], good + "0", strings.ToUpper(good), "SHA256:" + good[7:], "sha256:" + strings.Repeat("g", 64), "sha256;" + good[7:]} {
		if isDigest(s) != digestPattern.MatchString(s) {
			t.Errorf("isDigest(%q) = %v", s, isDigest(s))
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		// Mutate one byte of a valid digest, or draw freely.
		s := []byte(good)
		if rapid.Bool().Draw(t, "mutate") {
			i := rapid.IntRange(0, len(s)-1).Draw(t, "i")
			s[i] = rapid.SampledFrom(nearBytes).Draw(t, "b")
			if rapid.Bool().Draw(t, "trim") {
				s = s[:rapid.IntRange(0, len(s)).Draw(t, "n")]
			}
		} else {
			s = []byte(nearString(t, "s"))
		}
		if isDigest(string(s)) != digestPattern.MatchString(string(s)) {
			t.Fatalf("isDigest(%q) = %v", s, isDigest(string(s)))
		}
	})
}
