package withrunner

import (
	"strings"
	"testing"

	"flrh.dev/flrh/store/postgres"
)

// version14Events is what migration 15 changed, undone: the events'
// statement trigger function as migration 12 wrote it, which is migration
// 15's with its run check the anti-join of the inserted rows to runs.
const version14Events = `
DO $do$
DECLARE
	src text := (SELECT prosrc FROM pg_proc WHERE oid = 'flrh_events_checked'::regproc);
	byKey CONSTANT text[] := ARRAY['FROM (SELECT DISTINCT run_id FROM new_rows OFFSET 0) n', 'r.run_id = n.run_id OFFSET 0)'];
	joined CONSTANT text[] := ARRAY['FROM new_rows n', 'r.run_id = n.run_id)'];
BEGIN
	FOR i IN 1..2 LOOP
		IF position(byKey[i] IN src) = 0 THEN
			RAISE EXCEPTION 'the events check has no %', byKey[i];
		END IF;
		src := replace(src, byKey[i], joined[i]);
	END LOOP;
	EXECUTE 'CREATE OR REPLACE FUNCTION flrh_events_checked() RETURNS trigger LANGUAGE plpgsql AS ' || quote_literal(src);
END
$do$;
DELETE FROM schema_migrations WHERE version > 14;`

// toVersion14 gives schema back the events trigger of version 14 and
// forgets the migrations after 14: what a version-14 build leaves (the
// runs keep their count of submissions, which that build does not read
// and this build's Submit writes; migration 16 leaves it as it is), with
// the unique indexes on commit order that migration 17 dropped.
func toVersion14(t *testing.T, schema string) {
	t.Helper()
	execInSchema(t, schema, version19Events)
	execInSchema(t, schema, version18Keys)
	execInSchema(t, schema, version16Orders)
	execInSchema(t, schema, version14Events)
}

// eventsCheck is the source of the events trigger's function in st's
// schema.
func eventsCheck(t *testing.T, st *postgres.Store) string {
	t.Helper()
	var src string
	must(t, st.Pool().QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE oid = 'flrh_events_checked'::regproc`).Scan(&src))
	return src
}

// Real runs written by a version-14 build read back exactly as before after
// migration 15, verify, and go on, their events' runs now looked up by key.
func TestMigrateFromVersion14RealRuns(t *testing.T) {
	const byKey = "FROM (SELECT DISTINCT run_id FROM new_rows OFFSET 0) n"
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate14-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion14(t, schema)
	if strings.Contains(eventsCheck(t, old), byKey) {
		t.Fatal("version 14's events check already looks runs up by key: the test would prove nothing")
	}
	old.Close()

	st := openNamed(t, schema, "flrh-migrate14", postgres.Options{})
	migratedTo(t, st, 15)
	// Migration 15 looked the runs of a statement's events up by key;
	// since migration 20 each row's run is looked up by its key.
	if src := eventsCheck(t, st); !strings.Contains(src, "WHERE r.run_id = NEW.run_id") {
		t.Fatalf("events check after migration 15 and 20:\n%s", src)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
