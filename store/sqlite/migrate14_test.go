package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// A database written at schema version 13 holding real runs migrates to
// version 14, which records each run's due time: a run not ended cannot
// have it computed in SQL (it is in the checkpoint's budget ledger), so
// it is marked due at once, 1 ns after the epoch, for the first runner to
// pass it to record; an ended run has none. Ready then lists every run
// not ended once given a reading, and exactly what it listed before
// without one; every run reads back as before, verifies, replays and goes
// on.
func TestMigrateFromVersion13RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v13Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v13.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	// Two live runs beside the ended ones: one resting with nothing
	// pending, one mid-work.
	for id, state := range map[string]string{"live-resting": "WAIT_APPROVAL", "live-working": "EXECUTE"} {
		if err := src.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: state}); err != nil {
			t.Fatal(err)
		}
	}
	resting := []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}
	wantReady, err := src.Ready(ctx, resting, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	live, err := src.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writeVersion(t, srcPath, v13Path, 13)
	src.Close()

	st, db := openMigrated(t, v13Path, 14)
	rows, err := db.Query(`SELECT run_id, outcome, due_at FROM runs ORDER BY created_order`)
	if err != nil {
		t.Fatal(err)
	}
	var liveSeen, ended int
	for rows.Next() {
		var id, outcome string
		var due int64
		if err := rows.Scan(&id, &outcome, &due); err != nil {
			t.Fatal(err)
		}
		switch {
		case outcome == "" && due != 1:
			t.Fatalf("live run %s due at %d after migration, want 1", id, due)
		case outcome != "" && due != 0:
			t.Fatalf("ended run %s due at %d after migration, want 0", id, due)
		case outcome == "":
			liveSeen++
		default:
			ended++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if liveSeen == 0 || ended == 0 {
		t.Fatalf("%d live and %d ended runs: the source should hold both", liveSeen, ended)
	}
	ready, err := st.Ready(ctx, resting, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ready, wantReady) {
		t.Fatalf("ready without a reading after migration %v, before %v", ready, wantReady)
	}
	due, err := st.Ready(ctx, resting, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(due, live) {
		t.Fatalf("ready at a reading after migration %v, want every live run %v", due, live)
	}
	// The two runs of no workflow are put aside before runners go on.
	for _, id := range []string{"live-resting", "live-working"} {
		if err := st.Quarantine(ctx, id, "a run of no workflow, made for this test"); err != nil {
			t.Fatal(err)
		}
	}
	runsGoOn(t, ctx, st, ids, want)
}
