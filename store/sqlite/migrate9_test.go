package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// effectRows lists every outbox row and attempt with its intent's id and
// the commit order it is keyed by, in the order of their intent's id:
// what version 9 must keep of them, and the order it must give them
// (src, written at version 9, has them keyed by their intent's order).
func effectRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT 'outbox ' || o.intent_id || '@' || o.intent_order || '/' || i.commit_order || ' ' || o.run_id || ' ' || o.status || ' ' || o.route || ' ' || o.attempts || ' ' || o.updated_at
FROM outbox o JOIN intents i ON i.intent_id = o.intent_id ORDER BY o.intent_id`,
		`SELECT 'attempt ' || a.intent_id || '@' || a.intent_order || '/' || i.commit_order || ' ' || a.n || ' ' || a.status || ' ' || a.generation || ' ' || a.detail || ' ' || a.started_at || ' ' || a.finished_at
FROM attempts a JOIN intents i ON i.intent_id = a.intent_id ORDER BY a.intent_id, a.n`,
		`SELECT 'rows ' || (SELECT COUNT(*) FROM outbox) || ' ' || (SELECT COUNT(*) FROM attempts)`,
	} {
		out = append(out, queryStrings(t, db, q)...)
	}
	return out
}

// queryStrings runs q with args on db and returns its one text column's
// values.
func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A database written at schema version 8 holding real runs (ended, one
// approved by a person, bundle runs with intents, attempts, receipts and
// trace records) migrates to version 9: every outbox row and attempt is
// kept, now keyed by its intent's commit order; every run reads back
// exactly as before, from the store and from a read-only store, verifies,
// replays and goes on, each new row keyed by its own intent's order; the
// keys still refuse a second outbox row of an intent, an attempt of the
// same number and a row of no intent.
func TestMigrateFromVersion8RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v8Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v8.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	wantRows := effectRows(t, src.DB())
	if len(wantRows) < 3 || !strings.Contains(strings.Join(wantRows, "\n"), "attempt ") {
		t.Fatalf("the runs wrote no attempts: %q", wantRows)
	}
	for _, r := range wantRows {
		if f := strings.Fields(r); f[0] != "rows" {
			if at := strings.Split(strings.SplitN(f[1], "@", 2)[1], "/"); at[0] != at[1] {
				t.Fatalf("the source holds a row keyed by another intent's order: %s", r)
			}
		}
	}
	writeVersion(t, srcPath, v8Path, 8)
	src.Close()

	st, db := openMigrated(t, v8Path, 9)
	for _, tb := range []string{"outbox", "attempts"} {
		var key string
		if err := db.QueryRow(`SELECT name FROM pragma_table_info(?) WHERE pk = 1`, tb).Scan(&key); err != nil || key != "intent_order" {
			t.Fatalf("%s keyed by %q (%v), want intent_order", tb, key, err)
		}
		var indexes int64
		db.QueryRow(`SELECT COUNT(*) FROM pragma_index_list(?) WHERE origin <> 'pk'`, tb).Scan(&indexes)
		if indexes != 0 {
			t.Fatalf("%s has %d indexes besides its key after migration", tb, indexes)
		}
	}
	if got := effectRows(t, db); !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("outbox and attempts after migration:\n got %q\nwant %q", got, wantRows)
	}
	var mismatched int64
	db.QueryRow(`SELECT (SELECT COUNT(*) FROM outbox o JOIN intents i ON i.commit_order = o.intent_order WHERE i.intent_id <> o.intent_id)
	+ (SELECT COUNT(*) FROM attempts a JOIN intents i ON i.commit_order = a.intent_order WHERE i.intent_id <> a.intent_id)`).Scan(&mismatched)
	if mismatched != 0 {
		t.Fatalf("%d rows keyed by another intent's order", mismatched)
	}
	more := runsGoOn(t, ctx, st, ids, want)
	var fk int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d rows, %v", fk, err)
	}

	// The verifier's read-only store reads the migrated runs as the
	// store does.
	ro, err := sqlite.Open(ctx, v8Path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, id := range append(ids, more...) {
		if got, want := readRun(t, ctx, ro, id), readRun(t, ctx, st, id); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %s read-only:\n got %+v\nwant %+v", id, got, want)
		}
	}
	verifyRuns(t, ctx, ro, append(ids, more...))

	// What the keys enforce, on every connection.
	var id, run string
	var order int64
	db.QueryRow(`SELECT i.intent_id, a.intent_order, i.run_id FROM attempts a JOIN intents i ON i.commit_order = a.intent_order ORDER BY a.intent_order LIMIT 1`).Scan(&id, &order, &run)
	if id == "" {
		t.Fatal("no attempt to test the keys with")
	}
	conns := heldConns(t, ctx, db, 4, nil)
	for _, c := range []struct {
		name string
		q    string
		args []any
	}{
		{"a second outbox row of an intent", `INSERT INTO outbox (intent_order, intent_id, run_id, status, updated_at) VALUES (?, ?, ?, 'pending', 1)`, []any{order, id, run}},
		{"an outbox row of no intent", `INSERT INTO outbox (intent_order, intent_id, run_id, status, updated_at) VALUES (?, ?, ?, 'pending', 1)`, []any{1 << 40, id, run}},
		{"an outbox row of no run", `UPDATE outbox SET run_id = 'no-such-run' WHERE intent_order = ?`, []any{order}},
		{"an outbox row moved to no intent", `UPDATE outbox SET intent_order = ? WHERE intent_order = ?`, []any{1 << 40, order}},
		{"an attempt of the same number", `INSERT INTO attempts (intent_order, intent_id, n, status, generation, started_at) VALUES (?, ?, 1, 'started', 1, 1)`, []any{order, id}},
		{"an attempt of no intent", `INSERT INTO attempts (intent_order, intent_id, n, status, generation, started_at) VALUES (?, ?, 1, 'started', 1, 1)`, []any{1 << 40, id}},
		{"an attempt moved to no intent", `UPDATE attempts SET intent_order = ? WHERE intent_order = ?`, []any{1 << 40, order}},
		{"an attempt numbered 0", `UPDATE attempts SET n = 0 WHERE intent_order = ?`, []any{order}},
	} {
		refusedOnEach(t, ctx, conns, c.name, c.q, c.args...)
	}
	for _, conn := range conns {
		conn.Close()
	}
	// The store reads an attempt's intent id from its intent: the copy
	// the row keeps for SQL is not what it reads.
	before, err := st.RunAttempts(ctx, run)
	if err != nil || len(before) == 0 {
		t.Fatalf("attempts of %s: %+v, %v", run, before, err)
	}
	beforeOne, err := st.Attempts(ctx, id)
	if err != nil || len(beforeOne) == 0 {
		t.Fatalf("attempts of %s: %+v, %v", id, beforeOne, err)
	}
	record := readRun(t, ctx, st, run)
	whole, err := st.ReadRunRecord(ctx, run, true)
	if err != nil || len(whole.Attempts) == 0 {
		t.Fatalf("record of %s: %d attempts, %v", run, len(whole.Attempts), err)
	}
	batch, errs := st.ReadRunRecords(ctx, []string{run}, true)
	if errs[0] != nil || !reflect.DeepEqual(batch[0], whole) {
		t.Fatalf("record of %s read in a batch: %v", run, errs[0])
	}
	if _, err := db.Exec(`UPDATE attempts SET intent_id = 'copy' WHERE intent_order = ?`, order); err != nil {
		t.Fatal(err)
	}
	if after, err := st.RunAttempts(ctx, run); err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("attempts of %s after their copy of the id changed:\n got %+v (%v)\nwant %+v", run, after, err, before)
	}
	if after, err := st.Attempts(ctx, id); err != nil || !reflect.DeepEqual(after, beforeOne) {
		t.Fatalf("attempts of %s after their copy of the id changed:\n got %+v (%v)\nwant %+v", id, after, err, beforeOne)
	}
	if got := readRun(t, ctx, st, run); !reflect.DeepEqual(got, record) {
		t.Fatalf("run %s after its attempt's copy of the id changed:\n got %+v\nwant %+v", run, got, record)
	}
	if got, err := st.ReadRunRecord(ctx, run, true); err != nil || !reflect.DeepEqual(got, whole) {
		t.Fatalf("record of %s after its attempt's copy of the id changed:\n got %+v (%v)\nwant %+v", run, got.Attempts, err, whole.Attempts)
	}
	if got, errs := st.ReadRunRecords(ctx, []string{run}, true); errs[0] != nil || !reflect.DeepEqual(got[0], whole) {
		t.Fatalf("record of %s read in a batch after its attempt's copy of the id changed:\n got %+v (%v)\nwant %+v", run, got[0].Attempts, errs[0], whole.Attempts)
	}
	if _, err := db.Exec(`UPDATE attempts SET intent_id = ? WHERE intent_order = ?`, id, order); err != nil {
		t.Fatal(err)
	}
	// A row's other columns still change as the store and the tests that
	// edit them in SQL change them.
	if _, err := db.Exec(`UPDATE attempts SET detail = 'edited' WHERE intent_id = ? AND n = 1`, id); err != nil {
		t.Fatal(err)
	}
	ats, err := st.Attempts(ctx, id)
	if err != nil || len(ats) == 0 || ats[0].Detail != "edited" {
		t.Fatalf("attempts of %s after an edit: %+v, %v", id, ats, err)
	}

	// A new intent's outbox row and attempts take its order.
	if err := st.CreateRun(ctx, store.Run{ID: "fresh-run", WorkflowID: "wf", WorkflowVersion: "1", State: "S"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, "fresh-run", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, l, store.Tick{ExpectHead: 0, Intents: []store.Intent{storetest.In("fresh", "fresh-key", "content")}, Begin: []string{"fresh"}}); err != nil {
		t.Fatal(err)
	}
	var fresh, outboxOrder, attemptOrder int64
	db.QueryRow(`SELECT commit_order FROM intents WHERE intent_id = 'fresh'`).Scan(&fresh)
	db.QueryRow(`SELECT intent_order FROM outbox WHERE intent_id = 'fresh'`).Scan(&outboxOrder)
	db.QueryRow(`SELECT intent_order FROM attempts WHERE intent_id = 'fresh' AND n = 1`).Scan(&attemptOrder)
	if fresh == 0 || outboxOrder != fresh || attemptOrder != fresh {
		t.Fatalf("the new intent at order %d, its outbox row at %d, its attempt at %d", fresh, outboxOrder, attemptOrder)
	}
}

// A version-8 database with an outbox row of no intent (written with
// foreign keys off) is not migrated: Open fails with CORRUPT and the
// database is left as it was, at version 8 with its outbox keyed by
// intent id.
func TestMigrateFromVersion8RefusesAnOutboxRowOfNoIntent(t *testing.T) {
	db := refusedMigration(t, filepath.Join(t.TempDir(), "v8.db"), 8,
		`PRAGMA foreign_keys = OFF`,
		`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at, created_order) VALUES ('a', 'wf', '1', 'S', 'h', 1, 1, 1)`,
		`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at) VALUES ('ia', 'a', 1, 'e', 'ka', 'c', x'00', 'd', 1, 1)`,
		`INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ('ia', 'a', 'pending', 1), ('gone', 'a', 'pending', 1)`,
	)
	var v, tables int64
	var ddl string
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'outbox'`).Scan(&ddl)
	db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('outbox_v9', 'attempts_v9')`).Scan(&tables)
	if v != 8 || strings.Contains(ddl, "intent_order") || tables != 0 {
		t.Fatalf("after the refused migration: version %d, %d new tables left, outbox %s", v, tables, ddl)
	}
}
