package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
	"flrh.dev/flrh/verify"
)

// recordRuns runs refunds on st through a real runner: with demo, the
// refunds demo's two runs (one approved by a person), then two runs of the
// refund-agent bundle, whose ticks write trace records.
func recordRuns(t *testing.T, _ context.Context, st store.Store, prefix string, demo bool) []string {
	t.Helper()
	return refundruns.Record(t, st, prefix, demo, 12, 30)
}

type runRecord = storetest.Record

// readRun reads a run's record; every run recorded events, and the
// agent's runs trace records.
func readRun(t *testing.T, ctx context.Context, st *sqlite.Store, id string) runRecord {
	t.Helper()
	r := storetest.ReadRecord(t, ctx, st, id)
	if len(r.Events) == 0 || (strings.Contains(id, "agent") && len(r.Trace) == 0) {
		t.Fatalf("run %s recorded %d events and %d trace records", id, len(r.Events), len(r.Trace))
	}
	return r
}

func verifyRuns(t *testing.T, ctx context.Context, st store.Store, ids []string) {
	t.Helper()
	for _, id := range ids {
		rep, err := verify.Run(ctx, st, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Events == 0 {
			t.Fatalf("verify %s: %+v", id, rep)
		}
	}
}

// writeVersion5 writes, at path, the database a version-5 build would
// hold for the runs of src: the released migrations 1 to 5, and every row
// of src in the layout they define (hashes as text, one row per trace
// record), in src's order.
func writeVersion5(t *testing.T, ctx context.Context, src *sqlite.Store, srcPath, path string) {
	t.Helper()
	db := dbAtVersion(t, path, "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)", 5)
	defer db.Close()
	exec := execOn(t, db)
	exec(`ATTACH DATABASE ? AS src`, srcPath)
	for _, tb := range []string{"runs", "approvals", "intents", "outbox", "attempts", "receipts", "inbox", "checkpoints"} {
		cs := tableColumns(t, db, tb)
		exec(`INSERT INTO main.` + tb + ` (` + cs + `) SELECT ` + cs + ` FROM src.` + tb)
	}
	hash := func(c string) string {
		return `CASE WHEN typeof(` + c + `) = 'blob' THEN 'sha256:' || lower(hex(` + c + `)) ELSE ` + c + ` END`
	}
	exec(`INSERT INTO main.events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at)
SELECT run_id, seq, kind, body, ` + hash("digest") + `, ` + hash("prev_hash") + `, ` + hash("chain_hash") + `, generation, recorded_at FROM src.events ORDER BY rowid`)
	// One row per trace record, numbered and timed as its tick's row.
	rows, err := db.Query(`SELECT run_id, seq, last_seq, recorded_at FROM src.trace ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	type traceRow struct {
		run             string
		first, last, at int64
	}
	var trs []traceRow
	for rows.Next() {
		var r traceRow
		if err := rows.Scan(&r.run, &r.first, &r.last, &r.at); err != nil {
			t.Fatal(err)
		}
		trs = append(trs, r)
	}
	rows.Close()
	records := map[string][]store.TraceRecord{}
	for _, r := range trs {
		if _, ok := records[r.run]; !ok {
			if records[r.run], err = src.Trace(ctx, r.run); err != nil {
				t.Fatal(err)
			}
		}
		for seq := r.first; seq <= r.last; seq++ {
			rec := records[r.run][seq-1]
			exec(`INSERT INTO main.trace (run_id, seq, kind, body, recorded_at) VALUES (?, ?, ?, ?, ?)`, r.run, seq, rec.Kind, rec.Body, r.at)
		}
	}
	exec(`DETACH DATABASE src`)
}

// recordedSource opens a store at path, records real runs in it
// (recordRuns: ended, approved by a person, bundle runs with intents,
// receipts and trace records) and reads each back, for a migration test to
// copy into an older layout and compare with after migrating.
func recordedSource(t *testing.T, ctx context.Context, path string) (*sqlite.Store, []string, map[string]runRecord) {
	t.Helper()
	src, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Written as every version before 12 wrote its checkpoints: their
	// bodies as they are (migration 6 reads them in SQL).
	sqlite.WriteUnpacked(src)
	ids := recordRuns(t, ctx, src, "", true)
	want := map[string]runRecord{}
	for _, id := range ids {
		want[id] = readRun(t, ctx, src, id)
	}
	return src, ids, want
}

// A database written at schema version 5 holding real runs (ended, one
// approved by a person, bundle runs with trace records) migrates to the current layout: every
// run reads back exactly as before, verifies, and goes on.
func TestMigrateFromVersion5RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v5Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v5.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	writeVersion5(t, ctx, src, srcPath, v5Path)
	src.Close()
	addDefinitionCases(t, v5Path)

	st, err := sqlite.Open(ctx, v5Path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int64
	if err := st.DB().QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != sqlite.SchemaVersion || v < 6 {
		t.Fatalf("user_version %d (%v) after migration, build writes %d", v, err, sqlite.SchemaVersion)
	}
	for _, id := range ids {
		if got := readRun(t, ctx, st, id); !reflect.DeepEqual(got, want[id]) {
			t.Fatalf("run %s after migration:\n got %+v\nwant %+v", id, got, want[id])
		}
		// The definition digest a run recorded when it was created is
		// the one the migration reads back from its latest checkpoint.
		if want[id].Run.WorkflowDigest == "" {
			t.Fatalf("run %s recorded no definition digest", id)
		}
	}
	for id, d := range map[string]string{"sealed": "", "garbled": "", "bare": "", "nested": "sha256:" + strings.Repeat("4", 64)} {
		r, err := st.Run(ctx, id)
		if err != nil || r.WorkflowDigest != d {
			t.Fatalf("run %s migrated with definition digest %q (%v), want %q", id, r.WorkflowDigest, err, d)
		}
	}
	// Every hash the version-5 rows held as text is now 32 bytes.
	var text int64
	st.DB().QueryRow(`SELECT COUNT(*) FROM events WHERE typeof(digest) <> 'blob' OR typeof(prev_hash) <> 'blob' OR typeof(chain_hash) <> 'blob'`).Scan(&text)
	if text != 0 {
		t.Fatalf("%d events keep a hash as text", text)
	}
	counters := func() {
		t.Helper()
		var off int64
		if err := st.DB().QueryRow(`SELECT COUNT(*) FROM runs
WHERE trace_seq <> COALESCE((SELECT MAX(last_seq) FROM trace WHERE trace.run_id = runs.run_id), 0)
OR checkpoint_n <> COALESCE((SELECT MAX(n) FROM checkpoints WHERE checkpoints.run_id = runs.run_id), 0)`).Scan(&off); err != nil || off != 0 {
			t.Fatalf("%d runs whose counters are not their last trace record and checkpoint (%v)", off, err)
		}
	}
	counters()
	verifyRuns(t, ctx, st, ids)
	// The migrated store takes new runs, and the old and new verify.
	more := recordRuns(t, ctx, st, "after-", false)
	verifyRuns(t, ctx, st, append(ids, more...))
	counters()
	var fk int64
	if err := st.DB().QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d rows, %v", fk, err)
	}
}

// addDefinitionCases adds to a version-5 database runs whose definition
// digest the migration cannot or must not take from a checkpoint: one
// whose latest checkpoint is sealed (its bytes hold a digest's text, after
// the sealed prefix), one whose checkpoint is not JSON, one with none;
// and one whose checkpoint has a nested member of that name before its
// own. They are parked, so that the runners of the test leave them.
func addDefinitionCases(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	q := `INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, quarantine, created_at, updated_at, created_order)
SELECT column1, 'wf', '1', 'S', 'h', 'by hand', 0, 0, (SELECT MAX(created_order) FROM runs) + column2
FROM (VALUES ('sealed', 1), ('garbled', 2), ('bare', 3), ('nested', 4))`
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		run  string
		n    int
		body []byte
	}{
		{"sealed", 1, []byte(`{"workflow_digest":"` + digest("1") + `"}`)},
		{"sealed", 2, []byte(store.SealedPrefix + `{"workflow_digest":"` + digest("2") + `"}`)},
		{"garbled", 1, []byte("\xff{")},
		{"nested", 1, []byte(`{"state":{"workflow_digest":"` + digest("3") + `"},"workflow_digest":"` + digest("4") + `","workflow_id":"wf"}`)},
	} {
		if _, err := db.Exec(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES (?, ?, 0, 1, 'b', ?, 'd', 1, 0)`, c.run, c.n, c.body); err != nil {
			t.Fatal(err)
		}
	}
}
