package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// sentWrites runs fn and returns the writes of each direct commit it
// made (BEGIN and the lazy setting left out).
func sentWrites(t *testing.T, fn func() error) [][]string {
	t.Helper()
	var sent [][]string
	testSent = func(sqls []string) {
		var w []string
		for _, q := range sqls {
			if q != beginSQL && q != lazySQL {
				w = append(w, q)
			}
		}
		sent = append(sent, w)
	}
	defer func() { testSent = nil }()
	must(t, fn())
	return sent
}

// A one-round-trip tick with nothing but appends (or an attempt result
// closed by its receipt) is one statement, its fence folded in as the
// first part; it runs after the fence whatever the session held before (a
// part run first would read the tick's time before the fence set it, fail,
// and send the tick the two-round-trip way: more commits, more
// statements). Its rows carry the time the fence read after the lock.
func TestFoldedFenceIsOneStatement(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		schema := freshSchema(t)
		s := openNamed(t, schema, "flrh-fold-"+schema, Options{MaxConns: 1})
		adm := admin(t)
		must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
		l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
		must(t, err)
		body := []byte(`{"pay":1}`)
		in := store.Intent{ID: "i", EffectType: "pay", IdempotencyKey: "k", ContentDigest: "c", Body: body, Digest: store.BodyDigest(body)}
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)},
			Intents: []store.Intent{in}, Begin: []string{in.ID}}))

		oneWith := func(fence, name string, tick store.Tick) {
			t.Helper()
			sent := sentWrites(t, func() error { return s.Commit(ctx, l, tick) })
			if len(sent) != 1 || len(sent[0]) != 1 || !strings.HasPrefix(sent[0][0], "WITH f AS ("+fence+" RETURNING "+fenceReturning+")") {
				t.Fatalf("%s: sent %d commits %q, want one of one statement with the fence folded in", name, len(sent), sent)
			}
		}
		one := func(name string, tick store.Tick) { t.Helper(); oneWith(fenceAheadWrite, name, tick) }
		cp := []byte(`{"state":1}`)
		one("appends", store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Trace:      []store.TraceRecord{{Kind: "t", Body: []byte(`1`)}}})
		rb := []byte(`{"ok":true}`)
		one("result with its receipt", store.Tick{ExpectHead: 2, MayLag: true, Events: []store.Event{storetest.Ev("C", `{"n":3}`)},
			Results:  []store.AttemptResult{{IntentID: in.ID, N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts: []store.Receipt{{IntentID: in.ID, Outcome: "applied", Body: rb, Digest: store.BodyDigest(rb)}}})

		q := func(table string) string { return pgx.Identifier{schema, table}.Sanitize() }
		var updated, evAt, rcAt, fin int64
		must(t, adm.QueryRow(ctx, `SELECT updated_at FROM `+q("runs")+` WHERE run_id = 'r'`).Scan(&updated))
		must(t, adm.QueryRow(ctx, `SELECT recorded_at FROM `+q("events")+` WHERE run_id = 'r' AND seq = 3`).Scan(&evAt))
		must(t, adm.QueryRow(ctx, `SELECT recorded_at FROM `+q("receipts")+` WHERE intent_id = 'i'`).Scan(&rcAt))
		must(t, adm.QueryRow(ctx, `SELECT finished_at FROM `+q("attempts")+` WHERE intent_id = 'i' AND n = 1`).Scan(&fin))
		if evAt != updated || rcAt != updated || fin != updated {
			t.Fatalf("the tick's rows at %d, %d, %d; the fence's time %d", evAt, rcAt, fin, updated)
		}
		if h := headOf(t, adm, schema, "r"); h != 3 {
			t.Fatalf("head %d after three ticks of one event", h)
		}

		// A tick that checks the inbox, or appends its own input, folds
		// the fence that also checks that nothing was submitted while it
		// waited (see fenceChecksInbox).
		inbox := func(name string, tick store.Tick) { t.Helper(); oneWith(fenceAheadInboxWrite, name, tick) }
		inbox("inbox left empty", store.Tick{ExpectHead: 3, Events: []store.Event{storetest.Ev("D", `{"n":4}`)}, ExpectInboxEmpty: true})
		ib := []byte(`{"a":1}`)
		inbox("own input", store.Tick{ExpectHead: 4, Events: []store.Event{storetest.Ev("E", `{"n":5}`)},
			Submit:  []store.Inbound{{ID: "in1", RunID: "r", Kind: "input", ActorRole: "agent", Body: ib, Digest: store.BodyDigest(ib)}},
			Consume: []string{"in1"}})
		// A tick that consumes an input submitted earlier and checks that
		// its inbox is left empty keeps the fence apart (its consumption is
		// a statement of its own: see TestConsumptionInTheAppendedStatement).
		must(t, s.Submit(ctx, storetest.Inb("r", "in2", "INPUT", `{}`)))
		sent := sentWrites(t, func() error {
			return s.Commit(ctx, l, store.Tick{ExpectHead: 5, Events: []store.Event{storetest.Ev("F", `{"n":6}`)}, Consume: []string{"in2"}, ExpectInboxEmpty: true})
		})
		if len(sent) != 1 || len(sent[0]) != 3 || sent[0][0] != fenceAheadSQL {
			t.Fatalf("consumption: sent %d commits %q, want one of the fence, the consumption and the appends", len(sent), sent)
		}
		if h := headOf(t, adm, schema, "r"); h != 6 {
			t.Fatalf("head %d after six ticks of one event", h)
		}
	})
}

