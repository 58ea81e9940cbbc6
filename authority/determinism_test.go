package authority

import (
	"testing"

	"flrh.dev/flrh/determinism"
)

// Authorize is pure: two runs on deep copies of one input agree, and the
// input (compiled policy included) is left as it was.
func TestAuthorizeDeterministic(t *testing.T) {
	for _, audience := range []string{"internal", "public"} {
		in, _ := fixtureInput(t, audience)
		out := determinism.Check(t, in, func(in Input) string {
			d, err := Authorize(in)
			if err != nil {
				return "error: " + err.Error()
			}
			return string(canon(t, d))
		})
		if len(out) < 100 {
			t.Fatalf("%s: %s", audience, out)
		}
	}
}
