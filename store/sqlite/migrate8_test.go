package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
	"flrh.dev/flrh/verify"
)

// writeVersion writes, at path, the database a build of schema version
// would hold for the runs recorded at srcPath: the released migrations 1
// to version and every row of the source, in its order (the outbox, the
// attempts and the inbox are WITHOUT ROWID tables at versions 7 and 8,
// read in key order).
func writeVersion(t *testing.T, srcPath, path string, version int) {
	t.Helper()
	db := dbAtVersion(t, path, "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)", version)
	defer db.Close()
	exec := execOn(t, db)
	exec(`ATTACH DATABASE ? AS src`, srcPath)
	for _, tb := range []string{"runs", "approvals", "intents", "outbox", "attempts", "receipts", "inbox", "checkpoints", "events", "trace"} {
		cs := tableColumns(t, db, tb)
		order := "rowid"
		switch tb {
		case "intents", "receipts":
			order = "commit_order"
		case "outbox", "attempts", "inbox":
			order = "1" // WITHOUT ROWID: key order
		}
		exec(`INSERT INTO main.` + tb + ` (` + cs + `) SELECT ` + cs + ` FROM src.` + tb + ` ORDER BY ` + order)
	}
	exec(`DETACH DATABASE src`)
}

// refusedMigration writes a database at schema version at path, runs
// seed on it (foreign keys may be turned off by the first statement),
// holds Open to refusing its migration with CORRUPT naming the outbox,
// and returns the database opened without the store, for the caller to
// check it was left as it was.
func refusedMigration(t *testing.T, path string, version int, seed ...string) *sql.DB {
	t.Helper()
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", version)
	for _, q := range seed {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	_, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	var se *store.Error
	if !errors.As(err, &se) || se.Code != store.CodeCorrupt || !strings.Contains(err.Error(), "outbox") {
		t.Fatalf("Open of a database with an outbox row of no intent: %v", err)
	}
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// tableColumns names the columns of table in db, comma-separated.
func tableColumns(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	return strings.Join(queryStrings(t, db, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table), ", ")
}

// dbAtVersion creates, at path (opened with the given URI parameters), a
// database as a build at version would leave it with no runs: the released
// migrations 1 to version and its user_version. It holds one connection,
// so that an attachment or a pragma set on it lasts.
func dbAtVersion(t *testing.T, path, params string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+params)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, m := range sqlite.MigrationsThrough(version) {
		if _, err := db.Exec(m); err != nil {
			db.Close()
			t.Fatal(err)
		}
	}
	execOn(t, db)(fmt.Sprintf(`PRAGMA user_version = %d`, version))
	return db
}

// execOn returns a function that runs a statement on db or fails the test.
func execOn(t *testing.T, db *sql.DB) func(q string, args ...any) {
	return func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// openMigrated opens the store at path, which migrates it, and holds it to
// the schema version this build writes, at least version; the store is
// closed when the test ends.
func openMigrated(t *testing.T, path string, version int64) (*sqlite.Store, *sql.DB) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db := st.DB()
	var v int64
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != sqlite.SchemaVersion || v < version {
		t.Fatalf("user_version %d (%v) after migration, build writes %d", v, err, sqlite.SchemaVersion)
	}
	return st, db
}

// heldConns holds n connections of db's pool at once (every idle one, and
// more), each checked by check when it is not nil, so that what a test
// asks of the schema is asked of every connection a store could use.
func heldConns(t *testing.T, ctx context.Context, db *sql.DB, n int, check func(*sql.Conn)) []*sql.Conn {
	t.Helper()
	conns := make([]*sql.Conn, 0, n)
	for range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(conn)
		}
		conns = append(conns, conn)
	}
	return conns
}

// refusedOnEach fails t when any of conns accepts q with args: what names
// the write the schema must refuse.
func refusedOnEach(t *testing.T, ctx context.Context, conns []*sql.Conn, what, q string, args ...any) {
	t.Helper()
	for i, conn := range conns {
		if _, err := conn.ExecContext(ctx, q, args...); err == nil {
			t.Fatalf("%s was accepted after migration (connection %d)", what, i)
		}
	}
}

