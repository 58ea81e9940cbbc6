package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// A notice watcher on one handle of a file answers with the run of a
// notice another handle commits, and with nothing when its poll passes
// with no commit or with commits that leave no notice due; a cancelled
// wait is an error.
func TestNoticeWatcher(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	h := [2]*sqlite.Store{openFile(t, path), openFile(t, path)}
	w := h[1].WatchNotices(ctx)
	defer w.Close()
	if id, err := w.Wait(ctx, 120*time.Millisecond); id != "" || err != nil {
		t.Fatalf("no commit: %q (%v)", id, err)
	}
	writeMarked(t, h[0], "quiet", "NO-NOTICE") // a commit with no notice
	if id, err := w.Wait(ctx, 120*time.Millisecond); id != "" || err != nil {
		t.Fatalf("a commit with no notice: %q (%v)", id, err)
	}
	if err := h[0].CreateRun(ctx, store.Run{ID: "told", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := h[0].AcquireLease(ctx, "told", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h[0].Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
		Notices: []store.Notice{{Kind: store.NoticeEnded, Body: []byte(`{"kind":"run_ended"}`)}}}); err != nil {
		t.Fatal(err)
	}
	if id, err := w.Wait(ctx, 5*time.Second); id != "told" || err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("a notice committed: %q (%v) after %s", id, err, time.Since(start))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Wait(cctx, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}
