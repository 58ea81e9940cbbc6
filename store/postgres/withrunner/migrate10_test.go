package withrunner

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"pgregory.net/rapid"

	"flrh.dev/flrh/store/postgres"
)

// version9Checks is what migration 10 replaced: the tables' CHECK
// constraints of version 9, by name, as its migrations wrote them.
const version9Checks = `
ALTER TABLE runs ALTER COLUMN head_seq TYPE bigint, ADD CONSTRAINT runs_head_seq_check CHECK (head_seq >= 0);
ALTER TABLE events DROP CONSTRAINT event_hashes,
	ALTER COLUMN seq TYPE bigint, ALTER COLUMN digest_sum TYPE bytea, ALTER COLUMN prev_sum TYPE bytea, ALTER COLUMN chain_sum TYPE bytea,
	ADD CONSTRAINT events_sums_seq_check CHECK (seq >= 1),
	ADD CONSTRAINT event_hashes CHECK ((digest_sum IS NULL) <> (digest IS NULL)
		AND (prev_sum IS NULL) <> (prev_hash IS NULL)
		AND (chain_sum IS NULL) <> (chain_hash IS NULL)
		AND octet_length(digest_sum) = 32 AND octet_length(prev_sum) = 32 AND octet_length(chain_sum) = 32);
ALTER TABLE checkpoints ALTER COLUMN n TYPE bigint, ADD CONSTRAINT checkpoints_n_check CHECK (n >= 1);
ALTER TABLE outbox ALTER COLUMN status TYPE text,
	ADD CONSTRAINT outbox_status_check CHECK (status IN ('pending', 'in_flight', 'retry', 'reconcile', 'human', 'done'));
ALTER TABLE attempts ALTER COLUMN n TYPE bigint, ALTER COLUMN status TYPE text,
	ADD CONSTRAINT attempts_n_check CHECK (n >= 1),
	ADD CONSTRAINT attempts_status_check CHECK (status IN ('started', 'succeeded', 'failed_transient', 'failed_permanent', 'unknown', 'reconciled_applied', 'reconciled_not_applied'));
ALTER TABLE trace DROP CONSTRAINT trace_records,
	ALTER COLUMN seq TYPE bigint, ALTER COLUMN kinds TYPE text[], ALTER COLUMN bodies TYPE bytea[],
	ADD CONSTRAINT trace_ticks_seq_check CHECK (seq >= 1),
	ADD CONSTRAINT trace_records CHECK (last_seq >= seq
		AND array_ndims(kinds) = 1 AND array_ndims(bodies) = 1
		AND cardinality(kinds) = last_seq - seq + 1 AND cardinality(bodies) = last_seq - seq + 1
		AND array_position(kinds, NULL) IS NULL AND array_position(bodies, NULL) IS NULL);
ALTER TABLE trace ALTER COLUMN kinds SET STORAGE MAIN, ALTER COLUMN bodies SET STORAGE MAIN;
DO $$
BEGIN
	EXECUTE 'ALTER TABLE trace ALTER COLUMN bodies SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
	NULL;
END
$$;
DROP DOMAIN flrh_position, flrh_head, flrh_sum, flrh_outbox_status, flrh_attempt_status, flrh_trace_kinds, flrh_trace_bodies;
DELETE FROM schema_migrations WHERE version > 9;`

// toVersion9 gives schema's tables back the checks of version 9 and
// forgets the migrations after 9 (version 10's run key first): what a
// version-9 build leaves.
func toVersion9(t *testing.T, schema string) {
	t.Helper()
	toVersion10(t, schema)
	execInSchema(t, schema, version9Checks)
}

