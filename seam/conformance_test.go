package seam

import (
	"encoding/json"
	"slices"
	"testing"

	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/protocol"
)

// The inputs and expected digests in this file are transcribed from the
// FLR-H reference corpus (fixtures/lr-seam: the "truth-four" L result, the
// eligible-golden query, and the two goldens). The L result is reduced to
// the fields the seam reads; its digests are the reference's.

const (
	lrRProfileDigest  = "sha256:19f7a4bc9f04b7302f99df908b2f4d5abf1d632104cdee64140a068892bd64c4"
	lrBindingDigest   = "sha256:588304ac00d3d30a7466ec8c3928acbcccc0af16c15c05ed89990a60411bc3b3"
	lrFixpointDigest  = "sha256:e16dfadc7828dad76193597a8512d752058eae9f217f2b9492208afd1618af90"
	lrMaterialization = "sha256:70ff20fbc90375a3ddcf38149df8d561af22f1bea2fa56c8bf98974b2988a81a"
	lrRuleBundle      = "sha256:7384b0e24e317482f17c69ce79a16624f1cdd47a1c7ff964154ebe731d33462d"
)

func truthAtom(t tb, subject string) Atom {
	t.Helper()
	a, err := AtomOf(map[string]any{"predicate": "lr_truth_probe", "subject": subject})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func truthFour(t tb) Materialization {
	return Materialization{
		LogicalTime:           7,
		FixpointDigest:        lrFixpointDigest,
		MaterializationDigest: lrMaterialization,
		RuleBundleDigest:      lrRuleBundle,
		RuleSetVersion:        "rules/lr-test/1",
		DataflowVersion:       "dataflow/0",
		QueryAtoms: []Atom{truthAtom(t, "true_only"), truthAtom(t, "false_only"),
			truthAtom(t, "both"), truthAtom(t, "neither")},
		Facts: []FactState{
			{Atom: truthAtom(t, "true_only"), Positive: []string{"derivation:lr:true"}},
			{Atom: truthAtom(t, "false_only"), Negative: []string{"derivation:lr:false"}},
			{Atom: truthAtom(t, "both"), Positive: []string{"derivation:lr:both-positive"}, Negative: []string{"derivation:lr:both-negative"}},
			{Atom: truthAtom(t, "neither")},
		},
	}
}

func lrRProfile(t tb) frontier.Profile {
	p, rej := frontier.NewProfile("dataflow/0", []string{"source:lr:proposal", "source:lr:verdict"}, frontier.Limits{
		MaxDeltasPerCommand: 32, MaxActiveValues: 32, MaxOpenEpochs: 8,
		MaxReadyBatches: 8, MaxDemandPerCommand: 8, MaxOutstandingDemand: 16,
	})
	if rej != nil {
		t.Fatal(rej)
	}
	return p
}

// lrVerified is the seam's LR fixture sealed and verified: its R profile,
// binding profile and the binding's verified form.
func lrVerified(t tb) (frontier.Profile, BindingProfile, VerifiedBinding) {
	r, b := lrRProfile(t), lrBinding().Sealed()
	vb, ok := VerifyBinding(b)
	if !ok {
		t.Fatal("binding profile does not verify")
	}
	return r, b, vb
}

func lrBinding() BindingProfile {
	return BindingProfile{
		RuleSetVersion: "rules/lr-test/1", DataflowVersion: "dataflow/0",
		ProposalSourceID: "source:lr:proposal", VerdictSourceID: "source:lr:verdict",
		MaxQueries: 8, MaxFactRequirementsPerQuery: 4,
	}.Sealed()
}

// lrProposal is the reference's M1 golden proposal renamed for a suffix.
func lrProposal(suffix string, preconditions ...string) protocol.EffectProposal {
	return protocol.EffectProposal{
		Kind:              protocol.KindEffectProposal,
		ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
		CauseID:           "cause:lr:proposal:" + suffix,
		CorrelationID:     "run:m1:1",
		DeclaredRiskHint:  "high_risk_external",
		DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
		EffectType:        "artifact.publish",
		GoalID:            "goal:m1:publish",
		ObligationID:      "obligation:m1:publish",
		Preconditions:     preconditions,
		ProposalDedupKey:  "proposal-dedup:lr:" + suffix,
		ProposalID:        "proposal:lr:" + suffix,
		Versions: protocol.VersionEnvelope{
			Canonicalization: "flrh-cjson/1", CompositionProfile: "composition/0", Dataflow: "dataflow/0",
			EventSchema: "flrh-f-event/1", Gate: "m1-gate/1", GraphSchema: "graph/0", Model: "none/0",
			Oracle: "m1-oracle/1", Resolver: "resolver/0", RuleSet: "rules/lr-test/1",
			StateSchema: "flrh-f-state/1", Tool: "publisher/1", Workflow: "flrh-workflow/0.1",
		},
	}
}

func batchOf(t tb, r frontier.Profile, qs ...Query) QueryBatch {
	return QueryBatch{
		BindingProfileDigest: lrBinding().ProfileDigest,
		LFixpointDigest:      lrFixpointDigest,
		RuleBundleDigest:     lrRuleBundle,
		RProfileDigest:       r.Digest(),
		Queries:              qs,
	}.Sealed()
}

func TestConformanceProfiles(t *testing.T) {
	if got := lrRProfile(t).Digest(); got != lrRProfileDigest {
		t.Errorf("r profile digest = %s, want %s", got, lrRProfileDigest)
	}
	if got := lrBinding().ProfileDigest; got != lrBindingDigest {
		t.Errorf("binding profile digest = %s, want %s", got, lrBindingDigest)
	}
}

func TestConformanceEligibleGolden(t *testing.T) {
	r := lrRProfile(t)
	q := batchOf(t, r, Query{
		Proposal: lrProposal("eligible-golden", "precondition:lr:eligible-golden"),
		FactRequirements: []FactRequirement{{PreconditionID: "precondition:lr:eligible-golden",
			Literal: Literal{Polarity: Positive, Atom: truthAtom(t, "true_only")}}},
	})
	if want := "sha256:2fba39ca6a863bb76e186b3c9b5b028a885c37cde06bc6ba13a326fd08a81e99"; q.QueryBatchDigest != want {
		t.Errorf("query batch digest = %s, want %s", q.QueryBatchDigest, want)
	}
	p, rej := Project(truthFour(t), r, lrBinding(), q)
	if rej != nil {
		t.Fatal(rej)
	}
	if want := "sha256:825ca51f5e923f866b4df16d439fa8d04924a3094f2f968f611713b68acf7b8a"; p.Digest != want {
		t.Errorf("projection digest = %s, want %s", p.Digest, want)
	}
	v, _ := p.Verdicts[0].Verdict()
	const suffix = "a147ab4e34bf1e18e65b5eca52083b56c096e8984bd127d52594dd17bbf68a3d"
	if v.VerdictID != "verdict:lr:"+suffix || v.CauseID != "cause:lr:"+suffix || v.Status != "eligible" ||
		!slices.Equal(v.SupportDerivationIDs, []string{"derivation:lr:true"}) {
		t.Errorf("verdict = %+v", v)
	}
	deltas := map[string]string{}
	for _, d := range p.Command.Deltas {
		deltas[d.DeliveryID()] = d.Value().Digest()
	}
	want := map[string]string{
		"delivery:9366bf90baf356cc7f057c1c20771300f2c2b0bd8448e3b9d01d52ce9cce5486": "sha256:f4138289e59afa7f0561de37ed830040ecc8933f2bf48d6f4fbe75b12f906562",
		"delivery:ebcdc1e4554815472bc67aa8104afdcc18d82c58d42f0421fea0cdc6137f96c0": "sha256:bb317dc202050add7923c05e8f026645fc6cebf73240cb7a809796b0513524de",
	}
	if len(deltas) != 2 || deltas[firstKey(want)] != want[firstKey(want)] || deltas[lastKey(want)] != want[lastKey(want)] {
		t.Errorf("deltas = %v, want %v", deltas, want)
	}
	raw, _ := json.Marshal(p)
	assertCanonical(t, raw)
}

func firstKey(m map[string]string) string { return sortedStringKeys(m)[0] }
func lastKey(m map[string]string) string  { k := sortedStringKeys(m); return k[len(k)-1] }
func sortedStringKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestConformanceMismatchRejectionGolden(t *testing.T) {
	r := lrRProfile(t)
	q := batchOf(t, r, Query{
		Proposal: lrProposal("golden-mismatch", "precondition:lr:golden-mismatch"),
		FactRequirements: []FactRequirement{{PreconditionID: "precondition:lr:other",
			Literal: Literal{Polarity: Positive, Atom: truthAtom(t, "true_only")}}},
	})
	_, rej := Project(truthFour(t), r, lrBinding(), q)
	if rej == nil {
		t.Fatal("want rejection")
	}
	got, _ := json.Marshal(rej)
	want := `{"binding_profile_digest":"` + lrBindingDigest + `","code":"PRECONDITION_BINDING_MISMATCH",` +
		`"context":{"invariant":"exact_precondition_partition","proposal_id":"proposal:lr:golden-mismatch"},` +
		`"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection","l_fixpoint_digest":"` + lrFixpointDigest + `",` +
		`"logical_time":7,"path":"/query_batch/queries/0","query_batch_digest":null,"r_profile_digest":"` + lrRProfileDigest + `",` +
		`"schema_version":"flrh-lr-result/1"}`
	if string(got) != want {
		t.Errorf("rejection\n got %s\nwant %s", got, want)
	}
}
