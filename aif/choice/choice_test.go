package choice

import (
	"math"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

func cand(id string, risk, amb float64, aug ...Term) Candidate {
	return Candidate{ID: id, Core: Core{risk, amb}, Augmentations: aug}
}

var nothing = cand("do-nothing", 5, 1)

func TestArgminAndMovedByCore(t *testing.T) {
	d, err := Select(Request{Candidates: []Candidate{cand("a", 1, 1), cand("b", 2, 1)}, Nothing: nothing, Margin: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Pick != "a" || d.Abstain != "" || d.MovedBy[0] != "core" || d.Probability[0] != 1 {
		t.Fatalf("%+v", d)
	}
}

func TestAugmentationMovesPickAndIsNamed(t *testing.T) {
	cs := []Candidate{
		cand("safe", 1, 1, Term{Cost, 0.1}),
		cand("novel", 1.2, 1, Term{ModelUncertaintyBonus, -0.5}, Term{Cost, 0.1}),
	}
	d, err := Select(Request{Candidates: cs, Nothing: nothing, Margin: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if d.Pick != "novel" || d.ArgminCore != "safe" || d.ArgminTotal != "novel" {
		t.Fatalf("%+v", d)
	}
	if len(d.MovedBy) != 1 || d.MovedBy[0] != ModelUncertaintyBonus {
		t.Fatalf("moved by %v, want the bonus", d.MovedBy)
	}
	sc := Record(Request{Candidates: cs, Nothing: nothing, Margin: 0.5}, d, nil)
	// The core is persisted apart: efe is risk + ambiguity, never the total.
	if sc.Candidates[1].Core.EFE != 2_200_000_000 || sc.Candidates[1].Total != 1_800_000_000 {
		t.Fatalf("record %+v", sc.Candidates[1])
	}
	if _, err := cjson.Marshal(sc); err != nil {
		t.Fatal(err)
	}
}

func TestAbstention(t *testing.T) {
	cases := []struct {
		name string
		cs   []Candidate
		want string
	}{
		{"empty", nil, AbstainEmpty},
		{"no margin", []Candidate{cand("a", 4.5, 1)}, AbstainNoMargin},
		{"tied core", []Candidate{cand("a", 1, 1, Term{IntrinsicValue, -0.3}), cand("b", 1, 1)}, AbstainNonDiscriminating},
	}
	for _, c := range cases {
		d, err := Select(Request{Candidates: c.cs, Nothing: nothing, Margin: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Abstain != c.want || d.Pick != "" {
			t.Errorf("%s: %+v, want abstain %s", c.name, d, c.want)
		}
	}
}

func TestSamplingIsSeededByEventDigest(t *testing.T) {
	cs := []Candidate{cand("a", 1, 1), cand("b", 1.1, 1), cand("c", 1.2, 1)}
	counts := map[string]int{}
	for i := 0; i < 2000; i++ {
		digest := "sha256:" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		req := Request{Candidates: cs, Nothing: nothing, Temperature: 0.5, EventDigest: digest}
		d1, _ := Select(req)
		d2, _ := Select(req)
		if d1.Pick != d2.Pick {
			t.Fatal("same digest, different pick")
		}
		counts[d1.Pick]++
	}
	// exp(-2/0.5) : exp(-2.1/0.5) : exp(-2.2/0.5) ≈ 0.40 : 0.33 : 0.27
	if counts["a"] < counts["c"] || counts["c"] == 0 {
		t.Fatalf("sampling frequencies %v", counts)
	}
}

func TestProbabilitiesFollowTemperature(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		var cs []Candidate
		for i := 0; i < n; i++ {
			cs = append(cs, cand(string(rune('a'+i)), rapid.Float64Range(0, 3).Draw(t, "r"), rapid.Float64Range(0, 3).Draw(t, "a")))
		}
		tau := rapid.Float64Range(0.01, 10).Draw(t, "tau")
		d, err := Select(Request{Candidates: cs, Nothing: cand("z", 100, 0), Temperature: tau, EventDigest: "sha256:x"})
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i, p := range d.Probability {
			sum += p
			for j, q := range d.Probability {
				want := math.Exp(-(cs[i].Total() - cs[j].Total()) / tau)
				if q > 1e-300 && p > 1e-300 && math.Abs(p/q-want) > 1e-9*want {
					t.Fatalf("P ratio %v, want %v", p/q, want)
				}
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("probabilities sum to %v", sum)
		}
	})
}

func TestDial(t *testing.T) {
	dial := Dial{Base: 1, Min: 0.05, Max: 5, KRegression: 0.5, KUncertainty: 1, KContradiction: 1, KTimePressure: 4}
	calm, _ := dial.Temperature(Diagnostics{})
	troubled, _ := dial.Temperature(Diagnostics{RecentRegressions: 2, BeliefUncertainty: 0.5})
	rushed, _ := dial.Temperature(Diagnostics{TimePressure: 1})
	if calm != 1 || troubled != 2.5 || rushed != 0.2 {
		t.Fatalf("τ calm %v troubled %v rushed %v", calm, troubled, rushed)
	}
	clamped, _ := dial.Temperature(Diagnostics{RecentRegressions: 1000, BeliefUncertainty: 1, ContradictionRate: 1})
	if clamped != 5 {
		t.Fatalf("τ not clamped: %v", clamped)
	}
	if _, err := dial.Temperature(Diagnostics{TimePressure: 2}); err == nil {
		t.Fatal("out-of-range diagnostic accepted")
	}
}

func TestBuildSet(t *testing.T) {
	pool := []Proposal{
		{"p-retry", 0.9, []string{"safe"}},
		{"p-delete", 0.95, []string{"irreversible"}},
		{"p-ask", 0.5, []string{"safe"}},
		{"p-noop", 0.5, []string{"safe"}},
		{"p-page", 0.7, []string{"safe"}},
		{"p-retry", 0.1, []string{"safe"}},
	}
	s := determinism.Check(t, pool, func(p []Proposal) Set {
		return BuildSet(p, []Rule{ForbidTag("irreversible"), RequireTag("safe")}, 2)
	})
	var inc []string
	for _, i := range s.Included {
		inc = append(inc, i.ID)
	}
	if len(inc) != 2 || inc[0] != "p-retry" || inc[1] != "p-page" {
		t.Fatalf("included %v", inc)
	}
	reasons := map[string]string{}
	for _, e := range s.Excluded {
		reasons[e.ID+"/"+e.Rule] = e.Reason
	}
	for _, k := range []string{"p-delete/forbid:irreversible", "p-ask/bound", "p-noop/bound", "p-retry/unique"} {
		if reasons[k] == "" {
			t.Errorf("missing exclusion %s in %v", k, s.Excluded)
		}
	}
	if len(s.Included)+len(s.Excluded) != len(pool) {
		t.Fatal("a proposal was neither included nor excluded")
	}
}

func TestCascadeScoresTheWholeSequence(t *testing.T) {
	// A greedy first move that leads nowhere against a patient cascade.
	greedy, _ := Cascade("greedy", []Core{{0.5, 0.5}, {3, 1}, {3, 1}}, 0.9)
	patient, _ := Cascade("patient", []Core{{1.5, 0.5}, {0.5, 0.2}, {0.2, 0.1}}, 0.9)
	if !(greedy.Steps[0].EFE() < patient.Steps[0].EFE()) {
		t.Fatal("fixture: greedy should win the first step")
	}
	d, _ := Select(Request{Candidates: []Candidate{greedy, patient}, Nothing: cand("nothing", 20, 0)})
	if d.Pick != "patient" {
		t.Fatalf("picked %s; the cascade, not its first move, is scored", d.Pick)
	}
	want := 1.5 + 0.9*0.5 + 0.81*0.2
	if math.Abs(patient.Core.Risk-want) > 1e-12 {
		t.Fatalf("discounted risk %v, want %v", patient.Core.Risk, want)
	}
	if _, err := Cascade("x", []Core{{1, 1}}, 0); err == nil {
		t.Fatal("zero discount accepted")
	}
}
