package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// forBothTicks runs f with the one-round-trip tick sent as the pipeline's
// implicit transaction and as BEGIN … COMMIT.
func forBothTicks(t *testing.T, f func(t *testing.T)) {
	for _, implicit := range []bool{true, false} {
		name := "implicit"
		if !implicit {
			name = "begin-commit"
		}
		t.Run(name, func(t *testing.T) {
			defer func(v bool) { implicitTick = v }(implicitTick)
			implicitTick = implicit
			f(t)
		})
	}
}

// headOf reads the run's head as committed, on a connection of its own.
func headOf(t *testing.T, adm *pgx.Conn, schema, run string) int64 {
	t.Helper()
	var head int64
	must(t, adm.QueryRow(ctx, `SELECT head_seq FROM `+pgx.Identifier{schema, "runs"}.Sanitize()+` WHERE run_id = $1`, run).Scan(&head))
	return head
}

// The connection is lost after the server has committed a one-round-trip
// tick and before its answer arrives: the commit is reported as lost
// (UNAVAILABLE: its outcome unknown), never as refused or retried, and
// reading the run's head tells that it landed — a tick sent as the
// pipeline's implicit transaction is in doubt exactly as a lost COMMIT's
// answer leaves it.
func TestImplicitTickAnswerLost(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		schema := freshSchema(t)
		s := openNamed(t, schema, "flrh-lost-"+schema, Options{})
		adm := admin(t)
		l := oneEventRun(t, s)

		calls := 0
		testAfterSync = func(pc *pgconn.PgConn) {
			calls++
			waitFor(t, func() bool { return headOf(t, adm, schema, "r") == 2 })
			pc.Conn().Close()
		}
		defer func() { testAfterSync = nil }()
		tick := store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}}
		mustCode(t, s.Commit(ctx, l, tick), store.CodeUnavailable)
		testAfterSync = nil
		if calls != 1 {
			t.Fatalf("%d round trips sent, want the one", calls)
		}
		// The tick landed once; sent again, it is refused as stale.
		evs, err := s.Events(ctx, "r", 0)
		must(t, err)
		if len(evs) != 2 || evs[1].Kind != "B" {
			t.Fatalf("events after the lost answer: %+v", evs)
		}
		mustCode(t, s.Commit(ctx, l, tick), store.CodeHeadMismatch)
	})
}

// A one-round-trip tick that waited for the run's row while another
// transaction took the run over is refused (the implicit transaction runs
// at READ COMMITTED: the fence checks the lease on the row version it
// locked), and nothing of it is written.
func TestImplicitTickFenceAfterWaiting(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		schema := freshSchema(t)
		app := "flrh-waiting-" + schema
		s := openNamed(t, schema, app, Options{})
		adm := admin(t)
		l := oneEventRun(t, s)

		holder := admin(t)
		tx, err := holder.Begin(ctx)
		must(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "runs"}.Sanitize()+` SET lease_owner = 'w2', lease_generation = lease_generation + 1 WHERE run_id = 'r'`)
		must(t, err)
		done := make(chan error, 1)
		go func() {
			done <- s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}})
		}()
		waitFor(t, func() bool { return lockWaits(t, adm, app) == 1 })
		must(t, tx.Commit(ctx))
		mustCode(t, <-done, store.CodeFenced)
		evs, err := s.Events(ctx, "r", 0)
		must(t, err)
		if len(evs) != 1 || headOf(t, adm, schema, "r") != 1 {
			t.Fatalf("a fenced tick left events %+v", evs)
		}
	})
}
