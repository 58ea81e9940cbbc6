package withrunner

import (
	"testing"

	"flrh.dev/flrh/store/postgres"
)

// version8Storage is what migration 9 changed: the checkpoints and trace
// tables' columns EXTENDED.
const version8Storage = `ALTER TABLE checkpoints ALTER COLUMN run_id SET STORAGE EXTENDED, ALTER COLUMN build_digest SET STORAGE EXTENDED,
	ALTER COLUMN body SET STORAGE EXTENDED, ALTER COLUMN digest SET STORAGE EXTENDED;
ALTER TABLE trace ALTER COLUMN run_id SET STORAGE EXTENDED, ALTER COLUMN kinds SET STORAGE EXTENDED,
	ALTER COLUMN bodies SET STORAGE EXTENDED;
DELETE FROM schema_migrations WHERE version > 8;`

// toVersion8 gives schema's checkpoints and trace tables back the storage
// of the released version 8 (every column EXTENDED) and forgets the
// migrations after 8 (version 9's checks first): what a version-8
// build leaves.
func toVersion8(t *testing.T, schema string) {
	t.Helper()
	toVersion9(t, schema)
	execInSchema(t, schema, version8Storage)
}

// toastRows counts the TOAST chunks of schema's checkpoints and trace.
func toastRows(t *testing.T, st *postgres.Store) int64 {
	t.Helper()
	var n int64
	for _, table := range []string{"checkpoints", "trace"} {
		var toast string
		must(t, st.Pool().QueryRow(ctx, `SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = $1::regclass`, table).Scan(&toast))
		var c int64
		must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+toast).Scan(&c))
		n += c
	}
	return n
}

// Real runs written by a version-8 build (checkpoints and trace rows cut
// into TOAST chunks) read back exactly as before after migration 9,
// verify, and go on; the checkpoints and trace rows written after it stay
// whole in their rows.
func TestMigrateFromVersion8RealRuns(t *testing.T) {
	schema := freshSchema(t)
	// This build's writes under version 8's storage: the store is opened
	// (which migrates to this build's version), its tables' storage put
	// back to version 8's underneath it before the runs are written, and
	// the rest after them (this build writes a tick's events in one row:
	// they are put back to a row each); the migration is what this test
	// is about.
	old := openNamed(t, schema, "flrh-migrate8-old", postgres.Options{})
	execInSchema(t, schema, version13Storage)
	execInSchema(t, schema, version8Storage)
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	toVersion8(t, schema)
	var v int64
	must(t, old.Pool().QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v))
	if v != 8 {
		t.Fatalf("schema at version %d, want 8", v)
	}
	chunks := toastRows(t, old)
	if chunks == 0 {
		t.Fatal("the version-8 runs left nothing in TOAST; the test would prove nothing")
	}
	old.Close()

	st := openNamed(t, schema, "flrh-migrate8", postgres.Options{})
	migratedTo(t, st, 9)
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	// Migration 10 rewrites both tables (a column of each changes type),
	// which may take earlier rows out of TOAST; the count is taken after
	// it.
	chunks = toastRows(t, st)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
	if got := toastRows(t, st); got != chunks {
		t.Fatalf("TOAST chunks %d → %d: rows written after migration 9 were cut", chunks, got)
	}
	// They are whole in the row: since migration 14 stored as they are,
	// each fitting a page.
	if compressed, plain, all := checkpointStorage(t, st, "after-%"); all == 0 || compressed != 0 || plain != all {
		t.Fatalf("checkpoints after the migrations: %d compressed, %d plain, of %d; want all plain", compressed, plain, all)
	}
}
