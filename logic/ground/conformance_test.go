package ground

import (
	"slices"
	"testing"

	"flrh.dev/flrh/protocol"
)

// stateOf finds the state and support counts of an atom in a fixpoint.
func stateOf(t *testing.T, res map[string]any, a map[string]any) (string, int, int) {
	t.Helper()
	key := string(mustCanonical(a))
	for _, s := range get(res, "next_materialization", "fact_states").([]any) {
		st := s.(map[string]any)
		if string(mustCanonical(st["atom"])) == key {
			return st["state"].(string), len(st["positive_support_ids"].([]any)), len(st["negative_support_ids"].([]any))
		}
	}
	return "", 0, 0
}

// Transcribed from the reference success_cases.
func TestSuccessCases(t *testing.T) {
	cases := []struct {
		id     string
		bundle string
		deltas []string
		states map[string]string
		posN   map[string]int
		negN   map[string]int
	}{
		{"m1-positive-seam", "m1_empty", []string{"$m1_positive_seam"}, nil, nil, nil},
		{"four-truth-states", "truth_states", []string{"true_positive", "false_negative", "both_positive", "both_negative"},
			map[string]string{"neither": Neither, "true_only": TrueOnly, "false_only": FalseOnly, "both": Both}, nil, nil},
		{"two-supports-and-downstream", "two_supports", []string{"a_positive", "b_positive"},
			map[string]string{"a": TrueOnly, "b": TrueOnly, "c": TrueOnly, "d": TrueOnly}, map[string]int{"c": 2, "d": 1}, nil},
		{"lower-stratum-completes-before-default-negation", "lower_stratum_default", []string{"candidate_positive", "seed_positive"},
			map[string]string{"mid": TrueOnly, "blocked": TrueOnly, "eligible": Neither}, nil, nil},
		{"default-negation-after-empty-lower-stratum", "lower_stratum_default", []string{"candidate_positive"},
			map[string]string{"mid": Neither, "blocked": Neither, "eligible": TrueOnly}, map[string]int{"eligible": 1}, nil},
		{"default-negation-accepts-false-only", "lower_stratum_default", []string{"candidate_positive", "blocked_negative"},
			map[string]string{"blocked": FalseOnly, "eligible": TrueOnly}, map[string]int{"eligible": 1}, map[string]int{"blocked": 1}},
		{"default-negation-rejects-both", "lower_stratum_default", []string{"candidate_positive", "blocked_positive", "blocked_negative"},
			map[string]string{"blocked": Both, "eligible": Neither}, map[string]int{"blocked": 1}, map[string]int{"blocked": 1}},
		{"exact-duplicate-batch-idempotent", "empty", []string{"a_positive", "a_positive_duplicate"},
			map[string]string{"a": TrueOnly}, map[string]int{"a": 1}, nil},
		{"exact-budget-boundary", "one_firing_exact", []string{"a_positive"},
			map[string]string{"a": TrueOnly, "b": TrueOnly}, map[string]int{"b": 1}, nil},
		{"opaque-authority-shaped-data-is-inert", "empty", []string{"authority_shaped_positive"},
			map[string]string{"a": Neither, "authority_shaped": TrueOnly}, map[string]int{"authority_shaped": 1}, nil},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			b := buildBundle(m2, c.bundle, false)
			inputs := buildDeltas(m2, c.deltas, 1, b)
			res, rej := Solve(nil, b, inputs, 1)
			if rej != nil {
				t.Fatalf("rejected: %v", rej.Wire())
			}
			// Every accepted input wraps an exact protocol FactDelta.
			for _, in := range inputs {
				if err := protocol.ValidateValue(protocol.KindFactDelta, get(in, "delta")); err != nil {
					t.Errorf("accepted input is not a protocol FactDelta: %v", err)
				}
			}
			for ref, want := range c.states {
				if got, _, _ := stateOf(t, res, m2.atoms[ref]); got != want {
					t.Errorf("%s: state %q, want %q", ref, got, want)
				}
			}
			for ref, want := range c.posN {
				if _, got, _ := stateOf(t, res, m2.atoms[ref]); got != want {
					t.Errorf("%s: %d positive supports, want %d", ref, got, want)
				}
			}
			for ref, want := range c.negN {
				if _, _, got := stateOf(t, res, m2.atoms[ref]); got != want {
					t.Errorf("%s: %d negative supports, want %d", ref, got, want)
				}
			}
			checkResultInvariants(t, res)
		})
	}
	// The M1 seam: the exact protocol FactDelta passes through with its own
	// versions and logical time, observation_recorded is TRUE_ONLY.
	b := buildBundle(m2, "m1_empty", false)
	res, rej := Solve(nil, b, buildDeltas(m2, []string{"$m1_positive_seam"}, 1, b), 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	if got, _, _ := stateOf(t, res, m2.seam["tuple"].(map[string]any)); got != TrueOnly {
		t.Errorf("observation_recorded = %q", got)
	}
}

