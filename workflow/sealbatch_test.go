package workflow

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// Every test in this package runs with each batch a tick hands H checked
// against sealing it with SealBatch, which takes both digests again from
// H's own preimages.
func init() {
	verifySealedBatch = func(w *Workflow, pb *frontier.PublishedBatch, got sealedBatch) error {
		if pb.Digest() == "" {
			// Published undigested (an untraced tick): the batch is
			// SealBatch's but for the published digest, and with the
			// digest H takes, withPublished seals what SealBatch does.
			want := sealBySealBatch(w, pb)
			if got.batch.PublishedBatchDigest != "" {
				return fmt.Errorf("sealed batch: a published digest R did not take")
			}
			if b, c := w.withPublished(got.batch, got.checked); !reflect.DeepEqual(sealedBatch{b, c}, want) {
				return fmt.Errorf("sealed batch: undigested, then given H's digest, not SealBatch's:\n%#v\n%#v", sealedBatch{b, c}, want)
			}
			return checkAuthorityBatch(pb)
		}
		if want := sealBySealBatch(w, pb); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("sealed batch: R's digests are not H's:\n%#v\n%#v", got, want)
		}
		return checkAuthorityBatch(pb)
	}
}

// checkAuthorityBatch holds authorityBatch, whose lists share the sealed
// values' arrays, to the batch built from R's copying accessors, and its
// shared lists, and its proposals and verdicts (one allocation for a
// tick's batch), to capped ones (an append moves them).
func checkAuthorityBatch(pb *frontier.PublishedBatch) error {
	want := authority.PublishedBatch{Batch: pb.Batch()}
	for _, v := range pb.Proposals() {
		p, _ := v.Proposal()
		want.Proposals = append(want.Proposals, p)
	}
	for _, v := range pb.Verdicts() {
		vd, _ := v.Verdict()
		want.Verdicts = append(want.Verdicts, vd)
	}
	got := authorityBatch(pb)
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("authorityBatch:\n%#v\ncopied:\n%#v", got, want)
	}
	if cap(got.Proposals) != len(got.Proposals) || cap(got.Verdicts) != len(got.Verdicts) {
		return fmt.Errorf("authorityBatch: the proposals or verdicts not capped")
	}
	if ids := got.Batch.ProposalIDs; cap(ids) != len(ids) {
		return fmt.Errorf("authorityBatch: the batch's proposal ids not capped")
	}
	if ids := got.Batch.EligibilityVerdictIDs; cap(ids) != len(ids) {
		return fmt.Errorf("authorityBatch: the batch's verdict ids not capped")
	}
	for _, p := range got.Proposals {
		if cap(p.Preconditions) != len(p.Preconditions) {
			return fmt.Errorf("authorityBatch: proposal %s's preconditions not capped", p.ProposalID)
		}
	}
	for _, v := range got.Verdicts {
		if cap(v.SupportDerivationIDs) != len(v.SupportDerivationIDs) {
			return fmt.Errorf("authorityBatch: verdict %s's supports not capped", v.VerdictID)
		}
	}
	return nil
}

// sealBySealBatch is toAuthority taking the batch's digests itself.
func sealBySealBatch(w *Workflow, pb *frontier.PublishedBatch) sealedBatch {
	b := authorityBatch(pb)
	if sealed, checked, err := authority.SealBatch(b, w.rProfile.Digest()); err == nil {
		return sealedBatch{sealed, checked}
	}
	b.PublishedBatchDigest = authority.PublishedBatchDigest(b)
	return sealedBatch{batch: b}
}

