package withrunner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/storetest"
	"flrh.dev/flrh/verify"
)

// recordRuns runs refunds on st: with demo, two runs of the refund demo
// that end, one approved by a person; then two of the refund-agent
// bundle, whose ticks write several trace records each.
func recordRuns(t *testing.T, st store.Store, prefix string, withDemo bool) []string {
	return refundruns.Record(t, st, prefix, withDemo, 12, 30)
}

type runRecord = storetest.Record

// readRun reads a run's record; every run recorded events.
func readRun(t *testing.T, st *postgres.Store, id string) runRecord {
	t.Helper()
	r := storetest.ReadRecord(t, ctx, st, id)
	if len(r.Events) == 0 {
		t.Fatalf("run %s recorded no events", id)
	}
	return r
}

// readRuns reads every record of each run, by run id.
func readRuns(t *testing.T, st *postgres.Store, ids []string) map[string]runRecord {
	t.Helper()
	want := make(map[string]runRecord, len(ids))
	for _, id := range ids {
		want[id] = readRun(t, st, id)
	}
	return want
}

// sameRuns fails unless each run reads back exactly as want holds it.
func sameRuns(t *testing.T, st *postgres.Store, ids []string, want map[string]runRecord) {
	t.Helper()
	for _, id := range ids {
		if got := readRun(t, st, id); !reflect.DeepEqual(got, want[id]) {
			t.Fatalf("run %s after migration:\n got %+v\nwant %+v", id, got, want[id])
		}
	}
}

// migratedTo fails unless the store's schema is at this build's version,
// and that version is at least min.
func migratedTo(t *testing.T, st *postgres.Store, min int64) {
	t.Helper()
	var v int64
	must(t, st.Pool().QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v))
	if v != postgres.SchemaVersion || v < min {
		t.Fatalf("schema version %d after migration, build writes %d", v, postgres.SchemaVersion)
	}
}

func verifyRuns(t *testing.T, st store.Store, ids []string) {
	t.Helper()
	for _, id := range ids {
		rep, err := verify.Run(ctx, st, nil, id)
		must(t, err)
		if !rep.OK() || rep.Events == 0 {
			t.Fatalf("verify %s: %+v", id, rep)
		}
	}
}

// toVersion4 turns schema's trace and events tables back into the
// released version-4 layout (as migration 1 created them: one row per
// trace record, timed as its tick; hashes as text) and forgets the
// migrations after 4: what a version-4 build would have left for the same
// runs.
func toVersion4(t *testing.T, schema string) {
	t.Helper()
	toVersion9(t, schema)
	conn, err := pgx.Connect(ctx, dsn(t))
	must(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SET LOCAL search_path TO `+pgx.Identifier{schema}.Sanitize())
	must(t, err)
	_, err = tx.Exec(ctx, `
CREATE TABLE trace_v4 (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL,
	kind        text NOT NULL,
	body        bytea NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq)
);
INSERT INTO trace_v4 (run_id, seq, kind, body, recorded_at)
SELECT t.run_id, t.seq + r.i - 1, r.kind, r.body, t.recorded_at
FROM trace t CROSS JOIN LATERAL unnest(t.kinds, t.bodies) WITH ORDINALITY AS r(kind, body, i) ORDER BY 1, 2;
DROP TABLE trace;
ALTER TABLE trace_v4 RENAME TO trace;
ALTER INDEX trace_v4_pkey RENAME TO trace_pkey;
CREATE TRIGGER trace_append_only BEFORE UPDATE OR DELETE ON trace FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER trace_no_truncate BEFORE TRUNCATE ON trace FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
CREATE TABLE events_v4 (
	run_id      text NOT NULL REFERENCES runs(run_id),
	seq         bigint NOT NULL CHECK (seq >= 1),
	kind        text NOT NULL,
	body        bytea NOT NULL,
	digest      text NOT NULL,
	prev_hash   text NOT NULL,
	chain_hash  text NOT NULL,
	generation  bigint NOT NULL,
	recorded_at bigint NOT NULL,
	PRIMARY KEY (run_id, seq)
);
INSERT INTO events_v4 (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at)
SELECT run_id, seq, kind, body, COALESCE(digest, 'sha256:' || encode(digest_sum, 'hex')),
	COALESCE(prev_hash, 'sha256:' || encode(prev_sum, 'hex')), COALESCE(chain_hash, 'sha256:' || encode(chain_sum, 'hex')),
	generation, recorded_at FROM events ORDER BY run_id, seq;
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;
ALTER INDEX events_v4_pkey RENAME TO events_pkey;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION flrh_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION flrh_append_only();
ALTER TABLE runs DROP COLUMN workflow_digest;
DELETE FROM schema_migrations WHERE version > 4;
-- A run whose event hashes were written by hand, not canonical: they
-- must read back as the text they are.
INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_seq, head_hash, quarantine, created_at, updated_at)
VALUES ('odd', 'wf', '1', 'S', 2, 'SHA256:X', 'written by hand', 0, 0);
INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at) VALUES
	('odd', 1, 'k', '\x7b7d', 'sha256:ABCDEF', '', 'sha256:00000000000000000000000000000000000000000000000000000000000000000', 1, 0),
	('odd', 2, 'k', '\x7b7d', 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'x', 'SHA256:X', 1, 0);
