package logic

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The semantic cases of the reference M2 corpus (fixtures/m2/cases.json),
// transcribed into Datalog: a reference atom {predicate, subject} is the
// fact predicate("subject"), a ground rule is a Datalog rule over those
// facts, and FactDelta inputs are Solve changes with the same derivation
// ids. The wire-format cases (rule kinds, schema versions, unconditional
// rules of the JSON profile) belong to logic/ground and are not repeated.

const refDecls = `.decl a(s: symbol)
.decl b(s: symbol)
.decl c(s: symbol)
.decl d(s: symbol)
.decl truth_probe(s: symbol)
.decl candidate(s: symbol)
.decl seed(s: symbol)
.decl mid(s: symbol)
.decl blocked(s: symbol)
.decl eligible(s: symbol)
.decl opaque_authority_payload(s: symbol)
`

var refBundles = map[string]string{
	"empty":        "",
	"truth_states": "",
	"two_supports": `c("item:1") :- a("item:1").
c("item:1") :- b("item:1").
d("item:1") :- c("item:1").
`,
	"lower_stratum_default": `mid("item:1") :- seed("item:1").
blocked("item:1") :- mid("item:1").
eligible("item:1") :- candidate("item:1"), !blocked("item:1").
`,
	"negative_cycle": `a("item:1") :- !b("item:1").
b("item:1") :- !a("item:1").
`,
	"firing_budget_one": `b("item:1") :- a("item:1").
c("item:1") :- a("item:1").
`,
	"depth_budget_one": `b("item:1") :- a("item:1").
c("item:1") :- b("item:1").
`,
	"one_firing_exact": `b("item:1") :- a("item:1").
`,
}

// refLimits are the bundles' declared limits (max_rule_firings,
// max_derivation_depth).
var refLimits = map[string]Limits{
	"firing_budget_one": {MaxFirings: 1, MaxDepth: 8},
	"depth_budget_one":  {MaxFirings: 8, MaxDepth: 1},
	"one_firing_exact":  {MaxFirings: 1, MaxDepth: 1},
}

func refFact(pred, subject string, neg bool) Fact {
	return Fact{Rel: pred, Neg: neg, Args: []Value{Sym(subject)}}
}

var refDeltas = map[string]FactChange{
	"a_positive":                {ID: "derivation:base:a", Fact: refFact("a", "item:1", false), Diff: 1},
	"a_positive_retract":        {ID: "derivation:base:a", Fact: refFact("a", "item:1", false), Diff: -1},
	"a_positive_duplicate":      {ID: "derivation:base:a", Fact: refFact("a", "item:1", false), Diff: 1},
	"a_identity_conflict":       {ID: "derivation:base:a", Fact: refFact("b", "item:1", false), Diff: 1},
	"unknown_retract":           {ID: "derivation:missing", Fact: refFact("d", "item:1", false), Diff: -1},
	"b_positive":                {ID: "derivation:base:b", Fact: refFact("b", "item:1", false), Diff: 1},
	"true_positive":             {ID: "derivation:truth:true", Fact: refFact("truth_probe", "true", false), Diff: 1},
	"false_negative":            {ID: "derivation:truth:false", Fact: refFact("truth_probe", "false", true), Diff: 1},
	"both_positive":             {ID: "derivation:truth:both-positive", Fact: refFact("truth_probe", "both", false), Diff: 1},
	"both_negative":             {ID: "derivation:truth:both-negative", Fact: refFact("truth_probe", "both", true), Diff: 1},
	"candidate_positive":        {ID: "derivation:base:candidate", Fact: refFact("candidate", "item:1", false), Diff: 1},
	"seed_positive":             {ID: "derivation:base:seed", Fact: refFact("seed", "item:1", false), Diff: 1},
	"blocked_positive":          {ID: "derivation:truth:blocked-positive", Fact: refFact("blocked", "item:1", false), Diff: 1},
	"blocked_negative":          {ID: "derivation:truth:blocked-negative", Fact: refFact("blocked", "item:1", true), Diff: 1},
	"authority_shaped_positive": {ID: "derivation:base:authority-shaped", Fact: refFact("opaque_authority_payload", "item:authority-shaped", false), Diff: 1, Provenance: `{"approval_digest":"opaque:caller-provenance","capability":"opaque:not-an-authority-grant","kind":"EffectIntent"}`},
	"a_derived_id_collision":    {ID: "derivation:18cb2e5a834a0ba8feac7a31c7f591237c24c1fb5af0244e234de736da0eb316", Fact: refFact("a", "item:1", false), Diff: 1},
}

