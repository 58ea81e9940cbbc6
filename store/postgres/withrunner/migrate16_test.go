package withrunner

import (
	"testing"

	"flrh.dev/flrh/store/postgres"
)

// version15Runs is what migration 16 changed, undone: the runs without
// their count of submissions.
const version15Runs = `
ALTER TABLE runs DROP COLUMN submissions;
DELETE FROM schema_migrations WHERE version > 15;`

// Real runs read back exactly as before after migration 16, verify, and
// go on; each run written before it counts no submission. (This build's
// Submit writes the count, so the runs are recorded first and the schema
// then taken back to version 15: no other column changes.)
func TestMigrateFromVersion15RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate15-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	old.Close()
	execInSchema(t, schema, version19Events)
	execInSchema(t, schema, version15Runs)

	st := openNamed(t, schema, "flrh-migrate15", postgres.Options{})
	migratedTo(t, st, 16)
	var runs, counted int64
	must(t, st.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE submissions <> 0) FROM runs`).Scan(&runs, &counted))
	if runs != int64(len(ids)) || counted != 0 {
		t.Fatalf("%d runs, %d of them counting submissions after migration 16; want %d and 0", runs, counted, len(ids))
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
