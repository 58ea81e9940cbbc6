package withrunner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"flrh.dev/flrh/store/postgres"
)

// version11Checks is what migration 12 replaced: the event hash pairs and
// the trace row's record count as table CHECKs, as migration 10 wrote them,
// the trace rows' foreign key to their run, and the events' statement
// trigger of migration 11, checking their run only, with the search_path
// pinned.
const version11Checks = `
DROP TRIGGER events_checked ON events;
DROP FUNCTION flrh_events_checked();
CREATE FUNCTION flrh_event_runs() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	missing text;
BEGIN
	SELECT n.run_id INTO missing FROM new_rows n
	WHERE NOT EXISTS (SELECT FROM runs r WHERE r.run_id = n.run_id) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'insert into table "events" violates its run key: run "%" does not exist', missing
			USING ERRCODE = 'foreign_key_violation', TABLE = 'events', COLUMN = 'run_id';
	END IF;
	RETURN NULL;
END
$$;
CREATE TRIGGER events_run_exists AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION flrh_event_runs();
ALTER TABLE events ADD CONSTRAINT event_hashes CHECK ((digest_sum IS NULL) <> (digest IS NULL)
	AND (prev_sum IS NULL) <> (prev_hash IS NULL) AND (chain_sum IS NULL) <> (chain_hash IS NULL));
DROP TRIGGER trace_checked ON trace;
DROP FUNCTION flrh_trace_checked();
ALTER TABLE trace ADD CONSTRAINT trace_ticks_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id),
	ADD CONSTRAINT trace_records CHECK (cardinality(kinds) = last_seq - seq + 1 AND cardinality(bodies) = last_seq - seq + 1);
DELETE FROM schema_migrations WHERE version > 11;`

// toVersion11 gives schema back the table checks and the events trigger of
// version 11 and forgets migration 12: what a version-11 build leaves
// (version 12's keys first).
func toVersion11(t *testing.T, schema string) {
	t.Helper()
	toVersion12(t, schema)
	execInSchema(t, schema, version11Checks)
}

// Real runs written by a version-11 build read back exactly as before after
// migration 12, verify, and go on; neither table check is left, the trace
// rows' key to their run is gone, and the two triggers are there.
func TestMigrateFromVersion11RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate11-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion11(t, schema)
	tableChecks := func(st *postgres.Store) []string {
		var out []string
		for _, c := range checks(t, st) {
			if strings.HasPrefix(c, "events.") || strings.HasPrefix(c, "trace.") {
				out = append(out, c)
			}
		}
		return out
	}
	if got, want := tableChecks(old), []string{"events.event_hashes", "trace.trace_records"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("version 11's table checks %v, want %v", got, want)
	}
	if got, want := runKeys(t, old), []string{"trigger events.events_run_exists", "trigger runs.runs_no_delete", "trigger runs.runs_no_rename", "trigger runs.runs_no_truncate"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("version 11's run keys %v, want %v", got, want)
	}
	old.Close()

	st := openNamed(t, schema, "flrh-migrate11", postgres.Options{})
	migratedTo(t, st, 12)
	if got := tableChecks(st); len(got) != 0 {
		t.Fatalf("table checks after migration %v, want none", got)
	}
	if got, want := runKeys(t, st), []string{"trigger events.events_checked", "trigger runs.runs_no_delete", "trigger runs.runs_no_rename", "trigger runs.runs_no_truncate"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("run keys after migration %v, want %v", got, want)
	}
	var traceKeys []string
	must(t, st.Pool().QueryRow(ctx, `SELECT COALESCE(array_agg(conname::text ORDER BY conname), '{}') FROM pg_constraint
WHERE conrelid = 'trace'::regclass AND contype = 'f'`).Scan(&traceKeys))
	if len(traceKeys) != 0 {
		t.Fatalf("trace's foreign keys after migration %v, want none", traceKeys)
	}
	var triggers []string
	must(t, st.Pool().QueryRow(ctx, `SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger
WHERE tgrelid = 'trace'::regclass AND NOT tgisinternal`).Scan(&triggers))
	// trace_deleted_if_pruned since migration 23; trace_resealed_only in
	// place of trace_append_only since migration 25.
	if want := []string{"trace_checked", "trace_deleted_if_pruned", "trace_no_truncate", "trace_resealed_only"}; !reflect.DeepEqual(triggers, want) {
		t.Fatalf("trace's triggers after migration %v, want %v", triggers, want)
	}
	// Neither trigger's function pins the search_path.
	var config []string
	must(t, st.Pool().QueryRow(ctx, `SELECT COALESCE(array_agg(c), '{}') FROM pg_proc, unnest(proconfig) AS c
WHERE oid IN ('flrh_events_checked'::regproc, 'flrh_trace_checked'::regproc)`).Scan(&config))
	if len(config) != 0 {
		t.Fatalf("the triggers' functions set %v", config)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}

