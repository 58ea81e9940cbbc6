package postgres

import (
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// knownEmptyRun is oneEventRun followed by a tick that checks its inbox
// left empty: the store then knows the inbox empty at the count it knows
// (runHead.inboxEmpty), at head 2.
func knownEmptyRun(t *testing.T, s *Store) store.Lease {
	t.Helper()
	l := oneEventRun(t, s)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}, ExpectInboxEmpty: true}))
	s.heads.mu.Lock()
	h := s.heads.m[l.RunID]
	s.heads.mu.Unlock()
	if !h.inboxEmpty {
		t.Fatalf("after a checked empty inbox the store knows %+v, want it known empty", h)
	}
	return l
}

// knownShapes counts the appended statements' shapes whose fence is the
// empty inbox's check.
func knownShapes(s *Store) int {
	s.shapes.mu.RLock()
	defer s.shapes.mu.RUnlock()
	n := 0
	for k := range s.shapes.m {
		if k.fenceKnown {
			n++
		}
	}
	return n
}

// A tick that checks its inbox left empty when the store knows it empty
// does not read the inbox: its fence requires the row's submissions to be
// the count the store knows. An input submitted since — before the tick,
// or while the tick waits for the run's row — refuses the tick with
// HEAD_MISMATCH, nothing of it written, the input pending, as when the
// inbox is read; with nothing submitted it commits and the store still
// knows the inbox empty.
func TestInboxKnownEmpty(t *testing.T) {
	for _, path := range []string{"nothing submitted", "submitted before", "submitted while the tick waits"} {
		t.Run(path, func(t *testing.T) {
			forBothTicks(t, func(t *testing.T) {
				schema := freshSchema(t)
				app, subApp := "flrh-known-"+schema, "flrh-ksub-"+schema
				s := openNamed(t, schema, app, Options{})
				sub := openNamed(t, schema, subApp, Options{})
				adm := admin(t)
				l := knownEmptyRun(t, s)
				tick := store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}, ExpectInboxEmpty: true}
				var err error
				switch path {
				case "nothing submitted":
					err = s.Commit(ctx, l, tick)
				case "submitted before":
					must(t, sub.Submit(ctx, storetest.Inb("r", "late", "INPUT", `{"late":true}`)))
					err = s.Commit(ctx, l, tick)
				case "submitted while the tick waits":
					release, submitted := submitHeld(t, adm, sub, subApp, schema, "r", "late")
					done := make(chan error, 1)
					go func() { done <- s.Commit(ctx, l, tick) }()
					waitFor(t, func() bool { return lockWaits(t, adm, app) == 1 })
					release()
					must(t, <-submitted)
					err = <-done
				}
				pending, perr := s.Inbox(ctx, "r", true)
				must(t, perr)
				if path == "nothing submitted" {
					must(t, err)
					if h := headOf(t, adm, schema, "r"); h != 3 {
						t.Fatalf("head %d, want 3", h)
					}
					if len(pending) != 0 {
						t.Fatalf("pending %+v, want none", pending)
					}
					if knownShapes(s) != 1 {
						t.Fatalf("%d shapes with the fence as the inbox's check, want 1", knownShapes(s))
					}
					s.heads.mu.Lock()
					h := s.heads.m["r"]
					s.heads.mu.Unlock()
					if !h.inboxEmpty || h.head != 3 {
						t.Fatalf("the store knows %+v, want head 3 and the inbox known empty", h)
					}
					return
				}
				mustCode(t, err, store.CodeHeadMismatch)
				if h := headOf(t, adm, schema, "r"); h != 2 {
					t.Fatalf("head %d after a refused tick, want 2", h)
				}
				if len(pending) != 1 || pending[0].ID != "late" {
					t.Fatalf("pending %+v, want the late input", pending)
				}
				// Consumed, the input leaves the inbox empty again.
				must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}, Consume: []string{"late"}, ExpectInboxEmpty: true}))
			})
		})
	}
}
