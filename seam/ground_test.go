package seam

import (
	"encoding/json"
	"testing"

	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/logic/ground"
)

// TestGroundToFrontier runs the reference's truth-four case end to end with
// our own engines: L (ground.Solve) computes the fixpoint, the seam projects
// the eligible-golden query, and R publishes the pair. The inputs follow the
// reference's fixture factories (fixtures/lr-seam, "truth-four"); the
// digests are the reference goldens.
func TestGroundToFrontier(t *testing.T) {
	fix, bundle := solveTruthFour(t)
	l, err := FromGround(fix, bundle)
	if err != nil {
		t.Fatal(err)
	}
	if l.FixpointDigest != lrFixpointDigest || l.MaterializationDigest != lrMaterialization {
		t.Fatalf("L digests %s %s, want the reference's %s %s", l.FixpointDigest, l.MaterializationDigest, lrFixpointDigest, lrMaterialization)
	}
	r := lrRProfile(t)
	q := eligibleGoldenBatch(t, r)
	p, prej := Project(l, r, lrBinding(), q)
	if prej != nil {
		t.Fatal(prej)
	}
	if p.Digest != eligibleProjectionDigest {
		t.Fatalf("projection digest %s, want %s", p.Digest, eligibleProjectionDigest)
	}
	publishAndCheck(t, r, p)
}

const eligibleProjectionDigest = "sha256:825ca51f5e923f866b4df16d439fa8d04924a3094f2f968f611713b68acf7b8a"

func eligibleGoldenBatch(t tb, r frontier.Profile) QueryBatch {
	return batchOf(t, r, Query{
		Proposal: lrProposal("eligible-golden", "precondition:lr:eligible-golden"),
		FactRequirements: []FactRequirement{{PreconditionID: "precondition:lr:eligible-golden",
			Literal: Literal{Polarity: Positive, Atom: truthAtom(t, "true_only")}}},
	})
}

// solveTruthFour solves the reference's truth-four input with the ground
// engine and returns the LFixpointResult and the sealed LRuleBundle.
func solveTruthFour(t tb) (fixpoint, bundle map[string]any) {
	t.Helper()
	var atoms []any
	for _, s := range []string{"true_only", "false_only", "both", "neither"} {
		atoms = append(atoms, map[string]any{"predicate": "lr_truth_probe", "subject": s})
	}
	bundle, rej := ground.SealBundle(map[string]any{
		"kind": "LRuleBundle", "schema_version": "flrh-l-rules/1", "contract_version": "flrh-l-kernel/1",
		"profile_id": "flrh-l-ground-stratified/1", "rule_set_version": "rules/lr-test/1",
		"dataflow_version": "dataflow/0", "canonicalization_version": "flrh-cjson/1",
		"limits":      map[string]any{"max_rule_firings": int64(32), "max_derivation_depth": int64(8)},
		"query_atoms": atoms, "rules": []any{},
	})
	if rej != nil {
		t.Fatalf("seal bundle: %+v", rej)
	}
	if got := bundle["rule_bundle_digest"]; got != lrRuleBundle {
		t.Fatalf("rule bundle digest %v, want %s", got, lrRuleBundle)
	}
	input := func(subject, polarity, id string) any {
		return map[string]any{
			"kind": "LFactDeltaInput", "schema_version": "flrh-l-input/1", "polarity": polarity,
			"delta": map[string]any{
				"kind": "FactDelta", "tuple": map[string]any{"predicate": "lr_truth_probe", "subject": subject},
				"logical_time": int64(7), "diff": int64(1), "derivation_id": id, "causation_id": "event:lr:7",
				"provenance_delta": map[string]any{"fixture_derivation_id": id},
				"rule_set_version": "rules/lr-test/1", "dataflow_version": "dataflow/0",
			},
		}
	}
	fix, rej := ground.Solve(nil, bundle, []any{
		input("true_only", "positive", "derivation:lr:true"),
		input("false_only", "negative", "derivation:lr:false"),
		input("both", "positive", "derivation:lr:both-positive"),
		input("both", "negative", "derivation:lr:both-negative"),
	}, 7)
	if rej != nil {
		t.Fatalf("solve: %+v", rej)
	}
	return fix, bundle
}

// publishAndCheck feeds a projection's command to R and checks the one
// published batch.
func publishAndCheck(t *testing.T, r frontier.Profile, p *Projection) {
	tr, frej := frontier.Step(nil, r, *p.Command)
	if frej != nil {
		t.Fatal(frej)
	}
	s := tr.Next
	for _, src := range r.SourceIDs() {
		if tr, frej = frontier.Step(s, r, frontier.AdvanceFrontier{ProfileDigest: r.Digest(), DataflowVersion: "dataflow/0", SourceID: src, LowWatermark: 8}); frej != nil {
			t.Fatal(frej)
		}
		s = tr.Next
	}
	if tr, frej = frontier.Step(s, r, frontier.GrantDemand{ProfileDigest: r.Digest(), DataflowVersion: "dataflow/0", Batches: 1}); frej != nil {
		t.Fatal(frej)
	}
	if len(tr.Published) != 1 {
		t.Fatalf("published %d batches", len(tr.Published))
	}
	v := tr.Published[0].Verdicts()[0]
	raw, _ := json.Marshal(tr.Published[0])
	assertCanonical(t, raw)
	if got, _ := v.Verdict(); got.Status != "eligible" || got.VerdictID != "verdict:lr:a147ab4e34bf1e18e65b5eca52083b56c096e8984bd127d52594dd17bbf68a3d" {
		t.Fatalf("published verdict %+v", got)
	}
}
