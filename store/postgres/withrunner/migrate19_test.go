package withrunner

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store/postgres"
)

// version18Keys is what migration 19 replaced: the foreign keys of
// checkpoints, intents, inbox, outbox, receipts and attempts under the
// names the initial schema and migration 13 gave them, intents' unique
// pair, and none of the key triggers.
const version18Keys = `
DROP TRIGGER checkpoints_key_checked ON checkpoints;
DROP TRIGGER intents_key_checked ON intents;
DROP TRIGGER inbox_key_checked ON inbox;
DROP TRIGGER outbox_key_checked ON outbox;
DROP TRIGGER receipts_key_checked ON receipts;
DROP TRIGGER attempts_key_checked ON attempts;
DROP FUNCTION flrh_keys_checked();
ALTER TABLE intents ADD CONSTRAINT intents_intent_run UNIQUE (intent_id, run_id),
	ADD CONSTRAINT intents_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE inbox ADD CONSTRAINT inbox_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE outbox ADD CONSTRAINT outbox_intent_run_fkey FOREIGN KEY (intent_id, run_id) REFERENCES intents (intent_id, run_id);
ALTER TABLE receipts ADD CONSTRAINT receipts_intent_run_fkey FOREIGN KEY (intent_id, run_id) REFERENCES intents (intent_id, run_id);
ALTER TABLE attempts ADD CONSTRAINT attempts_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents(intent_id);
DELETE FROM schema_migrations WHERE version > 18;`

// stepKeys lists the foreign keys, the unique constraints and the user
// triggers on insert of the tables migration 19 changed, in st's schema.
func stepKeys(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT conrelid::regclass::text || '.' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid IN ('checkpoints'::regclass, 'intents'::regclass, 'inbox'::regclass, 'outbox'::regclass, 'receipts'::regclass, 'attempts'::regclass)
	AND contype IN ('f', 'u')
UNION ALL
SELECT 'trigger ' || tgrelid::regclass::text || '.' || tgname FROM pg_trigger
WHERE tgrelid IN ('checkpoints'::regclass, 'intents'::regclass, 'inbox'::regclass, 'outbox'::regclass, 'receipts'::regclass, 'attempts'::regclass)
	AND NOT tgisinternal AND tgname LIKE '%key_checked'
ORDER BY 1`)
	must(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return out
}

// Real runs written before migration 19 read back exactly as before after
// it, verify, and go on; the six keys are triggers, and intents' unique
// pair is gone. (The runs are recorded by this build, then the schema is
// taken back to version 18.)
func TestMigrateFromVersion18RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate18-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	execInSchema(t, schema, version19Events)
	execInSchema(t, schema, version18Keys)
	wantOld := []string{
		"attempts.attempts_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents(intent_id)",
		"checkpoints.checkpoints_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id)",
		"inbox.inbox_inbound_id UNIQUE (run_id, inbound_id)",
		"inbox.inbox_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id)",
		"intents.intents_idempotency_key UNIQUE (idempotency_key)",
		"intents.intents_intent_run UNIQUE (intent_id, run_id)",
		"intents.intents_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id)",
		"intents.intents_approval_id_fkey FOREIGN KEY (approval_id) REFERENCES approvals(approval_id)",
		"outbox.outbox_intent_run_fkey FOREIGN KEY (intent_id, run_id) REFERENCES intents(intent_id, run_id)",
		"receipts.receipts_intent_run_fkey FOREIGN KEY (intent_id, run_id) REFERENCES intents(intent_id, run_id)",
	}
	got := stepKeys(t, old)
	old.Close()
	if !sameSet(got, wantOld) {
		t.Fatalf("version 18's keys\n%q\nwant\n%q", got, wantOld)
	}

	st := openNamed(t, schema, "flrh-migrate18", postgres.Options{})
	migratedTo(t, st, 19)
	wantNew := []string{
		"inbox.inbox_inbound_id UNIQUE (run_id, inbound_id)",
		"intents.intents_approval_id_fkey FOREIGN KEY (approval_id) REFERENCES approvals(approval_id)",
		"intents.intents_idempotency_key UNIQUE (idempotency_key)",
		"trigger attempts.attempts_key_checked",
		"trigger checkpoints.checkpoints_key_checked",
		"trigger inbox.inbox_key_checked",
		"trigger intents.intents_key_checked",
		"trigger outbox.outbox_key_checked",
		"trigger receipts.receipts_key_checked",
	}
	if got := stepKeys(t, st); !sameSet(got, wantNew) {
		t.Fatalf("keys after migration 19\n%q\nwant\n%q", got, wantNew)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}
