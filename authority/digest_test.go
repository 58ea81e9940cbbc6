package authority

import (
	"regexp"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// digestPattern is the digest grammar of the m4a contract, which
// cjson.ValidDigest (what authority checks digests with) must match.
var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func TestIsDigestMatchesPattern(t *testing.T) {
	good := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{"", good, good + "\n", good[:70], good + "0", strings.ToUpper(good), "SHA256:" + good[7:], "sha256:" + strings.Repeat("g", 64), "sha256;" + good[7:]} {
		if cjson.ValidDigest(s) != digestPattern.MatchString(s) {
			t.Errorf("cjson.ValidDigest(%q) = %v", s, cjson.ValidDigest(s))
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
		if cjson.ValidDigest(string(s)) != digestPattern.MatchString(string(s)) {
			t.Fatalf("cjson.ValidDigest(%q) = %v", s, cjson.ValidDigest(string(s)))
		}
	})
}
