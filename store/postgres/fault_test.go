package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

var ctx = context.Background()

// withAppName adds application_name to a DSN so a test can find the
// store's backends in pg_stat_activity.
func withAppName(t testing.TB, dsn, name string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " application_name=" + name
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// admin is a plain connection for the test's own inspection and sabotage.
func admin(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// openNamed opens a store on schema whose connections carry app.
func openNamed(t testing.TB, schema, app string, opts Options) *Store {
	t.Helper()
	opts.Schema = schema
	s, err := Open(ctx, withAppName(t, dsn(t), app), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// state summarises everything a failed commit must leave untouched.
func state(t testing.TB, s store.Store, run string) string {
	t.Helper()
	return storetest.Snapshot(t, s, run)
}

// bigTick touches every table a tick can write.
func bigTick(head int64, approval string, check func(store.Approval, time.Time) error) store.Tick {
	in := storetest.In("i-"+approval, "key-"+approval, "refund 10")
	in.ApprovalID = approval
	cp := []byte(`{"s":1}`)
	return store.Tick{ExpectHead: head, State: "EXECUTE",
		Events:     []store.Event{storetest.Ev("AUTH", `{"a":1}`), storetest.Ev("PLAN", `{"p":1}`)},
		Intents:    []store.Intent{in},
		Approvals:  []store.ApprovalUse{{ApprovalID: approval, IntentID: in.ID, Check: check}},
		Begin:      []string{in.ID},
		Consume:    []string{"msg"},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
		Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(`{}`)}}}
}

// oneEventRun makes run "r" on s, leased to "w", with one event A at its
// head, and returns the lease.
func oneEventRun(t testing.TB, s *Store) store.Lease {
	t.Helper()
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)}}))
	return l
}

func setupRun(t testing.TB, s *Store, run string, approvals ...string) store.Lease {
	t.Helper()
	must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}))
	must(t, s.Submit(ctx, storetest.Inb(run, "msg", "INPUT", `{"x":1}`)))
	for _, ap := range approvals {
		body := []byte(fmt.Sprintf(`{"approval_id":%q}`, ap))
		must(t, s.GrantApproval(ctx, store.Approval{ID: ap, RunID: run, RequestDigest: "sha256:req", Nonce: "nonce-" + ap,
			Body: body, Digest: store.BodyDigest(body), ExpiresAt: time.Now().Add(time.Hour)}))
	}
	l, err := s.AcquireLease(ctx, run, "w", time.Hour)
	must(t, err)
	return l
}

