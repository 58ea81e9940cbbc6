package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// commitCounts counts the COMMITs and the log syncs of a store.
type commitCounts struct {
	mu             sync.Mutex
	commits, syncs int
	fail           error // returned by the next COMMIT instead of committing
}

func countCommits(s *Store) *commitCounts {
	c := &commitCounts{}
	s.testCommit = func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if err := c.fail; err != nil {
			c.fail = nil
			return err
		}
		c.commits++
		return nil
	}
	s.testLogSync = func() { c.mu.Lock(); c.syncs++; c.mu.Unlock() }
	return c
}

// take returns the COMMITs and syncs counted since the last take.
func (c *commitCounts) take() (commits, syncs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	commits, syncs = c.commits, c.syncs
	c.commits, c.syncs = 0, 0
	return commits, syncs
}

func (c *commitCounts) failNext(err error) { c.mu.Lock(); c.fail = err; c.mu.Unlock() }

// writerSync reads the writing connection's synchronous level (inside a
// lagging batch's open transaction, if one is).
func writerSync(t *testing.T, s *Store) int64 {
	t.Helper()
	var level int64
	var err error
	if werr := s.withWriter(context.Background(), func(tx *wtx) { level, err = tx.synchronous(context.Background()) }); werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return level
}

func lagTick(head int64, body string, lag bool) store.Tick {
	return store.Tick{ExpectHead: head, Events: []store.Event{storetest.Ev("E", body)}, MayLag: lag}
}

// otherHead reads a run's head through a second store on the file, as
// another process would.
func otherHead(t *testing.T, path, runID string) int64 {
	t.Helper()
	other, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	run, err := other.Run(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return run.Head
}

// A lagging tick is executed but its COMMIT waits for the next write,
// which commits both at once and syncs the log; until then another
// process does not see it. A durable write is committed and synced at
// once. The writing connection is at NORMAL throughout: the store syncs
// the log itself after a durable COMMIT.
func TestMayLagWaitsForTheNextCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s := openAt(t, path, time.Now)
	// Opening another store to look can take longer than the timer's
	// bound (the race detector, a loaded machine); the timer is not what
	// is tested here.
	s.lingerFor = time.Hour
	c := countCommits(s)
	l := leasedRun(t, s)
	if commits, syncs := c.take(); commits != 2 || syncs != 2 {
		t.Fatalf("the run's creation and lease: %d COMMITs, %d syncs; want 2 and 2", commits, syncs)
	}
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
		t.Fatal(err)
	}
	if commits, syncs := c.take(); commits != 0 || syncs != 0 || !s.lingering() {
		t.Fatalf("a lagging tick: %d COMMITs, %d syncs, open %v; want its transaction left open", commits, syncs, s.lingering())
	}
	if got := writerSync(t, s); got != 1 {
		t.Fatalf("writing connection: synchronous %d, want NORMAL (1)", got)
	}
	if h := otherHead(t, path, "r"); h != 0 {
		t.Fatalf("another process sees head %d before the COMMIT, want 0", h)
	}
	if err := s.Commit(ctx, l, lagTick(1, `{"n":2}`, false)); err != nil {
		t.Fatal(err)
	}
	if commits, syncs := c.take(); commits != 1 || syncs != 1 || s.lingering() {
		t.Fatalf("the durable tick after it: %d COMMITs, %d syncs, open %v; want one of each, nothing open", commits, syncs, s.lingering())
	}
	if h := otherHead(t, path, "r"); h != 2 {
		t.Fatalf("another process sees head %d after the COMMIT, want 2", h)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, time.Now)
	defer s.Close()
	if run, err := s.Run(ctx, "r"); err != nil || run.Head != 2 {
		t.Fatalf("opened again: head %d (%v), want both ticks", run.Head, err)
	}
}

