package aif

import (
	"testing"
)

// benchModel is the cascade-scoring benchmark model: one factor of 100
// states, 10 actions with sparse transitions (each action moves to one of
// two states), 2 modalities of 10 outcomes with dense likelihoods, and all
// 1,000 cascades of horizon 3. Values come from a fixed LCG so the model is
// the same on every run.
func benchModel(tb testing.TB) *Model {
	const S, U, O = 100, 10, 10
	seed := uint64(42)
	rnd := func() float64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11)/(1<<53) + 0.01
	}
	f := Factor{Name: "s", States: make([]string, S), Actions: make([]string, U), B: make([]float64, S*S*U), D: make([]float64, S)}
	for s := range f.States {
		f.States[s] = "s" + itoa(s)
		f.D[s] = 1.0 / S
	}
	for a := range f.Actions {
		f.Actions[a] = "a" + itoa(a)
	}
	for prev := 0; prev < S; prev++ {
		for a := 0; a < U; a++ {
			next := (prev + 7*a + 1) % S
			f.B[(next*S+prev)*U+a] += 0.8
			f.B[(prev*S+prev)*U+a] += 0.2
		}
	}
	var mods []Modality
	for mi := 0; mi < 2; mi++ {
		md := Modality{Name: "m" + itoa(mi), Outcomes: make([]string, O), A: make([]float64, O*S), C: make([]float64, O)}
		for o := range md.Outcomes {
			md.Outcomes[o] = "o" + itoa(o)
			md.C[o] = float64(o%3) - 1
		}
		for s := 0; s < S; s++ {
			sum := 0.0
			for o := 0; o < O; o++ {
				md.A[o*S+s] = rnd()
				sum += md.A[o*S+s]
			}
			for o := 0; o < O; o++ {
				md.A[o*S+s] /= sum
			}
		}
		mods = append(mods, md)
	}
	m := &Model{Factors: []Factor{f}, Modalities: mods, Gamma: 16, Discount: 0.9}
	m.Policies = EnumeratePolicies(m.Factors, 3)
	if err := m.Validate(); err != nil {
		tb.Fatal(err)
	}
	if len(m.Policies) != 1000 {
		tb.Fatalf("%d policies", len(m.Policies))
	}
	return m
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// BenchmarkTMazeStep is one perception–action cycle of the T-maze: infer,
// score the four policies, form the policy posterior, select.
func BenchmarkTMazeStep(b *testing.B) {
	m := loadTMaze(b).Model
	prior := m.Prior()
	obs := []int{0, 0, 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Step(prior, obs, SelectArgmax, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCascades1000 scores 1,000 cascades of horizon 3 over 100 states
// and 2 modalities from a dense posterior, and forms the policy posterior.
func BenchmarkCascades1000(b *testing.B) {
	m := benchModel(b)
	post, err := m.Infer(m.Prior(), []int{3, 7})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s := m.EvaluatePolicies(post.Q)
		_ = m.PolicyPosterior(s)
	}
}

func TestBenchModelScores(t *testing.T) {
	m := benchModel(t)
	post, err := m.Infer(m.Prior(), []int{3, 7})
	if err != nil {
		t.Fatal(err)
	}
	s := m.EvaluatePolicies(post.Q)
	if len(s) != 1000 {
		t.Fatal(len(s))
	}
	for _, p := range s {
		if !(p.G > 0) || p.G != p.Risk+p.Ambiguity {
			t.Fatalf("bad score %+v", p)
		}
	}
}
