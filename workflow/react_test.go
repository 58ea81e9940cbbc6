package workflow

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/protocol"
)

// reactByGrant is react as it ran before R's start state carried demand:
// from the plain initial state, the same catch-up, commands and advances,
// then a GrantDemand that takes every batch.
func (t *tick) reactByGrant(cmds []frontier.Command) ([]sealedBatch, error) {
	w, st := t.w, t.st
	prof := w.rProfile
	d, df := prof.Digest(), prof.DataflowVersion()
	s := frontier.InitialState(prof)
	var out []sealedBatch
	step := func(c frontier.Command) error {
		tr, rej := frontier.Step(s, prof, c)
		if rej != nil {
			return fmt.Errorf("workflow: R refused %T: %s at %s", c, rej.Code, rej.Path)
		}
		s = tr.Next
		for _, pb := range tr.Published {
			out = append(out, w.toAuthority(pb))
		}
		return nil
	}
	advance := func(mark int64) error {
		for _, src := range []string{ProposalSource, VerdictSource} {
			if err := step(frontier.AdvanceFrontier{ProfileDigest: d, DataflowVersion: df, SourceID: src, LowWatermark: mark}); err != nil {
				return err
			}
		}
		return nil
	}
	if st.Watermark > t.lt*EpochStride {
		if err := advance(st.Watermark); err != nil {
			return nil, err
		}
	}
	for _, c := range cmds {
		if err := step(c); err != nil {
			return nil, err
		}
	}
	st.Watermark = (t.lt + 1) * EpochStride
	if err := advance(st.Watermark); err != nil {
		return nil, err
	}
	if err := step(frontier.GrantDemand{ProfileDigest: d, DataflowVersion: df, Batches: int64(len(cmds))}); err != nil {
		return nil, err
	}
	if len(out) != len(cmds) {
		return nil, fmt.Errorf("workflow: R published %d batches for %d epochs", len(out), len(cmds))
	}
	return out, nil
}

// genReactCommands draws a tick's R commands: mostly one proposal and its
// verdict per epoch, as the seam projects them, and sometimes what R
// refuses or publishes differently — a verdict missing, under another
// rule set, or at another epoch, an epoch repeated, a delta in the past.
func genReactCommands(rt *rapid.T, w *Workflow, lt int64) []frontier.Command {
	prof := w.rProfile
	vs := w.Versions()
	n := rapid.IntRange(1, 6).Draw(rt, "commands")
	cmds := make([]frontier.Command, 0, n)
	for i := 0; i < n; i++ {
		et := lt*EpochStride + int64(i)
		switch rapid.IntRange(0, 9).Draw(rt, "epoch") {
		case 0:
			et = lt*EpochStride + int64(rapid.IntRange(0, n-1).Draw(rt, "shared"))
		case 1:
			et = rapid.Int64Range(0, lt*EpochStride).Draw(rt, "past")
		}
		p := protocol.EffectProposal{
			Kind: protocol.KindEffectProposal, ProposalID: fmt.Sprintf("proposal:%d", i), EffectType: "refund.issue",
			GoalID: "goal:g", ObligationID: "obligation:o", CauseID: "evt:e", CorrelationID: "run:r",
			ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
			DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
			ProposalDedupKey:  fmt.Sprintf("proposal-dedup:%d", rapid.IntRange(0, 3).Draw(rt, "dedup")),
			DeclaredRiskHint:  "high_risk_external", Preconditions: []string{"frontier:1"}, Versions: vs,
		}
		v := protocol.EligibilityVerdict{
			Kind: protocol.KindEligibilityVerdict, VerdictID: fmt.Sprintf("verdict:%d", i), ProposalID: p.ProposalID,
			Status:               rapid.SampledFrom([]string{"eligible", "ineligible", "conflicted"}).Draw(rt, "status"),
			SupportDerivationIDs: []string{"derivation:a"}, CauseID: "cause:c", RuleSetVersion: vs.RuleSet,
		}
		pv, rej := frontier.NewProposalValue(p)
		if rej != nil {
			rt.Fatalf("proposal: %s at %s", rej.Code, rej.Path)
		}
		pd, _ := frontier.NewValueDelta(ProposalSource, et, 1, prof.DataflowVersion(), pv)
		deltas := []frontier.ValueDelta{pd}
		vet := et
		switch rapid.IntRange(0, 19).Draw(rt, "verdict") {
		case 0:
			vet = -1 // no verdict
		case 1:
			v.RuleSetVersion = "rules/other"
		case 2:
			vet = et + 1
		}
		if vet >= 0 {
			vv, rej := frontier.NewVerdictValue(v)
			if rej != nil {
				rt.Fatalf("verdict: %s at %s", rej.Code, rej.Path)
			}
			vd, _ := frontier.NewValueDelta(VerdictSource, vet, 1, prof.DataflowVersion(), vv)
			deltas = append(deltas, vd)
		}
		cmds = append(cmds, frontier.ApplyDeltaBatch{ProfileDigest: prof.Digest(), DataflowVersion: prof.DataflowVersion(), Deltas: deltas})
	}
	return cmds
}