// runsGoOn holds the runs ids of a migrated store to what they read back
// before (want), verifies and replays them, then records more runs, which
// verify and replay too, and returns their ids.
func runsGoOn(t *testing.T, ctx context.Context, st *sqlite.Store, ids []string, want map[string]runRecord) []string {
	t.Helper()
	for _, id := range ids {
		if got := readRun(t, ctx, st, id); !reflect.DeepEqual(got, want[id]) {
			t.Fatalf("run %s after migration:\n got %+v\nwant %+v", id, got, want[id])
		}
	}
	verifyRuns(t, ctx, st, ids)
	replayRuns(t, ctx, st, ids)
	more := recordRuns(t, ctx, st, "after-", false)
	verifyRuns(t, ctx, st, append(ids, more...))
	replayRuns(t, ctx, st, more)
	return more
}

// intentOrders lists every intent's id with its commit order, in order.
func intentOrders(t *testing.T, db *sql.DB) []string {
	t.Helper()
	return queryStrings(t, db, `SELECT intent_id || '@' || commit_order || '/' || run_id || '/' || idempotency_key FROM intents ORDER BY commit_order`)
}

// A database written at schema version 7 holding real runs (ended, one
// approved by a person, bundle runs with intents, receipts and trace
// records) migrates to version 8: every run reads back exactly as before
// with its intents at the same commit orders, verifies and goes on; the
// intents' keys are still unique, their rows still append-only, the
// foreign keys hold and are enforced again on the store's connections.
func TestMigrateFromVersion7RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v7Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v7.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	wantOrders := intentOrders(t, src.DB())
	if len(wantOrders) < 2 {
		t.Fatalf("the runs committed %d intents", len(wantOrders))
	}
	writeVersion(t, srcPath, v7Path, 7)
	src.Close()

	st, db := openMigrated(t, v7Path, 8)
	var pk string
	if err := db.QueryRow(`SELECT name FROM pragma_table_info('intents') WHERE pk = 1`).Scan(&pk); err != nil || pk != "commit_order" {
		t.Fatalf("intents keyed by %q (%v), want commit_order", pk, err)
	}
	var indexes int64
	db.QueryRow(`SELECT COUNT(*) FROM pragma_index_list('intents')`).Scan(&indexes)
	// intent_id, idempotency_key, intents_by_run; and intents_by_approval
	// since version 15.
	if indexes != 4 {
		t.Fatalf("intents has %d indexes after migration, want 4", indexes)
	}
	if got := intentOrders(t, db); !reflect.DeepEqual(got, wantOrders) {
		t.Fatalf("intents after migration:\n got %q\nwant %q", got, wantOrders)
	}
	runsGoOn(t, ctx, st, ids, want)
	// The new intents take the orders after the old ones, one each.
	orders := intentOrders(t, db)
	if len(orders) <= len(wantOrders) || !reflect.DeepEqual(orders[:len(wantOrders)], wantOrders) {
		t.Fatalf("intents after new runs: %q", orders)
	}
	var first, last, n int64
	db.QueryRow(`SELECT MIN(commit_order), MAX(commit_order), COUNT(*) FROM intents`).Scan(&first, &last, &n)
	if first != 1 || last != n {
		t.Fatalf("commit orders %d to %d for %d intents", first, last, n)
	}
	var fk int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d rows, %v", fk, err)
	}

	// What the schema enforced on intents, it still does.
	var id, key string
	db.QueryRow(`SELECT intent_id, idempotency_key FROM intents ORDER BY commit_order LIMIT 1`).Scan(&id, &key)
	dup := `INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
SELECT ?, run_id, seq, effect_type, ?, content_digest, body, digest, generation, recorded_at FROM intents WHERE intent_id = ?`
	// Every idle connection of the pool, and more, held at once: each
	// must enforce the keys.
	conns := heldConns(t, ctx, db, 4, func(conn *sql.Conn) {
		var on int64
		if err := conn.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil || on != 1 {
			t.Fatalf("a connection with foreign_keys %d (%v) after migration", on, err)
		}
	})
	for _, c := range []struct {
		name string
		q    string
		args []any
	}{
		{"a second intent of the same id", dup, []any{id, "fresh-key", id}},
		{"a second intent of the same idempotency key", dup, []any{"fresh-id", key, id}},
		{"an intent of no run", `INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at) VALUES ('x', 'no-such-run', 1, 'e', 'kx', 'c', x'00', 'd', 1, 1)`, nil},
		{"an intent under a taken commit order", `INSERT INTO intents (commit_order, intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
SELECT 1, 'y', run_id, seq, effect_type, 'ky', content_digest, body, digest, generation, recorded_at FROM intents WHERE intent_id = ?`, []any{id}},
		{"an outbox row of no intent", `INSERT INTO outbox (intent_id, run_id, status, updated_at) SELECT 'no-such-intent', run_id, 'pending', 1 FROM intents WHERE intent_id = ?`, []any{id}},
		{"a changed intent", `UPDATE intents SET body = x'00' WHERE intent_id = ?`, []any{id}},
		{"a deleted intent", `DELETE FROM intents WHERE intent_id = ?`, []any{id}},
	} {
		refusedOnEach(t, ctx, conns, c.name, c.q, c.args...)
	}
	for _, conn := range conns {
		conn.Close()
	}
	// A commit of a reused key is still told from a reused intent id.
	if err := st.CreateRun(ctx, store.Run{ID: "fresh-run", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, "fresh-run", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   store.Intent
		want store.Code
	}{
		{storetest.In("fresh", key, "other content"), store.CodeIdempotencyConflict},
		{storetest.In(id, "fresh-key", "content"), store.CodeExists},
		{storetest.In("fresh", "fresh-key", "content"), ""},
	} {
		err := st.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{c.in}})
		if store.CodeOf(err) != c.want {
			t.Fatalf("intent %s with key %s: %v, want %q", c.in.ID, c.in.IdempotencyKey, err, c.want)
		}
	}
	if got := intentOrders(t, db); got[len(got)-1] != "fresh@"+fmt.Sprint(n+1)+"/fresh-run/fresh-key" {
		t.Fatalf("the new intent: %q", got[len(got)-1])
	}
}

