package runner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// startCommitCounting counts every write a store is handed (a commit, a
// creation, a lease, a submission), offering StartCommitter (and
// LeasedCreator) when the store under it does, as a wrapper that observes
// them would. fail, when set, is returned by CreateRunCommit before the
// store is called.
type startCommitCounting struct {
	store.Store
	writes, fused atomic.Int64
	fail          error
}

func (s *startCommitCounting) CreateRun(ctx context.Context, run store.Run, first ...store.Inbound) error {
	s.writes.Add(1)
	return s.Store.CreateRun(ctx, run, first...)
}

func (s *startCommitCounting) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	s.writes.Add(1)
	return s.Store.AcquireLease(ctx, runID, owner, ttl)
}

func (s *startCommitCounting) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	s.writes.Add(1)
	return s.Store.Commit(ctx, l, t)
}

func (s *startCommitCounting) BeginAttempt(ctx context.Context, l store.Lease, id string) (store.Attempt, error) {
	s.writes.Add(1)
	return s.Store.BeginAttempt(ctx, l, id)
}

func (s *startCommitCounting) Submit(ctx context.Context, in store.Inbound) error {
	s.writes.Add(1)
	return s.Store.Submit(ctx, in)
}

func (s *startCommitCounting) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	s.writes.Add(1)
	return s.Store.(store.LeasedCreator).CreateRunLeased(ctx, run, owner, ttl, first...)
}

func (s *startCommitCounting) CreateRunCommit(ctx context.Context, run store.Run, owner string, ttl time.Duration, first []store.Inbound, t store.Tick) (store.Lease, error) {
	s.writes.Add(1)
	s.fused.Add(1)
	if s.fail != nil {
		return store.Lease{}, s.fail
	}
	return s.Store.(store.StartCommitter).CreateRunCommit(ctx, run, owner, ttl, first, t)
}

// startAdvanceRig is a runner on a counted store offering StartCommitter.
func startAdvanceRig(t *testing.T, now time.Time, limit int64) (*foldRig, *startCommitCounting, *Runner) {
	t.Helper()
	g := newFoldRig(t, now, limit)
	sc := &startCommitCounting{Store: g.st}
	return g, sc, countedRunner(t, g, sc, limit, true)
}

// runRecord is everything stored of a run, its header and its events'
// lease generations included.
func runRecord(t *testing.T, g *foldRig, id string) string {
	t.Helper()
	run, err := g.st.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := g.st.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	gens := ""
	for _, e := range evs {
		gens += fmt.Sprintf(" %d", e.Generation)
	}
	return fmt.Sprintf("run %+v\ngenerations%s\n%s", run, gens, g.record(id))
}