// checks lists schema's CHECK constraints, table ones as table.name and
// domain ones as domain.name.
func checks(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT COALESCE(NULLIF(conrelid, 0)::regclass::text, contypid::regtype::text) || '.' || conname
FROM pg_constraint WHERE connamespace = current_schema()::regnamespace AND contype = 'c' ORDER BY 1`)
	must(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return names
}

// Real runs written by a version-9 build read back exactly as before after
// migration 10, verify, and go on; afterwards the only table CHECKs left
// are the ones that relate columns, and every other check is a domain's.
func TestMigrateFromVersion9RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate9-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion9(t, schema)
	wantOld := []string{"approvals.approvals_status_check", "attempts.attempts_n_check", "attempts.attempts_status_check",
		"checkpoints.checkpoints_n_check", "events.event_hashes", "events.events_sums_seq_check", "outbox.outbox_status_check",
		"runs.runs_head_seq_check", "trace.trace_records", "trace.trace_ticks_seq_check"}
	if got := checks(t, old); !reflect.DeepEqual(got, wantOld) {
		t.Fatalf("version 9's checks %v, want %v", got, wantOld)
	}
	old.Close()

	st := openNamed(t, schema, "flrh-migrate9", postgres.Options{})
	migratedTo(t, st, 10)
	// The event hash pairs and the trace row's record count are checked
	// by the tables' triggers since migration 12.
	wantNew := []string{"approvals.approvals_status_check",
		"flrh_attempt_status.flrh_attempt_status_check", "flrh_head.flrh_head_check", "flrh_outbox_status.flrh_outbox_status_check",
		"flrh_position.flrh_position_check", "flrh_sum.flrh_sum_check", "flrh_trace_bodies.flrh_trace_bodies_check",
		"flrh_trace_kinds.flrh_trace_kinds_check"}
	if got := checks(t, st); !reflect.DeepEqual(got, wantNew) {
		t.Fatalf("checks after migration %v, want %v", got, wantNew)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
	// The trace rows keep their storage and compression.
	var storage string
	must(t, st.Pool().QueryRow(ctx, `SELECT string_agg(attname || ':' || attstorage::text || attcompression::text, ' ' ORDER BY attname) FROM pg_attribute
WHERE attrelid = 'trace'::regclass AND attname IN ('kinds', 'bodies')`).Scan(&storage))
	if storage != "bodies:ml kinds:m" {
		t.Fatalf("trace columns after migration: %s, want bodies:ml kinds:m", storage)
	}
}

// The domains and the table checks left after migration 10 refuse exactly
// the rows version 9's checks refused: random writes to every table whose
// checks moved go to a version-9 schema and to this build's, each in a
// transaction rolled back, and both accept it or both refuse it as a check
// violation.
func TestChecksKeptInDomainsRefuseWhatTheyRefused(t *testing.T) {
	v9, v10 := checkSchemas(t, "flrh-checks-v9", "flrh-checks-v10", toVersion9, `
INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
	VALUES ('i', 'r', 1, 'e', 'k', 'c', '\x00', 'd', 1, 0);
INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ('i', 'r', 'pending', 0);
INSERT INTO attempts (intent_id, n, status, generation, started_at) VALUES ('i', 1, 'started', 1, 0);`)
	outcome := func(conn *pgx.Conn, sql string) string { return writeOutcome(t, conn, sql, false) }

	bigint := rapid.SampledFrom([]string{"-1", "0", "1", "2", "7", "9223372036854775807"})
	sums := []string{`'\x` + strings.Repeat("ab", 32) + `'`, "''::bytea", `'\x` + strings.Repeat("ab", 31) + `'`, `'\x` + strings.Repeat("ab", 33) + `'`}
	outboxStatus := rapid.SampledFrom([]string{"'pending'", "'in_flight'", "'retry'", "'reconcile'", "'human'", "'done'", "''", "'DONE'", "'started'", "'x'"})
	attemptStatus := rapid.SampledFrom([]string{"'started'", "'succeeded'", "'failed_transient'", "'failed_permanent'", "'unknown'",
		"'reconciled_applied'", "'reconciled_not_applied'", "''", "'done'", "'Started'"})

	refused := map[bool]int{}
	write := func(rt *rapid.T) string {
		var sql string
		switch rapid.IntRange(0, 8).Draw(rt, "table") {
		case 0:
			// Each hash mostly as exactly one of its pair, the sum mostly
			// 32 bytes.
			pair := func(name string) string {
				sum := sums[0]
				if rapid.IntRange(0, 3).Draw(rt, name+" sum length") == 0 {
					sum = rapid.SampledFrom(sums[1:]).Draw(rt, name+" other sum")
				}
				switch rapid.IntRange(0, 5).Draw(rt, name) {
				case 0, 1:
					return sum + ", NULL"
				case 2, 3:
					return "NULL, 'x'"
				case 4:
					return sum + ", 'x'"
				}
				return "NULL, NULL"
			}
			sql = fmt.Sprintf(`INSERT INTO events (run_id, seq, kind, body, digest_sum, digest, prev_sum, prev_hash, chain_sum, chain_hash, generation, recorded_at)
VALUES ('r', %s, 'k', '\x00', %s, %s, %s, 1, 0)`, bigint.Draw(rt, "seq"), pair("digest"), pair("prev"), pair("chain"))
		case 1:
			// Mostly a range the arrays could fill, now and then any.
			seq, n := rapid.SampledFrom([]int{1, 2, 5, 0, -1}).Draw(rt, "seq"), rapid.IntRange(0, 3).Draw(rt, "n")
			last, off := fmt.Sprint(seq+n-1), rapid.SampledFrom([]int{1, 2, 3, 0}).Draw(rt, "arrays off")
			switch rapid.IntRange(0, 5).Draw(rt, "last_seq") {
			case 0:
				last = bigint.Draw(rt, "any last_seq")
			case 1:
				last = fmt.Sprint(seq - 1)
			}
			sql = fmt.Sprintf(`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ('r', %d, %s, %s, %s, 0)`,
				seq, last, array(rt, "kinds", "'k'", "text", n, off == 1 || off == 3), array(rt, "bodies", `'\x00'`, "bytea", n, off == 2 || off == 3))
		case 2:
			sql = fmt.Sprintf(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES ('r', %s, 0, 1, 'b', '\x00', 'd', 1, 0)`, bigint.Draw(rt, "n"))
		case 3:
			sql = fmt.Sprintf(`UPDATE runs SET head_seq = %s`, bigint.Draw(rt, "head_seq"))
		case 4:
			sql = fmt.Sprintf(`UPDATE outbox SET status = %s`, outboxStatus.Draw(rt, "status"))
		case 5:
			sql = fmt.Sprintf(`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
	VALUES ('j', 'r', 1, 'e', 'l', 'c', '\x00', 'd', 1, 0);
INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ('j', 'r', %s, 0)`, outboxStatus.Draw(rt, "status"))
		case 6:
			sql = fmt.Sprintf(`INSERT INTO attempts (intent_id, n, status, generation, started_at) VALUES ('i', %s, %s, 1, 0)`,
				bigint.Draw(rt, "n"), attemptStatus.Draw(rt, "status"))
		case 7:
			sql = fmt.Sprintf(`UPDATE attempts SET status = %s`, attemptStatus.Draw(rt, "status"))
		case 8:
			sql = fmt.Sprintf(`UPDATE attempts SET n = %s`, bigint.Draw(rt, "n"))
		}
		return sql
	}
	rapid.Check(t, func(rt *rapid.T) {
		// Several writes each, each on its own: a bad row is rare among
		// the random ones, and the checks are cheap.
		for range 10 {
			sql := write(rt)
			// Stored by both or refused by both; which check of several a
			// refused row fails first (or whether a bigint overflows in one
			// on the way) may differ.
			was, is := outcome(v9, sql), outcome(v10, sql)
			if (was == "") != (is == "") {
				rt.Fatalf("%s\nversion 9: %q, this build: %q", sql, was, is)
			}
			for _, code := range []string{was, is} {
				if code != "" && code != "23514" && code != "23505" && code != "22003" {
					rt.Fatalf("%s refused with %s, not a check violation", sql, code)
				}
			}
			refused[was != ""]++
		}
	})
	if refused[true] == 0 || refused[false] == 0 {
		t.Fatalf("%d writes stored, %d refused: the test would prove nothing", refused[false], refused[true])
	}
}

