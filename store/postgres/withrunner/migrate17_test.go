package withrunner

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/store/postgres"
)

// version16Orders is what migration 17 dropped, put back: the unique
// indexes on the intents' and the receipts' commit order alone.
const version16Orders = `
ALTER TABLE intents ADD CONSTRAINT intents_commit_order_key UNIQUE (commit_order);
ALTER TABLE receipts ADD CONSTRAINT receipts_commit_order_key UNIQUE (commit_order);
DELETE FROM schema_migrations WHERE version > 16;`

// commitOrderIndexes lists the indexes of intents and receipts that hold
// commit_order, with their definitions, in st's schema.
func commitOrderIndexes(t *testing.T, st *postgres.Store) []string {
	t.Helper()
	rows, err := st.Pool().Query(ctx, `SELECT indexname || ' ' || regexp_replace(indexdef, '^.* USING ', '') FROM pg_indexes
WHERE schemaname = current_schema() AND tablename IN ('intents', 'receipts') AND indexdef LIKE '%commit_order%' ORDER BY 1`)
	must(t, err)
	var out []string
	for rows.Next() {
		var s string
		must(t, rows.Scan(&s))
		out = append(out, s)
	}
	must(t, rows.Err())
	return out
}

// Real runs read back exactly as before after migration 17, in the same
// commit order, verify, and go on; intents and receipts keep their commit
// order in their run's index alone. (The runs are recorded by this build,
// then the schema is taken back to version 16.)
func TestMigrateFromVersion16RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate16-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	old.Close()
	execInSchema(t, schema, version19Events)
	execInSchema(t, schema, version16Orders)

	st := openNamed(t, schema, "flrh-migrate16", postgres.Options{})
	migratedTo(t, st, 17)
	wantIndexes := []string{
		"intents_by_run btree (run_id, commit_order)",
		"receipts_by_run btree (run_id, commit_order)",
	}
	if got := commitOrderIndexes(t, st); !reflect.DeepEqual(got, wantIndexes) {
		t.Fatalf("commit order indexes after migration 17\n%q\nwant\n%q", got, wantIndexes)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
