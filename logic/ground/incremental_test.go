package ground

import (
	"strings"
	"testing"
)

// runSteps feeds a sequence through StepIncremental and returns every step.
func runSteps(t *testing.T, c corpus, bundleName string, steps [][]string) []map[string]any {
	t.Helper()
	b := buildBundle(c, bundleName, false)
	var cp any
	var out []map[string]any
	for i, refs := range steps {
		lt := int64(i + 1)
		deltas := buildDeltas(c, refs, lt, b)
		step, rej := StepIncremental(cp, b, deltas, lt)
		if rej != nil {
			t.Fatalf("step %d rejected: %v", i, rej.Wire())
		}
		// The candidate is always the public fixpoint, byte for byte.
		var prior any
		if cp != nil {
			prior = cp.(map[string]any)["materialization"]
		}
		oracle, orej := Solve(prior, b, deltas, lt)
		if orej != nil || string(mustCanonical(oracle)) != string(mustCanonical(step["fixpoint_result"])) {
			t.Fatalf("step %d differs from Solve", i)
		}
		checkStepDigests(t, step)
		out = append(out, step)
		cp = step["next_checkpoint"]
	}
	return out
}

func checkStepDigests(t *testing.T, step map[string]any) {
	t.Helper()
	cp := step["next_checkpoint"].(map[string]any)
	if want := digestOf(obj("kind", "M2ILCheckpointPreimage", "contract_version", PersistentContract,
		"checkpoint_without_checkpoint_digest", withoutKey(cp, "checkpoint_digest"))); cp["checkpoint_digest"] != want {
		t.Error("checkpoint_digest does not bind the checkpoint")
	}
	rc := step["reuse_receipt"].(map[string]any)
	if want := digestOf(obj("kind", "M2ILReuseReceiptPreimage", "contract_version", PersistentContract,
		"receipt_without_receipt_digest", withoutKey(rc, "receipt_digest"))); rc["receipt_digest"] != want {
		t.Error("receipt_digest does not bind the receipt")
	}
	if want := digestOf(obj("kind", "M2ILStepPreimage", "contract_version", PersistentContract,
		"step_without_step_digest", withoutKey(step, "step_digest"))); step["step_digest"] != want {
		t.Error("step_digest does not bind the step")
	}
	if rc["next_checkpoint_digest"] != cp["checkpoint_digest"] || rc["candidate_fixpoint_digest"] != rc["oracle_fixpoint_digest"] {
		t.Error("receipt bindings broken")
	}
	assertCanonicalSet(t, "evaluation_cache", cp["evaluation_cache"].([]any))
	n := func(k string) int64 { return rc[k].(int64) }
	if n("candidate_cache_lookups") != n("candidate_cache_hits")+n("candidate_cache_misses") ||
		n("accounted_candidate_body_evaluations") != n("reused_candidate_body_evaluations")+n("executed_candidate_body_evaluations") {
		t.Errorf("receipt counters do not add up: %v", rc)
	}
}

func receipt(step map[string]any, key string) int64 {
	return get(step, "reuse_receipt", key).(int64)
}

// Transcribed from the reference M2-IL sequences and their expected reuse.
func TestIncrementalDisjointChain(t *testing.T) {
	steps := runSteps(t, m2il, "disjoint_chain", [][]string{{"a+", "x+"}, {}, {"u+"}, {"a-"}})
	if got := get(steps[2], "fixpoint_result", "fixpoint_digest"); got != "sha256:4abf465f6e093006ebc7325a1fee1034f357b56c3a1b426a1c92d0a12bd57a87" {
		t.Errorf("insertion-reuse fixpoint %v", got)
	}
	if got := get(steps[3], "fixpoint_result", "fixpoint_digest"); got != "sha256:2b6e97029d771e6749b39353fce8fe2fa03994c0f726662eaaf6c10104ca266b" {
		t.Errorf("retraction-reuse fixpoint %v", got)
	}
	if h := receipt(steps[0], "candidate_cache_hits"); h != 0 {
		t.Errorf("bootstrap hits %d", h)
	}
	// A no-op step reuses every cached body and executes none.
	if h, e := receipt(steps[1], "candidate_cache_hits"), receipt(steps[1], "executed_candidate_body_evaluations"); h != 4 || e != 0 {
		t.Errorf("no-op step: %d hits, %d executed", h, e)
	}
	if h := receipt(steps[2], "candidate_cache_hits"); h != 4 {
		t.Errorf("unrelated insert: %d hits, want 4", h)
	}
	if h := receipt(steps[3], "candidate_cache_hits"); h != 2 {
		t.Errorf("root retraction: %d hits, want 2", h)
	}
}

