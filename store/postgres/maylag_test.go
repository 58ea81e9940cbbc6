package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A tick whose durability may lag is committed with synchronous_commit
// off, on both commit paths (the two-round-trip one, and the one that
// follows this store's own last commit of the run), readable at once from
// another store on the database; the setting is the transaction's own, so
// a durable tick after it commits with the session's setting again.
func TestMayLagCommitsWithoutWaitingForTheFlush(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	other := openTest(t, Options{Schema: s.schema})
	var mu sync.Mutex
	var seen []string
	testSetting = func(v string) { mu.Lock(); seen = append(seen, v); mu.Unlock() }
	defer func() { testSetting = nil }()
	take := func() []string { mu.Lock(); defer mu.Unlock(); out := seen; seen = nil; return out }

	var session string
	if err := s.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	if session == "off" {
		t.Skipf("the server's synchronous_commit is already off")
	}
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tick := func(head int64, body string, lag bool) store.Tick {
		return store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("E", body)}, MayLag: lag}
	}
	for i, step := range []struct {
		name    string
		forget  bool // the store forgets the run first: the two-round-trip path
		lag     bool
		setting string
	}{
		{"two round trips, lagging", true, true, "off"},
		{"one round trip, lagging", false, true, "off"},
		{"one round trip, durable", false, false, session},
		{"two round trips, durable", true, false, session},
		{"one round trip, lagging again", false, true, "off"},
	} {
		if step.forget {
			s.heads.forget("r")
		}
		head := int64(i)
		if err := s.Commit(ctx, l, tick(head, `{"n":`+string(rune('0'+i))+`}`, step.lag)); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := take(); len(got) != 1 || got[0] != step.setting {
			t.Fatalf("%s: synchronous_commit at COMMIT %v, want %s", step.name, got, step.setting)
		}
		run, err := other.Run(ctx, "r")
		if err != nil || run.Head != head+1 {
			t.Fatalf("%s: another store reads head %d (%v), want %d", step.name, run.Head, err, head+1)
		}
	}
	// The pool's sessions keep the server's setting.
	for range 4 {
		var v string
		if err := s.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&v); err != nil || v != session {
			t.Fatalf("a pooled session's synchronous_commit: %q (%v), want %q", v, err, session)
		}
	}
}
