package ground_test

import (
	"fmt"

	"flrh.dev/flrh/logic/ground"
)

// A change may deploy when it is ready, unless its service is frozen.
// Readiness is derived in stratum 0; the default negation of "frozen" looks
// at the completed stratum 0.
func Example() {
	draft, _ := ground.Decode([]byte(`{
	  "kind": "LRuleBundle", "schema_version": "flrh-l-rules/1",
	  "contract_version": "flrh-l-kernel/1", "profile_id": "flrh-l-ground-stratified/1",
	  "rule_set_version": "rules/1", "dataflow_version": "dataflow/1",
	  "canonicalization_version": "flrh-cjson/1",
	  "limits": {"max_rule_firings": 10, "max_derivation_depth": 4},
	  "query_atoms": [{"p": "may_deploy"}],
	  "rules": [
	    {"kind": "LRule", "rule_id": "rule:ready", "stratum": 0,
	     "head": {"kind": "LLiteral", "polarity": "positive", "atom": {"p": "ready"}},
	     "required_body": [{"kind": "LLiteral", "polarity": "positive", "atom": {"p": "tested"}}],
	     "default_not_positive_body": []},
	    {"kind": "LRule", "rule_id": "rule:may-deploy", "stratum": 1,
	     "head": {"kind": "LLiteral", "polarity": "positive", "atom": {"p": "may_deploy"}},
	     "required_body": [{"kind": "LLiteral", "polarity": "positive", "atom": {"p": "ready"}}],
	     "default_not_positive_body": [{"kind": "LDefaultNotPositive", "atom": {"p": "frozen"}, "referenced_stratum": 0}]}
	  ]}`))
	bundle, rej := ground.SealBundle(draft) // computes the rule and bundle digests
	if rej != nil {
		fmt.Println(rej)
		return
	}
	fact := func(p, id string, t int64) any {
		return map[string]any{"kind": "LFactDeltaInput", "schema_version": "flrh-l-input/1", "polarity": "positive",
			"delta": map[string]any{"kind": "FactDelta", "tuple": map[string]any{"p": p}, "logical_time": t, "diff": int64(1),
				"derivation_id": id, "causation_id": "event:" + id, "provenance_delta": map[string]any{"source": "example"},
				"rule_set_version": "rules/1", "dataflow_version": "dataflow/1"}}
	}
	show := func(res map[string]any) {
		states, _ := ground.FactStates(res["next_materialization"].(map[string]any))
		for _, s := range states {
			fmt.Printf("  %v %s\n", s.Atom["p"], s.State)
		}
	}
	first, _ := ground.Solve(nil, bundle, []any{fact("tested", "ci:1", 1)}, 1)
	fmt.Println("after the test run:")
	show(first)
	second, _ := ground.Solve(first["next_materialization"], bundle, []any{fact("frozen", "calendar:1", 2)}, 2)
	fmt.Println("after the freeze:")
	show(second)
	deltas, _ := ground.DerivedDeltas(second)
	for _, d := range deltas {
		fmt.Printf("derived change: %+d %v\n", d.Delta.Diff, d.Delta.Tuple["p"])
	}
	// Output:
	// after the test run:
	//   may_deploy TRUE_ONLY
	//   ready TRUE_ONLY
	//   tested TRUE_ONLY
	// after the freeze:
	//   frozen TRUE_ONLY
	//   may_deploy NEITHER
	//   ready TRUE_ONLY
	//   tested TRUE_ONLY
	// derived change: -1 may_deploy
}