func TestIncrementalDefaultFlipAndSigned(t *testing.T) {
	steps := runSteps(t, m2il, "default_flip", [][]string{{"candidate+"}, {"blocked+"}, {"blocked_false+"}, {"blocked-"}})
	want := [][2]string{{Neither, TrueOnly}, {TrueOnly, Neither}, {Both, Neither}, {FalseOnly, TrueOnly}}
	for i, w := range want {
		b, _, _ := stateOf(t, steps[i]["fixpoint_result"].(map[string]any), m2il.atoms["blocked"])
		e, _, _ := stateOf(t, steps[i]["fixpoint_result"].(map[string]any), m2il.atoms["eligible"])
		if b != w[0] || e != w[1] {
			t.Errorf("step %d: blocked=%s eligible=%s, want %v", i, b, e, w)
		}
	}
	signed := runSteps(t, m2il, "signed", [][]string{{"p_false+"}, {"p_true+"}, {"p_false-"}})
	q0, _, _ := stateOf(t, signed[0]["fixpoint_result"].(map[string]any), m2il.atoms["q"])
	p1, _, _ := stateOf(t, signed[1]["fixpoint_result"].(map[string]any), m2il.atoms["p"])
	q2, _, _ := stateOf(t, signed[2]["fixpoint_result"].(map[string]any), m2il.atoms["q"])
	if q0 != FalseOnly || p1 != Both || q2 != Neither {
		t.Errorf("signed: q0=%s p1=%s q2=%s", q0, p1, q2)
	}
	d := get(signed[2], "fixpoint_result", "derived_fact_deltas").([]any)
	if len(d) != 1 || get(d[0], "delta", "diff") != int64(-1) || get(d[0], "polarity") != negative {
		t.Errorf("final derived deltas %v", d)
	}
}

// The inherited M2 sequences and cases pass through the incremental step
// unchanged (checked against Solve inside runSteps).
func TestIncrementalInherited(t *testing.T) {
	runSteps(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}, {"a_positive_retract"}, {"b_positive_retract"}})
	runSteps(t, m2, "positive_cycle", [][]string{{"a_positive"}, {"a_positive_retract"}})
	runSteps(t, m2, "empty", [][]string{{"a_positive", "a_positive_duplicate"}})
	b := buildBundle(m2, "empty", false)
	deltas := buildDeltas(m2, []string{"a_positive", "a_identity_conflict"}, 1, b)
	_, rej := StepIncremental(nil, b, deltas, 1)
	_, want := Solve(nil, b, deltas, 1)
	if rej == nil || rej.Kind != KindRejection || string(mustCanonical(rej.Wire())) != string(mustCanonical(want.Wire())) {
		t.Errorf("inherited rejection not passed through: %v", rej)
	}
}

// redigest recomputes a forged checkpoint's entry and checkpoint digests so
// that only the semantic checks can catch the forgery.
func redigest(cp map[string]any) {
	cache := cp["evaluation_cache"].([]any)
	for _, e := range cache {
		m := e.(map[string]any)
		m["entry_digest"] = digestOf(obj("kind", "M2ILCacheEntryPreimage", "contract_version", PersistentContract,
			"entry_without_entry_digest", withoutKey(m, "entry_digest")))
	}
	cp["evaluation_cache"] = canonicalSorted(cache)
	cp["checkpoint_digest"] = digestOf(obj("kind", "M2ILCheckpointPreimage", "contract_version", PersistentContract,
		"checkpoint_without_checkpoint_digest", withoutKey(cp, "checkpoint_digest")))
}

