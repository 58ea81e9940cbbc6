package storetest

import (
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testDueTimes holds a store that keeps runs' due times (store.DueSetter)
// to its contract: every tick records its DueAt in the run's header, to
// the nanosecond; a resting run with nothing pending is ready (Ready,
// ClaimReady) exactly when its due time is at or before the reading
// given, never with no reading, and never once ended or quarantined;
// SetDue is fenced, writes nothing when refused, and gives the lease up
// with release.
func testDueTimes(t *testing.T, s store.Store, _ *Clock) {
	ds, ok := s.(store.DueSetter)
	rl, listed := s.(store.ReadyLister)
	if !ok || !listed {
		t.Skip("this store does not keep due times")
	}
	due := time.Date(2031, 2, 3, 4, 5, 6, 7, time.UTC)
	r := newReadiness(t, s, rl)
	ready, both := r.listed, r.both
	dueOf := func(id string) time.Time {
		t.Helper()
		r, err := s.Run(ctx, id)
		must(t, err)
		return r.DueAt
	}

	newRun(t, s, "d")
	l, err := s.AcquireLease(ctx, "d", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "WAIT_APPROVAL", Events: []store.Event{Ev("A", `{"a":1}`)}, DueAt: due}))
	must(t, s.ReleaseLease(ctx, l))
	if got := dueOf("d"); !got.Equal(due) {
		t.Fatalf("due at %v after the tick, want %v", got, due)
	}
	both("d", time.Time{}, false, "no reading given")
	both("d", due.Add(-time.Nanosecond), false, "a nanosecond before its due time")
	both("d", due, true, "at its due time")
	both("d", due.Add(time.Hour), true, "an hour after it")

	// A tick without a due time clears it.
	l, err = s.AcquireLease(ctx, "d", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("B", `{"b":1}`)}}))
	if got := dueOf("d"); !got.IsZero() {
		t.Fatalf("due at %v after a tick without one", got)
	}
	must(t, s.ReleaseLease(ctx, l))
	both("d", due.Add(time.Hour), false, "its due time cleared by a tick")

	// SetDue: a stale lease or a run that does not exist writes nothing.
	l, err = s.AcquireLease(ctx, "d", "runner", time.Hour)
	must(t, err)
	before := snapshot(t, s, "d")
	stale := l
	stale.Generation--
	mustCode(t, ds.SetDue(ctx, stale, due, true), store.CodeFenced)
	mustCode(t, ds.SetDue(ctx, store.Lease{RunID: "nope", Owner: "runner", Generation: 1}, due, true), store.CodeNotFound)
	if after := snapshot(t, s, "d"); after != before {
		t.Fatalf("refused SetDue changed the run:\n%s\n%s", before, after)
	}
	if got := dueOf("d"); !got.IsZero() {
		t.Fatalf("refused SetDue recorded due at %v", got)
	}
	// Without release the lease stays; with it, it is given up.
	must(t, ds.SetDue(ctx, l, due, false))
	if r, _ := s.Run(ctx, "d"); r.Lease.Owner != "runner" || r.Lease.Generation != l.Generation || !r.DueAt.Equal(due) {
		t.Fatalf("SetDue without release: lease %+v, due at %v", r.Lease, r.DueAt)
	}
	if !ready("d", due) {
		t.Fatal("a run held, resting and due is not listed ready")
	}
	later := due.Add(time.Minute)
	must(t, ds.SetDue(ctx, l, later, true))
	if r, _ := s.Run(ctx, "d"); r.Lease.Owner != "" || !r.DueAt.Equal(later) {
		t.Fatalf("SetDue with release: lease %+v, due at %v", r.Lease, r.DueAt)
	}
	mustCode(t, s.ReleaseLease(ctx, l), store.CodeFenced)
	both("d", due, false, "before the due time SetDue recorded")
	both("d", later, true, "at the due time SetDue recorded")
	// Zero clears it.
	l, err = s.AcquireLease(ctx, "d", "runner", time.Hour)
	must(t, err)
	must(t, ds.SetDue(ctx, l, time.Time{}, true))
	both("d", later.Add(time.Hour), false, "its due time cleared by SetDue")

	// A run that is not resting is ready whatever its due time.
	newRun(t, s, "x")
	l, err = s.AcquireLease(ctx, "x", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "EXECUTE", Events: []store.Event{Ev("A", `{"a":1}`)}, DueAt: later}))
	must(t, s.ReleaseLease(ctx, l))
	both("x", due, true, "a working run before its due time")

	// An ended run, or a quarantined one, is never ready for its due time.
	newRun(t, s, "e")
	l, err = s.AcquireLease(ctx, "e", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "SUCCEEDED", Outcome: "success", Events: []store.Event{Ev("END", `{}`)}, DueAt: due}))
	both("e", later, false, "an ended run past its due time")
	newRun(t, s, "q")
	l, err = s.AcquireLease(ctx, "q", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "WAIT_APPROVAL", Events: []store.Event{Ev("A", `{"a":1}`)}, DueAt: due}))
	must(t, s.Quarantine(ctx, "q", "checkpoint digest mismatch"))
	both("q", later, false, "a quarantined run past its due time")
	mustCode(t, ds.SetDue(ctx, l, later, false), store.CodeQuarantined)
}
