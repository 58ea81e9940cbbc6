// Package authority benchmarks flrh's Authorize through its public API:
// one proposal against a 100-rule gate policy, the workload of the
// authority performance goal (≤ 5 µs per decision), side by side with
// cedar-go and OPA evaluating an equivalent policy (compare_test.go).
package authority

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/protocol"
)

func policy100() string {
	var b strings.Builder
	for i := 0; i < 69; i++ {
		fmt.Fprintf(&b, "decision(\"G2\", \"ALLOW\", \"g2.r%d\") :- action(t, \"svc%d.call\"), capability(t, _), param_num(t, \"amount\", n), n <= %d.\n", i, i, 100*(i+1))
	}
	b.WriteString("decision(\"G2\", \"ALLOW\", \"g2.publish\") :- action(t, \"artifact.publish\"), capability(t, _).\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decision(\"H1\", \"REFUSE\", \"h1.r%d\") :- param_num(t, \"amount\", n), n > %d, action(t, \"svc%d.call\").\n", i, 100000+i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decision(\"G3\", \"ASK_FIRST\", \"g3.r%d\") :- destination(t, \"dest:blocked%d\").\n", i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decision(\"G4\", \"SHAPE\", \"g4.r%d\") :- param_sym(t, \"tone\", \"t%d\").\n", i, i)
	}
	b.WriteString("assess(\"reversible\", \"g2.publish-reversible\") :- action(t, \"artifact.publish\").\n")
	return b.String()
}

// distinct is how many different decisions the Authorize benchmarks
// cycle through: every input differs from the others in what differs
// from one production decision to the next (the proposal's ids, action
// and destination digests and dedup key, the verdict and cause ids, the
// batch's logical time and watermark, the action's parameters, the
// clock, the effect sequence), so no cache keyed on a decision's bytes
// can serve a timed decision from an earlier one.
const distinct = 64

// inputs returns distinct inputs sharing the policy, the keyring, the
// verified capability and the manifests, as the decisions of one
// workflow do.
func inputs(b *testing.B) []authority.Input {
	profile := "sha256:" + strings.Repeat("0", 64)
	seed := make([]byte, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)
	ring := authority.NewKeyring(key.Public().(ed25519.PublicKey))
	sc, err := authority.SignCapability(authority.Capability{ID: "capability:publish", EffectType: "artifact.publish", Destination: "dest:*", Scopes: []string{"scope:team"}, NotBefore: 0, Expiry: 1000}, key)
	if err != nil {
		b.Fatal(err)
	}
	verified, err := ring.Verify([]authority.SignedCapability{sc})
	if err != nil {
		b.Fatal(err)
	}
	pol, err := authority.CompilePolicy("policy/1", "bench.dl", []byte(policy100()), logic.Limits{MaxFirings: 10000})
	if err != nil {
		b.Fatal(err)
	}
	snapshot := authority.PolicySnapshot{Policy: pol, Keyring: ring,
		Manifests: map[string]authority.ToolManifest{"artifact.publish": {EffectType: "artifact.publish", SideEffects: []authority.SideEffect{authority.SideEffectWrite}}}}
	out := make([]authority.Input, distinct)
	for i := range out {
		hex := func(salt int) string { return fmt.Sprintf("sha256:%064x", salt<<32|i) }
		p := protocol.EffectProposal{
			Kind: "EffectProposal", ProposalID: fmt.Sprintf("proposal:%d", i+1), EffectType: "artifact.publish",
			ActionDigest: hex(1), CauseID: fmt.Sprintf("evt:%d", 3*i+1), CorrelationID: "run:1",
			ProposalDedupKey: fmt.Sprintf("dedup:%d", i+1), DestinationDigest: hex(2),
			GoalID: "goal:1", ObligationID: fmt.Sprintf("obligation:%d", i+1), DeclaredRiskHint: "reversible", Preconditions: []string{},
			Versions: protocol.VersionEnvelope{Workflow: "wf/1", StateSchema: "s/1", EventSchema: "e/1", GraphSchema: "g/1",
				RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: "flrh-cjson/1", Tool: "publisher/1",
				Model: "none/0", Oracle: "o/1", Gate: "gate/1", Resolver: "r/0", CompositionProfile: "c/0"},
		}
		v := protocol.EligibilityVerdict{Kind: "EligibilityVerdict", VerdictID: fmt.Sprintf("verdict:%d", i+1), ProposalID: p.ProposalID, Status: "eligible", SupportDerivationIDs: []string{}, CauseID: fmt.Sprintf("cause:%d", i+1), RuleSetVersion: "rules/0"}
		t := int64(7 + 2*i)
		batch := protocol.StableProposalBatch{Kind: "StableProposalBatch", LogicalTime: t, LowWatermark: t + 1, ProposalIDs: []string{p.ProposalID}, EligibilityVerdictIDs: []string{v.VerdictID}, DataflowVersion: "dataflow/0"}
		d := authority.StableBatchDigest(profile, t, t+1, batch.ProposalIDs, batch.EligibilityVerdictIDs, batch.DataflowVersion)
		batch.BatchDigest, batch.BatchID, batch.CauseID = d, "batch:"+d[7:], "reaction:"+d[7:]
		pb := authority.PublishedBatch{Batch: batch, Proposals: []protocol.EffectProposal{p}, Verdicts: []protocol.EligibilityVerdict{v}}
		pb.PublishedBatchDigest = authority.PublishedBatchDigest(pb)
		out[i] = authority.Input{
			Batch: pb, ProfileDigest: profile,
			Actions: []authority.ActionSpec{{ProposalID: p.ProposalID, Destination: "dest:registry", Scope: "scope:team",
				Parameters: map[string]any{"artifact": fmt.Sprintf("pkg-%d.tgz", i+1), "amount": int64(10 * (i + 1))}}},
			Policy:   snapshot,
			Verified: []authority.VerifiedCapability{verified}, Now: int64(100 + i), EffectSequence: int64(1 + i%9),
		}
	}
	return out
}

func BenchmarkAuthorize1Proposal100Rules(b *testing.B) { benchAuthorize(b, inputs(b)) }

// benchAuthorize times Authorize cycling through ins after checking that
// each authorizes and that no two decisions share an intent id, so no
// benchmark can time a refusal, or one decision again, by mistake.
func benchAuthorize(b *testing.B, ins []authority.Input) {
	ids := map[string]bool{}
	for _, in := range ins {
		d, err := authority.Authorize(in)
		if err != nil || d.Outcomes[0].Intent == nil {
			b.Fatalf("does not authorize: %v %+v", err, d.Outcomes)
		}
		if id := d.Outcomes[0].Intent.IntentID; ids[id] {
			b.Fatalf("intent %s decided twice", id)
		} else {
			ids[id] = true
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := authority.Authorize(ins[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(ins) {
			i = 0
		}
	}
}

// BenchmarkAuthorizeCheckedBatch is BenchmarkAuthorize1Proposal100Rules
// with the batch sealed by SealBatch beforehand, as the workflow does for
// R's batches: the published-batch digest is then computed once by the
// producer rather than again in every decision.
func BenchmarkAuthorizeCheckedBatch(b *testing.B) {
	ins := inputs(b)
	for i := range ins {
		var err error
		if ins[i].Batch, ins[i].Checked, err = authority.SealBatch(ins[i].Batch, ins[i].ProfileDigest); err != nil {
			b.Fatal(err)
		}
	}
	benchAuthorize(b, ins)
}
