package postgres

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/internal/tripcount"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// countTrips puts a round-trip counting proxy in front of the test
// database.
func countTrips(t *testing.T) *tripcount.Proxy {
	t.Helper()
	p, err := tripcount.Start(dsn(t), 0)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// fallbackRig is two stores on one fresh schema under one settable clock:
// a on a single connection through the round-trip counter, b directly, to
// move a run on behind a's back.
type fallbackRig struct {
	now    *atomic.Int64
	clock  func() time.Time
	trips  *tripcount.Proxy
	schema string
	a, b   *Store
}

func newFallbackRig(t *testing.T) fallbackRig {
	t.Helper()
	now := new(atomic.Int64)
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	tc := countTrips(t)
	schema := freshSchema(t)
	a, err := Open(ctx, tc.DSN(), Options{Schema: schema, Clock: clock, MaxConns: 1})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	return fallbackRig{now: now, clock: clock, trips: tc, schema: schema, a: a, b: openTest(t, Options{Schema: schema, Clock: clock})}
}

// Each write travels in as few round trips as its decisions allow: a tick
// of any size is two (the lock with every read it is decided on, then
// every write with COMMIT), one when it follows this store's own last
// commit of the run under the same lease; BeginAttempt, Submit, CreateRun
// and the lease operations one. Counted on one connection,
// after a first pass has prepared the statements on it.
func TestRoundTrips(t *testing.T) {
	tc := countTrips(t)
	s, err := Open(ctx, tc.DSN(), Options{Schema: freshSchema(t), MaxConns: 1})
	must(t, err)
	defer s.Close()

	for pass, run := range []string{"warm", "r"} {
		counted := func(name string, want int64, fn func() error) {
			t.Helper()
			t0 := tc.Trips()
			must(t, fn())
			if got := tc.Trips() - t0; pass == 1 && got != want {
				t.Errorf("%s: %d round trips, want %d", name, got, want)
			}
		}
		counted("CreateRun", 1, func() error { return s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}) })
		var l store.Lease
		counted("AcquireLease", 1, func() (err error) { l, err = s.AcquireLease(ctx, run, "w", time.Hour); return err })
		counted("RenewLease", 1, func() (err error) { l, err = s.RenewLease(ctx, l, time.Hour); return err })
		in := store.Inbound{ID: "in1", RunID: run, Kind: "input", ActorRole: "agent", Body: []byte(`{"a":1}`)}
		in.Digest = store.BodyDigest(in.Body)
		counted("Submit", 1, func() error { return s.Submit(ctx, in) })
		counted("Submit again", 1, func() error { return s.Submit(ctx, in) })
		// The first tick under a lease taken on a run without events
		// starts from the row the lease was taken on (see seedHead).
		first := store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":0}`)}}
		counted("Commit (first under the lease)", 1, func() error { return s.Commit(ctx, l, first) })

		// The decision: three events, an intent begun at once, the input
		// consumed, a checkpoint and four trace records.
		body := []byte(`{"pay":1}`)
		intent := store.Intent{ID: "i-" + run, EffectType: "pay", IdempotencyKey: "k-" + run, ContentDigest: "c", Body: body, Digest: store.BodyDigest(body)}
		later := intent
		later.ID, later.IdempotencyKey = "j-"+run, "k2-"+run
		cp := []byte(`{"state":1}`)
		tick := store.Tick{ExpectHead: 1, State: "EXECUTE",
			Events:     []store.Event{storetest.Ev("A", `{"n":1}`), storetest.Ev("B", `{"n":2}`), storetest.Ev("C", `{"n":3}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Intents:    []store.Intent{intent, later}, Begin: []string{intent.ID}, Consume: []string{in.ID},
			Trace: []store.TraceRecord{{Kind: "t", Body: []byte(`1`)}, {Kind: "t", Body: []byte(`2`)}, {Kind: "t", Body: []byte(`3`)}, {Kind: "t", Body: []byte(`4`)}}}
		counted("Commit (decision)", 1, func() error { return s.Commit(ctx, l, tick) })

		// The receipt: the attempt finished, the receipt, two events.
		rb := []byte(`{"ok":true}`)
		tick = store.Tick{ExpectHead: 4, State: "DONE",
			Events:     []store.Event{storetest.Ev("D", `{"n":4}`), storetest.Ev("E", `{"n":5}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Results:    []store.AttemptResult{{IntentID: intent.ID, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts:   []store.Receipt{{IntentID: intent.ID, Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}},
			Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`5`)}}}
		counted("Commit (receipt)", 1, func() error { return s.Commit(ctx, l, tick) })

		// The next input, submitted by the tick that accepts it.
		next := store.Inbound{ID: "in2", RunID: run, Kind: "input", ActorRole: "agent", Body: []byte(`{"a":2}`)}
		next.Digest = store.BodyDigest(next.Body)
		tick = store.Tick{ExpectHead: 6, Events: []store.Event{storetest.Ev("F", `{"n":6}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Submit:     []store.Inbound{next}, Consume: []string{next.ID}}
		counted("Commit (input submitted in the tick)", 1, func() error { return s.Commit(ctx, l, tick) })
		if all, err := s.Inbox(ctx, run, false); err != nil || len(all) != 2 || all[1].ID != next.ID || !all[1].Consumed || all[1].Seq != 2 {
			t.Fatalf("inbox after a submitting tick: %+v, %v", all, err)
		}

		// An intent of the decision's, attempted on its own.
		counted("BeginAttempt", 1, func() error {
			at, err := s.BeginAttempt(ctx, l, later.ID)
			if err == nil && at.N != 1 {
				t.Errorf("BeginAttempt began attempt %d, want 1", at.N)
			}
			return err
		})
		counted("ReleaseLease", 1, func() error { return s.ReleaseLease(ctx, l) })
	}

	// What the ticks wrote is what the store reads back.
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(evs) != 7 || evs[6].Seq != 7 || evs[0].PrevHash != store.GenesisHash || evs[6].PrevHash != evs[5].ChainHash {
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
	at, err = s.Attempts(ctx, "j-r")
	must(t, err)
	if len(at) != 1 || at[0].N != 1 || at[0].Status != store.AttemptStarted || at[0].Generation != 1 {
		t.Fatalf("attempts of the intent begun on its own: %+v", at)
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

// A tick sent in one round trip on what the store remembers of its last
// commit is checked in the database: when another writer has moved the
// run on, or the tick is refused, nothing of the attempt is written and the
// two-round-trip path gives the exact answer.
func TestOneRoundTripFallsBack(t *testing.T) {
	rig := newFallbackRig(t)
	now, tc, a, b := rig.now, rig.trips, rig.a, rig.b
	must(t, a.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := a.AcquireLease(ctx, "r", "w", time.Minute)
	must(t, err)
	tr := func(s string) []store.TraceRecord { return []store.TraceRecord{{Kind: "t", Body: []byte(s)}} }
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)}, Trace: tr(`1`)}))

	// Another store, same lease, writes a trace record and no event: a's
	// memory of the run's head still holds, its trace position does not.
	must(t, b.Commit(ctx, l, store.Tick{ExpectHead: 1, Trace: tr(`2`)}))
	t0 := tc.Trips()
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}, Trace: tr(`3`)}))
	if got := tc.Trips() - t0; got < 3 {
		t.Errorf("a stale trace position cost %d round trips; the one-round-trip attempt cannot have failed", got)
	}
	recs, err := a.Trace(ctx, "r")
	must(t, err)
	if len(recs) != 3 || string(recs[0].Body) != "1" || string(recs[1].Body) != "2" || string(recs[2].Body) != "3" {
		t.Fatalf("trace: %+v", recs)
	}

	// The other store moves the head: a's tick from the old head is
	// refused as a head mismatch, not as a failed guard.
	must(t, b.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}}))
	mustCode(t, a.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("X", `{"n":9}`)}}), store.CodeHeadMismatch)

	// A duplicate intent is told from a conflict.
	body := []byte(`{"pay":1}`)
	in := store.Intent{ID: "i1", EffectType: "pay", IdempotencyKey: "k1", ContentDigest: "c1", Body: body, Digest: store.BodyDigest(body)}
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{storetest.Ev("D", `{"n":4}`)}, Intents: []store.Intent{in}, Begin: []string{"i1"}}))
	in2 := in
	in2.ID = "i2"
	mustCode(t, a.Commit(ctx, l, store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("E", `{"n":5}`)}, Intents: []store.Intent{in2}}), store.CodeExists)
	in2.ContentDigest = "c2"
	mustCode(t, a.Commit(ctx, l, store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("E", `{"n":5}`)}, Intents: []store.Intent{in2}}), store.CodeIdempotencyConflict)

	// A result for an attempt that does not exist, after a commit the
	// store remembers.
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("E", `{"n":5}`)}}))
	mustCode(t, a.Commit(ctx, l, store.Tick{ExpectHead: 5, Events: []store.Event{storetest.Ev("F", `{"n":6}`)},
		Results: []store.AttemptResult{{IntentID: "i1", N: 2, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}}}), store.CodeInvalidTransition)

	// The lease expires and another writer takes the run over and
	// commits from the head a still remembers: a is fenced.
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 5, Trace: tr(`4`)}))
	now.Add(int64(2 * time.Minute))
	l2, err := b.AcquireLease(ctx, "r", "w2", time.Minute)
	must(t, err)
	must(t, b.Commit(ctx, l2, store.Tick{ExpectHead: 5, Events: []store.Event{storetest.Ev("G", `{"n":6}`)}}))
	t0 = tc.Trips()
	mustCode(t, a.Commit(ctx, l, store.Tick{ExpectHead: 5, Events: []store.Event{storetest.Ev("F", `{"n":6}`)}}), store.CodeFenced)
	if got := tc.Trips() - t0; got < 3 {
		t.Errorf("the takeover cost %d round trips; the one-round-trip attempt cannot have been made", got)
	}

	r, err := a.Run(ctx, "r")
	must(t, err)
	evs, err := a.Events(ctx, "r", 0)
	must(t, err)
	if r.Head != 6 || len(evs) != 6 || evs[5].Kind != "G" || evs[5].ChainHash != r.HeadHash || r.Lease.Generation != l2.Generation {
		t.Fatalf("run %+v after %d events", r, len(evs))
	}
	at, err := a.Attempts(ctx, "i1")
	must(t, err)
	if len(at) != 1 || at[0].Status != store.AttemptStarted {
		t.Fatalf("attempts: %+v", at)
	}
}

// BeginAttempt goes in one round trip, its checks made by the statement
// that writes; when any of them refuses, nothing of the attempt is written
// and the two-round-trip path reports exactly what is wrong.
func TestBeginAttemptFallsBack(t *testing.T) {
	rig := newFallbackRig(t)
	now, clock, tc, a, b := rig.now, rig.clock, rig.trips, rig.a, rig.b
	for _, run := range []string{"r", "other"} {
		must(t, a.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}))
	}
	l, err := a.AcquireLease(ctx, "r", "w", time.Minute)
	must(t, err)
	lo, err := a.AcquireLease(ctx, "other", "w", time.Minute)
	must(t, err)
	intent := func(id string) store.Intent {
		body := []byte(`{"pay":"` + id + `"}`)
		return store.Intent{ID: id, EffectType: "pay", IdempotencyKey: "k-" + id, ContentDigest: "c-" + id, Body: body, Digest: store.BodyDigest(body)}
	}
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)},
		Intents: []store.Intent{intent("i0"), intent("i1"), intent("i2"), intent("i3")}}))
	must(t, a.Commit(ctx, lo, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)},
		Intents: []store.Intent{intent("o1")}}))

	trips := func(name string, fn func() error) (int64, error) {
		t.Helper()
		t0 := tc.Trips()
		err := fn()
		return tc.Trips() - t0, err
	}
	begin := func(l store.Lease, id string) func() error {
		return func() error { _, err := a.BeginAttempt(ctx, l, id); return err }
	}
	// state is the outbox and attempts of intent id, to show that a
	// refused attempt left them as they were.
	state := func(id string) string {
		t.Helper()
		var st string
		var n int64
		must(t, a.pool.QueryRow(ctx, `SELECT status, attempts FROM `+rig.schema+`.outbox WHERE intent_id = $1`, id).Scan(&st, &n))
		at, err := a.Attempts(ctx, id)
		must(t, err)
		return fmt.Sprintf("%s/%d/%d", st, n, len(at))
	}

	// The first use prepares the statement on the connection.
	if _, err := a.BeginAttempt(ctx, l, "i0"); err != nil {
		t.Fatal(err)
	}
	// The common case, at the injected clock.
	got, err := trips("first", func() error {
		at, err := a.BeginAttempt(ctx, l, "i1")
		if err == nil && (at.N != 1 || at.IntentID != "i1" || at.Status != store.AttemptStarted || at.Generation != l.Generation || !at.StartedAt.Equal(clock())) {
			t.Errorf("attempt %+v", at)
		}
		return err
	})
	must(t, err)
	if got != 1 {
		t.Errorf("BeginAttempt took %d round trips, want 1", got)
	}
	stored, err := a.Attempts(ctx, "i1")
	must(t, err)
	if len(stored) != 1 || !stored[0].StartedAt.Equal(clock()) || stored[0].Status != store.AttemptStarted {
		t.Fatalf("attempts: %+v", stored)
	}

	refused := func(name string, l store.Lease, id string, code store.Code) {
		t.Helper()
		before := state(id)
		got, err := trips(name, begin(l, id))
		mustCode(t, err, code)
		if got < 3 {
			t.Errorf("%s: %d round trips; the one-round-trip attempt cannot have been refused", name, got)
		}
		if after := state(id); after != before {
			t.Errorf("%s: outbox/attempts went from %s to %s", name, before, after)
		}
	}
	// An attempt in flight is not attempted again, nor is an intent of
	// another run or none at all.
	refused("in flight", l, "i1", store.CodeInvalidTransition)
	refused("another run's intent", l, "o1", store.CodeNotFound)
	if _, err := trips("no intent", begin(l, "absent")); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("no intent: %v", err)
	}

	// After a transient failure, the next attempt is numbered by the
	// database, still in one round trip. (The driver drops the statements
	// of a failed pipeline from its cache, so the first use after a
	// refusal prepares the statement again: one round trip more, still
	// fewer than the refused attempt and the two-round-trip path.)
	must(t, a.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)},
		Results: []store.AttemptResult{{IntentID: "i1", N: 1, Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry}}}))
	got, err = trips("retry", func() error {
		at, err := a.BeginAttempt(ctx, l, "i1")
		if err == nil && at.N != 2 {
			t.Errorf("retry began attempt %d, want 2", at.N)
		}
		return err
	})
	must(t, err)
	if got > 2 {
		t.Errorf("the retry took %d round trips, want 1 and one to prepare", got)
	}

	// Another store quarantines the run: refused as quarantined.
	must(t, b.Quarantine(ctx, "other", "tampered"))
	refused("quarantined", lo, "o1", store.CodeQuarantined)

	// The lease expires and another writer takes the run over.
	now.Add(int64(2 * time.Minute))
	refused("expired", l, "i2", store.CodeFenced)
	l2, err := b.AcquireLease(ctx, "r", "w2", time.Minute)
	must(t, err)
	refused("taken over", l, "i2", store.CodeFenced)
	got, err = trips("new owner", begin(l2, "i2"))
	must(t, err)
	if got > 2 {
		t.Errorf("the new owner's attempt took %d round trips, want 1 and one to prepare", got)
	}
	if s := state("i2"); s != "in_flight/1/1" {
		t.Fatalf("i2: %s", s)
	}
	if s := state("i3"); s != "pending/0/0" {
		t.Fatalf("i3: %s", s)
	}
}

// Submissions to one run from many writers at once all land, in some
// order, numbered without gaps: a writer that waited for the run's row
// behind another's submission does not take its number.
func TestConcurrentSubmits(t *testing.T) {
	s := openTest(t, Options{MaxConns: 8})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	const n = 16
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			errs <- s.Submit(ctx, storetest.Inb("r", fmt.Sprintf("in%d", i), "input", fmt.Sprintf(`{"i":%d}`, i)))
		}()
	}
	for i := 0; i < n; i++ {
		must(t, <-errs)
	}
	got, err := s.Inbox(ctx, "r", false)
	must(t, err)
	if len(got) != n {
		t.Fatalf("%d inbound events, want %d", len(got), n)
	}
	for i, in := range got {
		if in.Seq != int64(i+1) {
			t.Fatalf("inbound %d has seq %d", i, in.Seq)
		}
	}
}

// Writers beginning the same intent at once, each on its own connection:
// exactly one attempt is begun, and every other writer, its one-round-trip
// statement having waited for the run's row or lost the outbox row, is
// told exactly why by the two-round-trip path.
func TestConcurrentBeginAttempts(t *testing.T) {
	s := openTest(t, Options{MaxConns: 8})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	body := []byte(`{"pay":1}`)
	in := store.Intent{ID: "i1", EffectType: "pay", IdempotencyKey: "k1", ContentDigest: "c1", Body: body, Digest: store.BodyDigest(body)}
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)}, Intents: []store.Intent{in}}))
	const n = 8
	type result struct {
		at  store.Attempt
		err error
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			at, err := s.BeginAttempt(ctx, l, "i1")
			results <- result{at, err}
		}()
	}
	begun := 0
	for i := 0; i < n; i++ {
		r := <-results
		switch {
		case r.err == nil:
			begun++
			if r.at.N != 1 {
				t.Errorf("attempt %+v", r.at)
			}
		case store.CodeOf(r.err) != store.CodeInvalidTransition:
			t.Errorf("a losing writer got %v, want %s", r.err, store.CodeInvalidTransition)
		}
	}
	if begun != 1 {
		t.Fatalf("%d attempts begun, want 1", begun)
	}
	at, err := s.Attempts(ctx, "i1")
	must(t, err)
	if len(at) != 1 || at[0].N != 1 {
		t.Fatalf("attempts: %+v", at)
	}
}

// The first tick under a lease takes one round trip on a run without
// events, whose checkpoint and trace positions the store takes to be
// none, and two on a run with events, whose positions only a read tells;
// when the guess is wrong (a checkpoint or trace row the run holds
// without events) the guessed position's key refuses the one-round-trip
// attempt and the tick goes the two-round-trip way, writing after what
// the run holds.
func TestFirstTickUnderALease(t *testing.T) {
	tc := countTrips(t)
	schema := freshSchema(t)
	s, err := Open(ctx, tc.DSN(), Options{Schema: schema, MaxConns: 1})
	must(t, err)
	defer s.Close()
	adm := admin(t)
	q := func(table string) string { return pgx.Identifier{schema, table}.Sanitize() }
	cp := []byte(`{"state":1}`)
	tick := func(head int64) store.Tick {
		return store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("A", `{"n":1}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`1`)}}}
	}
	first := func(run string, head, want int64, counted bool) {
		t.Helper()
		l, err := s.AcquireLease(ctx, run, "w", time.Hour)
		must(t, err)
		t0 := tc.Trips()
		must(t, s.Commit(ctx, l, tick(head)))
		if got := tc.Trips() - t0; counted && got != want {
			t.Errorf("%s: the first tick under a lease took %d round trips, want %d", run, got, want)
		}
		must(t, s.ReleaseLease(ctx, l))
	}
	// Each case runs first on a run of its own, which prepares its
	// statements on the connection; the second is counted.
	for _, pass := range []string{"warm-", ""} {
		for _, run := range []string{"fresh", "cp", "tr"} {
			must(t, s.CreateRun(ctx, store.Run{ID: pass + run, WorkflowID: "wf", State: "S"}))
		}
		_, err = adm.Exec(ctx, `INSERT INTO `+q("checkpoints")+` (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES ($1, 1, 0, 1, '', '\x7b7d', 'sha256:x', 0, 1)`, pass+"cp")
		must(t, err)
		_, err = adm.Exec(ctx, `INSERT INTO `+q("trace")+` (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ($1, 1, 2, '{a,b}', '{"\\x31","\\x32"}', 1)`, pass+"tr")
		must(t, err)
		counted := pass == ""
		first(pass+"fresh", 0, 1, counted)
		first(pass+"fresh", 1, 2, counted) // a lease again, on a run with an event
		// The refused attempt, the ROLLBACK the store sends after any
		// failed write, then the two round trips.
		first(pass+"cp", 0, 4, counted)
		first(pass+"tr", 0, 4, counted)
	}
	var n, last int64
	must(t, adm.QueryRow(ctx, `SELECT max(n) FROM `+q("checkpoints")+` WHERE run_id = 'cp'`).Scan(&n))
	must(t, adm.QueryRow(ctx, `SELECT max(last_seq) FROM `+q("trace")+` WHERE run_id = 'tr'`).Scan(&last))
	if n != 2 || last != 3 {
		t.Fatalf("the tick wrote checkpoint %d and trace up to %d, want 2 and 3: after what the runs held", n, last)
	}
	for _, run := range []string{"fresh", "cp", "tr"} {
		if h := headOf(t, adm, schema, run); h != int64(map[string]int{"fresh": 2, "cp": 1, "tr": 1}[run]) {
			t.Fatalf("%s: head %d", run, h)
		}
	}
}
