package ground

import (
	"fmt"

	"flrh.dev/flrh/protocol"
)

// Input wraps an exact protocol FactDelta as an LFactDeltaInput with the
// given polarity ("positive" or "negative"), in the value model Solve
// takes. The delta is copied, never aliased.
func Input(polarity string, d protocol.FactDelta) map[string]any {
	return map[string]any{
		"kind":           "LFactDeltaInput",
		"schema_version": InputSchemaVersion,
		"polarity":       polarity,
		"delta": map[string]any{
			"kind":             d.Kind,
			"tuple":            cloneValue(map[string]any(d.Tuple)),
			"logical_time":     d.LogicalTime,
			"diff":             d.Diff,
			"derivation_id":    d.DerivationID,
			"causation_id":     d.CausationID,
			"provenance_delta": cloneValue(map[string]any(d.ProvenanceDelta)),
			"rule_set_version": d.RuleSetVersion,
			"dataflow_version": d.DataflowVersion,
		},
	}
}

// DerivedDelta is one net change of a derived support, as emitted in a
// fixpoint's derived_fact_deltas.
type DerivedDelta struct {
	Polarity string
	Delta    protocol.FactDelta
}

// DerivedDeltas returns the derived FactDelta changes of an LFixpointResult
// returned by Solve (or the fixpoint_result of a step) as protocol values,
// in their emitted (canonical) order.
func DerivedDeltas(fixpoint map[string]any) ([]DerivedDelta, error) {
	raw, ok := fixpoint["derived_fact_deltas"].([]any)
	if !ok {
		return nil, fmt.Errorf("ground: not an LFixpointResult: no derived_fact_deltas")
	}
	out := make([]DerivedDelta, 0, len(raw))
	for i, item := range raw {
		w, _ := item.(map[string]any)
		d, _ := w["delta"].(map[string]any)
		pol, _ := w["polarity"].(string)
		tuple, ok1 := d["tuple"].(map[string]any)
		prov, ok2 := d["provenance_delta"].(map[string]any)
		lt, ok3 := asInt(d["logical_time"])
		diff, ok4 := asInt(d["diff"])
		strs := [5]string{}
		ok5 := true
		for j, k := range []string{"kind", "derivation_id", "causation_id", "rule_set_version", "dataflow_version"} {
			s, ok := d[k].(string)
			strs[j], ok5 = s, ok5 && ok
		}
		if !(ok1 && ok2 && ok3 && ok4 && ok5) || (pol != positive && pol != negative) {
			return nil, fmt.Errorf("ground: derived_fact_deltas/%d is not a derived FactDelta", i)
		}
		out = append(out, DerivedDelta{Polarity: pol, Delta: protocol.FactDelta{
			Kind:            strs[0],
			Tuple:           protocol.Object(cloneValue(tuple).(map[string]any)),
			LogicalTime:     lt,
			Diff:            diff,
			DerivationID:    strs[1],
			CausationID:     strs[2],
			ProvenanceDelta: protocol.Object(cloneValue(prov).(map[string]any)),
			RuleSetVersion:  strs[3],
			DataflowVersion: strs[4],
		}})
	}
	return out, nil
}

// FactState is the four-valued state of one atom in a materialization.
type FactState struct {
	Atom     map[string]any
	FactKey  string
	State    string // Neither, TrueOnly, FalseOnly or Both
	Positive []string
	Negative []string
}

// FactStates returns the fact states of an LMaterialization (for example a
// fixpoint's next_materialization) in their canonical order.
func FactStates(materialization map[string]any) ([]FactState, error) {
	raw, ok := materialization["fact_states"].([]any)
	if !ok {
		return nil, fmt.Errorf("ground: not an LMaterialization: no fact_states")
	}
	out := make([]FactState, 0, len(raw))
	for i, item := range raw {
		w, _ := item.(map[string]any)
		a, ok1 := w["atom"].(map[string]any)
		fk, ok2 := w["fact_key"].(string)
		st, ok3 := w["state"].(string)
		p, ok4 := stringList(w["positive_support_ids"])
		n, ok5 := stringList(w["negative_support_ids"])
		if !(ok1 && ok2 && ok3 && ok4 && ok5) {
			return nil, fmt.Errorf("ground: fact_states/%d is not an LFactState", i)
		}
		out = append(out, FactState{Atom: cloneValue(a).(map[string]any), FactKey: fk, State: st, Positive: p, Negative: n})
	}
	return out, nil
}

func stringList(v any) ([]string, bool) {
	xs, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}
