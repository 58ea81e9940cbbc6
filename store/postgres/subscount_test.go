package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// staleCount makes the submissions s knows run l's row to count one fewer
// than the row counts: what a store knows after an input was submitted
// while its one-round-trip ticks, which do not read the count, went on.
func staleCount(t *testing.T, s *Store, l store.Lease) {
	t.Helper()
	var n int64
	must(t, s.pool.QueryRow(ctx, `SELECT submissions FROM runs WHERE run_id = $1`, l.RunID).Scan(&n))
	s.heads.mu.Lock()
	defer s.heads.mu.Unlock()
	h, ok := s.heads.m[l.RunID]
	if !ok || h.generation != l.Generation {
		t.Fatalf("the store knows no head of %s under generation %d", l.RunID, l.Generation)
	}
	h.submissions = n - 1
	s.heads.m[l.RunID] = h
}

// known is the head s knows of run, and whether it knows one.
func known(s *Store, run string) (runHead, bool) {
	s.heads.mu.Lock()
	defer s.heads.mu.Unlock()
	h, ok := s.heads.m[run]
	return h, ok
}

// What the store knows of a run's submissions is what the row counted
// when it was last read under the row's lock: 0 for a run created leased,
// the row's count for a lease taken and for a two-round-trip commit; the
// one-round-trip commits leave it as it was (never more than the row
// counts). A one-round-trip tick that checks the inbox commits whether
// the count known is the row's or stale, and an input submitted since
// (counted on the row, not known) is seen by the tick's check.
func TestKnownSubmissions(t *testing.T) {
	s := openTest(t, Options{})
	want := func(run string, n int64) {
		t.Helper()
		h, ok := known(s, run)
		var row int64
		must(t, s.pool.QueryRow(ctx, `SELECT submissions FROM runs WHERE run_id = $1`, run).Scan(&row))
		if !ok || h.submissions != n || h.submissions > row {
			t.Fatalf("the store knows %d submissions of %s (%v), the row counts %d; want %d", h.submissions, run, ok, row, n)
		}
	}
	tick := func(head int64, inbox bool) store.Tick {
		return store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("A", `{}`)}, ExpectInboxEmpty: inbox}
	}

	l, err := s.CreateRunLeased(ctx, store.Run{ID: "c", WorkflowID: "wf", State: "S"}, "w", time.Hour)
	must(t, err)
	want("c", 0)
	must(t, s.Commit(ctx, l, tick(0, true)))
	want("c", 0)

	must(t, s.CreateRun(ctx, store.Run{ID: "a", WorkflowID: "wf", State: "S"}))
	for _, id := range []string{"x", "y"} {
		must(t, s.Submit(ctx, storetest.Inb("a", id, "INPUT", `{}`)))
	}
	l, err = s.AcquireLease(ctx, "a", "w", time.Hour)
	must(t, err)
	want("a", 2)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}, Consume: []string{"x", "y"}, ExpectInboxEmpty: true}))
	want("a", 2)
	// An input submitted while the one-round-trip ticks go on: the row
	// counts it, the store does not know it, and a tick that checks the
	// inbox refuses it pending.
	must(t, s.Commit(ctx, l, tick(1, false)))
	must(t, s.Submit(ctx, storetest.Inb("a", "z", "INPUT", `{}`)))
	must(t, s.Commit(ctx, l, tick(2, false)))
	want("a", 2)
	mustCode(t, s.Commit(ctx, l, tick(3, true)), store.CodeHeadMismatch)
	// The refused tick read the run again on its way: the store forgot
	// what it knew. A two-round-trip commit tells the count again.
	if _, ok := known(s, "a"); ok {
		t.Fatal("the store still knows the run's head after a refused tick")
	}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{storetest.Ev("A", `{}`)}, Consume: []string{"z"}, ExpectInboxEmpty: true}))
	want("a", 3)
	must(t, s.Commit(ctx, l, tick(4, true)))
	want("a", 3)
	// Stale (lower than the row's count, as after an input submitted and
	// consumed meanwhile): the snapshot's count decides, and the tick
	// commits.
	staleCount(t, s, l)
	must(t, s.Commit(ctx, l, tick(5, true)))
	if r, err := s.Run(ctx, "a"); err != nil || r.Head != 6 {
		t.Fatalf("head %d (%v) after the tick on a stale count, want 6", r.Head, err)
	}
}

