package ground

import "testing"

// FuzzSealedBundle lets the fuzzer write rule bundles freely: drafts are
// sealed (digests computed), so mutations reach the evaluator instead of
// stopping at a digest check. Accepted results must satisfy the
// materialization invariants and agree with the incremental step.
func FuzzSealedBundle(f *testing.F) {
	for _, name := range []string{"two_supports", "lower_stratum_default", "positive_cycle", "firing_budget_one"} {
		b := buildBundle(m2, name, false)
		delete(b, "rule_bundle_digest")
		for _, r := range b["rules"].([]any) {
			delete(r.(map[string]any), "rule_digest")
		}
		ins := buildDeltas(m2, []string{"a_positive", "b_positive", "candidate_positive", "seed_positive", "blocked_negative"}, 1, b)
		f.Add(mustCanonical(b), mustCanonical(ins))
	}
	f.Fuzz(func(t *testing.T, draftText, inputText []byte) {
		draft, err := Decode(draftText)
		if err != nil {
			return
		}
		inputs, err := Decode(inputText)
		if err != nil {
			return
		}
		b, rej := SealBundle(draft)
		if rej != nil {
			if rej.Code == CodeInvariantViolation {
				t.Fatalf("seal: internal failure %v", rej.Wire())
			}
			return
		}
		res, rej := Solve(nil, b, inputs, 1)
		if rej != nil {
			if rej.Code == CodeInvariantViolation {
				t.Fatalf("solve: internal failure %v", rej.Wire())
			}
			return
		}
		checkResultInvariants(t, res)
		step, srej := StepIncremental(nil, b, inputs, 1)
		if srej != nil || string(mustCanonical(step["fixpoint_result"])) != string(mustCanonical(res)) {
			t.Fatalf("incremental step disagrees: %v", srej)
		}
	})
}
