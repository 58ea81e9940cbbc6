package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// listClaimer is a store.Claimer built from Ready and AcquireLease: not one
// statement, but fenced all the same, which is all the runner relies on.
// It records every run it hands out.
type listClaimer struct {
	st      *sqlite.Store
	mu      sync.Mutex
	claimed []string
	resting [][]string
}

func (c *listClaimer) ClaimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, due time.Time) ([]store.Lease, error) {
	ids, err := c.st.Ready(ctx, resting, due)
	if err != nil {
		return nil, err
	}
	var out []store.Lease
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		// Like the PostgreSQL claim, never take a run whose lease is live,
		// even from its own holder (AcquireLease would renew that). Whether
		// it is ready is judged again on this read: the list above may
		// predate a pass that has since brought the run to rest and
		// released it, which one statement (PostgreSQL's claim) never sees.
		run, err := c.st.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		if run.Lease.Owner != "" && run.Lease.ExpiresAt.After(time.Now()) {
			continue
		}
		if slices.Contains(resting, run.State) && (due.IsZero() || run.DueAt.IsZero() || run.DueAt.After(due)) {
			pending, err := c.st.Inbox(ctx, id, true)
			if err != nil {
				return nil, err
			}
			if len(pending) == 0 {
				continue
			}
		}
		l, err := c.st.AcquireLease(ctx, id, owner, ttl)
		if store.CodeOf(err) == store.CodeLeaseHeld {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range out {
		c.claimed = append(c.claimed, l.RunID)
	}
	c.resting = append(c.resting, resting)
	return out, nil
}

func (c *listClaimer) times(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, got := range c.claimed {
		if got == id {
			n++
		}
	}
	return n
}

// flakyStore fails the next fails commits of one run with UNAVAILABLE,
// counting the failures.
type flakyStore struct {
	*sqlite.Store
	run      string
	mu       sync.Mutex
	fails    int
	injected int
}

func (f *flakyStore) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	if l.RunID == f.run {
		f.mu.Lock()
		fail := f.fails > 0
		if fail {
			f.fails--
			f.injected++
		}
		f.mu.Unlock()
		if fail {
			return store.Errorf(store.CodeUnavailable, "commit", l.RunID, nil, "injected")
		}
	}
	return f.Store.Commit(ctx, l, t)
}

func (f *flakyStore) failures() int { f.mu.Lock(); defer f.mu.Unlock(); return f.injected }

// blockingDest applies a mutation only when released (or when its caller
// gives up).
type blockingDest struct {
	*destination
	entered chan struct{}
	release chan struct{}
}

func (b *blockingDest) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return b.destination.Execute(ctx, in)
	case <-ctx.Done():
		return effect.Receipt{}, ctx.Err()
	}
}

type claimHarness struct {
	t    *testing.T
	st   *sqlite.Store
	c    *listClaimer
	dest *destination
}

func newClaimHarness(t *testing.T) *claimHarness {
	t.Helper()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &claimHarness{t: t, st: st, c: &listClaimer{st: st}, dest: newDestination()}
}