-- Runs whose latest checkpoint is sealed (it starts with a NUL byte;
-- its bytes happen to hold a definition digest's text, which must not
-- be taken), names its definition after a nested member of that name,
-- or is not JSON at all; and a run with no checkpoint.
INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, quarantine, created_at, updated_at) VALUES
	('sealed', 'wf', '1', 'S', 'h', 'by hand', 0, 0), ('nested', 'wf', '1', 'S', 'h', 'by hand', 0, 0),
	('garbled', 'wf', '1', 'S', 'h', 'by hand', 0, 0), ('bare', 'wf', '1', 'S', 'h', 'by hand', 0, 0);
INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at) VALUES
	('sealed', 1, 0, 1, 'b', convert_to('{"workflow_digest":"sha256:`+strings.Repeat("1", 64)+`"}', 'UTF8'), 'd', 1, 0),
	('sealed', 2, 0, 1, 'b', '\x00'::bytea || convert_to('"workflow_digest":"sha256:`+strings.Repeat("2", 64)+`"', 'UTF8'), 'd', 1, 0),
	('nested', 1, 0, 1, 'b', convert_to('{"state":{"workflow_digest":"sha256:`+strings.Repeat("3", 64)+`"},"workflow_digest":"sha256:`+strings.Repeat("4", 64)+`","workflow_id":"wf"}', 'UTF8'), 'd', 1, 0),
	('garbled', 1, 0, 1, 'b', '\xff7b'::bytea, 'd', 1, 0);`)
	must(t, err)
	must(t, tx.Commit(ctx))
}

// traceRows counts schema's trace rows and the records they hold.
func traceRows(t *testing.T, st *postgres.Store) (rows, records int64) {
	t.Helper()
	must(t, st.Pool().QueryRow(ctx, `SELECT count(*), COALESCE(sum(last_seq - seq + 1), 0) FROM trace`).Scan(&rows, &records))
	return rows, records
}

// Real runs (ended, one approved by a person, bundle runs with several
// trace records per tick) left in the version-4 layout migrate to a
// trace row per tick: every run reads back exactly as before, verifies,
// and goes on, its new ticks' records one row each.
func TestMigrateFromVersion4RealRuns(t *testing.T) {
	schema := freshSchema(t)
	src := openNamed(t, schema, "flrh-migrate-src", postgres.Options{})
	ids := recordRuns(t, src, "", true)
	want := map[string]runRecord{}
	var traced int
	for _, id := range ids {
		want[id] = readRun(t, src, id)
		traced += len(want[id].Trace)
	}
	if traced == 0 {
		t.Fatal("the runs recorded no trace")
	}
	src.Close()
	toVersion4(t, schema)

	odd := []store.Event{
		{Seq: 1, Kind: "k", Body: []byte(`{}`), Digest: "sha256:ABCDEF", PrevHash: "", ChainHash: "sha256:" + strings.Repeat("0", 65), Generation: 1},
		{Seq: 2, Kind: "k", Body: []byte(`{}`), Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", PrevHash: "x", ChainHash: "SHA256:X", Generation: 1},
	}

	st := openNamed(t, schema, "flrh-migrate", postgres.Options{})
	if got, err := st.Events(ctx, "odd", 0); err != nil || !reflect.DeepEqual(got, odd) {
		t.Fatalf("hand-written hashes after migration: %v\n got %+v\nwant %+v", err, got, odd)
	}
	var v int64
	must(t, st.Pool().QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v))
	if v != postgres.SchemaVersion || v < 5 {
		t.Fatalf("schema version %d after migration, build writes %d", v, postgres.SchemaVersion)
	}
	for _, id := range ids {
		if got := readRun(t, st, id); !reflect.DeepEqual(got, want[id]) {
			t.Fatalf("run %s after migration:\n got %+v\nwant %+v", id, got, want[id])
		}
		// The definition digest a run recorded when it was created is
		// the one the migration reads back from its latest checkpoint.
		if want[id].Run.WorkflowDigest == "" {
			t.Fatalf("run %s recorded no definition digest", id)
		}
	}
	for id, d := range map[string]string{"odd": "", "sealed": "", "garbled": "", "bare": "",
		"nested": "sha256:" + strings.Repeat("4", 64)} {
		r, err := st.Run(ctx, id)
		must(t, err)
		if r.WorkflowDigest != d {
			t.Fatalf("run %s migrated with definition digest %q, want %q", id, r.WorkflowDigest, d)
		}
	}
	// Every canonical hash the version-4 rows held as text is now its sum.
	var text int64
	must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE run_id <> 'odd'
	AND (digests IS NOT NULL OR prev_sum IS NULL OR chain_hashes IS NOT NULL)`).Scan(&text))
	if text != 0 {
		t.Fatalf("%d events keep a canonical hash as text", text)
	}
	if rows, records := traceRows(t, st); rows != records || records != int64(traced) {
		t.Fatalf("after migration %d trace rows hold %d records, want one row for each of %d", rows, records, traced)
	}
	verifyRuns(t, st, ids)

	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
	var after int
	for _, id := range more {
		after += len(readRun(t, st, id).Trace)
	}
	rows, records := traceRows(t, st)
	if records != int64(traced+after) || rows-int64(traced) >= int64(after) {
		t.Fatalf("%d new trace records took %d rows (%d rows, %d records in all)", after, rows-int64(traced), rows, records)
	}
	// A row is still append-only.
	if _, err := st.Pool().Exec(ctx, `DELETE FROM trace`); err == nil {
		t.Fatal("deleting trace rows succeeded")
	}
}