func TestCheckpointTampering(t *testing.T) {
	b := buildBundle(m2il, "disjoint_chain", false)
	first, rej := StepIncremental(nil, b, buildDeltas(m2il, []string{"a+", "x+"}, 1, b), 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	fresh := func() map[string]any { return cloneValue(first["next_checkpoint"]).(map[string]any) }
	cases := []struct {
		name   string
		forge  func(cp map[string]any)
		code   string
		suffix string
	}{
		{"digest", func(cp map[string]any) { cp["materialization_digest"] = "sha256:" + strings.Repeat("0", 64) },
			CodeCheckpointDigestMismatch, "/prior_checkpoint/checkpoint_digest"},
		{"missing-cache", func(cp map[string]any) { delete(cp, "evaluation_cache") }, CodeMalformedCheckpoint, "/prior_checkpoint"},
		{"schema", func(cp map[string]any) { cp["schema_version"] = "unsupported/1" }, CodeUnsupportedPersistentSchema, "/prior_checkpoint/schema_version"},
		{"m2-profile", func(cp map[string]any) { cp["m2_profile_id"] = "wrong/1"; redigest(cp) }, CodeUnsupportedPersistentSchema, "/prior_checkpoint/m2_profile_id"},
		{"bundle-binding", func(cp map[string]any) { cp["rule_bundle_digest"] = "sha256:" + strings.Repeat("1", 64); redigest(cp) },
			CodeCheckpointBindingMismatch, "/prior_checkpoint/rule_bundle_digest"},
		{"duplicate-entry", func(cp map[string]any) {
			c := cp["evaluation_cache"].([]any)
			cp["evaluation_cache"] = append(c, cloneValue(c[0]))
			redigest(cp)
		}, CodeMalformedCheckpoint, "/context_digest"},
		{"context-without-its-digest", func(cp map[string]any) {
			e := cp["evaluation_cache"].([]any)[0].(map[string]any)
			e["context"].(map[string]any)["existing_support"] = !e["context"].(map[string]any)["existing_support"].(bool)
			redigest(cp)
		}, CodeCheckpointBindingMismatch, "/context_digest"},
		{"forged-unsatisfied", func(cp map[string]any) {
			e := cp["evaluation_cache"].([]any)[0].(map[string]any)
			e["outcome"] = obj("status", "unsatisfied", "depth", nil, "support", nil)
			redigest(cp)
		}, CodeEquivalenceViolation, "/fixpoint_result"},
		{"missing-status", func(cp map[string]any) {
			delete(cp["evaluation_cache"].([]any)[0].(map[string]any)["outcome"].(map[string]any), "status")
			redigest(cp)
		}, CodeMalformedCheckpoint, "/outcome/status"},
		{"empty-support", func(cp map[string]any) {
			o := cp["evaluation_cache"].([]any)[0].(map[string]any)["outcome"].(map[string]any)
			o["status"], o["depth"], o["support"] = "satisfied", int64(1), obj()
			redigest(cp)
		}, CodeMalformedCheckpoint, "/outcome/support"},
		{"string-depth", func(cp map[string]any) {
			o := cp["evaluation_cache"].([]any)[0].(map[string]any)["outcome"].(map[string]any)
			o["status"], o["depth"] = "satisfied", "x"
			redigest(cp)
		}, CodeMalformedCheckpoint, "/outcome/depth"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := fresh()
			c.forge(cp)
			before := mustCanonical(cp)
			step, rej := StepIncremental(cp, b, []any{}, 2)
			if rej == nil {
				t.Fatalf("accepted a forged checkpoint: %v", step["step_digest"])
			}
			if rej.Kind != KindPersistentRejection || rej.Code != c.code || !strings.HasSuffix(rej.Path, c.suffix) {
				t.Errorf("got %s %s at %s, want %s at ...%s", rej.Kind, rej.Code, rej.Path, c.code, c.suffix)
			}
			if string(mustCanonical(cp)) != string(before) {
				t.Error("the step modified the checkpoint")
			}
		})
	}
}

// The persistent caps admit exactly N and reject N+1.
func TestPersistentBounds(t *testing.T) {
	b := buildBundle(m2il, "disjoint_chain", false)
	deltas := buildDeltas(m2il, []string{"a+", "x+"}, 1, b)
	ok := persistentLimits{activeBase: 2, cacheEntries: 4, bodyEvaluations: 4, checkpointBytes: MaxCheckpointBytes}
	accepted, rej := stepIncremental(nil, b, deltas, 1, ok)
	if rej != nil {
		t.Fatalf("rejected at the exact caps: %v", rej.Wire())
	}
	for _, lim := range []persistentLimits{
		{1, 4, 4, MaxCheckpointBytes}, {2, 3, 4, MaxCheckpointBytes}, {2, 4, 3, MaxCheckpointBytes},
	} {
		if _, rej := stepIncremental(nil, b, deltas, 1, lim); rej == nil || rej.Code != CodePersistentBoundsExceeded {
			t.Errorf("limits %+v: %v", lim, rej)
		}
	}
	exact := len(mustCanonical(accepted["next_checkpoint"]))
	if _, rej := stepIncremental(nil, b, deltas, 1, persistentLimits{2, 4, 4, exact}); rej != nil {
		t.Errorf("exact checkpoint bytes rejected: %v", rej.Wire())
	}
	if _, rej := stepIncremental(nil, b, deltas, 1, persistentLimits{2, 4, 4, exact - 1}); rej == nil || rej.Code != CodePersistentBoundsExceeded {
		t.Errorf("checkpoint one byte over: %v", rej)
	}
}

// FuzzStepIncremental hands arbitrary checkpoints to a valid bundle: the step
// returns a step or a typed rejection, never a panic or internal failure.
func FuzzStepIncremental(f *testing.F) {
	b := buildBundle(m2il, "disjoint_chain", false)
	first, _ := StepIncremental(nil, b, buildDeltas(m2il, []string{"a+", "x+"}, 1, b), 1)
	f.Add(mustCanonical(first["next_checkpoint"]), int64(2))
	f.Add([]byte(`{"kind":"LPersistentLCheckpoint"}`), int64(2))
	f.Add([]byte(`null`), int64(1))
	f.Fuzz(func(t *testing.T, checkpoint []byte, lt int64) {
		cp, err := Decode(checkpoint)
		if err != nil {
			return
		}
		step, rej := StepIncremental(cp, b, []any{}, lt)
		if rej != nil {
			if rej.Code == CodeInvariantViolation {
				t.Fatalf("internal failure: %v", rej.Wire())
			}
			return
		}
		checkStepDigests(t, step)
	})
}