// runner is a claiming runner on s sending to adapter, with Drain drain;
// edits change its configuration before it is made.
func (h *claimHarness) runner(s store.Store, adapter effect.Adapter, drain time.Duration, edits ...func(*Config)) *Runner {
	h.t.Helper()
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", adapter); err != nil {
		h.t.Fatal(err)
	}
	cfg := Config{Store: s, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Claimer: h.c, Owner: "claimer",
		Poll: 5 * time.Millisecond, LeaseTTL: time.Minute, Drain: drain, Reconcile: effect.Plan{Backoff: []time.Duration{0}}}
	for _, edit := range edits {
		edit(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// background runs r.Run until the test ends (or stop is called) and
// returns stop, which waits for Run to return.
func background(t *testing.T, r *Runner) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func (h *claimHarness) waitRun(id string, ok func(store.Run) bool) store.Run {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		run, err := h.st.Run(ctx, id)
		if err == nil && ok(run) {
			return run
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("run %s: condition not reached: %+v (%v)", id, run, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A claiming runner advances runs it claims, releases a run that comes to
// rest waiting for a person (so any runner can take it up), asks only for
// runs that are not resting, and is given a resting run again only once it
// has an input.
func TestClaimingRunnerReleasesAtRest(t *testing.T) {
	h := newClaimHarness(t)
	r := h.runner(h.st, h.dest, time.Second)
	background(t, r)
	for i := 0; i < 6; i++ {
		amount := 10
		if i%3 == 0 {
			amount = 500 // above the limit: waits for approval
		}
		mustOK(t, r.Start(ctx, fmt.Sprintf("c-%d", i), "refunds", "1", []byte(fmt.Sprintf(`{"refunds":[{"id":"r%d","amount":%d,"payee":"p"}]}`, i, amount))))
	}
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("c-%d", i)
		if i%3 == 0 {
			run := h.waitRun(id, func(r store.Run) bool { return r.State == "WAIT_APPROVAL" && r.Lease.Owner == "" })
			if run.Lease.Generation != 1 {
				t.Errorf("%s at rest after %d leases, want 1", id, run.Lease.Generation)
			}
		} else {
			h.waitRun(id, func(r store.Run) bool { return r.State == "SUCCEEDED" })
		}
	}
	// Idle for a while: the waiting runs are never claimed again.
	time.Sleep(100 * time.Millisecond)
	for _, id := range []string{"c-0", "c-3"} {
		if n := h.c.times(id); n != 1 {
			t.Errorf("%s claimed %d times while it waited for a person", id, n)
		}
	}
	h.c.mu.Lock()
	for _, rs := range h.c.resting {
		if fmt.Sprint(rs) != fmt.Sprint(restingStates) {
			t.Errorf("claimed with resting states %v, want %v", rs, restingStates)
		}
	}
	h.c.mu.Unlock()
	// An approval is an input: the run is claimed again and finishes.
	st, err := r.Inspect(ctx, "c-0")
	mustOK(t, err)
	mustOK(t, r.Approve(ctx, "c-0", st.Waiting[0].RequestID, approver, time.Hour))
	h.waitRun("c-0", func(r store.Run) bool { return r.State == "SUCCEEDED" })
	if n := h.c.times("c-0"); n != 2 {
		t.Errorf("c-0 claimed %d times, want 2", n)
	}
	if h.dest.count() != 5 {
		t.Errorf("%d mutations, want 5", h.dest.count())
	}
}

// A pass that fails for a passing reason is retried by the same runner,
// under the same lease; one that keeps failing is given up after
// maxPassRetries retries, leaving its lease to lapse rather than released
// for runners to take turns failing on — until the runner stops, which
// gives it back with the leases it holds.
func TestClaimingRunnerRetriesThenLetsTheLeaseLapse(t *testing.T) {
	for _, c := range []struct {
		fails    int
		succeeds bool
		want     int // failed passes
	}{
		{fails: 2, succeeds: true, want: 2},
		{fails: 1000, succeeds: false, want: maxPassRetries + 1},
	} {
		t.Run(fmt.Sprintf("fails=%d", c.fails), func(t *testing.T) {
			h := newClaimHarness(t)
			// The failures hit the passes after the approval.
			flaky := &flakyStore{Store: h.st, run: "x"}
			r := h.runner(flaky, h.dest, time.Second)
			stop := background(t, r)
			mustOK(t, r.Start(ctx, "x", "refunds", "1", []byte(`{"refunds":[{"id":"r","amount":500,"payee":"p"}]}`)))
			h.waitRun("x", func(r store.Run) bool { return r.State == "WAIT_APPROVAL" && r.Lease.Owner == "" })
			flaky.mu.Lock()
			flaky.fails = c.fails
			flaky.mu.Unlock()
			st, err := r.Inspect(ctx, "x")
			mustOK(t, err)
			mustOK(t, r.Approve(ctx, "x", st.Waiting[0].RequestID, approver, time.Hour))
			if c.succeeds {
				run := h.waitRun("x", func(r store.Run) bool { return r.State == "SUCCEEDED" })
				if run.Lease.Generation != 2 {
					t.Errorf("finished at lease generation %d, want 2: retries keep the lease", run.Lease.Generation)
				}
			} else {
				deadline := time.Now().Add(20 * time.Second)
				for flaky.failures() < c.want && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond) // long past the next retry's pause
				run, err := h.st.Run(ctx, "x")
				mustOK(t, err)
				if run.Lease.Owner != "claimer" || run.Lease.Generation != 2 || run.State != "WAIT_APPROVAL" {
					t.Errorf("after giving up the run is %s leased to %q at %d; want its lease left to lapse", run.State, run.Lease.Owner, run.Lease.Generation)
				}
				stop()
				if run, err = h.st.Run(ctx, "x"); err != nil || run.Lease.Owner != "" || run.Lease.Generation != 2 {
					t.Errorf("the stopped runner left the run leased to %q at %d (%v); want its lease given back", run.Lease.Owner, run.Lease.Generation, err)
				}
			}
			if got := flaky.failures(); got != c.want {
				t.Errorf("%d passes failed, want %d", got, c.want)
			}
		})
	}
}

// On shutdown a runner loop, claiming (decision 1011) or polling
// (decision 1907), lets a pass in flight finish within Drain: the effect
// it is sending is applied and recorded, never cut short into an unknown
// outcome. A pass that takes longer is cancelled and its lease released;
// the interrupted effect is reconciled by the next runner, and applied
// once.
func TestRunnerDrainsOnShutdown(t *testing.T) {
	for _, claiming := range []bool{true, false} {
		for _, finish := range []bool{true, false} {
			t.Run(fmt.Sprintf("claiming=%v/finishes=%v", claiming, finish), func(t *testing.T) {
				h := newClaimHarness(t)
				loop := func(adapter effect.Adapter, drain time.Duration) *Runner {
					if claiming {
						return h.runner(h.st, adapter, drain)
					}
					r := h.runner(h.st, adapter, drain, func(c *Config) { c.Claimer, c.Owner = nil, "poller" })
					if r.cfg.Claimer != nil {
						t.Fatal("the SQLite store made the runner a claiming one")
					}
					return r
				}
				bd := &blockingDest{destination: h.dest, entered: make(chan struct{}, 4), release: make(chan struct{})}
				drain := 5 * time.Second
				if !finish {
					drain = 50 * time.Millisecond
				}
				r := loop(bd, drain)
				stop := background(t, r)
				mustOK(t, r.Start(ctx, "d", "refunds", "1", []byte(`{"refunds":[{"id":"r","amount":10,"payee":"p"}]}`)))
				r.Wake()
				<-bd.entered
				stopped := make(chan struct{})
				go func() { stop(); close(stopped) }()
				if finish {
					select {
					case <-stopped:
						t.Fatal("Run returned while its pass was in flight")
					case <-time.After(100 * time.Millisecond):
					}
					close(bd.release)
					<-stopped
					run, err := h.st.Run(ctx, "d")
					mustOK(t, err)
					if run.State != "SUCCEEDED" || h.dest.count() != 1 {
						t.Fatalf("after draining the run is %s with %d mutations, want SUCCEEDED and 1", run.State, h.dest.count())
					}
					return
				}
				select {
				case <-stopped:
				case <-time.After(10 * time.Second):
					t.Fatal("Run did not return after its drain time")
				}
				run, err := h.st.Run(ctx, "d")
				mustOK(t, err)
				if run.Outcome != "" || run.Lease.Owner != "" {
					t.Fatalf("after a cut-short drain the run is %s (%s) leased to %q; want live and released", run.State, run.Outcome, run.Lease.Owner)
				}
				// The next runner reconciles the interrupted attempt and
				// finishes the run.
				close(bd.release)
				next := loop(h.dest, time.Second)
				background(t, next)
				next.Wake()
				h.waitRun("d", func(r store.Run) bool { return r.State == "SUCCEEDED" })
				if h.dest.count() != 1 {
					t.Fatalf("%d mutations, want 1", h.dest.count())
				}
			})
		}
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// With a claimer, a run resting for a person is claimed only once its
// time budget runs out (its due time, recorded with its header by the
// tick that left it resting), and then times out. No sweep visits it.
func TestClaimingLoopTimesOutARestingRun(t *testing.T) {
	b, run := waitingTenSeconds(t)
	if left := run.DueAt.Sub(b.clock.Now()); left <= 9*time.Second || left > 10*time.Second+time.Millisecond {
		t.Fatalf("due at %v, %v from now: want the suspended budget's 10 s from when the run came to rest", run.DueAt, left)
	}
	c := &listClaimer{st: b.store}
	b.r.cfg.Claimer = c
	b.r.cfg.Poll, b.r.cfg.DeadlineSweep = 5*time.Millisecond, time.Hour
	stop := background(t, b.r)
	b.clock.Advance(9 * time.Second)
	time.Sleep(150 * time.Millisecond) // thirty polls
	if n := c.times("run"); n != 0 {
		t.Fatalf("the run was claimed %d times before its due time", n)
	}
	b.clock.Advance(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for b.run("run").State == "WAIT_APPROVAL" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if run := b.run("run"); run.State != "TIMED_OUT" || !run.DueAt.IsZero() {
		t.Fatalf("a resting run past its budget is %s, due at %v", run.State, run.DueAt)
	}
	if n := c.times("run"); n != 1 {
		t.Fatalf("the run was claimed %d times; once its due time came, once is enough", n)
	}
}

// stoppingClaimer stops its runner while a claim is on its way, as a
// SIGTERM arriving mid-claim would, and then behaves as a database does:
// the claim commits whatever became of the caller, and a caller whose
// context was cancelled meanwhile gets an error instead of the reply.
type stoppingClaimer struct {
	*listClaimer
	stop    func()
	once    sync.Once
	claimed int
}

func (c *stoppingClaimer) ClaimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, due time.Time) ([]store.Lease, error) {
	c.once.Do(c.stop)
	ls, err := c.listClaimer.ClaimReady(context.WithoutCancel(ctx), owner, ttl, limit, resting, due)
	c.mu.Lock()
	c.claimed += len(ls)
	c.mu.Unlock()
	if err == nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return ls, err
}

// A claim in flight when the runner is told to stop still hands its leases
// to the runner, which releases them on the way out instead of leaving
// the runs to wait for their leases to lapse; it starts no pass on them.
func TestClaimInFlightAtShutdownIsReleased(t *testing.T) {
	h := newClaimHarness(t)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cl := &stoppingClaimer{listClaimer: h.c, stop: cancel}
	reg := &effect.Registry{}
	mustOK(t, reg.Register("refund.pay", "fake/1", h.dest))
	r, err := New(Config{Store: h.st, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Claimer: cl, Owner: "claimer",
		Poll: 5 * time.Millisecond, LeaseTTL: time.Minute, Drain: time.Second})
	mustOK(t, err)
	mustOK(t, r.Start(ctx, "s-1", "refunds", "1", []byte(`{"refunds":[{"id":"r","amount":10,"payee":"p"}]}`)))
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the runner did not stop")
	}
	if cl.claimed != 1 {
		t.Fatalf("%d runs claimed, want the one started", cl.claimed)
	}
	run, err := h.st.Run(ctx, "s-1")
	mustOK(t, err)
	if run.Lease.Owner != "" {
		t.Errorf("after stopping, the runner still holds s-1 (lease %+v)", run.Lease)
	}
	if run.State != "INIT" || h.dest.count() != 0 {
		t.Errorf("a run claimed during shutdown was advanced: state %s, %d mutations", run.State, h.dest.count())
	}
}

// A deadline sweep's visit that fails after taking the run's lease (the
// store unable to answer for a moment) gives the lease back: the run was not
// claimed, nothing is retried, and neither the runners nor a person's
// answer wait for the lease to lapse — nor does the runner, once stopped,
// leave it held.
func TestAFailedSweepVisitGivesItsLeaseBack(t *testing.T) {
	h := newClaimHarness(t)
	first := h.runner(h.st, h.dest, time.Second)
	stop := background(t, first)
	mustOK(t, first.Start(ctx, "x", "refunds", "1", []byte(`{"refunds":[{"id":"r","amount":500,"payee":"p"}]}`)))
	before := h.waitRun("x", func(r store.Run) bool { return r.State == "WAIT_APPROVAL" && r.Lease.Owner == "" })
	stop()

	// A new runner's first sweep visits the run; its checkpoint read fails.
	r := h.runner(&hooked{Store: h.st, failCP: true}, h.dest, time.Second)
	r.lastSweep = time.Now().Add(-time.Hour) // a sweep is due at once
	stop = background(t, r)
	after := h.waitRun("x", func(r store.Run) bool { return r.Lease.Generation > before.Lease.Generation && r.Lease.Owner == "" })
	stop()
	if after.State != "WAIT_APPROVAL" || after.Lease.Generation != before.Lease.Generation+1 {
		t.Fatalf("after the failed visit the run is %s at lease generation %d (was %d)", after.State, after.Lease.Generation, before.Lease.Generation)
	}
	if n := h.c.times("x"); n != 1 {
		t.Fatalf("the resting run was claimed %d times, want once (its start)", n)
	}
}

// A pass that runs past its lease while its own runner claims the run
// again is fenced; forgetting its stale lease must not forget the one the
// claim just took. Stopped before a pass goes on under that lease, the
// runner gives it back; forgotten, it stayed the store's until it lapsed,
// keeping every runner (and a person's answer) off the run after this
// runner had gone.
func TestAFencedPassKeepsTheLeaseItsRunnerClaimedSince(t *testing.T) {
	h := newClaimHarness(t)
	// The pass stalls once the destination applied the effect, past the
	// call (during which its lease is kept): a pause the lease does not
	// survive, as a stopped process's.
	entered, release := make(chan struct{}, 4), make(chan struct{})
	var stalled sync.Once
	r := h.runner(h.st, h.dest, 10*time.Second, func(c *Config) {
		c.LeaseTTL = 300 * time.Millisecond
		c.Cut = func(point string) {
			if point == "after-apply-before-receipt" {
				stalled.Do(func() { entered <- struct{}{}; <-release })
			}
		}
	})
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	mustOK(t, r.Start(ctx, "p", "refunds", "1", []byte(`{"refunds":[{"id":"r","amount":10,"payee":"p"}]}`)))
	<-entered // the pass stalls under its lease
	deadline := time.Now().Add(20 * time.Second)
	for h.c.times("p") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the run was not claimed again once its lease lapsed")
		}
		time.Sleep(2 * time.Millisecond)
	}
	claimed, err := h.st.Run(ctx, "p")
	mustOK(t, err)
	// Stop the loop, then let the old pass finish: its receipt's commit is
	// fenced by the newer lease, and no pass goes on under that lease.
	cancel()
	close(release)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the runner did not stop")
	}
	run, err := h.st.Run(ctx, "p")
	mustOK(t, err)
	if run.Lease.Owner != "" {
		t.Fatalf("after stopping, the runner still holds p (lease generation %d, claimed at %d, until %s)",
			run.Lease.Generation, claimed.Lease.Generation, run.Lease.ExpiresAt)
	}
	if run.Lease.Generation != claimed.Lease.Generation {
		t.Fatalf("the run's lease generation is %d, want %d (the claim's, given back)", run.Lease.Generation, claimed.Lease.Generation)
	}
	// The next runner reconciles the attempt the fenced pass made and
	// finishes the run; the destination applied it once.
	next := h.runner(h.st, h.dest, time.Second)
	background(t, next)
	next.Wake()
	h.waitRun("p", func(r store.Run) bool { return r.State == "SUCCEEDED" })
	if n := h.dest.count(); n != 1 {
		t.Fatalf("%d mutations, want 1", n)
	}
}
