package frontier_test

import (
	"fmt"

	"flrh.dev/flrh/frontier"
)

// A proposal and its verdict arrive from two sources at logical time 7. The
// batch publishes only once both sources have moved strictly past 7 and a
// consumer has asked for a batch.
func Example() {
	profile, _ := frontier.NewProfile("dataflow/0", []string{"source:l", "source:f"}, frontier.Limits{
		MaxDeltasPerCommand: 100, MaxActiveValues: 100, MaxOpenEpochs: 8,
		MaxReadyBatches: 8, MaxDemandPerCommand: 8, MaxOutstandingDemand: 8,
	})
	proposal, _ := frontier.NewProposalValue(frontier.EffectProposal{
		ProposalID: "proposal:1", EffectType: "artifact.publish", CauseID: "event:1",
		CorrelationID: "run:1", ProposalDedupKey: "dedup:1", GoalID: "goal:1", ObligationID: "obligation:1",
		ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
		DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
		DeclaredRiskHint:  "reversible", Preconditions: []string{"ready"},
		Versions: frontier.Versions{Workflow: "wf/1", StateSchema: "s/1", EventSchema: "e/1", GraphSchema: "g/1",
			RuleSet: "rules/1", Dataflow: "dataflow/0", Canonicalization: "flrh-cjson/1", Tool: "t/1",
			Model: "none/0", Oracle: "o/1", Gate: "gate/1", Resolver: "r/1", CompositionProfile: "c/1"},
	})
	verdict, _ := frontier.NewVerdictValue(frontier.EligibilityVerdict{
		VerdictID: "verdict:1", ProposalID: "proposal:1", Status: "eligible",
		SupportDerivationIDs: []string{"derivation:1"}, CauseID: "cause:1", RuleSetVersion: "rules/1",
	})
	p, _ := frontier.NewValueDelta("source:f", 7, 1, "dataflow/0", proposal)
	v, _ := frontier.NewValueDelta("source:l", 7, 1, "dataflow/0", verdict)

	var state *frontier.State // nil: the initial state
	run := func(cmd frontier.Command) {
		t, rej := frontier.Step(state, profile, cmd)
		if rej != nil {
			fmt.Println("rejected:", rej.Code)
			return
		}
		state = t.Next
		low, ok := state.GlobalLowWatermark()
		fmt.Printf("global=%v/%v open=%d ready=%d published=%d\n", low, ok, t.Backpressure.OpenEpochCount, t.Backpressure.ReadyBatchCount, len(t.Published))
	}
	d := profile.Digest()
	run(frontier.ApplyDeltaBatch{ProfileDigest: d, DataflowVersion: "dataflow/0", Deltas: []frontier.ValueDelta{v, p}})
	run(frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: "dataflow/0", SourceID: "source:f", LowWatermark: 8})
	run(frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: "dataflow/0", SourceID: "source:l", LowWatermark: 7})
	run(frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: "dataflow/0", SourceID: "source:l", LowWatermark: 8})
	run(frontier.GrantDemand{ProfileDigest: d, DataflowVersion: "dataflow/0", Batches: 1})
	run(frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: "dataflow/0", SourceID: "source:l", LowWatermark: 6})
	// Output:
	// global=0/false open=1 ready=0 published=0
	// global=0/false open=1 ready=0 published=0
	// global=7/true open=1 ready=0 published=0
	// global=8/true open=0 ready=1 published=0
	// global=8/true open=0 ready=0 published=1
	// rejected: FRONTIER_REGRESSION
}
