package withrunner

import (
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store/postgres"
)

// version11RunKeys is what migration 12 replaced: the foreign keys to runs
// of the other tables a tick inserts into, under the names the server gave
// them (trace's from the table it was built as in migration 5), and
// migration 11's own trigger function on events.
const version11RunKeys = `
DROP TRIGGER checkpoints_run_exists ON checkpoints;
DROP TRIGGER trace_run_exists ON trace;
DROP TRIGGER intents_run_exists ON intents;
DROP TRIGGER outbox_run_exists ON outbox;
DROP TRIGGER receipts_run_exists ON receipts;
DROP TRIGGER inbox_run_exists ON inbox;
DROP TRIGGER outbox_run_fixed ON outbox;
DROP TRIGGER inbox_run_fixed ON inbox;
DROP TRIGGER events_run_exists ON events;
DROP FUNCTION flrh_run_exists(), flrh_run_fixed();
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
ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE trace ADD CONSTRAINT trace_ticks_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE intents ADD CONSTRAINT intents_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE outbox ADD CONSTRAINT outbox_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE receipts ADD CONSTRAINT receipts_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
ALTER TABLE inbox ADD CONSTRAINT inbox_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
DELETE FROM schema_migrations WHERE version > 11;`

// toVersion11 gives schema's tables back the foreign keys to runs that
// migration 12 dropped, and events migration 11's trigger, and forgets
// migration 12: what a version-11 build leaves.
func toVersion11(t *testing.T, schema string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn(t))
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()+`;`+version11RunKeys)
	must(t, err)
}

// tickRunKeys lists, in st's schema, every foreign key to runs and every
// trigger that checks or fixes a row's run, with the function it runs.
func tickRunKeys(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT 'fkey ' || conname FROM pg_constraint
WHERE confrelid = 'runs'::regclass AND contype = 'f'
UNION ALL
SELECT 'trigger ' || tgrelid::regclass::text || '.' || tgname || ' ' || tgfoid::regproc::text FROM pg_trigger
WHERE NOT tgisinternal AND (tgname LIKE '%run_exists' OR tgname LIKE '%run_fixed')
	AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)
ORDER BY 1`)
	must(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return names
}

// Real runs written by a version-11 build read back exactly as before after
// migration 12, verify, and go on; only the approvals keep a foreign key to
// runs, and every table a tick inserts into checks its runs per statement.
func TestMigrateFromVersion11RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate11-old", postgres.Options{})
	toVersion11(t, schema)
	wantOld := []string{"fkey approvals_run_id_fkey", "fkey checkpoints_run_id_fkey", "fkey inbox_run_id_fkey",
		"fkey intents_run_id_fkey", "fkey outbox_run_id_fkey", "fkey receipts_run_id_fkey", "fkey trace_ticks_run_id_fkey",
		"trigger events.events_run_exists flrh_event_runs"}
	if got := tickRunKeys(t, old); !reflect.DeepEqual(got, wantOld) {
		t.Fatalf("version 11's run keys %v, want %v", got, wantOld)
	}
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	old.Close()

	st := openNamed(t, schema, "flrh-migrate11", postgres.Options{})
	migratedTo(t, st, 12)
	wantKeys := []string{"fkey approvals_run_id_fkey",
		"trigger checkpoints.checkpoints_run_exists flrh_run_exists",
		"trigger events.events_run_exists flrh_run_exists",
		"trigger inbox.inbox_run_exists flrh_run_exists",
		"trigger inbox.inbox_run_fixed flrh_run_fixed",
		"trigger intents.intents_run_exists flrh_run_exists",
		"trigger outbox.outbox_run_exists flrh_run_exists",
		"trigger outbox.outbox_run_fixed flrh_run_fixed",
		"trigger receipts.receipts_run_exists flrh_run_exists",
		"trigger trace.trace_run_exists flrh_run_exists"}
	if got := tickRunKeys(t, st); !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("run keys after migration %v, want %v", got, wantKeys)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