// Starting R from a state with demand granted and dropping the tick's
// GrantDemand publishes the same batches as before, byte for byte once
// given their published digest, with the same checks, the same stored
// watermark, and the same refusal word for word when R refuses.
func TestReactWithoutGrantIsReactByGrant(t *testing.T) {
	w := compileExample(t, "refund-agent")
	published, checked, refused := 0, 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		lt := rapid.Int64Range(1, 40).Draw(rt, "lt")
		mark := rapid.SampledFrom([]int64{0, lt * EpochStride, lt*EpochStride + 1, (lt + 1) * EpochStride}).Draw(rt, "watermark")
		cmds := genReactCommands(rt, w, lt)
		oldT := &tick{w: w, st: &state{Watermark: mark}, lt: lt}
		newT := &tick{w: w, st: &state{Watermark: mark}, lt: lt}
		want, werr := oldT.reactByGrant(cmds)
		got, gerr := newT.react(cmds)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			rt.Fatalf("by grant: %v; without: %v", werr, gerr)
		}
		if werr != nil {
			refused++
			return
		}
		if oldT.st.Watermark != newT.st.Watermark {
			rt.Fatalf("watermark %d by grant, %d without", oldT.st.Watermark, newT.st.Watermark)
		}
		if len(got) != len(want) {
			rt.Fatalf("%d batches by grant, %d without", len(want), len(got))
		}
		for i := range want {
			// The tick's R publishes its batches undigested; given the
			// published digest (withPublished, where the state keeps the
			// batch) each is the one R publishes with it.
			if got[i].batch.PublishedBatchDigest != "" {
				rt.Fatalf("batch %d published with a digest", i)
			}
			b, c := w.withPublished(got[i].batch, got[i].checked)
			got[i] = sealedBatch{b, c}
			wb, _ := json.Marshal(want[i].batch)
			gb, _ := json.Marshal(got[i].batch)
			if string(wb) != string(gb) {
				rt.Fatalf("batch %d by grant:\n%s\nwithout:\n%s", i, wb, gb)
			}
			if !reflect.DeepEqual(want[i], got[i]) {
				rt.Fatalf("batch %d: sealed or checked differently", i)
			}
			if !reflect.DeepEqual(want[i].checked, authority.CheckedBatch{}) {
				checked++
			}
		}
		published += len(want)
	})
	if published == 0 || checked == 0 || refused == 0 {
		t.Fatalf("%d batches published, %d checked, %d runs refused: a path went untried", published, checked, refused)
	}
}

// oneEpochCommand is the command the seam projects for a tick's first
// proposal: the proposal and its verdict at the tick's first epoch.
func oneEpochCommand(tb testing.TB, w *Workflow, lt int64) frontier.Command {
	prof, vs := w.rProfile, w.Versions()
	p := protocol.EffectProposal{
		Kind: protocol.KindEffectProposal, ProposalID: "proposal:0", EffectType: "refund.issue",
		GoalID: "goal:g", ObligationID: "obligation:o", CauseID: "evt:e", CorrelationID: "run:r",
		ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
		DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
		ProposalDedupKey:  "proposal-dedup:0", DeclaredRiskHint: "high_risk_external",
		Preconditions: []string{"frontier:1"}, Versions: vs,
	}
	v := protocol.EligibilityVerdict{
		Kind: protocol.KindEligibilityVerdict, VerdictID: "verdict:0", ProposalID: p.ProposalID, Status: "eligible",
		SupportDerivationIDs: []string{"derivation:a", "derivation:b"}, CauseID: "cause:c", RuleSetVersion: vs.RuleSet,
	}
	pv, rej := frontier.NewProposalValue(p)
	if rej != nil {
		tb.Fatal(rej.Code)
	}
	vv, rej := frontier.NewVerdictValue(v)
	if rej != nil {
		tb.Fatal(rej.Code)
	}
	pd, _ := frontier.NewValueDelta(ProposalSource, lt*EpochStride, 1, prof.DataflowVersion(), pv)
	vd, _ := frontier.NewValueDelta(VerdictSource, lt*EpochStride, 1, prof.DataflowVersion(), vv)
	return frontier.ApplyDeltaBatch{ProfileDigest: prof.Digest(), DataflowVersion: prof.DataflowVersion(), Deltas: []frontier.ValueDelta{pd, vd}}
}

// BenchmarkReact is R's part of a one-proposal tick, run both ways in one
// binary so the two are measured under the same load: the command
// sequence with a trailing GrantDemand, and the one from a state with
// demand granted.
func BenchmarkReact(b *testing.B) {
	w := compileExample(b, "refund-agent")
	const lt = 1
	cmds := []frontier.Command{oneEpochCommand(b, w, lt)}
	for _, c := range []struct {
		name  string
		react func(*tick, []frontier.Command) ([]sealedBatch, error)
	}{{"grant-after", (*tick).reactByGrant}, {"demand-granted", (*tick).react}} {
		b.Run(c.name, func(b *testing.B) {
			t := &tick{w: w, st: &state{}, lt: lt}
			benchDecide(b)
			cpu0 := cputime.Used()
			for b.Loop() {
				t.st.Watermark = lt * EpochStride
				out, err := c.react(t, cmds)
				if err != nil || len(out) != 1 {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}