// TestToAuthorityIsSealBatch draws epochs of proposals and verdicts — ids
// of every character an id admits, each field drawn, up to four pairs an
// epoch, several epochs — publishes them through the workflow's R, and
// holds each batch toAuthority seals to SealBatch's.
func TestToAuthorityIsSealBatch(t *testing.T) {
	w := compileExample(t, "refund-agent")
	prof := w.rProfile
	d, df := prof.Digest(), prof.DataflowVersion()
	saved := verifySealedBatch
	verifySealedBatch = nil // compared here, not by the hook
	defer func() { verifySealedBatch = saved }()
	idChars := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-")
	id := func(rt *rapid.T, label string) string {
		first := rapid.SampledFrom(idChars[:62]).Draw(rt, label+"0")
		rest := rapid.StringOfN(rapid.SampledFrom(idChars), 0, 40, -1).Draw(rt, label)
		return string(first) + rest
	}
	digest := func(rt *rapid.T, label string) string {
		return "sha256:" + rapid.StringMatching(`[0-9a-f]{64}`).Draw(rt, label)
	}
	ids := func(rt *rapid.T, label string) []string {
		return rapid.SliceOfNDistinct(rapid.Custom(func(rt *rapid.T) string { return id(rt, label) }), 0, 4, rapid.ID[string]).Draw(rt, label+"s")
	}
	batches := 0
	rapid.Check(t, func(rt *rapid.T) {
		var cmds []frontier.Command
		epochs := rapid.IntRange(1, 3).Draw(rt, "epochs")
		for e := range epochs {
			at := int64(e+1) * EpochStride
			for k := range rapid.IntRange(1, 4).Draw(rt, "pairs") {
				pid := id(rt, "proposal") + ":" + strconv.Itoa(e) + ":" + strconv.Itoa(k) // distinct within the epoch
				p := protocol.EffectProposal{ProposalID: pid, EffectType: id(rt, "effect_type"), ActionDigest: digest(rt, "action"),
					CauseID: id(rt, "cause"), CorrelationID: id(rt, "correlation"), ProposalDedupKey: id(rt, "dedup"),
					DestinationDigest: digest(rt, "destination"), GoalID: id(rt, "goal"), ObligationID: id(rt, "obligation"),
					DeclaredRiskHint: rapid.SampledFrom([]string{"read_only", "reversible", "high_risk_external", "unknown"}).Draw(rt, "risk"),
					Preconditions:    ids(rt, "precondition"), Versions: w.versions}
				v := protocol.EligibilityVerdict{VerdictID: id(rt, "verdict") + ":" + strconv.Itoa(e) + ":" + strconv.Itoa(k), ProposalID: pid,
					Status:               rapid.SampledFrom([]string{"eligible", "ineligible", "conflicted"}).Draw(rt, "status"),
					SupportDerivationIDs: ids(rt, "support"), CauseID: id(rt, "verdict_cause"), RuleSetVersion: w.versions.RuleSet}
				pv, rej := frontier.NewProposalValue(p)
				if rej != nil {
					rt.Fatalf("proposal: %+v", rej)
				}
				vv, rej := frontier.NewVerdictValue(v)
				if rej != nil {
					rt.Fatalf("verdict: %+v", rej)
				}
				pd, rej1 := frontier.NewValueDelta(ProposalSource, at, 1, df, pv)
				vd, rej2 := frontier.NewValueDelta(VerdictSource, at, 1, df, vv)
				if rej1 != nil || rej2 != nil {
					rt.Fatalf("deltas: %+v %+v", rej1, rej2)
				}
				// R takes two deltas a command: one command a pair.
				cmds = append(cmds, frontier.ApplyDeltaBatch{ProfileDigest: d, DataflowVersion: df, Deltas: []frontier.ValueDelta{pd, vd}})
			}
		}
		for _, src := range []string{ProposalSource, VerdictSource} {
			cmds = append(cmds, frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: df, SourceID: src, LowWatermark: int64(epochs+1) * EpochStride})
		}
		published, _, rej := frontier.Publish(w.r0, prof, cmds)
		if rej != nil {
			rt.Fatalf("R refused: %+v", rej)
		}
		if len(published) != epochs {
			rt.Fatalf("R published %d batches for %d epochs", len(published), epochs)
		}
		for i, pb := range published {
			got, want := w.toAuthority(pb), sealBySealBatch(w, pb)
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("batch %d: toAuthority sealed\n%#v\nSealBatch\n%#v", i, got, want)
			}
			if reflect.DeepEqual(want.checked, authority.CheckedBatch{}) {
				rt.Fatalf("batch %d: SealBatch refused it", i)
			}
			if err := checkAuthorityBatch(pb); err != nil {
				rt.Fatalf("batch %d: %v", i, err)
			}
		}
		batches += len(published)
	})
	t.Logf("%d batches compared", batches)
}