// A lagging tick's open transaction is committed, without a sync, by a
// read of the store, by DB, by the timer, by Close; a refused write joins
// it and commits it, so that the refusal is decided on committed writes.
func TestMayLagIsCommittedByWhatComesNext(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		next  func(t *testing.T, s *Store, l store.Lease)
		after func(t *testing.T, s *Store) // checks once the store is closed and opened again
	}{
		{"a read", func(t *testing.T, s *Store, l store.Lease) {
			if evs, err := s.Events(ctx, "r", 0); err != nil || len(evs) != 1 {
				t.Fatalf("the reader sees %d events (%v), want the lagging tick's", len(evs), err)
			}
		}, nil},
		{"DB", func(t *testing.T, s *Store, l store.Lease) {
			var n int
			if err := s.DB().QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("DB sees %d events (%v), want the lagging tick's", n, err)
			}
		}, nil},
		{"the timer", func(t *testing.T, s *Store, l store.Lease) {
			deadline := time.Now().Add(10 * time.Second)
			for s.lingering() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}, nil},
		{"a refused tick", func(t *testing.T, s *Store, l store.Lease) {
			if err := s.Commit(ctx, l, lagTick(7, `{"n":2}`, false)); store.CodeOf(err) != store.CodeHeadMismatch {
				t.Fatalf("a tick from a wrong head: %v", err)
			}
		}, nil},
		{"a refused lagging tick", func(t *testing.T, s *Store, l store.Lease) {
			if err := s.Commit(ctx, l, lagTick(7, `{"n":2}`, true)); store.CodeOf(err) != store.CodeHeadMismatch {
				t.Fatalf("a tick from a wrong head: %v", err)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "flrh.db")
			s := openAt(t, path, time.Now)
			defer func() { s.Close() }()
			l := leasedRun(t, s)
			c := countCommits(s)
			if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
				t.Fatal(err)
			}
			tc.next(t, s, l)
			if commits, syncs := c.take(); commits != 1 || syncs != 0 || s.lingering() {
				t.Fatalf("%d COMMITs, %d syncs, open %v; want one COMMIT without a sync", commits, syncs, s.lingering())
			}
			if h := otherHead(t, path, "r"); h != 1 {
				t.Fatalf("another process sees head %d, want the lagging tick's 1", h)
			}
		})
	}
	t.Run("Close", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "flrh.db")
		s := openAt(t, path, time.Now)
		l := leasedRun(t, s)
		if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if h := otherHead(t, path, "r"); h != 1 {
			t.Fatalf("after Close the file holds head %d, want the lagging tick's 1", h)
		}
	})
}

// A batch is left open only when every write in it is a lagging tick: one
// durable write among lagging ones commits the batch, with the lagging
// tick held before it, and syncs the log.
func TestMayLagBatchWaitsIfAnyWriteMust(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	leases := map[string]store.Lease{}
	for _, id := range []string{"h", "a", "b", "c", "d"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}); err != nil {
			t.Fatal(err)
		}
		l, err := s.AcquireLease(ctx, id, "w", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		leases[id] = l
	}
	commit := func(id string, head int64, lag bool) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return s.Commit(ctx, leases[id], lagTick(head, fmt.Sprintf(`{%q:%d}`, id, head), lag))
		}
	}
	for _, tc := range []struct {
		name    string
		hold    func(ctx context.Context) error // a lagging tick, alone in the first batch
		writes  []func(ctx context.Context) error
		commits int // after both batches
	}{
		{"all lagging", commit("h", 0, true), []func(ctx context.Context) error{commit("a", 0, true), commit("b", 0, true)}, 0},
		{"one durable tick", commit("h", 1, true), []func(ctx context.Context) error{commit("a", 1, true), commit("c", 0, false), commit("b", 1, true)}, 1},
		{"a lease renewal", commit("h", 2, true), []func(ctx context.Context) error{commit("a", 2, true), func(ctx context.Context) error {
			_, err := s.RenewLease(ctx, leases["d"], time.Hour)
			return err
		}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := countCommits(s)
			defer func() { s.testCommit, s.testLogSync = nil, nil }()
			batches, errs := forceBatch(t, s, tc.hold, len(tc.writes), tc.writes...)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if len(batches) != 2 || len(batches[1]) != len(tc.writes) {
				t.Fatalf("batches %v, want the hold alone and then the rest together", batches)
			}
			if commits, syncs := c.take(); commits != tc.commits || syncs != tc.commits || s.lingering() != (tc.commits == 0) {
				t.Fatalf("%d COMMITs, %d syncs, open %v; want %d of each", commits, syncs, s.lingering(), tc.commits)
			}
			s.settle(ctx)
		})
	}
}