// checkResultInvariants checks the contract's materialization invariants.
func checkResultInvariants(t reporter, res map[string]any) {
	t.Helper()
	mat := res["next_materialization"].(map[string]any)
	ids := map[string]string{} // support id -> polarity
	for _, field := range []string{"base_supports", "derived_supports"} {
		for _, s := range mat[field].([]any) {
			id := get(s, "derivation_id").(string)
			if _, dup := ids[id]; dup {
				t.Errorf("support %s appears twice", id)
			}
			ids[id] = get(s, "literal", "polarity").(string)
		}
	}
	seen := map[string]int{}
	conflicts := 0
	for _, s := range mat["fact_states"].([]any) {
		st := s.(map[string]any)
		p, n := st["positive_support_ids"].([]any), st["negative_support_ids"].([]any)
		if want := TruthState(len(p), len(n)); st["state"] != want {
			t.Errorf("state %v with %d/%d supports", st["state"], len(p), len(n))
		}
		if st["state"] == Both {
			conflicts++
		}
		for _, id := range p {
			seen[id.(string)]++
			if ids[id.(string)] != positive {
				t.Errorf("%v listed positive", id)
			}
		}
		for _, id := range n {
			seen[id.(string)]++
			if ids[id.(string)] != negative {
				t.Errorf("%v listed negative", id)
			}
		}
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("support %s listed %d times in fact states", id, seen[id])
		}
	}
	if got := len(mat["conflicts"].([]any)); got != conflicts {
		t.Errorf("%d conflicts for %d BOTH states", got, conflicts)
	}
	// Every set-like collection is canonical-byte sorted without duplicates.
	for _, field := range []string{"base_supports", "derived_supports", "fact_states", "conflicts", "stratum_digests"} {
		assertCanonicalSet(t, field, mat[field].([]any))
	}
	assertCanonicalSet(t, "derived_fact_deltas", res["derived_fact_deltas"].([]any))
	// Every emitted derived FactDelta is an exact protocol FactDelta whose
	// provenance collections are canonical sets.
	for _, d := range res["derived_fact_deltas"].([]any) {
		assertCanonicalSet(t, "premise_literal_keys", get(d, "delta", "provenance_delta", "premise_literal_keys").([]any))
		assertCanonicalSet(t, "default_absence_witness_digests", get(d, "delta", "provenance_delta", "default_absence_witness_digests").([]any))
		if err := protocol.ValidateValue(protocol.KindFactDelta, get(d, "delta")); err != nil {
			t.Errorf("emitted FactDelta fails the protocol schema: %v", err)
		}
	}
	assertCanonicalSet(t, "input_delta_digests", res["input_delta_digests"].([]any))
	// Digests bind exactly their preimages.
	if want := digestOf(obj("kind", "M2MaterializationPreimage", "contract_version", ContractVersion,
		"materialization_without_materialization_digest", withoutKey(mat, "materialization_digest"))); mat["materialization_digest"] != want {
		t.Errorf("materialization_digest does not bind the materialization")
	}
	if want := digestOf(obj("kind", "M2FixpointPreimage", "contract_version", ContractVersion,
		"fixpoint_result_without_fixpoint_digest", withoutKey(res, "fixpoint_digest"))); res["fixpoint_digest"] != want {
		t.Errorf("fixpoint_digest does not bind the result")
	}
}

// reporter is what the invariant checks need from *testing.T or *rapid.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

func assertCanonicalSet(t reporter, name string, xs []any) {
	t.Helper()
	for i := 1; i < len(xs); i++ {
		if canonicalOrder(xs[i-1], xs[i]) >= 0 {
			t.Errorf("%s not strictly canonical-sorted at %d", name, i)
		}
	}
}

