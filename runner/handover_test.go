package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// hooked is a store that calls afterRun once a read of a run's header has
// returned, and can be told to refuse the next commit that ends a run or
// the next checkpoint read, the way a cancelled or failing connection
// would. It hides the store's optional interfaces, so a runner over it
// takes the plain paths.
type hooked struct {
	store.Store
	afterRun        func(runID string)
	failEnd, failCP bool
	failLease       int // how many lease requests to refuse
}

func (s *hooked) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if s.failLease > 0 {
		s.failLease--
		return store.Lease{}, errInjected
	}
	return s.Store.RenewLease(ctx, l, ttl)
}

func (s *hooked) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	if s.failLease > 0 {
		s.failLease--
		return store.Lease{}, errInjected
	}
	return s.Store.AcquireLease(ctx, runID, owner, ttl)
}

var errInjected = store.Errorf(store.CodeUnavailable, "injected", "", nil, "the connection went away")

func (s *hooked) Run(ctx context.Context, runID string) (store.Run, error) {
	run, err := s.Store.Run(ctx, runID)
	if f := s.afterRun; f != nil && err == nil {
		s.afterRun = nil
		f(runID)
	}
	return run, err
}

func (s *hooked) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	if s.failEnd && t.Outcome != "" {
		s.failEnd = false
		return errInjected
	}
	return s.Store.Commit(ctx, l, t)
}

func (s *hooked) Checkpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	if s.failCP {
		s.failCP = false
		return store.Checkpoint{}, errInjected
	}
	return s.Store.Checkpoint(ctx, runID)
}

func (h *harness) runnerOver(s store.Store, owner string) *Runner {
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		h.t.Fatal(err)
	}
	r, err := New(Config{Store: s, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Owner: owner,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// A runner that read a run's header, then waited for the lease while
// another runner committed and let it go, loads a checkpoint ahead of the
// header it read. The run has moved on; it is not damaged: the pass takes
// it where it stands instead of quarantining it.
func TestAHeaderReadBeforeTheLeaseIsNotTakenForDamage(t *testing.T) {
	h := newHarness(t)
	a := h.runnerOver(h.store, "runner-a")
	s := &hooked{Store: h.store}
	b := h.runnerOver(s, "runner-b")
	if err := a.Start(ctx, "moved", "refunds", "1", []byte(large)); err != nil {
		t.Fatal(err)
	}
	// runner-b reads the header of the new run (head 0); before it asks
	// for the lease, runner-a advances the run to its approval, which
	// lets the lease go.
	s.afterRun = func(id string) {
		if _, err := a.Advance(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Advance(ctx, "moved"); err != nil {
		t.Fatal(err)
	}
	if s.afterRun != nil {
		t.Fatal("runner-b never read the header")
	}
	run := h.run("moved")
	if run.Quarantine != "" || run.State != "WAIT_APPROVAL" {
		t.Fatalf("the run is %s, quarantined %q", run.State, run.Quarantine)
	}
	st, _ := b.Inspect(ctx, "moved")
	if len(st.Waiting) != 1 {
		t.Fatalf("waiting %+v", st.Waiting)
	}
	if err := b.Approve(ctx, "moved", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := b.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if run := h.run("moved"); run.State != "SUCCEEDED" || h.dest.count() != 1 {
		t.Fatalf("the run is %s with %d mutations", run.State, h.dest.count())
	}
}

// A pass that fails leaves no lease behind that the runner has forgotten
// while the store still holds it for it: whether it failed loading the
// run, or committing an end it had decided, the lease is given up then
// or by Close, and another runner takes the run at once.
func TestAFailedPassLeavesNoLeaseBehind(t *testing.T) {
	for _, c := range []struct {
		name string
		fail func(s *hooked)
	}{
		{"the checkpoint unread", func(s *hooked) { s.failCP = true }},
		{"the run's end uncommitted", func(s *hooked) { s.failEnd = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			s := &hooked{Store: h.store}
			a := h.runnerOver(s, "runner-a")
			if err := h.r.Start(ctx, "dropped", "refunds", "1", []byte(small)); err != nil {
				t.Fatal(err)
			}
			if err := h.r.Close(ctx); err != nil { // the starter lets its lease go
				t.Fatal(err)
			}
			c.fail(s)
			if _, err := a.Advance(ctx, "dropped"); !errors.Is(err, errInjected) && !strings.Contains(errString(err), "went away") {
				t.Fatalf("the pass: %v", err)
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if run := h.run("dropped"); run.Lease.Owner != "" && h.clock.Now().Before(run.Lease.ExpiresAt) {
				t.Fatalf("%s still holds the run until %s", run.Lease.Owner, run.Lease.ExpiresAt)
			}
			b := h.runnerOver(h.store, "runner-b")
			if err := b.RunToIdle(ctx); err != nil {
				t.Fatal(err)
			}
			if run := h.run("dropped"); run.State != "SUCCEEDED" || h.dest.count() != 1 {
				t.Fatalf("taken over: %s with %d mutations", run.State, h.dest.count())
			}
		})
	}
}

// A lease whose renewal the store could not answer (a busy database, a
// runner shutting down) is still this runner's as far as anyone knows: it
// stays known, and Close gives it up.
func TestALeaseTheStoreCouldNotRenewIsGivenUpByClose(t *testing.T) {
	h := newHarness(t)
	h.start("held", large) // waits for its approval, its lease let go
	s := &hooked{Store: h.store}
	a := h.runnerOver(s, "runner-a")
	if _, err := a.lease(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(a.cfg.LeaseTTL * 3 / 5) // past half its life: renewed on the next use
	s.failLease = 2                         // the renewal, then the fresh acquisition
	if _, err := a.lease(ctx, "held"); !errors.Is(err, errInjected) {
		t.Fatalf("the renewal: %v", err)
	}
	if run := h.run("held"); run.Lease.Owner != "runner-a" {
		t.Fatalf("the run is leased to %q", run.Lease.Owner)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if run := h.run("held"); run.Lease.Owner != "" && h.clock.Now().Before(run.Lease.ExpiresAt) {
		t.Fatalf("%s still holds the run until %s", run.Lease.Owner, run.Lease.ExpiresAt)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