// A version-7 database whose rows break a foreign key the rebuild is to
// keep (an outbox row of no intent, written with foreign keys off) is not
// migrated: Open fails with CORRUPT and the database is left as it was,
// at version 7 with its intents in their old table.
func TestMigrateFromVersion7RefusesBrokenReferences(t *testing.T) {
	db := refusedMigration(t, filepath.Join(t.TempDir(), "v7.db"), 7,
		`PRAGMA foreign_keys = OFF`,
		`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at, created_order) VALUES ('a', 'wf', '1', 'S', 'h', 1, 1, 1)`,
		`INSERT INTO intents (intent_id, run_id, seq, commit_order, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at) VALUES ('ia', 'a', 1, 1, 'e', 'ka', 'c', x'00', 'd', 1, 1)`,
		`INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ('ia', 'a', 'pending', 1), ('gone', 'a', 'pending', 1)`,
	)
	var v int64
	var ddl string
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'intents'`).Scan(&ddl)
	if v != 7 || !strings.Contains(ddl, "intent_id       TEXT PRIMARY KEY") {
		t.Fatalf("after the refused migration: version %d, intents %s", v, ddl)
	}
	var tables int64
	db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'intents_v8'`).Scan(&tables)
	if tables != 0 {
		t.Fatal("the refused migration left its new table behind")
	}
}

// replayRuns replays each run from its record with the workflow that
// recorded it (recordRuns' demo refunds or the refund-agent bundle) and
// fails unless the replay reproduces the record exactly.
func replayRuns(t *testing.T, ctx context.Context, st store.Store, ids []string) {
	t.Helper()
	agent, _, err := bundle.LoadExample("refund-agent")
	if err != nil {
		t.Fatal(err)
	}
	refunds := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments"}
	for _, id := range ids {
		var wf runner.Workflow = refunds
		if strings.Contains(id, "agent") {
			wf = agent
		}
		rep, err := verify.Replay(ctx, st, wf, id)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Inputs == 0 {
			t.Fatalf("replay of %s: %+v", id, rep)
		}
	}
}