type mutation struct {
	target string // "rule_bundle" or "fact_delta_inputs"
	path   []any
	value  any
}

func applyMutation(b map[string]any, deltas []any, m mutation) {
	var target any = b
	if m.target == "fact_delta_inputs" {
		target = deltas
	}
	for _, p := range m.path[:len(m.path)-1] {
		switch x := p.(type) {
		case string:
			target = target.(map[string]any)[x]
		case int:
			target = target.([]any)[x]
		}
	}
	switch x := m.path[len(m.path)-1].(type) {
	case string:
		target.(map[string]any)[x] = cloneValue(m.value)
	case int:
		target.([]any)[x] = cloneValue(m.value)
	}
}

// Transcribed from the reference rejection_cases.
func TestRejectionCases(t *testing.T) {
	cases := []struct {
		id       string
		bundle   string
		deltas   []string
		muts     []mutation
		code     string
		path     string
		supplied bool // rule_bundle_digest is the bundle's (else null)
		context  map[string]any
	}{
		{"negative-cycle", "negative_cycle", nil, nil, CodeOutsideV0NegativeRecursion, "/rule_bundle/rules", true,
			obj("rule_id", "rule:b-not-a", "source_stratum", int64(0), "target_stratum", int64(0))},
		{"unknown-retraction", "empty", []string{"unknown_retract"}, nil, CodeUnknownDerivation, "/fact_delta_inputs", true,
			obj("derivation_id", "derivation:missing")},
		{"identity-conflict-atomic", "empty", []string{"a_positive", "a_identity_conflict"}, nil, CodeDerivationIdentityConflict, "/fact_delta_inputs", true,
			obj("derivation_id", "derivation:base:a")},
		{"mixed-valid-invalid-retraction-atomic", "empty", []string{"a_positive", "unknown_retract"}, nil, CodeUnknownDerivation, "/fact_delta_inputs", true,
			obj("derivation_id", "derivation:missing")},
		{"mixed-add-retract-same-id-atomic", "empty", []string{"a_positive", "a_positive_retract"}, nil, CodeAmbiguousBatchDelta, "/fact_delta_inputs", true,
			obj("derivation_id", "derivation:base:a")},
		{"double-retract-same-batch-atomic", "empty", []string{"a_positive_retract", "a_positive_retract"}, nil, CodeAmbiguousBatchDelta, "/fact_delta_inputs", true,
			obj("derivation_id", "derivation:base:a")},
		{"firing-budget", "firing_budget_one", []string{"a_positive"}, nil, CodeRuleBudgetExhausted, "/rule_bundle/limits/max_rule_firings", true,
			obj("limit", int64(1), "observed", int64(2))},
		{"depth-budget", "depth_budget_one", []string{"a_positive"}, nil, CodeDerivationDepthExceeded, "/rule_bundle/limits/max_derivation_depth", true,
			obj("limit", int64(1), "observed", int64(2))},
		{"malformed-rule-kind", "one_firing_exact", nil, []mutation{{"rule_bundle", []any{"rules", 0, "kind"}, "NotLRule"}},
			CodeMalformedRuleBundle, "/rule_bundle/rules/0/kind", false, obj()},
		{"unconditional-rule", "one_firing_exact", nil, []mutation{{"rule_bundle", []any{"rules", 0, "required_body"}, []any{}}},
			CodeMalformedRuleBundle, "/rule_bundle/rules/0", false, obj("invariant", "rule_requires_evidence_or_completed_absence_root")},
		{"rule-set-version-mismatch", "empty", []string{"a_positive"}, []mutation{{"fact_delta_inputs", []any{0, "delta", "rule_set_version"}, "rules/mismatch/1"}},
			CodeRuleSetVersionMismatch, "/fact_delta_inputs/0/delta/rule_set_version", true, obj("expected", "rules/m2-test/1", "actual", "rules/mismatch/1")},
		{"derived-support-target", "one_firing_exact", []string{"a_derived_id_collision"}, nil, CodeDerivedSupportTarget, "/fact_delta_inputs", true,
			obj("derivation_id", "derivation:18cb2e5a834a0ba8feac7a31c7f591237c24c1fb5af0244e234de736da0eb316")},
		{"rule-provenance-integrity", "one_firing_exact", nil,
			[]mutation{{"rule_bundle", []any{"rules", 0, "rule_digest"}, "sha256:0000000000000000000000000000000000000000000000000000000000000000"}},
			CodeProvenanceIntegrityViolation, "/rule_bundle/rules/0/rule_digest", false,
			obj("expected", "sha256:788b4fb6bd6f66d5cdb7450e2cc07efb1cb05ce50cfc76cd169a003cee04540f",
				"actual", "sha256:0000000000000000000000000000000000000000000000000000000000000000", "rule_id", "rule:b-from-a")},
		{"invalid-positive-stratification", "invalid_stratification", nil, nil, CodeInvalidStratification, "/rule_bundle/rules", true,
			obj("rule_id", "rule:c-from-b-lower", "source_stratum", int64(1), "target_stratum", int64(0))},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			b := buildBundle(m2, c.bundle, false)
			supplied := b["rule_bundle_digest"].(string)
			deltas := buildDeltas(m2, c.deltas, 1, b)
			for _, m := range c.muts {
				applyMutation(b, deltas, m)
			}
			before := mustCanonical(obj("b", b, "d", deltas))
			res, rej := Solve(nil, b, deltas, 1)
			if rej == nil {
				t.Fatalf("accepted: %v", res["fixpoint_digest"])
			}
			if rej.Code != c.code || rej.Path != c.path {
				t.Errorf("got %s at %s, want %s at %s", rej.Code, rej.Path, c.code, c.path)
			}
			wantDigest := any(nil)
			if c.supplied {
				wantDigest = supplied
			}
			if got := rej.Wire()["rule_bundle_digest"]; got != wantDigest {
				t.Errorf("rule_bundle_digest = %v, want %v", got, wantDigest)
			}
			if rej.LogicalTime == nil || *rej.LogicalTime != 1 {
				t.Errorf("logical_time = %v", rej.LogicalTime)
			}
			if g, w := string(mustCanonical(rej.Context)), string(mustCanonical(c.context)); g != w {
				t.Errorf("context %s, want %s", g, w)
			}
			if after := mustCanonical(obj("b", b, "d", deltas)); string(after) != string(before) {
				t.Errorf("a rejection modified its inputs")
			}
		})
	}
}

