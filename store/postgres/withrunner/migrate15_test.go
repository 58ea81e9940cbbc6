package withrunner

import (
	"strings"
	"testing"

	"flrh.dev/flrh/store/postgres"
)

// version14Events is what migration 15 changed: the events' statement
// trigger of migration 12, its run check an anti-join of the inserted rows
// to runs.
const version14Events = `
DO $do$
BEGIN
	EXECUTE format($f$
CREATE OR REPLACE FUNCTION flrh_events_checked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	missing text;
BEGIN
	IF EXISTS (SELECT FROM new_rows n WHERE (n.digest_sum IS NULL) = (n.digest IS NULL)
		OR (n.prev_sum IS NULL) = (n.prev_hash IS NULL) OR (n.chain_sum IS NULL) = (n.chain_hash IS NULL)) THEN
		RAISE EXCEPTION 'new row for relation "events" violates check constraint "event_hashes"'
			USING ERRCODE = 'check_violation', TABLE = 'events', CONSTRAINT = 'event_hashes';
	END IF;
	SELECT n.run_id INTO missing FROM new_rows n
	WHERE NOT EXISTS (SELECT FROM %I.runs r WHERE r.run_id = n.run_id) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'insert into table "events" violates its run key: run "%%" does not exist', missing
			USING ERRCODE = 'foreign_key_violation', TABLE = 'events', COLUMN = 'run_id';
	END IF;
	RETURN NULL;
END
$$$f$, current_schema());
END
$do$;
DELETE FROM schema_migrations WHERE version > 14;`

// toVersion14 gives schema back the events trigger of version 14 and
// forgets migration 15: what a version-14 build leaves.
func toVersion14(t *testing.T, schema string) {
	t.Helper()
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
	toVersion14(t, schema)
	if strings.Contains(eventsCheck(t, old), byKey) {
		t.Fatal("version 14's events check already looks runs up by key: the test would prove nothing")
	}
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	old.Close()

	st := openNamed(t, schema, "flrh-migrate14", postgres.Options{})
	migratedTo(t, st, 15)
	if !strings.Contains(eventsCheck(t, st), byKey) {
		t.Fatalf("events check after migration 15:\n%s", eventsCheck(t, st))
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