// The connection dies in the middle of a tick's transaction — after the
// run is locked and the approval read, before anything is committed. The
// commit reports CodeUnavailable, nothing of the tick exists, the approval
// is still unconsumed, and the store carries on with a fresh connection.
func TestConnectionKilledMidTransaction(t *testing.T) {
	schema := freshSchema(t)
	app := "flrh-victim-" + schema
	s := openNamed(t, schema, app, Options{})
	l := setupRun(t, s, "r", "ap1", "ap2")
	adm := admin(t)
	before := state(t, s, "r")

	killed, calls := 0, 0
	kill := func(store.Approval, time.Time) error {
		calls++
		// This store's backend is idle in its transaction while Check runs.
		err := adm.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name = $1 AND state LIKE 'idle in transaction%') k`, app).Scan(&killed)
		return err
	}
	err := s.Commit(ctx, l, bigTick(0, "ap1", kill))
	// The loss came before COMMIT was sent, so the store tried once more
	// on a fresh connection — which the check killed again.
	if killed != 1 || calls != 2 {
		t.Fatalf("terminated %d backends in the last call, %d calls; want 1 and 2", killed, calls)
	}
	mustCode(t, err, store.CodeUnavailable)
	if after := state(t, s, "r"); after != before {
		t.Fatalf("a killed transaction left a trace:\nbefore %s\nafter  %s", before, after)
	}
	a, err := s.Approval(ctx, "ap1")
	must(t, err)
	if a.Status != store.ApprovalGranted {
		t.Fatalf("approval after the killed commit: %s", a.Status)
	}
	// The same tick goes through on a new connection.
	must(t, s.Commit(ctx, l, bigTick(0, "ap1", nil)))
	if r, _ := s.Run(ctx, "r"); r.Head != 2 || r.State != "EXECUTE" {
		t.Fatalf("run after retry: %+v", r)
	}
}

// The connection dies while the commit waits for the run's row lock.
// Without retries the commit is UNAVAILABLE and nothing is written; with
// them, the loss came before COMMIT was sent, so the store runs the tick
// again on a fresh connection and it lands exactly once.
func TestConnectionKilledWhileWaitingForLock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
	}{{"no retry", -1}, {"retried", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			schema := freshSchema(t)
			app := "flrh-waiter-" + schema
			s := openNamed(t, schema, app, Options{Retries: tc.retries})
			l := setupRun(t, s, "r", "ap1")
			before := state(t, s, "r")
			holder := admin(t)
			tx, err := holder.Begin(ctx)
			must(t, err)
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{schema, "runs"}.Sanitize()+` WHERE run_id = 'r' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Commit(ctx, l, bigTick(0, "ap1", nil)) }()
			adm := admin(t)
			waiting := func() bool { return lockWaits(t, adm, app) == 1 }
			waitFor(t, waiting)
			var killed bool
			must(t, adm.QueryRow(ctx, `SELECT bool_and(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&killed))
			if tc.retries < 0 {
				mustCode(t, <-done, store.CodeUnavailable)
				must(t, tx.Rollback(ctx))
				if after := state(t, s, "r"); after != before {
					t.Fatalf("a killed transaction left a trace:\nbefore %s\nafter  %s", before, after)
				}
				return
			}
			// The retry waits for the lock again; let it through.
			waitFor(t, waiting)
			must(t, tx.Rollback(ctx))
			must(t, <-done)
			if r, _ := s.Run(ctx, "r"); r.Head != 2 {
				t.Fatalf("head %d after the retried tick, want 2", r.Head)
			}
			if ats, _ := s.Attempts(ctx, "i-ap1"); len(ats) != 1 {
				t.Fatalf("attempts %+v", ats)
			}
		})
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two writers (two pools, as two runner processes would have) commit the
// same step of one run at once. The second blocks on the run's row, and
// when the first commits its REPEATABLE READ snapshot is stale: PostgreSQL
// fails it with a serialization error. Exactly one commit wins; the loser
// gets a typed error — CodeUnavailable without retries, and with retries
// the precise CodeHeadMismatch its fresh attempt finds.
func TestSerializationConflictOneWinner(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		want    store.Code
	}{{"no retry", -1, store.CodeUnavailable}, {"retried", 0, store.CodeHeadMismatch}} {
		t.Run(tc.name, func(t *testing.T) {
			schema := freshSchema(t)
			a := openNamed(t, schema, "flrh-a-"+schema, Options{})
			bApp := "flrh-b-" + schema
			b := openNamed(t, schema, bApp, Options{Retries: tc.retries})
			l := setupRun(t, a, "r", "ap1", "ap2")
			adm := admin(t)

			locked, release := make(chan struct{}), make(chan struct{})
			aDone := make(chan error, 1)
			go func() {
				aDone <- a.Commit(ctx, l, bigTick(0, "ap1", func(store.Approval, time.Time) error {
					close(locked)
					<-release
					return nil
				}))
			}()
			<-locked
			bDone := make(chan error, 1)
			go func() { bDone <- b.Commit(ctx, l, bigTick(0, "ap2", nil)) }()
			waitFor(t, func() bool { return lockWaits(t, adm, bApp) == 1 })
			close(release)
			must(t, <-aDone)
			err := <-bDone
			mustCode(t, err, tc.want)
			if tc.want == store.CodeUnavailable {
				var pe interface{ Unwrap() error }
				if !errors.As(err, &pe) || pgCode(err) != pgSerializationFail {
					t.Fatalf("loser's cause is not a serialization failure: %v", err)
				}
			}
			r, _ := a.Run(ctx, "r")
			ins, _ := a.Intents(ctx, "r")
			ap2, _ := a.Approval(ctx, "ap2")
			if r.Head != 2 || len(ins) != 1 || ins[0].ApprovalID != "ap1" || ap2.Status != store.ApprovalGranted {
				t.Fatalf("after the race: head %d, intents %+v, ap2 %s", r.Head, ins, ap2.Status)
			}
		})
	}
}

// Many writers hammer one run through separate pools; every commit either
// lands whole or fails with a typed code, and the chain is intact.
func TestConcurrentPoolsOneRun(t *testing.T) {
	schema := freshSchema(t)
	const writers, ticks = 4, 15
	stores := make([]*Store, writers)
	for i := range stores {
		stores[i] = openNamed(t, schema, fmt.Sprintf("flrh-w%d", i), Options{MaxConns: 2})
	}
	must(t, stores[0].CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := stores[0].AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	var mu sync.Mutex
	wins := 0
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < ticks; i++ {
				run, err := s.Run(ctx, "r")
				if err != nil {
					t.Error(err)
					return
				}
				err = s.Commit(ctx, l, store.Tick{ExpectHead: run.Head, Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))},
					Trace: []store.TraceRecord{{Kind: "t", Body: []byte(`{}`)}}})
				switch store.CodeOf(err) {
				case "":
					mu.Lock()
					wins++
					mu.Unlock()
				case store.CodeHeadMismatch, store.CodeUnavailable:
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs, err := stores[0].Events(ctx, "r", 0)
	must(t, err)
	tr, err := stores[0].Trace(ctx, "r")
	must(t, err)
	if len(evs) != wins || len(tr) != wins || wins == 0 {
		t.Fatalf("%d wins, %d events, %d trace records", wins, len(evs), len(tr))
	}
	prev := store.GenesisHash
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			t.Fatalf("chain broken at %d", e.Seq)
		}
		prev = e.ChainHash
	}
}

func TestSchemaTooNewIsRefused(t *testing.T) {
	s := openTest(t, Options{})
	schema := s.Schema()
	v, err := s.SchemaVersionIn(ctx)
	must(t, err)
	if v != SchemaVersion {
		t.Fatalf("fresh schema at version %d, want %d", v, SchemaVersion)
	}
	adm := admin(t)
	if _, err := adm.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+
		` (version, description, applied_at) VALUES (999, 'from the future', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, dsn(t), Options{Schema: schema})
	mustCode(t, err, store.CodeSchemaTooNew)
	_, err = Open(ctx, dsn(t), Options{Schema: schema, ReadOnly: true})
	mustCode(t, err, store.CodeSchemaTooNew)
}

// Several processes opening one fresh database at once all succeed and
// the schema is migrated exactly once.
func TestConcurrentMigration(t *testing.T) {
	schema := freshSchema(t)
	const n = 4
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			s, err := Open(ctx, dsn(t), Options{Schema: schema})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		must(t, <-errs)
	}
	var rows int
	must(t, admin(t).QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&rows))
	if rows != int(SchemaVersion) {
		t.Fatalf("%d migration rows, want %d", rows, SchemaVersion)
	}
}

