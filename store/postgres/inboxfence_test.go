package postgres

import (
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// lockWaits counts the sessions of application app waiting for a lock.
func lockWaits(t testing.TB, adm *pgx.Conn, app string) int {
	t.Helper()
	var n int
	must(t, adm.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n))
	return n
}

// submitHeld starts sub.Submit of an input to run and holds it after it
// has locked the run's row and before it commits: a transaction of the
// test's own has appended an entry at the inbox position the submission
// takes, and the submission waits for it. release rolls that entry back;
// the submission then commits, and its outcome arrives on the channel.
func submitHeld(t *testing.T, adm *pgx.Conn, sub *Store, subApp, schema, run, id string) (release func(), done <-chan error) {
	t.Helper()
	holder := admin(t)
	tx, err := holder.Begin(ctx)
	must(t, err)
	var next int64
	must(t, tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM `+pgx.Identifier{schema, "inbox"}.Sanitize()+` WHERE run_id = $1`, run).Scan(&next))
	_, err = tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "inbox"}.Sanitize()+` (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
		VALUES ($1, $2, 'placeholder', 'input', 'agent', '', '', '\x7b7d', 'sha256:x', 1)`, run, next)
	must(t, err)
	ch := make(chan error, 1)
	go func() { ch <- sub.Submit(ctx, storetest.Inb(run, id, "INPUT", `{"late":true}`)) }()
	waitFor(t, func() bool { return lockWaits(t, adm, subApp) == 1 })
	var once sync.Once
	release = func() { once.Do(func() { must(t, tx.Rollback(ctx)) }) }
	t.Cleanup(release)
	return release, ch
}

// An input Submit appends while a tick that expects the inbox left empty
// waits for the run's row (Submit holds it) is seen by the tick's check,
// on every way a lone tick commits: the tick is refused with
// HEAD_MISMATCH and writes nothing, and the input stays pending. A
// REPEATABLE READ tick takes its snapshot before its lock waits, so the
// check reads an inbox older than the lock unless Submit's commit changed
// the run's row the tick locks. The one-round-trip tick is refused both
// when the store knows the submissions the row counted (the row's count
// then differs from it) and when what it knows is stale (the row's count
// then differs from the snapshot's too).
func TestInputSubmittedWhileTickWaits(t *testing.T) {
	for _, path := range []string{"two round trips", "one round trip", "one round trip, count stale"} {
		t.Run(path, func(t *testing.T) {
			forBothTicks(t, func(t *testing.T) {
				schema := freshSchema(t)
				app, subApp := "flrh-fence-"+schema, "flrh-sub-"+schema
				s := openNamed(t, schema, app, Options{})
				sub := openNamed(t, schema, subApp, Options{})
				adm := admin(t)
				l := oneEventRun(t, s)
				switch path {
				case "two round trips":
					s.heads.forget("r")
				case "one round trip, count stale":
					staleCount(t, s, l)
				}

				release, submitted := submitHeld(t, adm, sub, subApp, schema, "r", "late")
				done := make(chan error, 1)
				go func() {
					done <- s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}, ExpectInboxEmpty: true})
				}()
				waitFor(t, func() bool { return lockWaits(t, adm, app) == 1 })
				release()
				must(t, <-submitted)
				mustCode(t, <-done, store.CodeHeadMismatch)
				if h := headOf(t, adm, schema, "r"); h != 1 {
					t.Fatalf("head %d after a refused tick, want 1", h)
				}
				pending, err := s.Inbox(ctx, "r", true)
				must(t, err)
				if len(pending) != 1 || pending[0].ID != "late" {
					t.Fatalf("pending %+v, want the late input", pending)
				}
			})
		})
	}
}

// The same in a group of ticks committed together: the group's
// transaction takes its snapshot at its first tick's fence, and the second
// tick's fence locks its run later (here, after the first tick's own
// input waited for an inbox position the test held while an input was
// submitted to the second run). The second tick is refused with HEAD_MISMATCH; the first
// commits.
func TestInputSubmittedBeforeGroupedTickLocks(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		schema := freshSchema(t)
		app := "flrh-group-" + schema
		s := openNamed(t, schema, app, Options{CommitGroups: 1})
		s.testGroupWait = 1
		adm := admin(t)
		var leases [2]store.Lease
		for i := range leases {
			run := fmt.Sprintf("r%d", i)
			must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}))
			l, err := s.AcquireLease(ctx, run, "w", time.Hour)
			must(t, err)
			must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)}}))
			leases[i] = l
		}
		var grouped []string
		s.testGroup = func(n int, ok bool) { grouped = append(grouped, fmt.Sprintf("%d:%v", n, ok)) }

		// The group's first tick appends its own input at the inbox
		// position this entry holds, and waits for it (inside the
		// transaction: a lock on a table would hold the statements up
		// while they are prepared, before it begins).
		holder := admin(t)
		tx, err := holder.Begin(ctx)
		must(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "inbox"}.Sanitize()+` (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
		VALUES ('r0', 1, 'placeholder', 'input', 'agent', '', '', '\x7b7d', 'sha256:x', 1)`)
		must(t, err)

		// The first tick (two inputs of its own: not a merged group's)
		// leads the group; the second expects its run's inbox empty.
		first, second := make(chan error, 1), make(chan error, 1)
		go func() {
			first <- s.Commit(ctx, leases[0], store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)},
				Submit:  []store.Inbound{storetest.Inb("r0", "x", "INPUT", `{}`), storetest.Inb("r0", "y", "INPUT", `{}`)},
				Consume: []string{"x", "y"}})
		}()
		waitFor(t, func() bool { s.group.mu.Lock(); defer s.group.mu.Unlock(); return s.group.leading == 1 })
		go func() {
			second <- s.Commit(ctx, leases[1], store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}, ExpectInboxEmpty: true})
		}()
		waitFor(t, func() bool { return lockWaits(t, adm, app) == 1 })
		must(t, s.Submit(ctx, storetest.Inb("r1", "late", "INPUT", `{"late":true}`)))
		must(t, tx.Rollback(ctx))
		must(t, <-first)
		mustCode(t, <-second, store.CodeHeadMismatch)
		if len(grouped) == 0 || grouped[0] != "2:false" {
			t.Fatalf("groups %v, want the two ticks together first", grouped)
		}
		if h0, h1 := headOf(t, adm, schema, "r0"), headOf(t, adm, schema, "r1"); h0 != 2 || h1 != 1 {
			t.Fatalf("heads %d and %d, want 2 and 1", h0, h1)
		}
	})
}

// The migration that counts submissions on the run's row: a run written
// before it reads back unchanged with a count of 0, and from then on
// Submit counts each input it appends (not one submitted again, nor one
// refused), while a tick's own input leaves the count alone.
func TestSubmissionsMigration(t *testing.T) {
	schema := freshSchema(t)
	s := openNamed(t, schema, "flrh-subm-"+schema, Options{})
	// The schema as the build before the migration leaves it, with a run
	// and an input that build wrote.
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}, storetest.Inb("r", "a", "INPUT", `{}`)))
	down, err := os.ReadFile("testdata/version19-events.sql")
	must(t, err)
	for _, q := range []string{string(down), `ALTER TABLE runs DROP COLUMN submissions`, `DELETE FROM schema_migrations WHERE version >= 16`} {
		_, err := s.pool.Exec(ctx, q)
		must(t, err)
	}
	before, err := s.Run(ctx, "r")
	must(t, err)
	s.Close()

	s = openNamed(t, schema, "flrh-subm2-"+schema, Options{})
	var v int64
	must(t, s.pool.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v))
	if v != SchemaVersion {
		t.Fatalf("schema at version %d, want %d", v, SchemaVersion)
	}
	after, err := s.Run(ctx, "r")
	must(t, err)
	// The due times' migration, later, marks every run not ended due at
	// once.
	if !after.DueAt.Equal(time.Unix(0, 1)) {
		t.Fatalf("due at %v after the migrations, want 1 ns after the epoch", after.DueAt)
	}
	after.DueAt = before.DueAt
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("run after the migration %+v, before %+v", after, before)
	}
	count := func(want int64) {
		t.Helper()
		var n int64
		must(t, s.pool.QueryRow(ctx, `SELECT submissions FROM runs WHERE run_id = 'r'`).Scan(&n))
		if n != want {
			t.Fatalf("submissions %d, want %d", n, want)
		}
	}
	count(0)
	must(t, s.Submit(ctx, storetest.Inb("r", "b", "INPUT", `{}`)))
	count(1)
	must(t, s.Submit(ctx, storetest.Inb("r", "b", "INPUT", `{}`))) // the same again: idempotent
	mustCode(t, s.Submit(ctx, storetest.Inb("r", "b", "INPUT", `{"other":1}`)), store.CodeExists)
	count(1)
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}, Consume: []string{"a", "b", "c"},
		Submit: []store.Inbound{storetest.Inb("r", "c", "INPUT", `{}`)}, ExpectInboxEmpty: true}))
	count(1)
	must(t, s.Submit(ctx, storetest.Inb("r", "d", "INPUT", `{}`)))
	count(2)
}
