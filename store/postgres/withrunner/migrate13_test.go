package withrunner

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"flrh.dev/flrh/store/postgres"
)

// version12Keys is what migration 13 replaced: the outbox's and the
// receipts' foreign keys to their intent and to their run, under the names
// the initial schema gave them, and no unique pair on intents.
const version12Keys = `
ALTER TABLE outbox DROP CONSTRAINT outbox_intent_run_fkey,
	ADD CONSTRAINT outbox_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents(intent_id),
	ADD CONSTRAINT outbox_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE receipts DROP CONSTRAINT receipts_intent_run_fkey,
	ADD CONSTRAINT receipts_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents(intent_id),
	ADD CONSTRAINT receipts_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE intents DROP CONSTRAINT intents_intent_run;
DELETE FROM schema_migrations WHERE version > 12;`

// toVersion12 gives schema's outbox and receipts back their two keys each
// and forgets migration 13: what a version-12 build leaves (version 13's
// storage first).
func toVersion12(t *testing.T, schema string) {
	t.Helper()
	toVersion13(t, schema)
	execInSchema(t, schema, version12Keys)
}

// intentKeys lists the foreign keys of the outbox and the receipts, and the
// unique constraints of intents, each with its columns, in st's schema.
func intentKeys(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT conrelid::regclass::text || '.' || conname || ' ' || contype::text || ' ' ||
	pg_get_constraintdef(oid) FROM pg_constraint
WHERE (conrelid IN ('outbox'::regclass, 'receipts'::regclass) AND contype = 'f')
	OR (conrelid = 'intents'::regclass AND contype IN ('u', 'p'))
ORDER BY 1`)
	must(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return names
}

// Real runs written by a version-12 build read back exactly as before after
// migration 13, verify, and go on; the outbox and the receipts each keep one
// key, to their intent's (intent_id, run_id).
func TestMigrateFromVersion12RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate12-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion12(t, schema)
	wantOld := []string{
		"intents.intents_commit_order_key u UNIQUE (commit_order)",
		"intents.intents_idempotency_key u UNIQUE (idempotency_key)",
		"intents.intents_pkey p PRIMARY KEY (intent_id)",
		"outbox.outbox_intent_id_fkey f FOREIGN KEY (intent_id) REFERENCES intents(intent_id)",
		"outbox.outbox_run_id_fkey f FOREIGN KEY (run_id) REFERENCES runs(run_id)",
		"receipts.receipts_intent_id_fkey f FOREIGN KEY (intent_id) REFERENCES intents(intent_id)",
		"receipts.receipts_run_id_fkey f FOREIGN KEY (run_id) REFERENCES runs(run_id)",
	}
	if got := intentKeys(t, old); !reflect.DeepEqual(got, wantOld) {
		t.Fatalf("version 12's keys\n%q\nwant\n%q", got, wantOld)
	}
	var receipts int
	must(t, old.Pool().QueryRow(ctx, `SELECT count(*) FROM receipts`).Scan(&receipts))
	if receipts == 0 {
		t.Fatal("the runs wrote no receipt: the migration would check nothing")
	}
	old.Close()

	st := openNamed(t, schema, "flrh-migrate12", postgres.Options{})
	migratedTo(t, st, 13)
	// (Migration 17 drops intents_commit_order_key; migration 19 turns
	// the outbox's and the receipts' keys into triggers and drops
	// intents_intent_run.)
	wantNew := []string{
		"intents.intents_idempotency_key u UNIQUE (idempotency_key)",
		"intents.intents_pkey p PRIMARY KEY (intent_id)",
	}
	if got := intentKeys(t, st); !reflect.DeepEqual(got, wantNew) {
		t.Fatalf("keys after migration\n%q\nwant\n%q", got, wantNew)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}

// Migration 13's keys refuse what version 12's refused, with the same
// SQLSTATE, and one thing more: an outbox row or a receipt of a run other
// than its intent's, which the store never writes. Random inserts of
// outbox rows and receipts (their intent one of two runs' or missing, their
// run either run's, a missing one or NULL) go to a version-12 schema and
// to this build's, each in a transaction rolled back.
func TestIntentRunKeysRefuseWhatTheKeysRefused(t *testing.T) {
	setup := `
INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at) VALUES ('q', 'wf', '1', 'S', 'h', 0, 0);
INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
VALUES ('ir', 'r', 1, 'e', 'kr', 'c', '\x00', 'd', 1, 0), ('iq', 'q', 1, 'e', 'kq', 'c', '\x00', 'd', 1, 0);`
	v12, v13 := checkSchemas(t, "flrh-keys-v12", "flrh-keys-v13", toVersion12, setup)
	outcome := func(conn *pgx.Conn, sql string) string { return writeOutcome(t, conn, sql, false) }
	runOf := map[string]string{"ir": "'r'", "iq": "'q'"}
	seen := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		intent := rapid.SampledFrom([]string{"ir", "iq", "nope"}).Draw(rt, "intent")
		run := rapid.SampledFrom([]string{"'r'", "'q'", "'gone'", "NULL"}).Draw(rt, "run")
		var sql string
		if rapid.Bool().Draw(rt, "outbox") {
			sql = fmt.Sprintf(`INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ('%s', %s, 'pending', 0)`, intent, run)
		} else {
			sql = fmt.Sprintf(`INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at) VALUES ('%s', %s, 'o', '\x00', 'd', 1, 0)`, intent, run)
		}
		was, is := outcome(v12, sql), outcome(v13, sql)
		mismatched := was == "" && runOf[intent] != run
		switch {
		case mismatched && is != "23503":
			rt.Fatalf("%s\nversion 12 stored it, this build: %q, want 23503", sql, is)
		case !mismatched && was != is:
			rt.Fatalf("%s\nversion 12: %q, this build: %q", sql, was, is)
		}
		if mismatched {
			seen["other run"]++
		} else {
			seen[was]++
		}
	})
	for _, o := range []string{"", "23503", "23502", "other run"} {
		if seen[o] == 0 {
			t.Fatalf("no write came out as %q (%v): the test would prove too little", o, seen)
		}
	}
}