// Evidence is append-only even for someone writing SQL by hand.
func TestEvidenceAppendOnly(t *testing.T) {
	s := openTest(t, Options{})
	l := setupRun(t, s, "r", "ap1")
	must(t, s.Commit(ctx, l, bigTick(0, "ap1", nil)))
	adm := admin(t)
	for _, q := range []string{
		`UPDATE events SET kinds = '{B}'`, `DELETE FROM events`, `TRUNCATE events CASCADE`,
		`UPDATE intents SET effect_type = 'x'`, `DELETE FROM trace`, `UPDATE checkpoints SET body = '\x00'`,
	} {
		q = strings.NewReplacer("events", s.Schema()+".events", "intents", s.Schema()+".intents",
			"trace", s.Schema()+".trace", "checkpoints", s.Schema()+".checkpoints").Replace(q)
		_, err := adm.Exec(ctx, q)
		if pgCode(err) != pgAppendOnly {
			t.Errorf("%s: err = %v, want the append-only refusal", q, err)
		}
		if mapErr("x", "", err) != nil && store.CodeOf(mapErr("x", "", err)) != store.CodeInvalidTransition {
			t.Errorf("%s maps to %v", q, mapErr("x", "", err))
		}
	}
	if got := state(t, s, "r"); !strings.Contains(got, "events=2") {
		t.Fatalf("evidence changed: %s", got)
	}
}

