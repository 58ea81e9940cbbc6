package ground

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/protocol"
)

// An exact protocol FactDelta wraps into an input unchanged, and derived
// deltas come back as protocol values that validate and re-encode to the
// emitted bytes.
func TestProtocolViews(t *testing.T) {
	b := buildBundle(m2, "two_supports", false)
	in := buildDelta(m2, "a_positive", 1, b)
	var fd protocol.FactDelta
	d := in["delta"].(map[string]any)
	fd.Kind, fd.Tuple, fd.LogicalTime, fd.Diff = d["kind"].(string), protocol.Object(d["tuple"].(map[string]any)), 1, 1
	fd.DerivationID, fd.CausationID = d["derivation_id"].(string), d["causation_id"].(string)
	fd.ProvenanceDelta = protocol.Object(d["provenance_delta"].(map[string]any))
	fd.RuleSetVersion, fd.DataflowVersion = d["rule_set_version"].(string), d["dataflow_version"].(string)
	if got := Input(positive, fd); string(mustCanonical(got)) != string(mustCanonical(in)) {
		t.Fatalf("Input changed the delta:\n%s\n%s", mustCanonical(got), mustCanonical(in))
	}
	res, rej := Solve(nil, b, []any{Input(positive, fd)}, 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	ds, err := DerivedDeltas(res)
	if err != nil || len(ds) != 2 {
		t.Fatalf("DerivedDeltas: %v %v", ds, err)
	}
	for i, dd := range ds {
		if err := protocol.Check(dd.Delta); err != nil {
			t.Errorf("derived delta %d invalid: %v", i, err)
		}
		if got, want := mustCanonical(Input(dd.Polarity, dd.Delta)), mustCanonical(res["derived_fact_deltas"].([]any)[i]); string(got) != string(want) {
			t.Errorf("derived delta %d does not round-trip", i)
		}
	}
	states, err := FactStates(res["next_materialization"].(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range states {
		got[s.Atom["predicate"].(string)] = fmt.Sprintf("%s+%d-%d", s.State, len(s.Positive), len(s.Negative))
	}
	want := map[string]string{"a": "TRUE_ONLY+1-0", "b": "NEITHER+0-0", "c": "TRUE_ONLY+1-0", "d": "TRUE_ONLY+1-0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("FactStates = %v, want %v", got, want)
	}
	if _, err := DerivedDeltas(map[string]any{}); err == nil {
		t.Error("DerivedDeltas accepted a non-result")
	}
	if _, err := FactStates(map[string]any{"fact_states": []any{1}}); err == nil {
		t.Error("FactStates accepted garbage")
	}
}