// Migration 12's checks refuse exactly the rows version 11's refused, with
// the same SQLSTATE and, for a check, the same constraint's name: random
// inserts of events (several rows a statement, each hash pair mostly one
// of its two, now and then a row of another run) and of trace rows (now
// and then of a missing run or none) go to a version-11 schema and to this
// build's, each in a transaction rolled back.
func TestTableChecksMovedRefuseWhatTheyRefused(t *testing.T) {
	v11, v12 := checkSchemas(t, "flrh-checks-v11", "flrh-checks-v12", toVersion11, "")
	outcome := func(conn *pgx.Conn, sql string) string { return writeOutcome(t, conn, sql, true) }
	// A sum's length is its domain's check, which migration 12 leaves
	// (TestChecksKeptInDomainsRefuseWhatTheyRefused covers it); every
	// sum here is 32 bytes, so that which check refuses a row first does
	// not depend on the rows' order.
	sum := `'\x` + strings.Repeat("ab", 32) + `'`
	bigint := rapid.SampledFrom([]string{"-1", "0", "1", "2", "7", "9223372036854775807"})
	seen := map[string]int{}
	write := func(rt *rapid.T) string {
		if rapid.Bool().Draw(rt, "events") {
			pair := func(name string) string {
				switch rapid.IntRange(0, 9).Draw(rt, name) {
				case 0:
					return sum + ", 'x'"
				case 1:
					return "NULL, NULL"
				case 2, 3, 4:
					return "NULL, 'x'"
				}
				return sum + ", NULL"
			}
			rows := make([]string, rapid.IntRange(1, 4).Draw(rt, "rows"))
			for i := range rows {
				run := "'r'"
				if rapid.IntRange(0, 9).Draw(rt, "other run") == 0 {
					run = "'nope'"
				}
				rows[i] = fmt.Sprintf(`(%s, %d, 'k', '\x00', %s, %s, %s, 1, 0)`, run, i+1, pair("digest"), pair("prev"), pair("chain"))
			}
			return `INSERT INTO events (run_id, seq, kind, body, digest_sum, digest, prev_sum, prev_hash, chain_sum, chain_hash, generation, recorded_at)
VALUES ` + strings.Join(rows, ", ")
		}
		seq, n := rapid.SampledFrom([]int{1, 2, 5, 0}).Draw(rt, "seq"), rapid.IntRange(0, 3).Draw(rt, "n")
		last, off := fmt.Sprint(seq+n-1), rapid.SampledFrom([]int{0, 0, 1, 2, 3}).Draw(rt, "arrays off")
		switch rapid.IntRange(0, 5).Draw(rt, "last_seq") {
		case 0:
			last = bigint.Draw(rt, "any last_seq")
		case 1:
			last = fmt.Sprint(seq - 1)
		}
		run := "'r'"
		switch rapid.IntRange(0, 9).Draw(rt, "trace run") {
		case 0:
			run = "'nope'"
		case 1:
			run = "NULL"
		}
		return fmt.Sprintf(`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES (%s, %d, %s, %s, %s, 0)`,
			run, seq, last, array(rt, "kinds", "'k'", "text", n, off == 1 || off == 3), array(rt, "bodies", `'\x00'`, "bytea", n, off == 2 || off == 3))
	}
	rapid.Check(t, func(rt *rapid.T) {
		for range 10 {
			sql := write(rt)
			was, is := outcome(v11, sql), outcome(v12, sql)
			if was != is {
				rt.Fatalf("%s\nversion 11: %q, this build: %q", sql, was, is)
			}
			seen[was]++
		}
	})
	for _, o := range []string{"", "23514 events.event_hashes", "23514 trace.trace_records", "23503", "23502"} {
		if seen[o] == 0 {
			t.Fatalf("no write came out as %q (%v): the test would prove too little", o, seen)
		}
	}
}