// Pruning opens the evidence to deletion for a pruned run alone: an ended
// run not pruned keeps its rows against SQL written by hand, and the
// record of a pruning can be neither changed nor removed.
func TestEvidenceDeletedOnlyForAPrunedRun(t *testing.T) {
	c := storetest.NewClock()
	s := openTest(t, Options{Clock: c.Now})
	storetest.EndedWithEverything(t, s, c, "a")
	storetest.EndedWithEverything(t, s, c, "b")
	r, err := s.Run(ctx, "a")
	must(t, err)
	must(t, s.Prune(ctx, store.Pruning{RunID: "a", HeadHash: r.HeadHash,
		Kept: store.RecordCounts{Events: 3, Intents: 2, Attempts: 3, Receipts: 2, Grants: 3, Inbox: 2, Trace: 3}}))
	adm := admin(t)
	for _, q := range []string{
		`DELETE FROM %s.events WHERE run_id = 'b'`, `DELETE FROM %s.intents WHERE run_id = 'b'`, `DELETE FROM %s.receipts WHERE run_id = 'b'`,
		`DELETE FROM %s.trace WHERE run_id = 'b'`, `UPDATE %s.pruned SET archive = 'x'`, `DELETE FROM %s.pruned`, `TRUNCATE %s.pruned CASCADE`,
		`DELETE FROM %s.runs WHERE run_id = 'a'`, `TRUNCATE %s.events`,
		// A pruned run's intents are kept, stripped to their keys: never
		// deleted, never changed again.
		`DELETE FROM %s.intents WHERE run_id = 'a'`, `UPDATE %s.intents SET content_digest = 'x' WHERE run_id = 'a'`,
		`UPDATE %s.intents SET body = ''::bytea, digest = '', approval_id = NULL WHERE run_id = 'b'`,
	} {
		q = fmt.Sprintf(q, s.Schema())
		if _, err := adm.Exec(ctx, q); pgCode(err) != pgAppendOnly {
			t.Errorf("%s: err = %v, want the append-only refusal", q, err)
		}
	}
	if evs, err := s.Events(ctx, "b", 0); err != nil || len(evs) != 3 {
		t.Fatalf("run b's events after the refused deletions: %d, %v", len(evs), err)
	}
}

func TestReadOnly(t *testing.T) {
	rw := openTest(t, Options{})
	must(t, rw.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	ro, err := Open(ctx, dsn(t), Options{Schema: rw.Schema(), ReadOnly: true})
	must(t, err)
	defer ro.Close()
	if _, err := ro.Run(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	_, err = ro.AcquireLease(ctx, "r", "w", time.Hour)
	mustCode(t, err, store.CodeInvalidInput)
	// Even a write that bypassed the store's own check is refused by the
	// server: the session is read-only.
	_, err = ro.Pool().Exec(ctx, `UPDATE runs SET state = 'X'`)
	mustCode(t, mapErr("raw", "", err), store.CodeInvalidInput)
	// A read-only open never migrates.
	_, err = Open(ctx, dsn(t), Options{Schema: freshSchema(t), ReadOnly: true})
	mustCode(t, err, store.CodeInvalidInput)
}

func TestBadDSN(t *testing.T) {
	_, err := Open(ctx, "postgres://u:secret@[::1", Options{})
	mustCode(t, err, store.CodeInvalidInput)
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error leaks the password: %v", err)
	}
	// Nothing listens on port 1.
	_, err = Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", Options{})
	mustCode(t, err, store.CodeUnavailable)
}

// Two runs commit intents with one idempotency key at once. The second's
// snapshot predates the first's commit, so only the unique index sees the
// clash; the store runs the second transaction again, which then reports
// the precise code: a conflict for other content, a duplicate for the same.
func TestIdempotencyKeyRaceAcrossRuns(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    store.Code
	}{{"pay 500", store.CodeIdempotencyConflict}, {"pay 5", store.CodeExists}} {
		t.Run(string(tc.want), func(t *testing.T) {
			s := openTest(t, Options{})
			la := setupRun(t, s, "a")
			lb := setupRun(t, s, "b", "apb")
			paused, resume := make(chan struct{}), make(chan struct{})
			bDone := make(chan error, 1)
			go func() {
				in := storetest.In("ib", "shared-key", tc.content)
				in.ApprovalID = "apb"
				bDone <- s.Commit(ctx, lb, store.Tick{Intents: []store.Intent{in}, Approvals: []store.ApprovalUse{{ApprovalID: "apb", IntentID: "ib",
					Check: func(store.Approval, time.Time) error {
						select {
						case <-paused: // a retry: do not wait again
						default:
							close(paused)
							<-resume
						}
						return nil
					}}}})
			}()
			<-paused
			must(t, s.Commit(ctx, la, store.Tick{Intents: []store.Intent{storetest.In("ia", "shared-key", "pay 5")}}))
			close(resume)
			mustCode(t, <-bDone, tc.want)
			if ins, _ := s.Intents(ctx, "b"); len(ins) != 0 {
				t.Fatalf("run b has intents %+v", ins)
			}
			if ap, _ := s.Approval(ctx, "apb"); ap.Status != store.ApprovalGranted {
				t.Fatalf("approval %s", ap.Status)
			}
		})
	}
}