// Transcribed from the reference sequences.
func TestSequences(t *testing.T) {
	t.Run("two-support-retain-then-remove", func(t *testing.T) {
		res, rej := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}, {"a_positive_retract"}, {"b_positive_retract"}})
		if rej != nil {
			t.Fatal(rej.Wire())
		}
		// c keeps one support after a goes, and loses it when b goes.
		want := [][]string{{TrueOnly, TrueOnly}, {TrueOnly, TrueOnly}, {Neither, Neither}}
		for i, w := range want {
			c, _, _ := stateOf(t, res[i], m2.atoms["c"])
			d, _, _ := stateOf(t, res[i], m2.atoms["d"])
			if c != w[0] || d != w[1] {
				t.Errorf("step %d: c=%s d=%s, want %v", i, c, d, w)
			}
			checkResultInvariants(t, res[i])
		}
		if _, n, _ := stateOf(t, res[1], m2.atoms["c"]); n != 1 {
			t.Errorf("c keeps %d supports after one retraction, want 1", n)
		}
		if n := len(res[2]["derived_fact_deltas"].([]any)); n != 2 {
			t.Errorf("final retraction emitted %d derived deltas, want 2", n)
		}
	})
	t.Run("positive-cycle-delete", func(t *testing.T) {
		res, rej := runSequence(t, m2, "positive_cycle", [][]string{{"a_positive"}, {"a_positive_retract"}})
		if rej != nil {
			t.Fatal(rej.Wire())
		}
		for _, ref := range []string{"a", "b", "c"} {
			if s, _, _ := stateOf(t, res[0], m2.atoms[ref]); s != TrueOnly {
				t.Errorf("step 0 %s = %s", ref, s)
			}
			// No rootless support survives the deletion of the cycle's root.
			if s, _, _ := stateOf(t, res[1], m2.atoms[ref]); s != Neither {
				t.Errorf("step 1 %s = %s", ref, s)
			}
		}
		if n := len(get(res[1], "next_materialization", "derived_supports").([]any)); n != 0 {
			t.Errorf("%d derived supports survive", n)
		}
	})
	t.Run("duplicate-then-double-retract", func(t *testing.T) {
		res, rej := runSequence(t, m2, "empty", [][]string{{"a_positive"}, {"a_positive_duplicate"}, {"a_positive_retract"}, {"a_positive_retract"}})
		if len(res) != 3 || rej == nil {
			t.Fatalf("accepted %d steps, rejection %v", len(res), rej)
		}
		if rej.Code != CodeUnknownDerivation || rej.Path != "/fact_delta_inputs" || rej.Context["derivation_id"] != "derivation:base:a" {
			t.Errorf("terminal rejection %v", rej.Wire())
		}
		if _, n, _ := stateOf(t, res[1], m2.atoms["a"]); n != 1 {
			t.Errorf("duplicate +1 gave %d supports", n)
		}
	})
}

