package tripwire_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// The wires recompute the store's chain hash independently; the two must
// be the same function.
func TestChainHashIsTheStores(t *testing.T) {
	if tripwire.GenesisHash != store.GenesisHash {
		t.Fatalf("genesis %s, store %s", tripwire.GenesisHash, store.GenesisHash)
	}
	rapid.Check(t, func(rt *rapid.T) {
		prev := rapid.String().Draw(rt, "prev")
		seq := rapid.Int64().Draw(rt, "seq")
		digest := rapid.String().Draw(rt, "digest")
		if got, want := tripwire.ChainHash(prev, seq, digest), store.ChainHash(prev, seq, digest); got != want {
			rt.Fatalf("ChainHash = %s, store says %s", got, want)
		}
	})
}

// AfterCommit extends any known head over any tick's events as the store
// chains them, one link after another.
func TestAfterCommitChainsAsTheStore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		prev := rapid.OneOf(rapid.Just(store.GenesisHash), rapid.String()).Draw(rt, "head")
		if prev == "" {
			prev = "x"
		}
		seq := rapid.Int64Range(0, 1<<40).Draw(rt, "seq")
		digests := rapid.SliceOfN(rapid.OneOf(rapid.Just(store.BodyDigest([]byte("e"))), rapid.String()), 1, 12).Draw(rt, "digests")
		b := tripwire.Boundary{Phase: tripwire.PhaseCommit}
		want := tripwire.Head{Seq: seq, Hash: prev}
		for _, d := range digests {
			b.Events = append(b.Events, tripwire.Event{Kind: tripwire.EventControl, Digest: d})
			want = tripwire.Head{Seq: want.Seq + 1, Hash: store.ChainHash(want.Hash, want.Seq+1, d)}
		}
		got, err := tripwire.AfterCommit(tripwire.Carry{Known: tripwire.Head{Seq: seq, Hash: prev}}, b)
		if err != nil || got.Known != want {
			rt.Fatalf("AfterCommit = %+v, %v; the store chains to %+v", got.Known, err, want)
		}
	})
}

// The default alphabet is exactly the runner's and the store's vocabulary:
// a symbol added there without being added here would trip every run.
func TestDefaultAlphabetMatchesTheRuntime(t *testing.T) {
	a := tripwire.DefaultAlphabet()
	same := func(what string, got []string, want ...string) {
		t.Helper()
		g, w := slices.Clone(got), slices.Clone(want)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("%s: alphabet %v, runtime %v", what, g, w)
		}
	}
	same("event kinds", a.EventKinds, runner.EventControl, runner.EventRejected, runner.EventAccepted)
	same("inbox kinds", a.InboxKinds, runner.InboxKinds...)
	same("outbox", a.OutboxStatuses, string(store.OutboxPending), string(store.OutboxInFlight), string(store.OutboxRetry),
		string(store.OutboxReconcile), string(store.OutboxHuman), string(store.OutboxDone))
	same("attempts", a.AttemptStatuses, string(store.AttemptStarted), string(store.AttemptSucceeded), string(store.AttemptFailedTransient),
		string(store.AttemptFailedPermanent), string(store.AttemptUnknown), string(store.AttemptReconciledApplied), string(store.AttemptReconciledNotApplied))
	same("approvals", a.ApprovalStates, string(store.ApprovalGranted), string(store.ApprovalConsumed), string(store.ApprovalRevoked))
}
