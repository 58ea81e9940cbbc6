package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// The commit-notifying wrapper keeps the SQLite store's ready listing
// reachable, so the server's runner polls only runs with work to do.
func TestNotifyCommitsKeepsTheReadyListing(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wrapped, _ := NotifyCommits(st)
	rl, ok := store.ReadyListerOf(wrapped)
	if !ok {
		t.Fatal("the wrapped store hides its ReadyLister")
	}
	if err := st.CreateRun(context.Background(), store.Run{ID: "r", WorkflowID: "w", WorkflowVersion: "1", State: "INGEST"}); err != nil {
		t.Fatal(err)
	}
	ids, err := rl.Ready(context.Background(), []string{"INGEST"}, time.Time{})
	if err != nil || len(ids) != 0 {
		t.Fatalf("a resting run with an empty inbox is ready: %v %v", ids, err)
	}
}

// A release through the wrapper wakes the run's streams, as a quarantine
// does; a refused one does not.
func TestNotifyCommitsWakesOnRelease(t *testing.T) {
	ctx := context.Background()
	st, wrapped, n := notifyingRun(t)
	park := store.ParkPrefix + "DEGRADED_SAFE_MODE: wedge"
	if err := st.Quarantine(ctx, "r", park); err != nil {
		t.Fatal(err)
	}
	woken, done := n.subscribe("r")
	defer done()
	rel := store.Release{RunID: "r", Park: "tripwire HUMAN_RECONCILIATION: fencing", By: "dana", Role: "operator", Capability: "mrp.leave_safe_mode", Reason: "checked"}
	if err := wrapped.Release(ctx, rel); store.CodeOf(err) != store.CodeHeadMismatch {
		t.Fatalf("release of another park: %v", err)
	}
	select {
	case <-woken:
		t.Fatal("a refused release woke the stream")
	default:
	}
	rel.Park = park
	if err := wrapped.Release(ctx, rel); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	default:
		t.Fatal("the release did not wake the stream")
	}
}

// A commit that wrote a notice calls the OnNotices hook; one without a
// notice, and one refused, do not.
func TestNotifyCommitsCallsOnNotices(t *testing.T) {
	ctx := context.Background()
	st, wrapped, n := notifyingRun(t)
	calls := 0
	n.OnNotices(func() { calls++ })
	l, err := st.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(b string) store.Event {
		return store.Event{Kind: "E", Body: []byte(b), Digest: store.BodyDigest([]byte(b))}
	}
	notice := []store.Notice{{Kind: store.NoticeApproval, Body: []byte(`{}`)}}
	if err := wrapped.Commit(ctx, l, store.Tick{Events: []store.Event{ev(`{"n":1}`)}}); err != nil || calls != 0 {
		t.Fatalf("a commit without a notice: %v, %d calls", err, calls)
	}
	if err := wrapped.Commit(ctx, l, store.Tick{ExpectHead: 7, Events: []store.Event{ev(`{"n":2}`)}, Notices: notice}); err == nil || calls != 0 {
		t.Fatalf("a refused commit: %v, %d calls", err, calls)
	}
	if err := wrapped.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{ev(`{"n":2}`)}, Notices: notice}); err != nil || calls != 1 {
		t.Fatalf("a commit with a notice: %v, %d calls", err, calls)
	}
}

// notifyingRun opens a store holding run "r" (resting in INGEST), closed
// with the test, and wraps it with NotifyCommits.
func notifyingRun(t *testing.T) (*sqlite.Store, store.Store, *Notifier) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "w", WorkflowVersion: "1", State: "INGEST"}); err != nil {
		t.Fatal(err)
	}
	wrapped, n := NotifyCommits(st)
	return st, wrapped, n
}