// Transcribed from the reference equivalence_pairs, plus every permutation
// of a larger batch.
func TestEquivalencePairs(t *testing.T) {
	base := buildBundle(m2, "two_supports", false)
	deltas := buildDeltas(m2, []string{"a_positive", "b_positive"}, 1, base)
	want, rej := Solve(nil, base, deltas, 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	rev := buildBundle(m2, "two_supports", true)
	got, _ := Solve(nil, rev, deltas, 1)
	if string(mustCanonical(got)) != string(mustCanonical(want)) {
		t.Error("rule order changed the result")
	}
	revDeltas := slices.Clone(deltas)
	slices.Reverse(revDeltas)
	got, _ = Solve(nil, base, revDeltas, 1)
	if string(mustCanonical(got)) != string(mustCanonical(want)) {
		t.Error("input order changed the result")
	}
}

// A retraction naming a derived support of the prior is refused as such,
// not as an unknown derivation: derived supports are not the caller's.
func TestRetractDerivedSupport(t *testing.T) {
	b := buildBundle(m2, "one_firing_exact", false)
	first, rej := Solve(nil, b, buildDeltas(m2, []string{"a_positive"}, 1, b), 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	derived := get(first, "next_materialization", "derived_supports").([]any)[0].(map[string]any)
	in := buildDelta(m2, "a_positive_retract", 2, b)
	d := in["delta"].(map[string]any)
	d["derivation_id"] = derived["derivation_id"]
	d["tuple"] = cloneValue(get(derived, "literal", "atom"))
	_, rej = Solve(first["next_materialization"], b, []any{in}, 2)
	if rej == nil || rej.Code != CodeDerivedSupportTarget || rej.Context["derivation_id"] != derived["derivation_id"] {
		t.Fatalf("retracting a derived support: %v", rej)
	}
}

// A derived delta's default_absence_witness_digests are sorted as digests,
// not in the order of the witnesses themselves (which sort by atom first).
func TestAbsenceWitnessDigestsSorted(t *testing.T) {
	differs := 0
	for v := range 8 {
		c := corpus{atoms: map[string]atomT{}, bundles: map[string]bundleT{}, deltas: map[string]deltaT{}}
		for _, n := range []string{"seed", "p", "q", "r", "out"} {
			c.atoms[n] = obj("predicate", n, "variant", int64(v))
		}
		c.deltas["seed"] = deltaT{ref: "seed", polarity: positive, diff: 1, derivationID: "derivation:seed"}
		c.bundles["b"] = bundleT{maxFirings: 10, maxDepth: 4, rules: []ruleT{
			r("rule:out", 1, pos("out"), []litT{pos("seed")}, defT{"p", 0}, defT{"q", 0}, defT{"r", 0}),
			r("rule:p", 0, pos("p"), []litT{neg("seed")}),
		}}
		b := buildBundle(c, "b", false)
		res, rej := Solve(nil, b, buildDeltas(c, []string{"seed"}, 1, b), 1)
		if rej != nil {
			t.Fatal(rej.Wire())
		}
		checkResultInvariants(t, res)
		ds := get(res, "next_materialization", "derived_supports").([]any)
		if len(ds) != 1 {
			t.Fatalf("%d derived supports", len(ds))
		}
		ws := get(ds[0], "default_absence_witnesses").([]any)
		for i := 1; i < len(ws); i++ {
			if get(ws[i-1], "witness_digest").(string) > get(ws[i], "witness_digest").(string) {
				differs++
				break
			}
		}
	}
	if differs == 0 {
		t.Error("no variant orders witnesses differently from their digests; the test proves nothing")
	}
}