// array draws the SQL text of an array of n elem values of type typ (now
// and then a NULL among them), or, when off, one that a length check must
// refuse: one element more or fewer, or two-dimensional.
func array(rt *rapid.T, name, elem, typ string, n int, off bool) string {
	if off {
		if rapid.IntRange(0, 3).Draw(rt, name+" shape") == 0 {
			return "ARRAY[[" + elem + "], [" + elem + "]]::" + typ + "[]"
		}
		n += rapid.SampledFrom([]int{-1, 1}).Draw(rt, name+" delta")
	}
	es := make([]string, max(n, 0))
	for i := range es {
		es[i] = elem
		if rapid.IntRange(0, 9).Draw(rt, name+" null") == 0 {
			es[i] = "NULL"
		}
	}
	return "ARRAY[" + strings.Join(es, ", ") + "]::" + typ + "[]"
}

// checkSchemas opens two fresh schemas of this build's version, takes the
// first back to an older one with toOld, and returns a connection to each
// (the older first) with its search path set, a run 'r' inserted and then
// setup run.
func checkSchemas(t *testing.T, oldApp, newApp string, toOld func(*testing.T, string), setup string) (older, newer *pgx.Conn) {
	open := func(app string, old bool) *pgx.Conn {
		schema := freshSchema(t)
		st := openNamed(t, schema, app, postgres.Options{})
		st.Close()
		if old {
			toOld(t, schema)
		} else {
			// Version 19's events table, as the checks compared were
			// made on it (migration 20 changed its layout).
			execInSchema(t, schema, version19Events)
		}
		conn, err := pgx.Connect(ctx, dsn(t))
		must(t, err)
		t.Cleanup(func() { conn.Close(ctx) })
		_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()+`;
INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at) VALUES ('r', 'wf', '1', 'S', 'h', 0, 0);`+setup)
		must(t, err)
		return conn
	}
	return open(oldApp, true), open(newApp, false)
}

// writeOutcome runs sql on conn in a transaction it rolls back, and
// returns "" for a write stored, else its SQLSTATE and, when named and the
// write broke a check, the check's table and constraint name.
func writeOutcome(t *testing.T, conn *pgx.Conn, sql string, named bool) string {
	tx, err := conn.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, sql)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if named && pe.Code == "23514" {
			return pe.Code + " " + pe.TableName + "." + pe.ConstraintName
		}
		return pe.Code
	}
	must(t, err)
	return ""
}
