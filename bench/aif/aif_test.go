// Package aif_test benchmarks the active-inference controller through its
// public API at the sizes the design targets: one T-maze
// inference-and-selection tick, and 1,000 cascades of horizon 3 over a
// model with 100 states and 2 modalities (goal: under 5 ms on one core).
package aif_test

import (
	"fmt"
	"os"
	"testing"

	"flrh.dev/flrh/aif"
	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/reduce"
)

func tmaze(b *testing.B) *aif.Model {
	text, err := os.ReadFile("../../examples/aif/tmaze.json")
	if err != nil {
		b.Fatal(err)
	}
	doc, err := aif.Decode(text)
	if err != nil {
		b.Fatal(err)
	}
	return doc.Model
}

// BenchmarkTMazeStep: infer, score the four policies, policy posterior,
// action marginals, selection, next prior.
func BenchmarkTMazeStep(b *testing.B) {
	m := tmaze(b)
	prior := m.Prior()
	obs := []int{0, 0, 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Step(prior, obs, aif.SelectSample, "sha256:tick"); err != nil {
			b.Fatal(err)
		}
	}
}

// cascadeModel: 100 states, 10 actions that each move to one of two
// states, 2 modalities of 10 outcomes with dense likelihoods, all 1,000
// policies of horizon 3. Values come from a fixed LCG.
func cascadeModel(b *testing.B) *aif.Model {
	const S, U, O = 100, 10, 10
	seed := uint64(7)
	rnd := func() float64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11)/(1<<53) + 0.01
	}
	f := aif.Factor{Name: "s", B: make([]float64, S*S*U), D: make([]float64, S)}
	for s := 0; s < S; s++ {
		f.States = append(f.States, fmt.Sprintf("s%d", s))
		f.D[s] = 1.0 / S
	}
	for a := 0; a < U; a++ {
		f.Actions = append(f.Actions, fmt.Sprintf("a%d", a))
	}
	for prev := 0; prev < S; prev++ {
		for a := 0; a < U; a++ {
			next := (prev + 7*a + 1) % S
			f.B[(next*S+prev)*U+a] += 0.8
			f.B[(prev*S+prev)*U+a] += 0.2
		}
	}
	m := &aif.Model{Factors: []aif.Factor{f}, Gamma: 16, Discount: 0.9}
	for mi := 0; mi < 2; mi++ {
		md := aif.Modality{Name: fmt.Sprintf("m%d", mi), A: make([]float64, O*S), C: make([]float64, O)}
		for o := 0; o < O; o++ {
			md.Outcomes = append(md.Outcomes, fmt.Sprintf("o%d", o))
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
		m.Modalities = append(m.Modalities, md)
	}
	m.Policies = aif.EnumeratePolicies(m.Factors, 3)
	if err := m.Validate(); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkCascades1000 scores the 1,000 cascades from a dense posterior and
// forms the policy posterior.
func BenchmarkCascades1000(b *testing.B) {
	m := cascadeModel(b)
	post, err := m.Infer(m.Prior(), []int{3, 7})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.PolicyPosterior(m.EvaluatePolicies(post.Q))
	}
}

// BenchmarkCascades1000Scorecard adds the choice layer: candidates, a
// sampled selection at τ = 0.5 and the canonical scorecard record.
func BenchmarkCascades1000Scorecard(b *testing.B) {
	m := cascadeModel(b)
	post, err := m.Infer(m.Prior(), []int{3, 7})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cands := m.Candidates(m.EvaluatePolicies(post.Q), nil)
		req := choice.Request{Candidates: cands, Nothing: choice.Candidate{ID: "nothing", Core: choice.Core{Risk: 100}}, Temperature: 0.5, EventDigest: "sha256:e"}
		d, err := choice.Select(req)
		if err != nil {
			b.Fatal(err)
		}
		_ = choice.Record(req, d, nil)
	}
}

// BenchmarkReduce21 evaluates 21 pairwise reductions of a 7-concept parent.
func BenchmarkReduce21(b *testing.B) {
	var parent []reduce.Parameter
	for i := 0; i < 7; i++ {
		parent = append(parent, reduce.Parameter{Name: fmt.Sprintf("c%d", i), Prior: []float64{1, 1}, Posterior: []float64{float64(1 + i), float64(20 - i)}})
	}
	var props []reduce.Proposal
	for i := 0; i < 7; i++ {
		for j := i + 1; j < 7; j++ {
			props = append(props, reduce.Proposal{ID: fmt.Sprintf("merge-%d-%d", i, j), Reduced: map[string][]float64{
				parent[i].Name: {0.001, 1}, parent[j].Name: {0.001, 1}}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := reduce.BuildReport(parent, props, reduce.DefaultThreshold); err != nil {
			b.Fatal(err)
		}
	}
}
