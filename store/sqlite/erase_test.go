package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
)

// Pruning zeroes what it removes as it removes it: once the log is
// emptied, neither file holds a byte of the pruned runs, with no
// compaction; the kept run and the writes after are whole.
func TestPruneThenEmptyLogLeavesNoOldBytes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	st := openFile(t, path)
	const gone, kept = "PRUNED-PLAINTEXT-77aa", "KEPT-PLAINTEXT-03fe"
	write := func(id, marker string) { writeMarked(t, st, id, marker) }
	for i := range 20 {
		write("gone-"+string(rune('a'+i)), gone)
	}
	write("kept", kept)
	// The runs' pages are in the database file, as a store long in use
	// holds them, before they are pruned.
	if err := st.EmptyLog(ctx); err != nil {
		t.Fatal(err)
	}
	if !fileHolds(t, path, gone) {
		t.Fatal("the runs' bytes are not in the file before pruning: the test shows nothing")
	}
	for i := range 20 {
		a, err := archive.Read(ctx, st, "gone-"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Prune(ctx, a.Pruning("")); err != nil {
			t.Fatal(err)
		}
	}
	before := fileSize(t, path)
	if err := st.EmptyLog(ctx); err != nil {
		t.Fatal(err)
	}
	if fileHolds(t, path, gone) {
		t.Fatal("the file or its log holds the pruned runs' bytes after the log was emptied")
	}
	if !fileHolds(t, path, kept) {
		t.Fatal("the kept run's bytes are not in the file: the scan reads the wrong thing")
	}
	if after := fileSize(t, path); after > before {
		t.Fatalf("the files grew from %d to %d bytes", before, after)
	}
	evs, err := st.Events(ctx, "kept", 0)
	if err != nil || len(evs) != 2 || !strings.Contains(string(evs[0].Body), kept) {
		t.Fatalf("the kept run: %d events (%v)", len(evs), err)
	}
	write("after", kept)
	if r, err := st.Run(ctx, "after"); err != nil || r.Outcome != "success" {
		t.Fatalf("a run written after: %+v (%v)", r, err)
	}
}

// fileSize is the size of the database at path and its log together.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return n
}

// A reader holding the log keeps it from being emptied: EmptyLog says so
// (CodeUnavailable) after waiting a moment, not the busy timeout, and
// empties it once the reader is done.
func TestEmptyLogHeldByAReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	st := openFile(t, path)
	writeMarked(t, st, "r1", "READ-WHILE-EMPTYING")
	tx, err := st.DB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("events %d (%v)", n, err)
	}
	began := time.Now()
	err = st.EmptyLog(ctx)
	if store.CodeOf(err) != store.CodeUnavailable || time.Since(began) > 5*time.Second {
		t.Fatalf("with a reader: %v after %s", err, time.Since(began))
	}
	tx.Rollback()
	if err := st.EmptyLog(ctx); err != nil {
		t.Fatalf("once the reader is done: %v", err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("the log after emptying: %v (%v)", fi, err)
	}
}