// refAtoms names the reference atoms by their fixture keys.
var refAtoms = map[string]Fact{
	"a": refFact("a", "item:1", false), "b": refFact("b", "item:1", false),
	"c": refFact("c", "item:1", false), "d": refFact("d", "item:1", false),
	"neither": refFact("truth_probe", "neither", false), "true_only": refFact("truth_probe", "true", false),
	"false_only": refFact("truth_probe", "false", false), "both": refFact("truth_probe", "both", false),
	"mid": refFact("mid", "item:1", false), "blocked": refFact("blocked", "item:1", false),
	"eligible": refFact("eligible", "item:1", false), "authority_shaped": refFact("opaque_authority_payload", "item:authority-shaped", false),
}

func refSolve(bundle string, deltas []string) (*Result, error) {
	c, err := Load(bundle+".dl", []byte(refDecls+refBundles[bundle]))
	if err != nil {
		return nil, err
	}
	lim, ok := refLimits[bundle]
	if !ok {
		lim = Limits{MaxFirings: 8, MaxDepth: 8}
	}
	var d []FactChange
	for _, name := range deltas {
		d = append(d, refDeltas[name])
	}
	return Solve(nil, c, d, 1, lim)
}

func TestReferenceM2SuccessCases(t *testing.T) {
	cases := []struct {
		id, bundle string
		deltas     []string
		states     map[string]TruthState
		posCounts  map[string]int
		negCounts  map[string]int
	}{
		{"four-truth-states", "truth_states", []string{"true_positive", "false_negative", "both_positive", "both_negative"},
			map[string]TruthState{"neither": Neither, "true_only": TrueOnly, "false_only": FalseOnly, "both": Both}, nil, nil},
		{"two-supports-and-downstream", "two_supports", []string{"a_positive", "b_positive"},
			map[string]TruthState{"a": TrueOnly, "b": TrueOnly, "c": TrueOnly, "d": TrueOnly}, map[string]int{"c": 2, "d": 1}, nil},
		{"lower-stratum-completes-before-default-negation", "lower_stratum_default", []string{"candidate_positive", "seed_positive"},
			map[string]TruthState{"mid": TrueOnly, "blocked": TrueOnly, "eligible": Neither}, nil, nil},
		{"default-negation-after-empty-lower-stratum", "lower_stratum_default", []string{"candidate_positive"},
			map[string]TruthState{"mid": Neither, "blocked": Neither, "eligible": TrueOnly}, map[string]int{"eligible": 1}, nil},
		{"default-negation-accepts-false-only", "lower_stratum_default", []string{"candidate_positive", "blocked_negative"},
			map[string]TruthState{"blocked": FalseOnly, "eligible": TrueOnly}, map[string]int{"eligible": 1}, map[string]int{"blocked": 1}},
		{"default-negation-rejects-both", "lower_stratum_default", []string{"candidate_positive", "blocked_positive", "blocked_negative"},
			map[string]TruthState{"blocked": Both, "eligible": Neither}, map[string]int{"blocked": 1}, map[string]int{"blocked": 1}},
		{"exact-duplicate-batch-idempotent", "empty", []string{"a_positive", "a_positive_duplicate"},
			map[string]TruthState{"a": TrueOnly}, map[string]int{"a": 1}, nil},
		{"exact-budget-boundary", "one_firing_exact", []string{"a_positive"},
			map[string]TruthState{"a": TrueOnly, "b": TrueOnly}, map[string]int{"b": 1}, nil},
		{"opaque-authority-shaped-data-is-inert", "empty", []string{"authority_shaped_positive"},
			map[string]TruthState{"a": Neither, "authority_shaped": TrueOnly}, map[string]int{"authority_shaped": 1}, nil},
	}
	// support count: named base supports, or one per rule instantiation
	count := func(m *Materialization, f Fact) int {
		sups, err := m.Supports(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range sups {
			if s.Base {
				n += len(s.BaseIDs)
			} else {
				n++
			}
		}
		return n
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			r, err := refSolve(tc.bundle, tc.deltas)
			if err != nil {
				t.Fatal(err)
			}
			m := r.Materialization
			for name, want := range tc.states {
				if got, _ := m.State(refAtoms[name]); got != want {
					t.Errorf("%s is %v, want %v", name, got, want)
				}
			}
			for name, want := range tc.posCounts {
				if got := count(m, refAtoms[name]); got != want {
					t.Errorf("%s has %d positive supports, want %d", name, got, want)
				}
			}
			for name, want := range tc.negCounts {
				neg := refAtoms[name]
				neg.Neg = true
				if got := count(m, neg); got != want {
					t.Errorf("%s has %d negative supports, want %d", name, got, want)
				}
			}
			var both []string
			for _, c := range r.Conflicts {
				both = append(both, c.Atom.String())
			}
			for name, st := range tc.states {
				if (st == Both) != strings.Contains(strings.Join(both, " "), refAtoms[name].String()) {
					t.Errorf("conflicts %v disagree with the state of %s", both, name)
				}
			}
		})
	}
}

