package postgres

import (
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// tripCounter forwards TCP connections to PostgreSQL and counts round
// trips: one each time a client speaks after the server has answered, so
// a pipeline of statements sent together counts once.
type tripCounter struct {
	dsn   string
	trips atomic.Int64
}

func countTrips(t *testing.T) *tripCounter {
	t.Helper()
	u, err := url.Parse(dsn(t))
	if err != nil || u.Host == "" {
		t.Skipf("round trips are counted on postgres:// URLs only (%v)", err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &tripCounter{}
	u.Host = ln.Addr().String()
	c.dsn = u.String()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.forward(conn, target)
		}
	}()
	return c
}

func (c *tripCounter) forward(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	var answered atomic.Bool
	answered.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				answered.Store(true)
				if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if answered.Swap(false) {
				c.trips.Add(1)
			}
			if _, err := server.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
	<-done
}

// Each write travels in as few round trips as its decisions allow: a tick
// of any size is two (the lock with every read it is decided on, then
// every write with COMMIT), and so are BeginAttempt, Submit and the lease
// operations; CreateRun is one. Counted on one connection, after a first
// pass has prepared the statements on it.
func TestRoundTrips(t *testing.T) {
	tc := countTrips(t)
	s, err := Open(ctx, tc.dsn, Options{Schema: freshSchema(t), MaxConns: 1})
	must(t, err)
	defer s.Close()

	for pass, run := range []string{"warm", "r"} {
		counted := func(name string, want int64, fn func() error) {
			t.Helper()
			t0 := tc.trips.Load()
			must(t, fn())
			if got := tc.trips.Load() - t0; pass == 1 && got != want {
				t.Errorf("%s: %d round trips, want %d", name, got, want)
			}
		}
		counted("CreateRun", 1, func() error { return s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}) })
		var l store.Lease
		counted("AcquireLease", 2, func() (err error) { l, err = s.AcquireLease(ctx, run, "w", time.Hour); return err })
		counted("RenewLease", 2, func() (err error) { l, err = s.RenewLease(ctx, l, time.Hour); return err })
		in := store.Inbound{ID: "in1", RunID: run, Kind: "input", ActorRole: "agent", Body: []byte(`{"a":1}`)}
		in.Digest = store.BodyDigest(in.Body)
		counted("Submit", 2, func() error { return s.Submit(ctx, in) })
		counted("Submit again", 2, func() error { return s.Submit(ctx, in) })

		// The decision: three events, an intent begun at once, the input
		// consumed, a checkpoint and four trace records.
		body := []byte(`{"pay":1}`)
		intent := store.Intent{ID: "i-" + run, EffectType: "pay", IdempotencyKey: "k-" + run, ContentDigest: "c", Body: body, Digest: store.BodyDigest(body)}
		cp := []byte(`{"state":1}`)
		tick := store.Tick{ExpectHead: 0, State: "EXECUTE",
			Events:     []store.Event{storetest.Ev("A", `{"n":1}`), storetest.Ev("B", `{"n":2}`), storetest.Ev("C", `{"n":3}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Intents:    []store.Intent{intent}, Begin: []string{intent.ID}, Consume: []string{in.ID},
			Trace: []store.TraceRecord{{Kind: "t", Body: []byte(`1`)}, {Kind: "t", Body: []byte(`2`)}, {Kind: "t", Body: []byte(`3`)}, {Kind: "t", Body: []byte(`4`)}}}
		counted("Commit (decision)", 2, func() error { return s.Commit(ctx, l, tick) })

		// The receipt: the attempt finished, the receipt, two events.
		rb := []byte(`{"ok":true}`)
		tick = store.Tick{ExpectHead: 3, State: "DONE",
			Events:     []store.Event{storetest.Ev("D", `{"n":4}`), storetest.Ev("E", `{"n":5}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Results:    []store.AttemptResult{{IntentID: intent.ID, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts:   []store.Receipt{{IntentID: intent.ID, Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}},
			Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`5`)}}}
		counted("Commit (receipt)", 2, func() error { return s.Commit(ctx, l, tick) })
		counted("ReleaseLease", 2, func() error { return s.ReleaseLease(ctx, l) })
	}

	// What the ticks wrote is what the store reads back.
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(evs) != 5 || evs[4].Seq != 5 || evs[0].PrevHash != store.GenesisHash || evs[4].PrevHash != evs[3].ChainHash {
		t.Fatalf("events: %+v", evs)
	}
	tr, err := s.Trace(ctx, "r")
	must(t, err)
	if len(tr) != 5 || string(tr[0].Body) != "1" || string(tr[4].Body) != "5" {
		t.Fatalf("trace: %+v", tr)
	}
	at, err := s.Attempts(ctx, "i-r")
	must(t, err)
	if len(at) != 1 || at[0].Status != store.AttemptSucceeded {
		t.Fatalf("attempts: %+v", at)
	}
	pending, err := s.Inbox(ctx, "r", true)
	must(t, err)
	if len(pending) != 0 {
		t.Fatalf("inbox still pending: %+v", pending)
	}
}

// A guarded write that finds other rows than the transaction decided on
// fails the whole pipeline, COMMIT included: nothing queued before it
// lands, and the store runs the transaction again (a fresh attempt would
// read what changed) a bounded number of times before reporting
// CodeUnavailable.
func TestGuardFailsTheCommit(t *testing.T) {
	s := openTest(t, Options{Retries: 2, Clock: nil})
	calls := 0
	err := s.write(ctx, "test", "x", func(tx *wtx) error {
		calls++
		tx.Queue(`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at)
VALUES ('x', 'wf', '', 'S', '', 0, 0)`)
		tx.Queue(expectOne(`UPDATE runs SET state = 'T' WHERE run_id = 'absent'`, "test write"))
		return nil
	})
	mustCode(t, err, store.CodeUnavailable)
	if pgCode(err) != pgGuard {
		t.Fatalf("error %v does not carry the guard's code", err)
	}
	if calls != 3 {
		t.Fatalf("ran %d times, want 3 (the first and two retries)", calls)
	}
	if _, err := s.Run(ctx, "x"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("the row queued before the failed guard: %v", err)
	}
	// The same transaction with the guard met commits.
	must(t, s.write(ctx, "test", "y", func(tx *wtx) error {
		tx.Queue(`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at)
VALUES ('y', 'wf', '', 'S', '', 0, 0)`)
		tx.Queue(expectOne(`UPDATE runs SET state = 'T' WHERE run_id = 'y'`, "test write"))
		return nil
	}))
	if r, err := s.Run(ctx, "y"); err != nil || r.State != "T" {
		t.Fatalf("run y: %+v, %v", r, err)
	}
}