// StartAdvance writes, byte for byte, what Start and then Advance write,
// in one store write fewer: the run's creation and its first tick are one
// commit.
func TestStartAdvanceWritesWhatStartAndAdvanceWrite(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, limit := range []int64{1000, 5} { // the payment sent, or refused for approval
		var records [2]string
		var writes, moved [2]int64
		for i, fused := range []bool{false, true} {
			g, sc, r := startAdvanceRig(t, now, limit)
			var m bool
			var err error
			if fused {
				m, err = r.StartAdvance(ctx, "c", "counter", "1", payment(7), inputter)
			} else {
				if err = r.StartAs(ctx, "c", "counter", "1", payment(7), inputter); err == nil {
					m, err = r.Advance(ctx, "c")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			writes[i] = sc.writes.Load()
			if m {
				moved[i] = 1
			}
			if _, err := r.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil {
				t.Fatal(err)
			}
			if err := r.RunToIdle(ctx); err != nil {
				t.Fatal(err)
			}
			records[i] = runRecord(t, g, "c")
			if got := sc.fused.Load(); got != map[bool]int64{false: 0, true: 1}[fused] {
				t.Errorf("limit %d fused=%v: %d fused commits", limit, fused, got)
			}
		}
		if records[0] != records[1] {
			t.Fatalf("limit %d: the runs differ:\nStart, Advance:\n%s\nStartAdvance:\n%s", limit, records[0], records[1])
		}
		if moved[0] != moved[1] || moved[1] != 1 {
			t.Errorf("limit %d: moved %v", limit, moved)
		}
		if writes[1] != writes[0]-1 {
			t.Errorf("limit %d: %d store writes to the first pass's end, Start and Advance made %d; want one fewer", limit, writes[1], writes[0])
		}
	}
}

// A first commit that fails writes nothing, not even the run, and its
// error is returned; bad requests are refused before anything is written.
func TestStartAdvanceRefusesWritingNothing(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	injected := store.Errorf(store.CodeUnavailable, "commit", "c", nil, "injected")
	for _, c := range []struct {
		name, id, wf string
		input        []byte
		fail         error
		code         store.Code
	}{
		{name: "store failure", id: "c", wf: "counter", input: payment(1), fail: injected, code: store.CodeUnavailable},
		{name: "invalid input", id: "c", wf: "counter", input: []byte(`{"amount":`)},
		{name: "invalid run id", id: "c d", wf: "counter", input: payment(1)},
		{name: "unknown workflow", id: "c", wf: "nope", input: payment(1)},
	} {
		g, sc, r := startAdvanceRig(t, now, 1000)
		sc.fail = c.fail
		moved, err := r.StartAdvance(ctx, c.id, c.wf, "1", c.input, inputter)
		if err == nil || moved {
			t.Fatalf("%s: moved %v, err %v", c.name, moved, err)
		}
		if c.code != "" && store.CodeOf(err) != c.code {
			t.Errorf("%s: err %v, want code %s", c.name, err, c.code)
		}
		if _, err := g.st.Run(ctx, c.id); store.CodeOf(err) != store.CodeNotFound {
			t.Errorf("%s: the run after: %v, want not found", c.name, err)
		}
		if runs, _ := g.st.Runs(ctx, "", 10); len(runs) != 0 {
			t.Errorf("%s: %d runs stored", c.name, len(runs))
		}
		if got := g.dest.count(); got != 0 {
			t.Errorf("%s: %d payments sent", c.name, got)
		}
	}
}

// A run id taken is CodeExists and leaves the run that holds it as it was.
func TestStartAdvanceRunIDTaken(t *testing.T) {
	g, _, r := startAdvanceRig(t, time.Now().UTC().Truncate(time.Second), 1000)
	if _, err := r.StartAdvance(ctx, "c", "counter", "1", payment(1), inputter); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	before := runRecord(t, g, "c")
	_, err := r.StartAdvance(ctx, "c", "counter", "1", payment(2), inputter)
	if store.CodeOf(err) != store.CodeExists {
		t.Fatalf("err %v, want CodeExists", err)
	}
	var se *store.Error
	if !errors.As(err, &se) {
		t.Fatalf("err %T, want a store error", err)
	}
	if after := runRecord(t, g, "c"); after != before {
		t.Fatalf("the run changed:\n%s\nthen:\n%s", before, after)
	}
}

// A crash at each cut point of a run's first pass under StartAdvance:
// before the fused commit nothing is written (the run does not exist, and
// starting it again succeeds); after it a fresh runner finishes the run
// with exactly one mutation at the destination.
func TestStartAdvanceCrashAtEveryCutPoint(t *testing.T) {
	for _, point := range []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt"} {
		t.Run(point, func(t *testing.T) {
			h := newHarness(t)
			r := h.runner(crash{point}.cut)
			if _, ok := any(h.store).(store.StartCommitter); !ok {
				t.Fatal("the store does not offer CreateRunCommit")
			}
			func() {
				defer func() {
					if c, ok := recover().(crash); !ok || c.at != point {
						t.Fatalf("did not stop at %s", point)
					}
				}()
				r.StartAdvance(ctx, "run", "refunds", "1", []byte(small), inputter)
			}()
			if point == "before-intent-commit" {
				if _, err := h.store.Run(ctx, "run"); store.CodeOf(err) != store.CodeNotFound {
					t.Fatalf("a crash before the first commit left the run: %v", err)
				}
				if _, err := h.r.StartAdvance(ctx, "run", "refunds", "1", []byte(small), inputter); err != nil {
					t.Fatal(err)
				}
			}
			h.recovered("run")
		})
	}
}
