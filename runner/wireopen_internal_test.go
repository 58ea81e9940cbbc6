package runner

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// wiresWorkflow is a Workflow of which the wires read the digest alone.
type wiresWorkflow struct{ Workflow }

func (wiresWorkflow) Digest() string { return "sha256:wf" }

// The open effects a tick's check compares with are the last commit's,
// as they were, however the ticks' lists are written into the arrays of
// the ones before; and each tick's are wireEffects' of its checkpoint.
// Drawn: each tick's open effects, and whether its commit went through
// (a refused one leaves the view as it was).
func TestOpenEffectsListsAlternate(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := &Runner{carries: map[string]tripwire.Carry{}}
		tk := &tick{run: store.Run{ID: "run"}, wf: wiresWorkflow{}, cp: &checkpoint{}}
		r.takeScratch(tk)
		stage := rapid.SampledFrom([]string{stagePlanned, stageCommitted, "closed"})
		draw := func(label string) []openEffect {
			return rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) openEffect {
				return openEffect{IntentID: rapid.StringMatching(`i[0-9]`).Draw(rt, "id"), Stage: stage.Draw(rt, "stage")}
			}), 0, 4).Draw(rt, label)
		}
		tk.cp.Open = draw("loaded")
		tk.committed = viewOf(tk.cp)
		want := slices.Clone(tk.committed.open)
		for range rapid.IntRange(1, 8).Draw(rt, "ticks") {
			tk.cp.Open = draw("open")
			b := r.commitBoundary(tk, &store.Tick{Checkpoint: &store.Checkpoint{}})
			if !slices.Equal(b.OpenBefore, want) || (b.OpenBefore == nil) != (want == nil) {
				rt.Fatalf("compared with %v, the last commit's %v", b.OpenBefore, want)
			}
			if after := wireEffects(tk.cp.Open); !slices.Equal(b.OpenAfter, after) || b.OpenAfter == nil {
				rt.Fatalf("the tick's open effects %v, want %v", b.OpenAfter, after)
			}
			if rapid.Bool().Draw(rt, "committed") {
				r.afterCommit(tk, b)
				want = slices.Clone(b.OpenAfter)
			}
		}
		r.leaveScratch(tk)
	})
}