// Every backend of the store is terminated at once, as a PostgreSQL
// restart would. Operations fail with CodeUnavailable or succeed, never
// half-write, and the store recovers without being reopened; the event
// chain afterwards holds exactly the commits that reported success.
func TestAllConnectionsLost(t *testing.T) {
	schema := freshSchema(t)
	app := "flrh-restart-" + schema
	s := openNamed(t, schema, app, Options{MaxConns: 4})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	adm := admin(t)
	var ok int64
	for round := 0; round < 5; round++ {
		// Fill the pool with idle connections, then kill them all.
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); s.Run(ctx, "r") }()
		}
		wg.Wait()
		var killed int
		must(t, adm.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) k`, app).Scan(&killed))
		if killed == 0 {
			t.Fatal("no backend to kill")
		}
		for i := 0; i < 3; i++ {
			err := s.Commit(ctx, l, store.Tick{ExpectHead: ok, Events: []store.Event{storetest.Ev("E", fmt.Sprintf(`{"r":%d,"i":%d}`, round, i))}})
			switch store.CodeOf(err) {
			case "":
				ok++
			case store.CodeUnavailable:
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if int64(len(evs)) != ok || ok < 5*2 {
		t.Fatalf("%d commits succeeded, %d events stored", ok, len(evs))
	}
}

// A writer that stalls inside its transaction (here: an approval check
// that takes too long; in life, a paused process) is ended by the server
// after IdleInTransaction, so it cannot hold the run's row forever. Its
// tick is not written, and another writer gets the row at once afterwards.
func TestIdleInTransactionEndsAStalledWriter(t *testing.T) {
	schema := freshSchema(t)
	s := openNamed(t, schema, "flrh-stall-"+schema, Options{IdleInTransaction: 200 * time.Millisecond})
	l := setupRun(t, s, "r", "ap1")
	before := state(t, s, "r")
	calls := 0
	stall := func(store.Approval, time.Time) error { calls++; time.Sleep(600 * time.Millisecond); return nil }
	start := time.Now()
	mustCode(t, s.Commit(ctx, l, bigTick(0, "ap1", stall)), store.CodeUnavailable)
	if calls != 2 {
		t.Fatalf("check ran %d times; want 2 (the tick, and its one retry on a fresh connection)", calls)
	}
	if after := state(t, s, "r"); after != before {
		t.Fatalf("a stalled transaction left a trace:\nbefore %s\nafter  %s", before, after)
	}
	other := openNamed(t, schema, "flrh-other-"+schema, Options{})
	must(t, other.Commit(ctx, l, bigTick(0, "ap1", nil)))
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}
