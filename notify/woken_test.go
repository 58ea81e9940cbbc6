package notify

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/internal/pgtest"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// A notifier on one handle of a store is woken by a notice another
// handle (another process) commits, long before its next look: its poll
// here is an hour. PostgreSQL wakes it with NOTIFY; the embedded store's
// watcher sees the file change.
func TestWokenByAnotherProcessOnPostgres(t *testing.T) {
	h := pgtest.Handles(t, 2, "flrh_notify_", "run the notifier's PostgreSQL tests")
	testWokenByAnotherProcess(t, h[0], h[1])
}

func TestWokenByAnotherProcessOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flrh.db")
	var h [2]store.Store
	for i := range h {
		s, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		h[i] = s
	}
	testWokenByAnotherProcess(t, h[0], h[1])
}

func testWokenByAnotherProcess(t *testing.T, writer, delivering store.Store) {
	nb, ok := store.NoticeboardOf(delivering)
	if !ok {
		t.Fatal("the store keeps no notices")
	}
	rc := &receiver{clock: time.Now}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	n, err := New(Config{Board: nb, Holder: "b", URL: srv.URL, Secret: secret, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- n.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(200 * time.Millisecond) // its first pass, and its LISTEN or first look, done

	for i, id := range []string{"r1", "r2"} {
		if err := writer.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
			t.Fatal(err)
		}
		l, err := writer.AcquireLease(ctx, id, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := writer.Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
			Notices: []store.Notice{{Kind: store.NoticeEnded, Body: []byte(`{"kind":"run_ended","run_id":"` + id + `"}`)}}}); err != nil {
			t.Fatal(err)
		}
		for len(rc.deliveries()) <= i {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("notice %d not delivered 10 s after its commit, the notifier's poll being an hour", i+1)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("notice %d delivered %s after its commit", i+1, time.Since(start).Round(time.Millisecond))
	}
	// A quarantine's notice, and one told of a run outside a tick, wake
	// it too.
	for i, write := range []func(id string) error{
		func(id string) error {
			return writer.Quarantine(ctx, id, "checkpoint digest mismatch", store.Notice{Kind: store.NoticeQuarantined, Body: []byte(`{"kind":"run_quarantined"}`)})
		},
		func(id string) error {
			wb, _ := store.NoticeboardOf(writer)
			_, err := wb.TellRun(ctx, id, 0, store.Notice{Kind: store.NoticeApproval, Body: []byte(`{"kind":"approval_waiting"}`)})
			return err
		},
	} {
		id := "q" + string(rune('1'+i))
		if err := writer.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := write(id); err != nil {
			t.Fatal(err)
		}
		for len(rc.deliveries()) <= 2+i {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("the %s notice not delivered 10 s after it was written", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