func TestReferenceM2RejectionCases(t *testing.T) {
	cases := []struct {
		id, bundle string
		deltas     []string
		code       Code
	}{
		{"negative-cycle", "negative_cycle", nil, NegativeRecursion},
		{"unknown-retraction", "empty", []string{"unknown_retract"}, UnknownDerivation},
		{"identity-conflict-atomic", "empty", []string{"a_positive", "a_identity_conflict"}, IdentityConflict},
		{"mixed-valid-invalid-retraction-atomic", "empty", []string{"a_positive", "unknown_retract"}, UnknownDerivation},
		{"mixed-add-retract-same-id-atomic", "empty", []string{"a_positive", "a_positive_retract"}, AmbiguousBatchDelta},
		{"double-retract-same-batch-atomic", "empty", []string{"a_positive_retract", "a_positive_retract"}, AmbiguousBatchDelta},
		{"firing-budget", "firing_budget_one", []string{"a_positive"}, RuleBudgetExhausted},
		{"depth-budget", "depth_budget_one", []string{"a_positive"}, DepthExceeded},
		{"derived-support-target", "one_firing_exact", []string{"a_derived_id_collision"}, DerivedSupportTarget},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			r, err := refSolve(tc.bundle, tc.deltas)
			var e *Error
			if r != nil || !errors.As(err, &e) || e.Code != tc.code {
				t.Fatalf("got %v, %v; want %s", r != nil, err, tc.code)
			}
		})
	}
}

// The rejections are atomic: a prior survives a rejected batch unchanged
// and still accepts the next one.
func TestReferenceRejectionsAreAtomic(t *testing.T) {
	r, err := refSolve("two_supports", []string{"a_positive"})
	if err != nil {
		t.Fatal(err)
	}
	prior := r.Materialization
	_, err = Solve(prior, prior.c, []FactChange{refDeltas["b_positive"], refDeltas["unknown_retract"]}, 2, Limits{})
	var e *Error
	if !errors.As(err, &e) || e.Code != UnknownDerivation {
		t.Fatalf("got %v", err)
	}
	if st, _ := prior.State(refAtoms["b"]); st != Neither {
		t.Fatalf("b is %v after a rejected batch", st)
	}
	r2, err := Solve(prior, prior.c, []FactChange{refDeltas["a_positive_retract"]}, 2, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r2.Changes); got != `[{a("item:1") -1} {c("item:1") -1} {d("item:1") -1}]` {
		t.Fatalf("changes %s", got)
	}
}

// TestRejectionsNameTheirDelta: a batch's rejection names the change it
// is about as delta[i], its index in the batch.
func TestRejectionsNameTheirDelta(t *testing.T) {
	for _, tc := range []struct {
		bundle string
		deltas []string
		want   string
	}{
		{"empty", []string{"unknown_retract"}, "delta[0]: "},
		{"empty", []string{"a_positive", "unknown_retract"}, "delta[1]: "},
		{"empty", []string{"a_positive", "a_identity_conflict"}, "delta[1]: "},
		{"empty", []string{"a_positive", "a_positive_retract"}, "delta[1]: "},
		{"one_firing_exact", []string{"a_derived_id_collision"}, "delta[0]: "},
	} {
		_, err := refSolve(tc.bundle, tc.deltas)
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, tc.want) {
			t.Errorf("%v: %v, want a message beginning %q", tc.deltas, err, tc.want)
		}
	}
}
