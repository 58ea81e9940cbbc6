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

// syncLevels records the writing connection's synchronous level at each
// COMMIT.
type syncLevels struct {
	mu     sync.Mutex
	levels []int64
}

func (l *syncLevels) add(level int64) { l.mu.Lock(); l.levels = append(l.levels, level); l.mu.Unlock() }

func (l *syncLevels) take() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.levels
	l.levels = nil
	return out
}

// writerSync reads the writing connection's synchronous level between
// batches.
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

// A tick whose durability may lag is committed at synchronous=NORMAL (no
// fsync of the log at its COMMIT), readable at once through the readers'
// pool and through a second store on the file, and the writing connection
// is back at FULL for the next write. Closed and opened again, the file
// holds it and the durable tick after it.
func TestMayLagCommitsAtNormalThenFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	s := openAt(t, path, time.Now)
	var seen syncLevels
	s.testSync = seen.add
	l := leasedRun(t, s)
	if got := seen.take(); len(got) != 2 || got[0] != 2 || got[1] != 2 {
		t.Fatalf("levels of the run's creation and lease: %v, want FULL (2) twice", got)
	}
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
		t.Fatal(err)
	}
	if got := seen.take(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("level of the lagging tick's COMMIT: %v, want NORMAL (1)", got)
	}
	if got := writerSync(t, s); got != 2 {
		t.Fatalf("writing connection after the lagging tick: synchronous %d, want FULL (2)", got)
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("readers' pool after the lagging tick: %d events (%v)", len(evs), err)
	}
	other, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	run, err := other.Run(ctx, "r")
	other.Close()
	if err != nil || run.Head != 1 {
		t.Fatalf("a second store on the file: head %d (%v)", run.Head, err)
	}
	if err := s.Commit(ctx, l, lagTick(1, `{"n":2}`, false)); err != nil {
		t.Fatal(err)
	}
	if got := seen.take(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("level of the durable tick after it: %v, want FULL (2)", got)
	}
	// A lagging tick the store refuses leaves the level restored too.
	if err := s.Commit(ctx, l, lagTick(0, `{"n":3}`, true)); store.CodeOf(err) != store.CodeHeadMismatch {
		t.Fatalf("lagging tick from a stale head: %v", err)
	}
	if got := writerSync(t, s); got != 2 {
		t.Fatalf("after a refused lagging tick: synchronous %d, want FULL (2)", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, time.Now)
	defer s.Close()
	run, err = s.Run(ctx, "r")
	if err != nil || run.Head != 2 {
		t.Fatalf("opened again: head %d (%v), want both ticks", run.Head, err)
	}
}

// A batch is committed at NORMAL only when every write in it may lag: one
// durable write among lagging ones makes the batch's COMMIT wait for the
// disk.
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
		name   string
		hold   func(ctx context.Context) error // a lagging tick, alone in the first batch
		writes []func(ctx context.Context) error
		want   int64
	}{
		{"all lagging", commit("h", 0, true), []func(ctx context.Context) error{commit("a", 0, true), commit("b", 0, true)}, 1},
		{"one durable tick", commit("h", 1, true), []func(ctx context.Context) error{commit("a", 1, true), commit("c", 0, false), commit("b", 1, true)}, 2},
		{"a lease renewal", commit("h", 2, true), []func(ctx context.Context) error{commit("a", 2, true), func(ctx context.Context) error {
			_, err := s.RenewLease(ctx, leases["d"], time.Hour)
			return err
		}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen syncLevels
			s.testSync = seen.add
			defer func() { s.testSync = nil }()
			batches, errs := forceBatch(t, s, tc.hold, len(tc.writes), tc.writes...)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if len(batches) != 2 || len(batches[1]) != len(tc.writes) {
				t.Fatalf("batches %v, want the hold alone and then the rest together", batches)
			}
			if got := seen.take(); len(got) != 2 || got[0] != 1 || got[1] != tc.want {
				t.Fatalf("levels at COMMIT: %v, want [1 %d]", got, tc.want)
			}
			if got := writerSync(t, s); got != 2 {
				t.Fatalf("synchronous %d after the batches, want FULL (2)", got)
			}
		})
	}
}

// A writing connection that cannot be set back to FULL after a lagging
// tick is dropped: the next write opens another, at FULL, and finds
// everything the lagging tick wrote.
func TestMayLagDropsAConnectionLeftAtNormal(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	l := leasedRun(t, s)
	s.testRestore = func(error) error { return fmt.Errorf("injected: cannot set synchronous back") }
	if err := s.Commit(ctx, l, lagTick(0, `{"n":1}`, true)); err != nil {
		t.Fatalf("the lagging tick committed before the failed restore: %v", err)
	}
	s.testRestore = nil
	s.w.mu.Lock()
	dropped := s.w.conn == nil
	s.w.mu.Unlock()
	if !dropped {
		t.Fatal("the connection left at NORMAL was kept")
	}
	var seen syncLevels
	s.testSync = seen.add
	if err := s.Commit(ctx, l, lagTick(1, `{"n":2}`, false)); err != nil {
		t.Fatal(err)
	}
	if got := seen.take(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("the next durable tick committed at %v, want FULL (2)", got)
	}
	if run, err := s.Run(ctx, "r"); err != nil || run.Head != 2 {
		t.Fatalf("head %d (%v), want both ticks", run.Head, err)
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
