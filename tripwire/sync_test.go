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