// A store that took a run back after another owner held it knows nothing
// it knew before: its old lease is fenced, and its new lease starts from
// the row's count, so an input submitted under the other owner's lease,
// still pending, refuses a tick that expects the inbox empty.
func TestStaleSubmissionsAfterTakeover(t *testing.T) {
	schema := freshSchema(t)
	a := openNamed(t, schema, "flrh-a-"+schema, Options{})
	b := openNamed(t, schema, "flrh-b-"+schema, Options{})
	la, err := a.CreateRunLeased(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}, "a", time.Hour)
	must(t, err)
	// The lease lapses; b takes the run and an input is submitted.
	_, err = a.pool.Exec(ctx, `UPDATE runs SET lease_expires_at = 1 WHERE run_id = 'r'`)
	must(t, err)
	lb, err := b.AcquireLease(ctx, "r", "b", time.Hour)
	must(t, err)
	must(t, b.Submit(ctx, storetest.Inb("r", "late", "INPUT", `{}`)))
	tick := store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}, ExpectInboxEmpty: true}
	if _, ok := a.heads.ahead(la, tick); !ok {
		t.Fatal("a does not know the run's head under its old lease")
	}
	mustCode(t, a.Commit(ctx, la, tick), store.CodeFenced)
	must(t, b.ReleaseLease(ctx, lb))
	la, err = a.AcquireLease(ctx, "r", "a", time.Hour)
	must(t, err)
	if h, ok := known(a, "r"); !ok || h.submissions != 1 {
		t.Fatalf("a knows %+v (%v) under its new lease, want 1 submission", h, ok)
	}
	mustCode(t, a.Commit(ctx, la, tick), store.CodeHeadMismatch)
	if r, err := a.Run(ctx, "r"); err != nil || r.Head != 0 {
		t.Fatalf("head %d (%v) after the refused ticks, want 0", r.Head, err)
	}
}

// The inbox-checking fence reads the snapshot's count only when the row's
// count is not the one the store knows: with it known, the InitPlan that
// reads it is never executed.
func TestInboxFenceReadsTheSnapshotOnlyWhenStale(t *testing.T) {
	s := openTest(t, Options{})
	l, err := s.CreateRunLeased(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}, "w", time.Hour)
	must(t, err)
	must(t, s.Submit(ctx, storetest.Inb("r", "x", "INPUT", `{}`)))
	h := runHead{owner: l.Owner, generation: l.Generation, hash: store.GenesisHash}
	tick := store.Tick{ExpectHead: 0}
	chains := chainOf(h.hash, h.head, nil)
	args := aheadFenceArgs(s, l, tick, h, &chains, false)
	for _, c := range []struct {
		known    int64
		executed bool
	}{{1, false}, {0, true}} {
		tx, err := s.pool.Begin(ctx)
		must(t, err)
		var lines []string
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) `+fenceAheadInboxWrite+` RETURNING `+fenceReturning,
			append(append([]any{}, args...), c.known)...)
		if err == nil {
			lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		must(t, tx.Rollback(ctx))
		must(t, err)
		plan := strings.Join(lines, "\n")
		_, initPlan, _ := strings.Cut(plan, "InitPlan")
		if !strings.Contains(plan, "Update on runs (actual rows=0 loops=1)") && !strings.Contains(plan, "Update on runs (actual rows=1 loops=1)") ||
			strings.Contains(initPlan, "never executed") == c.executed {
			t.Fatalf("known count %d: the snapshot's count executed %v, want %v:\n%s", c.known, !strings.Contains(initPlan, "never executed"), c.executed, plan)
		}
	}
}