// An input submitted while a one-round-trip tick waited for the run's row
// is seen by the tick, its fence folded into its one statement: a tick
// that expects the inbox left empty is refused and writes nothing, and a
// tick that appends its own input appends it after the submitted one,
// which stays pending. (The statement's snapshot is taken before the
// wait; its fence refuses the tick when the row it locked counts
// submissions its snapshot does not, and the tick goes the two-round-trip
// way, which reads the inbox after the lock.) What Submit does is held
// open here by a transaction of the test's own: the run's row locked, the
// input appended, the submission counted on the row.
func TestInboxCheckAfterWaiting(t *testing.T) {
	ib := []byte(`{"a":1}`)
	for _, c := range []struct {
		name string
		tick store.Tick
		code store.Code
	}{
		{"inbox left empty", store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}, ExpectInboxEmpty: true}, store.CodeHeadMismatch},
		{"own input", store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)},
			Submit:  []store.Inbound{{ID: "own", RunID: "r", Kind: "input", ActorRole: "agent", Body: ib, Digest: store.BodyDigest(ib)}},
			Consume: []string{"own"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			app := "flrh-inboxwait-" + schema
			s := openNamed(t, schema, app, Options{})
			adm := admin(t)
			l := oneEventRun(t, s)

			holder := admin(t)
			tx, err := holder.Begin(ctx)
			must(t, err)
			defer tx.Rollback(ctx)
			_, err = tx.Exec(ctx, `SELECT FROM `+pgx.Identifier{schema, "runs"}.Sanitize()+` WHERE run_id = 'r' FOR NO KEY UPDATE`)
			must(t, err)
			_, err = tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "inbox"}.Sanitize()+` (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
		VALUES ('r', 1, 'in1', 'input', 'agent', '', '', '\x7b7d', 'sha256:x', 1)`)
			must(t, err)
			_, err = tx.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "runs"}.Sanitize()+` SET submissions = submissions + 1 WHERE run_id = 'r'`)
			must(t, err)
			var sent [][]string
			testSent = func(sqls []string) { sent = append(sent, sqls) }
			defer func() { testSent = nil }()
			done := make(chan error, 1)
			go func() { done <- s.Commit(ctx, l, c.tick) }()
			waitFor(t, func() bool { return lockWaits(t, adm, app) == 1 })
			must(t, tx.Commit(ctx))
			err = <-done
			if len(sent) == 0 || len(sent[0]) != 1 || !strings.HasPrefix(sent[0][0], "WITH f AS ("+fenceAheadInboxWrite) {
				t.Fatalf("sent %q first, want the tick's one statement with its fence folded in", sent)
			}
			pending, perr := s.Inbox(ctx, "r", true)
			must(t, perr)
			if len(pending) != 1 || pending[0].ID != "in1" {
				t.Fatalf("pending %+v, want the submitted input", pending)
			}
			if c.code != "" {
				mustCode(t, err, c.code)
				evs, err := s.Events(ctx, "r", 0)
				must(t, err)
				if len(evs) != 1 || headOf(t, adm, schema, "r") != 1 {
					t.Fatalf("a refused tick left events %+v", evs)
				}
				return
			}
			must(t, err)
			all, err := s.Inbox(ctx, "r", false)
			must(t, err)
			if len(all) != 2 || all[0].ID != "in1" || all[1].ID != "own" || all[1].Seq != 2 || headOf(t, adm, schema, "r") != 2 {
				t.Fatalf("inbox %+v, head %d; want the submitted input, then the tick's own at 2", all, headOf(t, adm, schema, "r"))
			}
		})
	}
}

