package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// eventRows lists every event's row, every column but the key and the
// run's order, in the order of run id and number: what version 10 must
// keep of them.
func eventRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	return queryStrings(t, db, `SELECT run_id || ' ' || seq || ' ' || kind || ' ' || hex(body) || ' ' || typeof(digest) || hex(digest) || ' ' || typeof(prev_hash) || hex(prev_hash) || ' ' || typeof(chain_hash) || hex(chain_hash) || ' ' || generation || ' ' || recorded_at
FROM events ORDER BY run_id, seq`)
}

// A database written at schema version 9 holding real runs (ended, one
// approved by a person, bundle runs with intents, attempts, receipts and
// trace records) migrates to version 10: every event is kept, now keyed by
// its run's creation order and its number, with no index; every run reads
// back exactly as before, from the store and from a read-only store,
// verifies, replays and goes on, each new event keyed by its own run's
// order; the key still refuses a second event of a number in a run, an
// event of no run and a key that is not its row's.
func TestMigrateFromVersion9RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v9Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v9.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	wantRows := eventRows(t, src.DB())
	if len(wantRows) < 20 {
		t.Fatalf("the runs wrote %d events", len(wantRows))
	}
	writeVersion(t, srcPath, v9Path, 9)
	src.Close()
	{
		db, err := sql.Open("sqlite", "file:"+v9Path)
		if err != nil {
			t.Fatal(err)
		}
		// The version-9 copy is in commit order, runs interleaved, and
		// keyed by (run_id, seq).
		if got := eventRows(t, db); !reflect.DeepEqual(got, wantRows) {
			t.Fatalf("the version-9 copy's events differ from the source's")
		}
		var idx int64
		db.QueryRow(`SELECT COUNT(*) FROM pragma_index_list('events')`).Scan(&idx)
		db.Close()
		if idx != 1 {
			t.Fatalf("the version-9 events have %d indexes, want 1", idx)
		}
	}

	st, db := openMigrated(t, v9Path, 10)
	var key string
	if err := db.QueryRow(`SELECT name FROM pragma_table_info('events') WHERE pk = 1`).Scan(&key); err != nil || key != "event_key" {
		t.Fatalf("events keyed by %q (%v), want event_key", key, err)
	}
	var indexes int64
	db.QueryRow(`SELECT COUNT(*) FROM pragma_index_list('events')`).Scan(&indexes)
	if indexes != 0 {
		t.Fatalf("events has %d indexes after migration", indexes)
	}
	if got := eventRows(t, db); !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("events after migration:\n got %d rows\nwant %d", len(got), len(wantRows))
	}
	keyed := func() {
		t.Helper()
		var bad, n int64
		db.QueryRow(`SELECT COUNT(*) FROM events e JOIN runs r ON r.run_id = e.run_id
WHERE e.run_order <> r.created_order OR e.event_key <> r.created_order * 4294967296 + e.seq`).Scan(&bad)
		db.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n)
		if bad != 0 || n == 0 {
			t.Fatalf("%d of %d events keyed other than by their run's order and number", bad, n)
		}
	}
	keyed()
	more := runsGoOn(t, ctx, st, ids, want)
	keyed()
	var fk int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d rows, %v", fk, err)
	}
	all := append(ids, more...)

	// The verifier's read-only store reads the migrated runs as the
	// store does, and a run's events from any point.
	ro, err := sqlite.Open(ctx, v9Path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, id := range all {
		rec := readRun(t, ctx, st, id)
		if got := readRun(t, ctx, ro, id); !reflect.DeepEqual(got, rec) {
			t.Fatalf("run %s read-only:\n got %+v\nwant %+v", id, got, rec)
		}
		n := int64(len(rec.Events))
		for _, after := range []int64{-1 << 40, -1, 0, 1, n / 2, n - 1, n, n + 1, 1 << 32, 1<<32 + 1} {
			var wantEv []store.Event
			for _, e := range rec.Events {
				if e.Seq > after {
					wantEv = append(wantEv, e)
				}
			}
			for _, s := range []*sqlite.Store{st, ro} {
				got, err := s.Events(ctx, id, after)
				if err != nil || !reflect.DeepEqual(got, wantEv) {
					t.Fatalf("events of %s after %d: %d events (%v), want %d", id, after, len(got), err, len(wantEv))
				}
			}
		}
	}
	if got, err := st.Events(ctx, "no-such-run", 0); err != nil || len(got) != 0 {
		t.Fatalf("events of no run: %+v, %v", got, err)
	}
	verifyRuns(t, ctx, ro, all)

	// What the key enforces, on every connection.
	var run string
	var order, seq int64
	db.QueryRow(`SELECT run_id, run_order, seq FROM events ORDER BY event_key DESC LIMIT 1`).Scan(&run, &order, &seq)
	var other string
	var otherOrder int64
	db.QueryRow(`SELECT run_id, created_order FROM runs WHERE run_id <> ? ORDER BY created_order LIMIT 1`, run).Scan(&other, &otherOrder)
	if run == "" || other == "" {
		t.Fatal("no events to test the key with")
	}
	const ins = `INSERT INTO events (event_key, run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at, run_order) VALUES (?, ?, ?, 'E', x'00', x'00', x'00', x'00', 1, 1, ?)`
	conns := heldConns(t, ctx, db, 4, nil)
	for _, c := range []struct {
		name string
		args []any
	}{
		{"a second event of a number", []any{order<<32 + seq, run, seq, order}},
		{"a key not the row's", []any{order<<32 + seq + 7, run, seq + 1, order}},
		// SQLite gives a row without a key the largest plus one, the
		// last run's next key: another run's event is refused.
		{"a key left to SQLite", []any{nil, other, 1 << 20, otherOrder}},
		{"another run's order", []any{otherOrder<<32 + seq + 1, run, seq + 1, otherOrder}},
		{"an event of no run", []any{(order+1000)<<32 + 1, "no-such-run", 1, order + 1000}},
		{"an event numbered 0", []any{order << 32, run, 0, order}},
		{"an event numbered 2^32", []any{(order + 1) << 32, run, int64(1) << 32, order}},
		{"an order of 0", []any{seq + 1, run, seq + 1, 0}},
	} {
		refusedOnEach(t, ctx, conns, c.name, ins, c.args...)
	}
	// The insert the checks refuse is the store's own, bound right.
	if _, err := conns[0].ExecContext(ctx, ins, order<<32+seq+1, run, seq+1, order); err != nil {
		t.Fatalf("a well-keyed event refused: %v", err)
	}
	if _, err := conns[0].ExecContext(ctx, `UPDATE events SET seq = seq WHERE event_key = ?`, order<<32+seq+1); err == nil {
		t.Fatal("an event updated after migration")
	}
	for _, conn := range conns {
		conn.Close()
	}
}

// A version-9 database with an event of no run (written with foreign keys
// off) is not migrated: Open fails with a typed error and the database is
// left as it was, at version 9 with its events keyed by run id.
func TestMigrateFromVersion9RefusesAnEventOfNoRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v9.db")
	db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 9)
	exec := execOn(t, db)
	exec(`PRAGMA foreign_keys = OFF`)
	exec(`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at, created_order) VALUES ('a', 'wf', '1', 'S', 'h', 1, 1, 1)`)
	exec(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at) VALUES ('a', 1, 'E', x'00', x'00', x'00', x'00', 1, 1), ('gone', 1, 'E', x'00', x'00', x'00', x'00', 1, 1)`)
	db.Close()
	_, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	var se *store.Error
	if !errors.As(err, &se) {
		t.Fatalf("Open of a database with an event of no run: %v", err)
	}
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v, tables, n int64
	var ddl string
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'events'`).Scan(&ddl)
	db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('events_v10', 'runs_order_id')`).Scan(&tables)
	db.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n)
	if v != 9 || strings.Contains(ddl, "event_key") || tables != 0 || n != 2 {
		t.Fatalf("after the refused migration: version %d, %d new tables left, %d events, events %s", v, tables, n, ddl)
	}
}
