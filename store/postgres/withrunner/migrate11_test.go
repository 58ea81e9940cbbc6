package withrunner

import (
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store/postgres"
)

// version10RunKey is what migration 11 replaced: the events' foreign key
// to their run, under the name migration 6 gave it, and no triggers on
// runs.
const version10RunKey = `
DROP TRIGGER events_run_exists ON events;
DROP TRIGGER runs_no_delete ON runs;
DROP TRIGGER runs_no_truncate ON runs;
DROP TRIGGER runs_no_rename ON runs;
DROP FUNCTION flrh_event_runs(), flrh_runs_kept();
ALTER TABLE events ADD CONSTRAINT events_sums_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(run_id);
DELETE FROM schema_migrations WHERE version > 10;`

// toVersion10 gives schema's events back their foreign key, drops the
// triggers of migration 11 and forgets it: what a version-10 build leaves
// (version 11's checks first).
func toVersion10(t *testing.T, schema string) {
	t.Helper()
	toVersion11(t, schema)
	execInSchema(t, schema, version10RunKey)
}

// runKeys lists what guards the events' and runs' keys in st's schema: the
// events table's foreign keys and the user triggers on both tables.
func runKeys(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT 'fkey ' || conname FROM pg_constraint
WHERE conrelid = 'events'::regclass AND contype = 'f'
UNION ALL
SELECT 'trigger ' || tgrelid::regclass::text || '.' || tgname FROM pg_trigger
WHERE tgrelid IN ('events'::regclass, 'runs'::regclass) AND NOT tgisinternal AND tgname NOT LIKE '%append_only' AND tgname NOT LIKE '%deleted_if_pruned' AND tgname NOT LIKE 'events_no_truncate'
ORDER BY 1`)
	must(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return names
}

// Real runs written by a version-10 build read back exactly as before after
// migration 11, verify, and go on; the events' foreign key is gone and the
// statement trigger and the runs' guards are there instead.
func TestMigrateFromVersion10RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate10-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion10(t, schema)
	if got, want := runKeys(t, old), []string{"fkey events_sums_run_id_fkey"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("version 10's run keys %v, want %v", got, want)
	}
	old.Close()

	st := openNamed(t, schema, "flrh-migrate10", postgres.Options{})
	migratedTo(t, st, 11)
	// Migration 12 folds the run check into the events trigger it adds.
	wantKeys := []string{"trigger events.events_checked", "trigger runs.runs_no_delete", "trigger runs.runs_no_rename", "trigger runs.runs_no_truncate"}
	if got := runKeys(t, st); !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("run keys after migration %v, want %v", got, wantKeys)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
