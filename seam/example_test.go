package seam_test

import (
	"fmt"

	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/seam"
)

// One proposal needs its artifact to be ready (a positive literal) and not
// blocked (a negative literal). L knows the artifact is ready but holds both
// evidence for and against "blocked", so the verdict is conflicted.
func Example() {
	ready, _ := seam.NewAtom([]byte(`{"predicate":"ready","artifact":"a1"}`))
	blocked, _ := seam.NewAtom([]byte(`{"predicate":"blocked","artifact":"a1"}`))
	l := seam.Materialization{
		LogicalTime:           3,
		FixpointDigest:        "sha256:e16dfadc7828dad76193597a8512d752058eae9f217f2b9492208afd1618af90",
		MaterializationDigest: "sha256:70ff20fbc90375a3ddcf38149df8d561af22f1bea2fa56c8bf98974b2988a81a",
		RuleBundleDigest:      "sha256:7384b0e24e317482f17c69ce79a16624f1cdd47a1c7ff964154ebe731d33462d",
		RuleSetVersion:        "rules/1",
		DataflowVersion:       "dataflow/0",
		QueryAtoms:            []seam.Atom{ready, blocked},
		Facts: []seam.FactState{
			{Atom: ready, Positive: []string{"derivation:ready"}},
			{Atom: blocked, Positive: []string{"derivation:blocked"}, Negative: []string{"derivation:cleared"}},
		},
	}
	r, _ := frontier.NewProfile("dataflow/0", []string{"source:proposals", "source:verdicts"}, frontier.Limits{
		MaxDeltasPerCommand: 64, MaxActiveValues: 64, MaxOpenEpochs: 8,
		MaxReadyBatches: 8, MaxDemandPerCommand: 8, MaxOutstandingDemand: 8,
	})
	b := seam.BindingProfile{
		RuleSetVersion: "rules/1", DataflowVersion: "dataflow/0",
		ProposalSourceID: "source:proposals", VerdictSourceID: "source:verdicts",
		MaxQueries: 16, MaxFactRequirementsPerQuery: 8,
	}.Sealed()
	proposal := protocol.EffectProposal{
		ProposalID: "proposal:publish-a1", EffectType: "artifact.publish", CauseID: "event:7",
		CorrelationID: "run:1", ProposalDedupKey: "dedup:a1", GoalID: "goal:1", ObligationID: "obligation:1",
		ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
		DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
		DeclaredRiskHint:  "high_risk_external",
		Preconditions:     []string{"pre:ready", "pre:not-blocked", "frontier:3"},
		Versions: protocol.VersionEnvelope{Workflow: "wf/1", StateSchema: "s/1", EventSchema: "e/1", GraphSchema: "g/1",
			RuleSet: "rules/1", Dataflow: "dataflow/0", Canonicalization: "flrh-cjson/1", Tool: "t/1",
			Model: "none/0", Oracle: "o/1", Gate: "gate/1", Resolver: "r/1", CompositionProfile: "c/1"},
	}
	q := seam.QueryBatch{
		BindingProfileDigest: b.ProfileDigest, LFixpointDigest: l.FixpointDigest,
		RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(),
		Queries: []seam.Query{{
			Proposal: proposal,
			FactRequirements: []seam.FactRequirement{
				{PreconditionID: "pre:ready", Literal: seam.Literal{Polarity: seam.Positive, Atom: ready}},
				{PreconditionID: "pre:not-blocked", Literal: seam.Literal{Polarity: seam.Negative, Atom: blocked}},
			},
			FrontierPreconditionIDs: []string{"frontier:3"},
		}},
	}.Sealed()

	p, rej := seam.Project(l, r, b, q)
	if rej != nil {
		fmt.Println(rej)
		return
	}
	v, _ := p.Verdicts[0].Verdict()
	fmt.Println(v.Status, v.SupportDerivationIDs)
	fmt.Println(len(p.Command.Deltas), "deltas at logical time", p.Command.Deltas[0].LogicalTime())
	// Output:
	// conflicted [derivation:blocked derivation:cleared derivation:ready]
	// 2 deltas at logical time 3
}
