package server

import (
	"context"
	"path/filepath"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// The commit-notifying wrapper keeps the SQLite store's ready listing
// reachable, so the server's runner polls only runs with work to do.
func TestNotifyCommitsKeepsTheReadyListing(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wrapped, _ := NotifyCommits(st)
	rl, ok := store.ReadyListerOf(wrapped)
	if !ok {
		t.Fatal("the wrapped store hides its ReadyLister")
	}
	if err := st.CreateRun(context.Background(), store.Run{ID: "r", WorkflowID: "w", WorkflowVersion: "1", State: "INGEST"}); err != nil {
		t.Fatal(err)
	}
	ids, err := rl.Ready(context.Background(), []string{"INGEST"})
	if err != nil || len(ids) != 0 {
		t.Fatalf("a resting run with an empty inbox is ready: %v %v", ids, err)
	}
}
