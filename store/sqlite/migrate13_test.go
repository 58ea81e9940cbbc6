package sqlite_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// A database written at schema version 12 holding real runs migrates to
// version 13, which adds the columns a run settles in (store.Settler),
// without a row rewritten: no run is settled, Ready lists exactly what it
// listed before, and every run reads back as before, verifies, replays
// and goes on.
func TestMigrateFromVersion12RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v12Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v12.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	resting := []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}
	wantReady, err := src.Ready(ctx, resting, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	writeVersion(t, srcPath, v12Path, 12)
	src.Close()

	st, db := openMigrated(t, v12Path, 13)
	var settled, runs int
	if err := db.QueryRow(`SELECT count(*), COALESCE(SUM(settled_seq <> 0 OR settled_head <> 0 OR settled_state <> ''), 0) FROM runs`).Scan(&runs, &settled); err != nil {
		t.Fatal(err)
	}
	if runs != len(ids) || settled != 0 {
		t.Fatalf("%d runs, %d of them settled after migration; want %d and none", runs, settled, len(ids))
	}
	ready, err := st.Ready(ctx, resting, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ready, wantReady) {
		t.Fatalf("ready after migration %v, before %v", ready, wantReady)
	}
	runsGoOn(t, ctx, st, ids, want)
}
