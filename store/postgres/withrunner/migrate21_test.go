package withrunner

import (
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/store/postgres"
)

// version20Runs is what migration 21 changed, undone: the runs without
// the columns they settle in.
const version20Runs = `
ALTER TABLE runs DROP COLUMN settled_seq, DROP COLUMN settled_head, DROP COLUMN settled_state;
DELETE FROM schema_migrations WHERE version > 20;`

// Real runs read back exactly as before after migration 21, verify, and
// go on; no run written before it is settled, so Ready lists exactly
// what it listed before. (The runs are recorded by this build, then the
// schema is taken back to version 20: no other column changes.)
func TestMigrateFromVersion20RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate20-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	resting := []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}
	wantReady, err := old.Ready(ctx, resting, time.Time{})
	must(t, err)
	old.Close()
	execInSchema(t, schema, version20Runs)

	st := openNamed(t, schema, "flrh-migrate20", postgres.Options{})
	migratedTo(t, st, 21)
	var runs, settled int64
	must(t, st.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE settled_seq <> 0 OR settled_head <> 0 OR settled_state <> '') FROM runs`).Scan(&runs, &settled))
	if runs != int64(len(ids)) || settled != 0 {
		t.Fatalf("%d runs, %d of them settled after migration 21; want %d and none", runs, settled, len(ids))
	}
	ready, err := st.Ready(ctx, resting, time.Time{})
	must(t, err)
	if !reflect.DeepEqual(ready, wantReady) {
		t.Fatalf("ready after migration %v, before %v", ready, wantReady)
	}
	sameRuns(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
}
