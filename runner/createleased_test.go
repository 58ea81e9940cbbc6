package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// startCounting counts the writes a run's start can make: CreateRun,
// AcquireLease and, when leased is set, CreateRunLeased, which it offers
// only then (as a wrapper that observes it would).
type startCounting struct {
	store.Store
	creates, acquires, leased atomic.Int64
}

func (s *startCounting) CreateRun(ctx context.Context, run store.Run, first ...store.Inbound) error {
	s.creates.Add(1)
	return s.Store.CreateRun(ctx, run, first...)
}

func (s *startCounting) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	s.acquires.Add(1)
	return s.Store.AcquireLease(ctx, runID, owner, ttl)
}

type startLeasing struct{ *startCounting }

func (s startLeasing) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	s.leased.Add(1)
	return s.Store.(store.LeasedCreator).CreateRunLeased(ctx, run, owner, ttl, first...)
}

// startRig is a store, counted, and a runner on it, the store offering
// CreateRunLeased or not.
func startRig(t *testing.T, now time.Time, leased, leaseStarts bool) (*foldRig, *startCounting, *Runner) {
	t.Helper()
	g := newFoldRig(t, now, 1000)
	sc := &startCounting{Store: g.st}
	var st store.Store = sc
	if leased {
		st = startLeasing{sc}
	}
	return g, sc, countedRunner(t, g, st, 1000, leaseStarts)
}

// countedRunner is a runner named "runner" on st (a counting wrapper of
// g's store) deciding the refunds workflow up to limit, paying through
// g's destination, on g's clock.
func countedRunner(t *testing.T, g *foldRig, st store.Store, limit int64, leaseStarts bool) *Runner {
	t.Helper()
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", g.dest); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: st, Workflows: []Workflow{counter{refunds{limit: limit}}}, Adapters: reg, Owner: "runner", LeaseStarts: leaseStarts,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: g.clock.Now, Sleep: g.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A run started on a store that creates runs leased is, byte for byte and
// lease generation for lease generation, the run started by CreateRun and
// leased by its first pass; one write fewer.
func TestStartLeasedWritesWhatCreateAndAcquireWrite(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	var records [2]string
	for i, leased := range []bool{false, true} {
		g, sc, r := startRig(t, now, leased, true)
		if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Advance(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		for j := 2; j <= 3; j++ {
			if _, err := r.SubmitAdvance(ctx, "c", payment(j), inputter); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.RunToIdle(ctx); err != nil {
			t.Fatal(err)
		}
		run, err := g.st.Run(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		evs, err := g.st.Events(ctx, "c", 0)
		if err != nil {
			t.Fatal(err)
		}
		gens := ""
		for _, e := range evs {
			gens += fmt.Sprintf(" %d", e.Generation)
		}
		records[i] = fmt.Sprintf("run %+v\ngenerations%s\n%s", run, gens, g.record("c"))
		want := [3]int64{1, 1, 0} // creates, acquires, leased creations
		if leased {
			want = [3]int64{0, 0, 1}
		}
		if got := [3]int64{sc.creates.Load(), sc.acquires.Load(), sc.leased.Load()}; got != want {
			t.Errorf("leased=%v: CreateRun, AcquireLease, CreateRunLeased calls = %v, want %v", leased, got, want)
		}
	}
	if records[0] != records[1] {
		t.Fatalf("the runs differ:\nCreateRun, AcquireLease:\n%s\nCreateRunLeased:\n%s", records[0], records[1])
	}
}

// A runner not told that it advances the runs it starts creates them
// unleased, for any runner (or claim) to take, whatever the store offers.
func TestStartUnleasedByDefault(t *testing.T) {
	g, sc, r := startRig(t, time.Now().UTC().Truncate(time.Second), true, false)
	if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
		t.Fatal(err)
	}
	if sc.creates.Load() != 1 || sc.leased.Load() != 0 {
		t.Fatalf("CreateRun %d, CreateRunLeased %d calls, want 1 and 0", sc.creates.Load(), sc.leased.Load())
	}
	run, err := g.st.Run(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if run.Lease.Owner != "" || run.Lease.Generation != 0 {
		t.Fatalf("a run started without LeaseStarts is leased: %+v", run.Lease)
	}
}

// Starting a run whose id is taken writes nothing and leaves the lease
// the runner holds on that run as it was: its next pass needs none.
func TestStartLeasedTakenIDKeepsTheLeaseHeld(t *testing.T) {
	g, sc, r := startRig(t, time.Now().UTC().Truncate(time.Second), true, true)
	if err := r.Start(ctx, "c", "counter", "1", payment(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Advance(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	before := g.record("c")
	if err := r.Start(ctx, "c", "counter", "1", payment(9)); store.CodeOf(err) != store.CodeExists {
		t.Fatalf("starting a taken id: %v, want CodeExists", err)
	}
	if after := g.record("c"); after != before {
		t.Fatalf("a refused start changed the run:\nbefore\n%s\nafter\n%s", before, after)
	}
	if _, err := r.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil {
		t.Fatal(err)
	}
	if sc.acquires.Load() != 0 {
		t.Fatalf("AcquireLease called %d times after a refused start, want 0", sc.acquires.Load())
	}
	// Another runner finds the run leased; once the first lets it go, the
	// other takes it with the next generation.
	if _, err := g.st.AcquireLease(ctx, "c", "other", time.Minute); store.CodeOf(err) != store.CodeLeaseHeld {
		t.Fatalf("another owner acquiring the started run: %v, want CodeLeaseHeld", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := g.st.AcquireLease(ctx, "c", "other", time.Minute)
	if err != nil || l.Generation != 2 {
		t.Fatalf("after Close, another owner's lease = %+v, %v; want generation 2", l, err)
	}
}
