package postgres

import (
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A run's creation, its lease and its first tick go in one round trip,
// and its next tick under that lease in one more; a run id taken is
// refused in one, writing nothing. Counted on one connection, after a
// first pass has prepared the statements on it.
func TestCreateRunCommitRoundTrips(t *testing.T) {
	tc := countTrips(t)
	s, err := Open(ctx, tc.DSN(), Options{Schema: freshSchema(t), MaxConns: 1})
	must(t, err)
	defer s.Close()
	cp := []byte(`{"state":1}`)
	tick := func(head int64, consume ...string) store.Tick {
		return store.Tick{ExpectHead: head, State: "PLAN", Consume: consume, Events: []store.Event{storetest.Ev("A", `{"n":1}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`1`)}}}
	}
	for _, pass := range []string{"warm-", ""} {
		id := pass + "r"
		t0 := tc.Trips()
		l, err := s.CreateRunCommit(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "S"}, "w", time.Hour,
			[]store.Inbound{storetest.Inb(id, "input:1", "INPUT", `{"a":1}`)}, tick(0, "input:1"))
		must(t, err)
		t1 := tc.Trips()
		must(t, s.Commit(ctx, l, tick(1)))
		t2 := tc.Trips()
		_, err = s.CreateRunCommit(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "S"}, "w", time.Hour,
			[]store.Inbound{storetest.Inb(id, "input:1", "INPUT", `{"a":1}`)}, tick(0, "input:1"))
		if store.CodeOf(err) != store.CodeExists {
			t.Fatalf("a run id taken: %v, want CodeExists", err)
		}
		if pass != "" {
			continue
		}
		if got := t1 - t0; got != 1 {
			t.Errorf("the creation with the first tick took %d round trips, want 1", got)
		}
		if got := t2 - t1; got != 1 {
			t.Errorf("the tick after it took %d round trips, want 1", got)
		}
		run, err := s.Run(ctx, id)
		must(t, err)
		if run.Head != 2 || run.Lease.Generation != 1 || run.State != "PLAN" {
			t.Fatalf("the run after: %+v", run)
		}
	}
}
