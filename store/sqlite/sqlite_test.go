package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

func open(t *testing.T, clock func() time.Time) store.Store {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

// The SQLite store keeps none of a tick's slices once Commit returns, a
// lagging tick's included, whose transaction stays open into the next
// write and may run again from the writer's copy of it.
func TestCommitKeepsNoneOfTheTick(t *testing.T) { storetest.RunKeepsNone(t, open) }

func TestPragmas(t *testing.T) {
	s := open(t, time.Now).(*Store)
	defer s.Close()
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1"} {
		var got string
		if err := s.DB().QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

// Evidence is append-only even for someone writing SQL by hand.
func TestEvidenceAppendOnly(t *testing.T) {
	ctx := context.Background()
	s := open(t, time.Now).(*Store)
	defer s.Close()
	if err := s.Commit(ctx, leasedRun(t, s), store.Tick{Events: []store.Event{storetest.Ev("A", `{}`)}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE events SET kind = 'B'`, `DELETE FROM events`} {
		if _, err := s.DB().Exec(q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
}

func TestSchemaTooNewIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := sql.Open("sqlite", path)
	if _, err := db.Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, path, Options{})
	if store.CodeOf(err) != store.CodeSchemaTooNew {
		t.Fatalf("err = %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Run(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.AcquireLease(ctx, "r", "w", time.Hour); store.CodeOf(err) != store.CodeInvalidInput {
		t.Fatalf("write on read-only store: %v", err)
	}
}

// Pruning opens the evidence to deletion for a pruned run alone: an ended
// run not pruned keeps its rows against SQL written by hand, and the
// record of a pruning can be neither changed nor removed.
func TestEvidenceDeletedOnlyForAPrunedRun(t *testing.T) {
	ctx := context.Background()
	c := storetest.NewClock()
	s := open(t, c.Now).(*Store)
	defer s.Close()
	storetest.EndedWithEverything(t, s, c, "a")
	storetest.EndedWithEverything(t, s, c, "b")
	r, err := s.Run(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(ctx, store.Pruning{RunID: "a", HeadHash: r.HeadHash,
		Kept: store.RecordCounts{Events: 3, Intents: 2, Attempts: 3, Receipts: 2, Grants: 3, Inbox: 2, Trace: 3}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM events WHERE run_id = 'b'`, `DELETE FROM intents WHERE run_id = 'b'`, `DELETE FROM receipts WHERE run_id = 'b'`,
		`DELETE FROM trace WHERE run_id = 'b'`, `UPDATE pruned SET archive = 'x'`, `DELETE FROM pruned`, `DELETE FROM runs WHERE run_id = 'a'`,
		// A pruned run's intents are kept, stripped to their keys: never
		// deleted, never changed again.
		`DELETE FROM intents WHERE run_id = 'a'`, `UPDATE intents SET content_digest = 'x' WHERE run_id = 'a'`,
		`UPDATE intents SET body = x'' , digest = '', approval_id = NULL WHERE run_id = 'b'`,
	} {
		if _, err := s.DB().Exec(q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	if evs, err := s.Events(ctx, "b", 0); err != nil || len(evs) != 3 {
		t.Fatalf("run b's events after the refused deletions: %d, %v", len(evs), err)
	}
}

func TestImportRuns(t *testing.T) { storetest.ImportRuns(t, open, open) }

func TestImportRunsAnyRun(t *testing.T) { storetest.ImportRunsAnyRun(t, open, open) }
