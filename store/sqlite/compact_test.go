package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// fileHolds reports whether the database file or its log holds marker.
func fileHolds(t *testing.T, path, marker string) bool {
	t.Helper()
	return storetest.FilesHold(t, marker, path, path+"-wal")
}

// openFile opens the embedded store at path, closed when the test ends.
func openFile(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// writeMarked writes an ended run id whose event and trace bodies repeat
// marker.
func writeMarked(t *testing.T, st *sqlite.Store, id, marker string) {
	t.Helper()
	ctx := context.Background()
	if err := st.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, id, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"note":"` + strings.Repeat(marker+" ", 40) + `"}`
	if err := st.Commit(ctx, l, store.Tick{State: "SUCCEEDED", Outcome: "success",
		Events: []store.Event{storetest.Ev("NOTE", body), storetest.Ev("END", `{}`)},
		Trace:  []store.TraceRecord{{Kind: "note", Body: []byte(body)}}}); err != nil {
		t.Fatal(err)
	}
}

// A pruned run's bytes stay in the database's free pages until Compact,
// after which neither the file nor its log holds them; the runs kept
// read back as before, and the store goes on writing.
func TestCompactLeavesNoOldBytes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	st := openFile(t, path)
	sqlite.PruneWithoutZeroing(st) // a store pruned by a build that left the bytes
	const gone, kept = "PRUNED-PLAINTEXT-5b0e", "KEPT-PLAINTEXT-91c4"
	write := func(id, marker string) { writeMarked(t, st, id, marker) }
	for i := range 20 {
		write("gone-"+string(rune('a'+i)), gone)
	}
	write("kept", kept)
	for i := range 20 {
		id := "gone-" + string(rune('a'+i))
		a, err := archive.Read(ctx, st, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Prune(ctx, a.Pruning("")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.DB().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if !fileHolds(t, path, gone) {
		t.Fatal("the pruned runs' bytes are not in the file before compacting: the test shows nothing")
	}
	c, err := st.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fileHolds(t, path, gone) {
		t.Fatal("the file or its log still holds the pruned runs' bytes after Compact")
	}
	if !fileHolds(t, path, kept) {
		t.Fatal("the kept run's bytes are not in the file: the scan reads the wrong thing")
	}
	if c.Before <= 0 || c.After <= 0 || c.After >= c.Before {
		t.Fatalf("compacted %+v: the files did not shrink", c)
	}
	evs, err := st.Events(ctx, "kept", 0)
	if err != nil || len(evs) != 2 || !strings.Contains(string(evs[0].Body), kept) {
		t.Fatalf("the kept run after Compact: %d events (%v)", len(evs), err)
	}
	write("after", kept)
	if r, err := st.Run(ctx, "after"); err != nil || r.Outcome != "success" {
		t.Fatalf("a run written after Compact: %+v (%v)", r, err)
	}
	// Compact again: nothing left to cut.
	if c2, err := st.Compact(ctx); err != nil || c2.Before <= 0 {
		t.Fatalf("a second Compact: %+v (%v)", c2, err)
	}
}
