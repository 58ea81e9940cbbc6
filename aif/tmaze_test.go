package aif

import (
	"math"
	"os"
	"testing"

	"flrh.dev/flrh/determinism"
)

func loadTMaze(t testing.TB) *Document {
	t.Helper()
	text, err := os.ReadFile("testdata/tmaze.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// The T-maze of the active-inference literature (and of the open-source
// pymdp package): reward probability 0.98/0.02, reward-modality preferences
// [0, 3, -3], policy precision γ = 16, one-step policies "go to centre /
// left / right / cue", context prior 0.5/0.5. The literature reports a
// first-step policy posterior of about [0.0000108, 0.1471, 0.1471, 0.7059].
//
// The exact values below were computed independently in 40-digit arithmetic
// from the closed form (G_centre = ln4 + ln3 + lse, G_arm = G_centre −
// ln2 + H(0.98), G_cue = G_centre − ln2 with lse = ln(1+e³+e⁻³)); see
// docs/aif.md for the derivation.
var tmazeFirstStep = []float64{
	0.000010770825259608248247,
	0.14705621248052711731,
	0.14705621248052711731,
	0.70587680421368615712,
}

func TestTMazeFirstStepPosterior(t *testing.T) {
	doc := loadTMaze(t)
	m := doc.Model
	obs := []int{0, 0, 0} // at-center, no reward, no cue
	r, err := m.Step(m.Prior(), obs, SelectArgmax, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range tmazeFirstStep {
		if d := math.Abs(r.QPi[i] - want); d > 1e-12 {
			t.Errorf("q(π_%d) = %.15g, exact %.15g (off by %g)", i, r.QPi[i], want, d)
		}
	}
	// The literature's rounded figures, to the precision they are quoted at.
	quoted := []float64{0.0000108, 0.1471, 0.1471, 0.7059}
	tol := []float64{5e-8, 5e-5, 5e-5, 5e-5}
	for i := range quoted {
		if math.Abs(r.QPi[i]-quoted[i]) > tol[i] {
			t.Errorf("q(π_%d) = %.7g, literature %.7g", i, r.QPi[i], quoted[i])
		}
	}
	if got := m.Factors[0].Actions[r.Action[0]]; got != "to-cue" {
		t.Fatalf("first action %s, want to-cue (epistemic move first)", got)
	}
	// The core decomposes exactly into the two views.
	for _, s := range r.Scores {
		if d := s.G + s.Utility + s.InfoGain; math.Abs(d) > 1e-12 {
			t.Errorf("policy %d: G + utility + info gain = %g, want 0", s.Policy, d)
		}
		if s.G != s.Risk+s.Ambiguity {
			t.Errorf("policy %d: G is not risk + ambiguity", s.Policy)
		}
	}
	// Arms are ambiguous (H(0.98, 0.02) nats), the cue is not.
	h := -(0.98*math.Log(0.98) + 0.02*math.Log(0.02))
	if math.Abs(r.Scores[1].Ambiguity-h) > 1e-12 || r.Scores[3].Ambiguity != 0 {
		t.Errorf("ambiguity: arm %v (want %v), cue %v (want 0)", r.Scores[1].Ambiguity, h, r.Scores[3].Ambiguity)
	}
}

func TestTMazeCommitsAfterCue(t *testing.T) {
	doc := loadTMaze(t)
	m := doc.Model
	for _, tc := range []struct {
		cue, arm string
	}{{"cue-right", "to-right"}, {"cue-left", "to-left"}} {
		r1, err := m.Step(m.Prior(), []int{0, 0, 0}, SelectArgmax, "")
		if err != nil {
			t.Fatal(err)
		}
		cue := indexOf(m.Modalities[2].Outcomes, tc.cue)
		r2, err := m.Step(r1.NextPrior, []int{3, 0, cue}, SelectArgmax, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Factors[0].Actions[r2.Action[0]]; got != tc.arm {
			t.Errorf("after %s chose %s, want %s", tc.cue, got, tc.arm)
		}
		best := indexOf(m.Factors[0].Actions, tc.arm)
		if r2.QPi[best] < 1-1e-12 {
			t.Errorf("after %s q(%s) = %v, want ≈ 1", tc.cue, tc.arm, r2.QPi[best])
		}
		ctx := r2.Posterior.Q[1]
		want := indexOf(m.Factors[1].States, "reward-"+tc.cue[len("cue-"):])
		if ctx[want] < 1-1e-12 {
			t.Errorf("context belief after %s = %v", tc.cue, ctx)
		}
	}
}

func TestStepIsDeterministic(t *testing.T) {
	doc := loadTMaze(t)
	m := doc.Model
	type in struct {
		Prior [][]float64
		Obs   []int
	}
	determinism.Check(t, in{m.Prior(), []int{0, 0, 0}}, func(x in) StepRecord {
		r, err := m.Step(x.Prior, x.Obs, SelectSample, "sha256:abc")
		if err != nil {
			t.Fatal(err)
		}
		return m.Record(1, x.Obs, "sha256:abc", SelectSample, r)
	})
}
