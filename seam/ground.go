package seam

import (
	"fmt"

	"flrh.dev/flrh/logic/ground"
)

// FromGround builds the seam's view of L from the ground engine's output:
// an LFixpointResult returned by ground.Solve (or the fixpoint of an
// incremental step) and the sealed LRuleBundle it was solved with. Both are
// values of the cjson model. The engine has already validated and digested
// them; FromGround only copies the fields the projection reads, and reports
// a value that is not shaped like the engine's output.
func FromGround(fixpoint, ruleBundle map[string]any) (Materialization, error) {
	var m Materialization
	lt, ok := fixpoint["logical_time"].(int64)
	if !ok {
		return m, fmt.Errorf("seam: fixpoint has no integer logical_time")
	}
	next, ok := fixpoint["next_materialization"].(map[string]any)
	if !ok {
		return m, fmt.Errorf("seam: fixpoint has no next_materialization")
	}
	m.LogicalTime = lt
	for _, f := range []struct {
		from map[string]any
		key  string
		dst  *string
	}{
		{fixpoint, "fixpoint_digest", &m.FixpointDigest},
		{next, "materialization_digest", &m.MaterializationDigest},
		{ruleBundle, "rule_bundle_digest", &m.RuleBundleDigest},
		{ruleBundle, "rule_set_version", &m.RuleSetVersion},
		{ruleBundle, "dataflow_version", &m.DataflowVersion},
	} {
		if *f.dst, ok = f.from[f.key].(string); !ok {
			return m, fmt.Errorf("seam: %s is not a string", f.key)
		}
	}
	if d, _ := fixpoint["rule_bundle_digest"].(string); d != m.RuleBundleDigest {
		return m, fmt.Errorf("seam: fixpoint was solved with rule bundle %s, not %s", d, m.RuleBundleDigest)
	}
	atoms, ok := ruleBundle["query_atoms"].([]any)
	if !ok {
		return m, fmt.Errorf("seam: rule bundle has no query_atoms")
	}
	for i, a := range atoms {
		atom, err := AtomOf(a)
		if err != nil {
			return m, fmt.Errorf("seam: query_atoms/%d: %w", i, err)
		}
		m.QueryAtoms = append(m.QueryAtoms, atom)
	}
	states, err := ground.FactStates(next)
	if err != nil {
		return m, err
	}
	for i, s := range states {
		atom, err := AtomOf(s.Atom)
		if err != nil {
			return m, fmt.Errorf("seam: fact_states/%d: %w", i, err)
		}
		m.Facts = append(m.Facts, FactState{Atom: atom, Positive: s.Positive, Negative: s.Negative})
	}
	return m, nil
}