// A lagging tick whose COMMIT fails is lost, and the run's next tick,
// computed from it, is refused, never committed on a state the database
// does not hold; the tick after that, computed from the store, commits.
// The lost tick here has no events, so the head alone would not tell.
func TestLostLingeringCommitRefusesTheNextTick(t *testing.T) {
	ctx := context.Background()
	traceOnly := store.Tick{Trace: []store.TraceRecord{{Kind: "t", Body: []byte(`{"lost":true}`)}}, MayLag: true}
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, s *Store, l store.Lease, c *commitCounts)
	}{
		{"committed by a read", func(t *testing.T, s *Store, l store.Lease, c *commitCounts) {
			c.failNext(fmt.Errorf("injected: disk full"))
			if evs, err := s.Events(ctx, "r", 0); err != nil || len(evs) != 1 {
				t.Fatalf("read after the lost COMMIT: %d events (%v), want the one committed before", len(evs), err)
			}
		}},
		{"committed with the next tick", func(t *testing.T, s *Store, l store.Lease, c *commitCounts) {
			c.failNext(fmt.Errorf("injected: disk full"))
			if err := s.Commit(ctx, l, lagTick(1, `{"n":2}`, false)); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Fatalf("the tick sharing the failed COMMIT: %v, want its error", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
			defer s.Close()
			l := leasedRun(t, s)
			if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, false)); err != nil {
				t.Fatal(err)
			}
			c := countCommits(s)
			lost := traceOnly
			lost.ExpectHead = 1
			if err := s.Commit(ctx, l, lost); err != nil {
				t.Fatal(err)
			}
			tc.lose(t, s, l, c)
			if tr, err := s.Trace(ctx, "r"); err != nil || len(tr) != 0 {
				t.Fatalf("trace after the lost COMMIT: %d records (%v), want none", len(tr), err)
			}
			// Computed from the lost tick: same head, one trace record on.
			next := lagTick(1, `{"n":3}`, false)
			next.Trace = []store.TraceRecord{{Kind: "t", Body: []byte(`{"after":true}`)}}
			if err := s.Commit(ctx, l, next); store.CodeOf(err) != store.CodeHeadMismatch {
				t.Fatalf("the tick built on the lost one: %v, want %s", err, store.CodeHeadMismatch)
			}
			if err := s.Commit(ctx, l, next); err != nil {
				t.Fatalf("the tick computed again from the store: %v", err)
			}
			tr, err := s.Trace(ctx, "r")
			if err != nil || len(tr) != 1 || string(tr[0].Body) != `{"after":true}` {
				t.Fatalf("trace %+v (%v), want the last tick's record alone", tr, err)
			}
		})
	}
}

// BenchmarkCommitReceiptTick commits ticks shaped like a refund-agent
// step's receipt commit (six events of ~800 bytes, a 7 KiB checkpoint,
// four trace records), one writer, each waiting for the disk or marked
// MayLag: what a lagging commit saves, the fsync.
func BenchmarkCommitReceiptTick(b *testing.B) {
	ev := strings.Repeat("e", 700)
	cp := []byte(`{"state":"` + strings.Repeat("s", 7<<10) + `"}`)
	tr := []byte(`{"trace":"` + strings.Repeat("t", 400) + `"}`)
	for _, lag := range []bool{false, true} {
		b.Run(fmt.Sprintf("MayLag=%v", lag), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			l := leasedRun(b, s)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cputime.Used()
			for n := 0; n < b.N; n++ {
				tick := store.Tick{ExpectHead: int64(6 * n), MayLag: lag, State: "INGEST",
					Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)}}
				for e := 0; e < 6; e++ {
					tick.Events = append(tick.Events, storetest.Ev("E", fmt.Sprintf(`{"n":%d,"e":%d,"pad":%q}`, n, e, ev)))
				}
				for k := 0; k < 4; k++ {
					tick.Trace = append(tick.Trace, store.TraceRecord{Kind: "t", Body: tr})
				}
				if err := s.Commit(ctx, l, tick); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// A lagging tick's write of its run's row, waiting for the next statement
// (deferRunRow), is lost with the tick when its transaction's COMMIT fails:
// the next transaction must not write it. After the failure the run's
// next tick is refused once (the lagging tick was lost) and then commits
// at the head the database holds.
func TestLostLaggingTickLeavesNoRowWrite(t *testing.T) {
	ctx := context.Background()
	s, l := lingeringRun(t)
	c := countCommits(s)
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.fail = errInjected
	c.mu.Unlock()
	s.settle(ctx) // its COMMIT fails
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, false)); store.CodeOf(err) != store.CodeHeadMismatch {
		t.Fatalf("the tick after the lost one: %v, want %s", err, store.CodeHeadMismatch)
	}
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, false)); err != nil {
		t.Fatalf("the tick at the database's head: %v", err)
	}
	run, err := s.Run(ctx, l.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Head != 1 {
		t.Fatalf("head %d, want 1", run.Head)
	}
}
