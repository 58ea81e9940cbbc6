package withrunner

import (
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store/postgres"
)

// version13Storage is what migration 14 changed: the checkpoints and
// trace tables with no storage parameter (TOAST's default target, about
// 2 KB, over which a row's values are compressed).
const version13Storage = `
ALTER TABLE checkpoints RESET (toast_tuple_target);
ALTER TABLE trace RESET (toast_tuple_target);
DELETE FROM schema_migrations WHERE version > 13;`

// toVersion13 gives schema's checkpoints and trace tables back their
// default storage parameters and forgets migration 14: what a version-13
// build leaves (version 14's events trigger first).
func toVersion13(t *testing.T, schema string) {
	t.Helper()
	toVersion14(t, schema)
	execInSchema(t, schema, version13Storage)
}

// storageOptions lists the storage parameters of the checkpoints and trace
// tables in st's schema.
func storageOptions(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT c.relname || ' ' || o FROM pg_class c, unnest(c.reloptions) o
WHERE c.oid IN ('checkpoints'::regclass, 'trace'::regclass) ORDER BY 1`)
	must(t, err)
	opts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return opts
}

// checkpointStorage counts the checkpoints of runs whose id is LIKE like
// that are stored compressed, stored plain in their row, and in all.
func checkpointStorage(t *testing.T, st *postgres.Store, like string) (compressed, plain, all int64) {
	t.Helper()
	must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_column_compression(body) IS NOT NULL),
	count(*) FILTER (WHERE pg_column_compression(body) IS NULL AND pg_column_size(body) >= octet_length(body)), count(*)
FROM checkpoints WHERE run_id LIKE $1`, like).Scan(&compressed, &plain, &all))
	return
}

// Real runs written by a version-13 build (their checkpoints compressed)
// read back exactly as before after migration 14, verify, and go on; the
// checkpoints written after it are stored as they are, whole in their row,
// and the earlier ones stay as they were written.
func TestMigrateFromVersion13RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate13-old", postgres.Options{})
	execInSchema(t, schema, version13Storage)
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion13(t, schema)
	if got := storageOptions(t, old); len(got) != 0 {
		t.Fatalf("version 13's storage parameters %q, want none", got)
	}
	c, _, all := checkpointStorage(t, old, "%")
	if all == 0 || c == 0 {
		t.Fatalf("%d of %d version-13 checkpoints compressed: the test would prove nothing", c, all)
	}
	chunks := toastRows(t, old)
	old.Close()

	st := openNamed(t, schema, "flrh-migrate13", postgres.Options{})
	migratedTo(t, st, 14)
	wantOpts := []string{"checkpoints toast_tuple_target=8160", "trace toast_tuple_target=8160"}
	if got := storageOptions(t, st); !reflect.DeepEqual(got, wantOpts) {
		t.Fatalf("storage parameters after migration %q, want %q", got, wantOpts)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	if c2, _, all2 := checkpointStorage(t, st, "%"); c2 != c || all2 != all {
		t.Fatalf("the migration changed the earlier checkpoints: %d of %d compressed, were %d of %d", c2, all2, c, all)
	}
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
	if c, plain, all := checkpointStorage(t, st, "after-%"); all == 0 || c != 0 || plain != all {
		t.Fatalf("checkpoints after migration 14: %d compressed, %d plain, of %d; want all plain", c, plain, all)
	}
	if got := toastRows(t, st); got != chunks {
		t.Fatalf("TOAST chunks %d → %d: rows written after migration 14 were cut", chunks, got)
	}
}
