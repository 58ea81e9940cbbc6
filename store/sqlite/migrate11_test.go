package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// traceCheckpointRows lists every trace row and checkpoint, every column
// but the key and the run's order, in the order of run id and number: what
// version 11 must keep of them.
func traceCheckpointRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	tr := queryStrings(t, db, `SELECT 't ' || run_id || ' ' || seq || ' ' || last_seq || ' ' || hex(records) || ' ' || recorded_at FROM trace ORDER BY run_id, seq`)
	cp := queryStrings(t, db, `SELECT 'c ' || run_id || ' ' || n || ' ' || seq || ' ' || format_version || ' ' || build_digest || ' ' || hex(body) || ' ' || digest || ' ' || generation || ' ' || recorded_at FROM checkpoints ORDER BY run_id, n`)
	return append(tr, cp...)
}

// A database written at schema version 10 holding real runs (ended, one
// approved by a person, bundle runs with intents, attempts, receipts and
// trace records) migrates to version 11: every trace row and checkpoint is
// kept, now keyed by its run's creation order and its number, with no
// index; every run reads back exactly as before, from the store and from
// a read-only store, verifies, replays and goes on, each new row keyed by
// its own run's order; the keys still refuse a second row of a number in
// a run, a row of no run and a key that is not its row's.
func TestMigrateFromVersion10RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v10Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v10.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	wantRows := traceCheckpointRows(t, src.DB())
	var nTrace, nCheckpoints int
	for _, r := range wantRows {
		if strings.HasPrefix(r, "t ") {
			nTrace++
		} else {
			nCheckpoints++
		}
	}
	if nTrace < 2 || nCheckpoints < 5 {
		t.Fatalf("the runs wrote %d trace rows and %d checkpoints", nTrace, nCheckpoints)
	}
	writeVersion(t, srcPath, v10Path, 10)
	src.Close()
	{
		db, err := sql.Open("sqlite", "file:"+v10Path)
		if err != nil {
			t.Fatal(err)
		}
		if got := traceCheckpointRows(t, db); !reflect.DeepEqual(got, wantRows) {
			t.Fatalf("the version-10 copy's trace and checkpoints differ from the source's")
		}
		var idx int64
		db.QueryRow(`SELECT (SELECT COUNT(*) FROM pragma_index_list('trace')) + (SELECT COUNT(*) FROM pragma_index_list('checkpoints'))`).Scan(&idx)
		db.Close()
		if idx != 2 {
			t.Fatalf("the version-10 trace and checkpoints have %d indexes, want 2", idx)
		}
	}

	st, db := openMigrated(t, v10Path, 11)
	for tb, want := range map[string]string{"trace": "trace_key", "checkpoints": "checkpoint_key"} {
		var key string
		if err := db.QueryRow(`SELECT name FROM pragma_table_info(?) WHERE pk = 1`, tb).Scan(&key); err != nil || key != want {
			t.Fatalf("%s keyed by %q (%v), want %s", tb, key, err, want)
		}
		var indexes int64
		db.QueryRow(`SELECT COUNT(*) FROM pragma_index_list(?)`, tb).Scan(&indexes)
		if indexes != 0 {
			t.Fatalf("%s has %d indexes after migration", tb, indexes)
		}
	}
	if got := traceCheckpointRows(t, db); !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("trace and checkpoints after migration:\n got %d rows\nwant %d", len(got), len(wantRows))
	}
	keyed := func() {
		t.Helper()
		var bad, n int64
		db.QueryRow(`SELECT
	(SELECT COUNT(*) FROM trace t JOIN runs r ON r.run_id = t.run_id WHERE t.run_order <> r.created_order OR t.trace_key <> r.created_order * 4294967296 + t.seq)
	+ (SELECT COUNT(*) FROM checkpoints c JOIN runs r ON r.run_id = c.run_id WHERE c.run_order <> r.created_order OR c.checkpoint_key <> r.created_order * 4294967296 + c.n)`).Scan(&bad)
		db.QueryRow(`SELECT (SELECT COUNT(*) FROM trace) + (SELECT COUNT(*) FROM checkpoints)`).Scan(&n)
		if bad != 0 || n == 0 {
			t.Fatalf("%d of %d trace rows and checkpoints keyed other than by their run's order and number", bad, n)
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
	// store does.
	ro, err := sqlite.Open(ctx, v10Path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	multi := 0
	for _, id := range all {
		rec := readRun(t, ctx, st, id)
		// The trace as its rows hold it, read by run id in number order.
		if want := traceByRunID(t, db, id); !reflect.DeepEqual(rec.Trace, want) {
			t.Fatalf("trace of %s: %d records, its rows hold %d", id, len(rec.Trace), len(want))
		}
		// The latest checkpoint as its rows hold it.
		var cpSeq int64
		var cpDigest string
		db.QueryRow(`SELECT seq, digest FROM checkpoints WHERE run_id = ? ORDER BY n DESC LIMIT 1`, id).Scan(&cpSeq, &cpDigest)
		if rec.Checkpoint.Seq != cpSeq || rec.Checkpoint.Digest != cpDigest {
			t.Fatalf("checkpoint of %s at %d %s, its latest row at %d %s", id, rec.Checkpoint.Seq, rec.Checkpoint.Digest, cpSeq, cpDigest)
		}
		var rowsOf int
		db.QueryRow(`SELECT COUNT(*) FROM trace WHERE run_id = ?`, id).Scan(&rowsOf)
		if rowsOf > 1 {
			multi++
		}
		if got := readRun(t, ctx, ro, id); !reflect.DeepEqual(got, rec) {
			t.Fatalf("run %s read-only:\n got %+v\nwant %+v", id, got, rec)
		}
		for _, s := range []*sqlite.Store{st, ro} {
			tr, err := s.Trace(ctx, id)
			if err != nil || !reflect.DeepEqual(tr, rec.Trace) {
				t.Fatalf("trace of %s: %d records (%v), want %d", id, len(tr), err, len(rec.Trace))
			}
			cp, err := s.Checkpoint(ctx, id)
			if reflect.DeepEqual(rec.Checkpoint, store.Checkpoint{}) && notFound(err) {
				continue
			}
			if err != nil || !reflect.DeepEqual(cp, rec.Checkpoint) {
				t.Fatalf("checkpoint of %s: %+v (%v), want %+v", id, cp, err, rec.Checkpoint)
			}
		}
	}
	if multi == 0 {
		t.Fatal("no run has more than one trace row")
	}
	if got, err := st.Trace(ctx, "no-such-run"); err != nil || len(got) != 0 {
		t.Fatalf("trace of no run: %+v, %v", got, err)
	}
	if _, err := st.Checkpoint(ctx, "no-such-run"); !notFound(err) {
		t.Fatalf("checkpoint of no run: %v", err)
	}
	verifyRuns(t, ctx, ro, all)

	// What the keys enforce, on every connection.
	var run string
	var order, seq, n int64
	db.QueryRow(`SELECT run_id, run_order, seq FROM trace ORDER BY trace_key DESC LIMIT 1`).Scan(&run, &order, &seq)
	db.QueryRow(`SELECT n FROM checkpoints WHERE run_order = ? ORDER BY checkpoint_key DESC LIMIT 1`, order).Scan(&n)
	var other string
	var otherOrder int64
	db.QueryRow(`SELECT run_id, created_order FROM runs WHERE run_id <> ? ORDER BY created_order LIMIT 1`, run).Scan(&other, &otherOrder)
	if run == "" || other == "" || n == 0 {
		t.Fatal("no trace rows or checkpoints to test the keys with")
	}
	const insTrace = `INSERT INTO trace (trace_key, run_id, seq, last_seq, records, recorded_at, run_order) VALUES (?, ?, ?, ?3, x'00', 1, ?)`
	const insCheckpoint = `INSERT INTO checkpoints (checkpoint_key, run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at, run_order) VALUES (?, ?, ?, 1, 1, 'b', x'00', 'd', 1, 1, ?)`
	conns := heldConns(t, ctx, db, 4, nil)
	for _, ins := range []struct {
		table, q string
		num      int64
	}{{"trace", insTrace, seq}, {"checkpoints", insCheckpoint, n}} {
		for _, c := range []struct {
			name string
			args []any
		}{
			{"a second row of a number", []any{order<<32 + ins.num, run, ins.num, order}},
			{"a key not the row's", []any{order<<32 + ins.num + 7, run, ins.num + 1, order}},
			// SQLite gives a row without a key the largest plus one, the
			// last run's next key: another run's row is refused.
			{"a key left to SQLite", []any{nil, other, 1 << 20, otherOrder}},
			{"another run's order", []any{otherOrder<<32 + ins.num + 1, run, ins.num + 1, otherOrder}},
			{"a row of no run", []any{(order+1000)<<32 + 1, "no-such-run", 1, order + 1000}},
			{"a row numbered 0", []any{order << 32, run, 0, order}},
			{"a row numbered 2^32", []any{(order + 1) << 32, run, int64(1) << 32, order}},
			{"an order of 0", []any{ins.num + 1, run, ins.num + 1, 0}},
		} {
			refusedOnEach(t, ctx, conns, ins.table+": "+c.name, ins.q, c.args...)
		}
		// The insert the checks refuse is the store's own, bound right.
		if _, err := conns[0].ExecContext(ctx, ins.q, order<<32+ins.num+1, run, ins.num+1, order); err != nil {
			t.Fatalf("%s: a well-keyed row refused: %v", ins.table, err)
		}
	}
	if _, err := conns[0].ExecContext(ctx, `UPDATE trace SET seq = seq WHERE trace_key = ?`, order<<32+seq+1); err == nil {
		t.Fatal("a trace row updated after migration")
	}
	if _, err := conns[0].ExecContext(ctx, `DELETE FROM trace WHERE trace_key = ?`, order<<32+seq+1); err == nil {
		t.Fatal("a trace row deleted after migration")
	}
	if _, err := conns[0].ExecContext(ctx, `UPDATE checkpoints SET seq = seq WHERE checkpoint_key = ?`, order<<32+n+1); err == nil {
		t.Fatal("a checkpoint updated after migration")
	}
	for _, conn := range conns {
		conn.Close()
	}
}

// A version-10 database with a trace row or checkpoint of no run (written
// with foreign keys off), or numbered outside its key's range, is not
// migrated: Open fails with a typed error and the database is left as it
// was, at version 10 with its trace and checkpoints keyed by run id.
func TestMigrateFromVersion10RefusesARowItCannotKey(t *testing.T) {
	const run = `INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at, created_order) VALUES ('a', 'wf', '1', 'S', 'h', 1, 1, 1)`
	const cp = `INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at) VALUES `
	const tr = `INSERT INTO trace (run_id, seq, last_seq, records, recorded_at) VALUES `
	for _, c := range []struct {
		name string
		rows []string
	}{
		{"a trace row of no run", []string{tr + `('a', 1, 1, x'00', 1), ('gone', 1, 1, x'00', 1)`, cp + `('a', 1, 1, 1, 'b', x'00', 'd', 1, 1)`}},
		{"a checkpoint of no run", []string{tr + `('a', 1, 1, x'00', 1)`, cp + `('a', 1, 1, 1, 'b', x'00', 'd', 1, 1), ('gone', 1, 1, 1, 'b', x'00', 'd', 1, 1)`}},
		{"a trace row numbered 0", []string{tr + `('a', 0, 0, x'00', 1), ('a', 1, 1, x'00', 1)`, cp + `('a', 1, 1, 1, 'b', x'00', 'd', 1, 1)`}},
		{"a trace row numbered 2^32", []string{tr + `('a', 1, 1, x'00', 1), ('a', 4294967296, 4294967296, x'00', 1)`, cp + `('a', 1, 1, 1, 'b', x'00', 'd', 1, 1)`}},
		{"a checkpoint numbered 2^32", []string{tr + `('a', 1, 1, x'00', 1)`, cp + `('a', 1, 1, 1, 'b', x'00', 'd', 1, 1), ('a', 4294967296, 1, 1, 'b', x'00', 'd', 1, 1)`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v10.db")
			db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 10)
			exec := execOn(t, db)
			exec(`PRAGMA foreign_keys = OFF`)
			exec(run)
			for _, q := range c.rows {
				exec(q)
			}
			db.Close()
			_, err := sqlite.Open(context.Background(), path, sqlite.Options{})
			var se *store.Error
			if !errors.As(err, &se) {
				t.Fatalf("Open of a database with %s: %v", c.name, err)
			}
			db, err = sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var v, tables, nt, nc int64
			var ddlT, ddlC string
			db.QueryRow(`PRAGMA user_version`).Scan(&v)
			db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'trace'`).Scan(&ddlT)
			db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'checkpoints'`).Scan(&ddlC)
			db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('trace_v11', 'checkpoints_v11')`).Scan(&tables)
			db.QueryRow(`SELECT COUNT(*) FROM trace`).Scan(&nt)
			db.QueryRow(`SELECT COUNT(*) FROM checkpoints`).Scan(&nc)
			if v != 10 || strings.Contains(ddlT, "trace_key") || strings.Contains(ddlC, "checkpoint_key") || tables != 0 || nt+nc != 3 {
				t.Fatalf("after the refused migration: version %d, %d new tables left, %d trace rows, %d checkpoints, trace %s", v, tables, nt, nc, ddlT)
			}
		})
	}
}

// notFound reports whether err is the store's NOT_FOUND.
func notFound(err error) bool {
	var se *store.Error
	return errors.As(err, &se) && se.Code == store.CodeNotFound
}

// traceByRunID reads run's trace records from its rows found by run id in
// the order of their numbers, each row's records split as trace.go lays
// them out (a 4-byte big-endian length before the kind and the body).
func traceByRunID(t *testing.T, db *sql.DB, run string) []store.TraceRecord {
	t.Helper()
	rows, err := db.Query(`SELECT records FROM trace WHERE run_id = ? ORDER BY seq`, run)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.TraceRecord
	for rows.Next() {
		var frame []byte
		if err := rows.Scan(&frame); err != nil {
			t.Fatal(err)
		}
		next := func() []byte {
			n := binary.BigEndian.Uint32(frame)
			b := frame[4 : 4+n]
			frame = frame[4+n:]
			return b
		}
		for len(frame) > 0 {
			kind := string(next())
			out = append(out, store.TraceRecord{Kind: kind, Body: append([]byte(nil), next()...)})
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
