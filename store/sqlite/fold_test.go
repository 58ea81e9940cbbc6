package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// outboxRows reads every column of every row of the outbox and attempts
// tables, in key order, as text.
func outboxRows(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT intent_id, run_id, status, attempts, route, updated_at FROM outbox ORDER BY intent_id`,
		`SELECT intent_id, n, status, generation, detail, started_at, finished_at FROM attempts ORDER BY intent_id, n`,
	} {
		for _, vals := range queryRows(t.Fatal, s.db, q) {
			out = append(out, fmt.Sprint(vals...))
		}
	}
	return out
}

// A commit writes an intent it also begins with its outbox row already in
// flight, and skips the lookup and the update for a receipt whose result in
// the same tick closed its intent. What it leaves is held to the same
// changes made one call at a time, at the same clock reading.
func TestFoldedOutboxWritesMatchOneAtATime(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	clock := func() time.Time { return at }
	rc := []byte(`{"receipt":"i1"}`)
	receipt := store.Receipt{IntentID: "i1", Outcome: "succeeded", Body: rc, Digest: store.BodyDigest(rc)}
	done := store.AttemptResult{IntentID: "i1", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone, Route: "r1", Detail: "ok"}

	for _, c := range []struct {
		name          string
		folded, apart func(s *Store, l store.Lease) error
	}{
		{"an intent begun in its own tick",
			func(s *Store, l store.Lease) error {
				return s.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x"), storetest.In("i2", "k2", "y")}, Begin: []string{"i2", "i1"}})
			},
			func(s *Store, l store.Lease) error {
				if err := s.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x"), storetest.In("i2", "k2", "y")}}); err != nil {
					return err
				}
				if _, err := s.BeginAttempt(ctx, l, "i2"); err != nil {
					return err
				}
				_, err := s.BeginAttempt(ctx, l, "i1")
				return err
			}},
		{"a receipt after its result in one tick",
			func(s *Store, l store.Lease) error {
				if err := s.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x")}, Begin: []string{"i1"}}); err != nil {
					return err
				}
				return s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{done}, Receipts: []store.Receipt{receipt}})
			},
			func(s *Store, l store.Lease) error {
				if err := s.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x")}}); err != nil {
					return err
				}
				if _, err := s.BeginAttempt(ctx, l, "i1"); err != nil {
					return err
				}
				if err := s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{done}}); err != nil {
					return err
				}
				return s.Commit(ctx, l, store.Tick{Receipts: []store.Receipt{receipt}})
			}},
		{"a result that leaves the intent open, then its receipt",
			func(s *Store, l store.Lease) error {
				if err := s.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x")}, Begin: []string{"i1"}}); err != nil {
					return err
				}
				retry := done
				retry.Outbox = store.OutboxRetry
				return s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{retry}, Receipts: []store.Receipt{receipt}})
			},
			func(s *Store, l store.Lease) error {
				if err := s.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x")}}); err != nil {
					return err
				}
				if _, err := s.BeginAttempt(ctx, l, "i1"); err != nil {
					return err
				}
				retry := done
				retry.Outbox = store.OutboxRetry
				if err := s.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{retry}}); err != nil {
					return err
				}
				return s.Commit(ctx, l, store.Tick{Receipts: []store.Receipt{receipt}})
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [2][]string
			for i, write := range []func(*Store, store.Lease) error{c.folded, c.apart} {
				s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), clock)
				defer s.Close()
				if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
					t.Fatal(err)
				}
				l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if err := write(s, l); err != nil {
					t.Fatal(err)
				}
				got[i] = outboxRows(t, s)
			}
			if len(got[0]) == 0 || !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("in one tick:\n%q\none call at a time:\n%q", got[0], got[1])
			}
		})
	}
}

// The folded writes refuse what the unfolded ones refused, leaving nothing:
// an intent begun twice in its tick, a reused idempotency key.
func TestFoldedOutboxWritesRefuse(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tick store.Tick
		code store.Code
	}{
		{store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x")}, Begin: []string{"i1", "i1"}}, store.CodeInvalidTransition},
		{store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x"), storetest.In("i2", "k1", "x")}, Begin: []string{"i2"}}, store.CodeExists},
		{store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x"), storetest.In("i2", "k1", "y")}, Begin: []string{"i1"}}, store.CodeIdempotencyConflict},
		{store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "x"), storetest.In("i1", "k2", "y")}, Begin: []string{"i1"}}, store.CodeExists},
	} {
		err := s.Commit(ctx, l, c.tick)
		if store.CodeOf(err) != c.code {
			t.Fatalf("%+v: got %v, want %s", c.tick, err, c.code)
		}
		if rows := outboxRows(t, s); len(rows) != 0 {
			t.Fatalf("%+v left %q", c.tick, rows)
		}
	}
}
