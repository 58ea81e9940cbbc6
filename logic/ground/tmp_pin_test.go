package ground

import (
	"crypto/sha256"
	"testing"
)

func TestTmpPin(t *testing.T) {
	res, _ := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}, {"a_positive_retract"}})
	b := mustCanonical(res[1])
	t.Logf("raw+nl %x raw %x", sha256.Sum256(append(b, '\n')), sha256.Sum256(b))
	_, rej := Solve(nil, buildBundle(m2, "negative_cycle", false), []any{}, 1)
	b = mustCanonical(rej.Wire())
	t.Logf("rej raw+nl %x raw %x", sha256.Sum256(append(b, '\n')), sha256.Sum256(b))
}
