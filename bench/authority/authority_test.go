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

func input(b *testing.B) authority.Input {
	profile := "sha256:" + strings.Repeat("0", 64)
	p := protocol.EffectProposal{
		Kind: "EffectProposal", ProposalID: "proposal:1", EffectType: "artifact.publish",
		ActionDigest: "sha256:" + strings.Repeat("1", 64), CauseID: "evt:1", CorrelationID: "run:1",
		ProposalDedupKey: "dedup:1", DestinationDigest: "sha256:" + strings.Repeat("2", 64),
		GoalID: "goal:1", ObligationID: "obligation:1", DeclaredRiskHint: "reversible", Preconditions: []string{},
		Versions: protocol.VersionEnvelope{Workflow: "wf/1", StateSchema: "s/1", EventSchema: "e/1", GraphSchema: "g/1",
			RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: "flrh-cjson/1", Tool: "publisher/1",
			Model: "none/0", Oracle: "o/1", Gate: "gate/1", Resolver: "r/0", CompositionProfile: "c/0"},
	}
	v := protocol.EligibilityVerdict{Kind: "EligibilityVerdict", VerdictID: "verdict:1", ProposalID: p.ProposalID, Status: "eligible", SupportDerivationIDs: []string{}, CauseID: "cause:1", RuleSetVersion: "rules/0"}
	batch := protocol.StableProposalBatch{Kind: "StableProposalBatch", LogicalTime: 7, LowWatermark: 8, ProposalIDs: []string{p.ProposalID}, EligibilityVerdictIDs: []string{v.VerdictID}, DataflowVersion: "dataflow/0"}
	d := authority.StableBatchDigest(profile, 7, 8, batch.ProposalIDs, batch.EligibilityVerdictIDs, batch.DataflowVersion)
	batch.BatchDigest, batch.BatchID, batch.CauseID = d, "batch:"+d[7:], "reaction:"+d[7:]
	pb := authority.PublishedBatch{Batch: batch, Proposals: []protocol.EffectProposal{p}, Verdicts: []protocol.EligibilityVerdict{v}}
	pb.PublishedBatchDigest = authority.PublishedBatchDigest(pb)

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
	return authority.Input{
		Batch: pb, ProfileDigest: profile,
		Actions: []authority.ActionSpec{{ProposalID: p.ProposalID, Destination: "dest:registry", Scope: "scope:team", Parameters: map[string]any{"artifact": "pkg.tgz"}}},
		Policy: authority.PolicySnapshot{Policy: pol, Keyring: ring,
			Manifests: map[string]authority.ToolManifest{"artifact.publish": {EffectType: "artifact.publish", SideEffects: []authority.SideEffect{authority.SideEffectWrite}}}},
		Verified: []authority.VerifiedCapability{verified}, Now: 100, EffectSequence: 1,
	}
}

func BenchmarkAuthorize1Proposal100Rules(b *testing.B) { benchAuthorize(b, input(b)) }

// benchAuthorize times Authorize on in after checking that it authorizes,
// so no benchmark can time a refusal by mistake.
func benchAuthorize(b *testing.B, in authority.Input) {
	d, err := authority.Authorize(in)
	if err != nil || d.Outcomes[0].Intent == nil {
		b.Fatalf("does not authorize: %v %+v", err, d.Outcomes)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := authority.Authorize(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthorizeCheckedBatch is BenchmarkAuthorize1Proposal100Rules
// with the batch sealed by SealBatch beforehand, as the workflow does for
// R's batches: the published-batch digest is then computed once by the
// producer rather than again in every decision.
func BenchmarkAuthorizeCheckedBatch(b *testing.B) {
	in := input(b)
	var err error
	if in.Batch, in.Checked, err = authority.SealBatch(in.Batch, in.ProfileDigest); err != nil {
		b.Fatal(err)
	}
	benchAuthorize(b, in)
}
