package governedstep

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// BenchmarkFlrhSQLiteSplit is BenchmarkFlrhSQLite with the step's wall
// time split by where the benchmark's goroutine spends it: inside the
// store's tick commits (commit-ns/op: SQLite's statements, the COMMIT and
// the log's sync; a run's first, which creates the run with it, among
// them), inside a run's creation on its own (create-ns/op: none where the
// run starts with its first tick, as it does here), inside the destination's adapter (effect-ns/op), and the rest
// (rest-ns/op: Decide, the runner's own work, the store's reads, the Go
// runtime's share and any wait for a processor). At C=1 nothing else
// runs on the step's behalf, so the rest is the step's CPU outside the
// store and the destination, plus scheduling delay. It reads the clock
// around every timed call, so it is not the benchmark to take
// instruction counts from; BenchmarkFlrhSQLite is.
func BenchmarkFlrhSQLiteSplit(b *testing.B) {
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "flrh.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ts := &timingStore{Store: st}
	var effectNs time.Duration
	s := newFlrhAdapter(b, ts, "sq", func(a effect.Adapter) effect.Adapter {
		p, ok := a.(effect.Preparer)
		if !ok {
			b.Fatalf("adapter %T does not prepare its requests", a)
		}
		return timingAdapter{Preparer: p, a: a, spent: &effectNs}
	})
	defer func() { s.r.Close(ctx); st.Close() }()
	b.ResetTimer()
	cpu0 := cputime.Used()
	t0 := time.Now()
	for i := 0; i*10 < b.N; i++ {
		if err := s.run(i, min(10, b.N-i*10), func(time.Duration) {}); err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(t0)
	cpu := cputime.Used() - cpu0
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(ts.commit)/n, "commit-ns/op")
	b.ReportMetric(float64(ts.create)/n, "create-ns/op")
	b.ReportMetric(float64(effectNs)/n, "effect-ns/op")
	b.ReportMetric(float64(wall-ts.commit-ts.create-effectNs)/n, "rest-ns/op")
}

// timingStore sums the wall time spent in the store's writes. The
// benchmark's one goroutine calls it, so the sums need no lock.
type timingStore struct {
	store.Store
	commit, create time.Duration
}

func (s *timingStore) Unwrap() store.Store { return s.Store }

func (s *timingStore) Commit(ctx context.Context, l store.Lease, tick store.Tick) error {
	t0 := time.Now()
	err := s.Store.Commit(ctx, l, tick)
	s.commit += time.Since(t0)
	return err
}

func (s *timingStore) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	lc, ok := s.Store.(store.LeasedCreator)
	if !ok {
		return store.Lease{}, fmt.Errorf("store %T cannot create a run leased", s.Store)
	}
	t0 := time.Now()
	l, err := lc.CreateRunLeased(ctx, run, owner, ttl, first...)
	s.create += time.Since(t0)
	return l, err
}

// CreateRunCommit is a run's creation with its first tick, timed as the
// commit it is: the store offers it, so the runner's StartAdvance makes
// one write of the two here as it does unobserved.
func (s *timingStore) CreateRunCommit(ctx context.Context, run store.Run, owner string, ttl time.Duration, first []store.Inbound, tick store.Tick) (store.Lease, error) {
	sc, ok := s.Store.(store.StartCommitter)
	if !ok {
		return store.Lease{}, fmt.Errorf("store %T cannot create a run with its first tick", s.Store)
	}
	t0 := time.Now()
	l, err := sc.CreateRunCommit(ctx, run, owner, ttl, first, tick)
	s.commit += time.Since(t0)
	return l, err
}

// timingAdapter sums the wall time spent handing effects to the
// destination and reading its answers.
type timingAdapter struct {
	effect.Preparer
	a     effect.Adapter
	spent *time.Duration
}

func (t timingAdapter) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	t0 := time.Now()
	r, err := t.a.Execute(ctx, in)
	*t.spent += time.Since(t0)
	return r, err
}

func (t timingAdapter) ExecutePrepared(ctx context.Context, in effect.Intent, p effect.Prepared) (effect.Receipt, error) {
	t0 := time.Now()
	r, err := t.Preparer.ExecutePrepared(ctx, in, p)
	*t.spent += time.Since(t0)
	return r, err
}

func (t timingAdapter) Lookup(ctx context.Context, key, contentDigest string) (effect.LookupResult, error) {
	return t.a.Lookup(ctx, key, contentDigest)
}
