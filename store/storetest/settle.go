package storetest

import (
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testSettle holds a Settler to its contract: a resting run settled at
// its last inbox entry is neither listed ready nor claimed until an entry
// arrives after it, or a commit moves its head or its state; a settle
// that is fenced or names a position the inbox does not hold writes
// nothing; with release the lease is given up with it.
func testSettle(t *testing.T, s store.Store, _ *Clock) {
	st, ok := s.(store.Settler)
	rl, listed := s.(store.ReadyLister)
	if !ok || !listed {
		t.Skip("this store does not settle runs")
	}
	r := newReadiness(t, s, rl)
	ready := func(id string) bool { t.Helper(); return r.listed(id, time.Time{}) }
	both := func(id string, want bool, when string) { t.Helper(); r.both(id, time.Time{}, want, when) }
	submit := func(id, in string) { must(t, s.Submit(ctx, Inb(id, in, "input", fmt.Sprintf(`{"in":%q}`, in)))) }

	newRun(t, s, "w")
	l, err := s.AcquireLease(ctx, "w", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "WAIT_APPROVAL", Events: []store.Event{Ev("A", `{"a":1}`)}}))
	submit("w", "i1") // position 1
	must(t, s.ReleaseLease(ctx, l))
	both("w", true, "a resting run with a pending entry")

	l, err = s.AcquireLease(ctx, "w", "runner", time.Hour)
	must(t, err)
	// Bad positions and a stale lease write nothing.
	before := snapshot(t, s, "w")
	mustCode(t, st.Settle(ctx, l, -1, true), store.CodeInvalidInput)
	mustCode(t, st.Settle(ctx, l, 2, true), store.CodeInvalidInput)
	stale := l
	stale.Generation--
	mustCode(t, st.Settle(ctx, stale, 1, true), store.CodeFenced)
	if after := snapshot(t, s, "w"); after != before {
		t.Fatalf("refused settles changed the run:\n%s\n%s", before, after)
	}
	if r, _ := s.Run(ctx, "w"); r.Lease.Owner != "runner" || r.Lease.Generation != l.Generation {
		t.Fatalf("refused settles changed the lease: %+v", r.Lease)
	}
	if !ready("w") {
		t.Fatal("refused settles settled the run")
	}

	// Settled with release: the lease is gone, and the run is not ready.
	must(t, st.Settle(ctx, l, 1, true))
	if r, _ := s.Run(ctx, "w"); r.Lease.Owner != "" {
		t.Fatalf("settled with release, the lease is still %+v", r.Lease)
	}
	mustCode(t, s.ReleaseLease(ctx, l), store.CodeFenced)
	both("w", false, "settled at its last entry")
	pend, err := s.Inbox(ctx, "w", true)
	must(t, err)
	if len(pend) != 1 || pend[0].ID != "i1" {
		t.Fatalf("settling consumed entries: %+v", pend)
	}

	// A new entry after the settled one makes it ready.
	submit("w", "i2")
	both("w", true, "an entry after the settled ones")

	// Settled at the new entry without release: the lease stays.
	l, err = s.AcquireLease(ctx, "w", "runner", time.Hour)
	must(t, err)
	must(t, st.Settle(ctx, l, 2, false))
	if r, _ := s.Run(ctx, "w"); r.Lease.Owner != "runner" || r.Lease.Generation != l.Generation {
		t.Fatalf("settled without release, the lease is %+v", r.Lease)
	}
	if ready("w") {
		t.Fatal("settled at its last entry, still listed ready")
	}
	// Settling lower later is allowed (what a holder found nothing in).
	must(t, st.Settle(ctx, l, 1, false))
	if !ready("w") {
		t.Fatal("settled at 1 with 2 pending, not listed ready")
	}
	must(t, st.Settle(ctx, l, 2, false))

	// A commit that moves the head undoes the settling.
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{Ev("B", `{"b":1}`)}}))
	must(t, s.ReleaseLease(ctx, l))
	both("w", true, "after a commit moved the head")

	// So does one that changes the state alone.
	l, err = s.AcquireLease(ctx, "w", "runner", time.Hour)
	must(t, err)
	must(t, st.Settle(ctx, l, 2, false))
	if ready("w") {
		t.Fatal("settled again, still listed ready")
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, State: "HUMAN_RECONCILIATION"}))
	must(t, s.ReleaseLease(ctx, l))
	both("w", true, "after a commit changed the state")

	// A settled run whose state is not a resting one is ready all the same.
	l, err = s.AcquireLease(ctx, "w", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, State: "EXECUTE"}))
	must(t, st.Settle(ctx, l, 2, true))
	both("w", true, "settled in a state that is not resting")

	// A settle on a run without any inbox entry, at 0, is allowed and
	// changes nothing a reader sees.
	newRun(t, s, "e")
	l, err = s.AcquireLease(ctx, "e", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "INGEST", Events: []store.Event{Ev("A", `{}`)}}))
	must(t, st.Settle(ctx, l, 0, true))
	both("e", false, "an empty inbox")
	submit("e", "x")
	both("e", true, "the first entry of a settled run")

	// A released park forgets what the run settled.
	newRun(t, s, "p")
	l, err = s.AcquireLease(ctx, "p", "runner", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "WAIT_APPROVAL", Events: []store.Event{Ev("A", `{}`)}}))
	submit("p", "i1")
	must(t, st.Settle(ctx, l, 1, true))
	const park = store.ParkPrefix + "DEGRADED_SAFE_MODE: wedge"
	must(t, s.Quarantine(ctx, "p", park))
	mustCode(t, st.Settle(ctx, l, 1, true), store.CodeQuarantined)
	must(t, s.Release(ctx, store.Release{RunID: "p", Park: park, By: "ana", Role: "operator", Capability: "mrp.leave_safe_mode", Reason: "fixed"}))
	both("p", true, "after its park was released")
}
