package ground

import "testing"

// The Go spec of the example bundle seals to the shipped example file.
func TestSpecBundle(t *testing.T) {
	a := func(p, s string) Atom { return Atom{"predicate": p, "subject": s} }
	spec := Spec{
		RuleSetVersion: "rules/example/1", DataflowVersion: "dataflow/example/1",
		MaxRuleFirings: 100, MaxDerivationDepth: 8,
		Queries: []Atom{a("ready", "change:42"), a("may_deploy", "change:42"), a("frozen", "service:web")},
		Rules: []Rule{
			{ID: "rule:may-deploy", Stratum: 1, Head: Pos(a("may_deploy", "change:42")),
				Required: []Literal{Pos(a("ready", "change:42"))}, NotPositive: []NotPositive{{a("frozen", "service:web"), 0}}},
			{ID: "rule:not-ready-untested", Head: Neg(a("ready", "change:42")), Required: []Literal{Neg(a("tested", "change:42"))}},
			{ID: "rule:ready", Head: Pos(a("ready", "change:42")), Required: []Literal{Pos(a("tested", "change:42")), Pos(a("reviewed", "change:42"))}},
		},
	}
	got, rej := spec.Bundle()
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	want := readExample(t, "bundle.json")
	if string(mustCanonical(got)) != string(mustCanonical(want)) {
		t.Errorf("spec bundle differs from the example:\n%s\n%s", mustCanonical(got), mustCanonical(want))
	}
	// Default negation within its own stratum is negative recursion.
	spec.Rules = append(spec.Rules, Rule{ID: "rule:loop", Stratum: 1, Head: Pos(a("alarm", "change:42")),
		NotPositive: []NotPositive{{a("may_deploy", "change:42"), 1}}})
	if _, rej := spec.Bundle(); rej == nil || rej.Code != CodeOutsideV0NegativeRecursion {
		t.Errorf("negative recursion sealed: %v", rej)
	}
	if _, rej := (Spec{}).Bundle(); rej == nil || rej.Code != CodeMalformedRuleBundle {
		t.Errorf("empty spec sealed: %v", rej)
	}
}