// A direct commit of one statement as the implicit transaction (the
// folded tick) goes through the connection's exchange for one prepared
// statement, not a pipeline: once its statement is prepared, a commit
// allocates 4 times here (the test's own transaction and parameter among
// them; through a pipeline, 14). Its outcome is the pipeline's: the write committed, and a
// statement the server refuses rolls back and reports the commit unsent.
func TestOneStatementCommitAllocatesLittle(t *testing.T) {
	s := openNamed(t, freshSchema(t), "flrh-one", Options{MaxConns: 1})
	conn, err := s.pool.Acquire(ctx)
	must(t, err)
	defer conn.Release()
	must(t, conn.Conn().PgConn().Exec(ctx, `CREATE TEMP TABLE one (n bigint PRIMARY KEY)`).Close())
	const ins = `INSERT INTO one (n) VALUES ($1)`
	var n int64
	commit := func() (*wtx, error) {
		n++
		tx := &wtx{conn: conn, implicit: true}
		tx.Queue(ins, n)
		return tx, tx.commit(ctx)
	}
	for range 3 {
		if _, err := commit(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := commit(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 6 {
		t.Fatalf("a one-statement commit allocates %.0f times", allocs)
	}
	var rows int64
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM one`).Scan(&rows))
	if rows != n {
		t.Fatalf("%d rows after %d commits", rows, n)
	}
	n-- // the last key again
	tx, err := commit()
	if err == nil || tx.commitSent || tx.done {
		t.Fatalf("a refused statement: error %v, sent %v, done %v", err, tx.commitSent, tx.done)
	}
}

// A governed step's two ticks fit their appended statement's parameters in
// the list it starts with (appendsParams): the receipt tick with its fence
// folded in and the decision tick with its input and the empty-inbox
// check, as the refund agent's steps send them.
func TestATicksParametersFitTheirList(t *testing.T) {
	s := &Store{}
	l := store.Lease{RunID: "r", Owner: "w", Generation: 1}
	h := runHead{owner: "w", generation: 1, head: 2, hash: store.ChainHash("", 2, "d"), checkpoints: 1, trace: 1}
	body := []byte(`{"a":1}`)
	evs := make([]store.Event, 8)
	for i := range evs {
		evs[i] = storetest.Ev("control", `{"n":1}`)
	}
	cp := &store.Checkpoint{FormatVersion: 1, Body: body, Digest: store.BodyDigest(body)}
	tr := []store.TraceRecord{{Kind: "t", Body: body}, {Kind: "t", Body: body}, {Kind: "t", Body: body}}
	in := store.Intent{ID: "i", EffectType: "pay", IdempotencyKey: "k", ContentDigest: "c", Body: body, Digest: store.BodyDigest(body)}
	for _, c := range []struct {
		name string
		tick store.Tick
	}{
		{"receipt", store.Tick{ExpectHead: 2, Events: evs, Checkpoint: cp, Trace: tr,
			Results:  []store.AttemptResult{{IntentID: "i", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts: []store.Receipt{{IntentID: "i", Outcome: "applied", Body: body, Digest: store.BodyDigest(body)}}}},
		{"decision", store.Tick{ExpectHead: 2, Events: evs, Checkpoint: cp, Trace: tr, ExpectInboxEmpty: true,
			Intents: []store.Intent{in}, Begin: []string{"i"},
			Submit:  []store.Inbound{{ID: "in", RunID: "r", Kind: "input", ActorRole: "agent", Body: body, Digest: store.BodyDigest(body)}},
			Consume: []string{"in"}}},
	} {
		chains := chainOf(h.hash, h.head, c.tick.Events)
		tx := &wtx{}
		fence := aheadFenceArgs(s, l, c.tick, h, &chains, false)
		tx.Queue(fenceAheadSQL, fence...)
		tx.fence, tx.fenceInbox = fence, fenceChecksInbox(c.tick)
		next := h
		must(t, s.queueTick(tx, l, c.tick, &next, chains, "", aheadBegin(c.tick), nil))
		args := tx.pending[len(tx.pending)-1].Arguments
		if cap(args) != appendsParams {
			t.Errorf("%s tick: %d parameters in a list of %d, want the list it started with (%d)", c.name, len(args), cap(args), appendsParams)
		}
	}
}

// A one-round-trip tick whose run's row another transaction changes while
// the tick waits for it is judged on the row as that transaction left it:
// a lease taken over or expired there refuses the tick, which writes
// nothing; a change the fence does not check lets it commit, its time read
// on that row, after the wait (the fence's update evaluates its whole
// condition, the clock included, again on the newest row). It fails when
// the fence's checks or its time are taken from the row as the
// statement's snapshot held it.
func TestFenceChecksTheRowItWaitedFor(t *testing.T) {
	for _, c := range []struct {
		change string
		code   store.Code
	}{
		{"lease_generation = lease_generation + 1", store.CodeFenced},
		{"lease_expires_at = 1", store.CodeFenced},
		{"updated_at = updated_at + 1", ""},
	} {
		t.Run(c.change, func(t *testing.T) {
			schema := freshSchema(t)
			app := "flrh-fencewait-" + schema
			s := openNamed(t, schema, app, Options{})
			adm := admin(t)
			l := oneEventRun(t, s)
			runs := pgx.Identifier{schema, "runs"}.Sanitize()

			holder := admin(t)
			tx, err := holder.Begin(ctx)
			must(t, err)
			defer tx.Rollback(ctx)
			_, err = tx.Exec(ctx, `UPDATE `+runs+` SET `+c.change+` WHERE run_id = 'r'`)
			must(t, err)
			var sent [][]string
			testSent = func(sqls []string) { sent = append(sent, sqls) }
			defer func() { testSent = nil }()
			done := make(chan error, 1)
			go func() {
				done <- s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}})
			}()
			waitFor(t, func() bool { return lockWaits(t, adm, app) == 1 })
			time.Sleep(50 * time.Millisecond)
			var released int64
			must(t, tx.QueryRow(ctx, `SELECT `+nowNanos).Scan(&released))
			must(t, tx.Commit(ctx))
			err = <-done
			if len(sent) == 0 || len(sent[0]) != 1 || !strings.HasPrefix(sent[0][0], "WITH f AS ("+fenceAheadWrite) {
				t.Fatalf("sent %q first, want the tick's one statement with its fence folded in", sent)
			}
			if c.code != "" {
				mustCode(t, err, c.code)
				if h := headOf(t, adm, schema, "r"); h != 1 {
					t.Fatalf("a refused tick moved the head to %d", h)
				}
				return
			}
			must(t, err)
			var updated, recorded int64
			must(t, adm.QueryRow(ctx, `SELECT updated_at FROM `+runs+` WHERE run_id = 'r'`).Scan(&updated))
			must(t, adm.QueryRow(ctx, `SELECT recorded_at FROM `+pgx.Identifier{schema, "events"}.Sanitize()+` WHERE run_id = 'r' AND seq = 2`).Scan(&recorded))
			if headOf(t, adm, schema, "r") != 2 || updated != recorded || recorded <= released {
				t.Fatalf("head %d, header's time %d, event's %d; want 2, one time, after the row was released at %d",
					headOf(t, adm, schema, "r"), updated, recorded, released)
			}
		})
	}
}
