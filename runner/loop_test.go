package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// visits wraps a store the way a server does (to observe commits) and
// counts what the background loop asks of it.
type visits struct {
	store.Store
	mu    sync.Mutex
	live  int
	reads map[string]int // Run and AcquireLease calls by run
}

func (v *visits) Unwrap() store.Store { return v.Store }

func (v *visits) Live(ctx context.Context) ([]string, error) {
	v.mu.Lock()
	v.live++
	v.mu.Unlock()
	return v.Store.Live(ctx)
}

func (v *visits) Run(ctx context.Context, id string) (store.Run, error) {
	v.count(id)
	return v.Store.Run(ctx, id)
}

func (v *visits) AcquireLease(ctx context.Context, id, owner string, ttl time.Duration) (store.Lease, error) {
	v.count(id)
	return v.Store.AcquireLease(ctx, id, owner, ttl)
}

func (v *visits) count(id string) {
	v.mu.Lock()
	v.reads[id]++
	v.mu.Unlock()
}

func (v *visits) snapshot() (int, map[string]int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := map[string]int{}
	for k, n := range v.reads {
		m[k] = n
	}
	return v.live, m
}

// visitedLoop runs a background loop polling every 5 ms over the
// harness's store wrapped in visits, until the test ends.
func (h *harness) visitedLoop() (*Runner, *visits) {
	h.t.Helper()
	v := &visits{Store: h.store, reads: map[string]int{}}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		h.t.Fatal(err)
	}
	r, err := New(Config{Store: v, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Poll: 5 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(loop) }()
	h.t.Cleanup(func() { stop(); <-done })
	return r, v
}

// approvedEnds approves the one request run id waits on through r, and
// waits for the background loop to end the run SUCCEEDED with payments
// made at the destination in all.
func (h *harness) approvedEnds(r *Runner, id string, payments int) {
	h.t.Helper()
	st, err := r.Inspect(ctx, id)
	if err != nil || len(st.Waiting) != 1 {
		h.t.Fatalf("status %+v, %v", st, err)
	}
	if err := r.Approve(ctx, id, st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		h.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.run(id).State != "SUCCEEDED" || h.dest.count() < payments {
		if time.Now().After(deadline) {
			h.t.Fatalf("approved run still in %s with %d payments", h.run(id).State, h.dest.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if h.dest.count() != payments {
		h.t.Fatalf("%d payments, want %d", h.dest.count(), payments)
	}
}

// The background loop, behind a wrapping store, still asks the SQLite
// store which runs are ready: a run waiting for a person is not touched on
// any pass, and is picked up as soon as its approval arrives.
func TestLoopSkipsWaitingRunsBehindAWrapper(t *testing.T) {
	h := newHarness(t)
	h.start("waits", large)
	h.start("done", small)
	if s := h.run("waits").State; s != "WAIT_APPROVAL" {
		t.Fatalf("seeded run is in %s", s)
	}
	r, v := h.visitedLoop()

	time.Sleep(100 * time.Millisecond) // many polls
	live, reads := v.snapshot()
	if live != 0 || len(reads) != 0 {
		t.Fatalf("idle passes listed every live run %d times and read runs %v", live, reads)
	}
	h.approvedEnds(r, "waits", 2)
	if _, reads := v.snapshot(); reads["done"] != 0 {
		t.Fatalf("the loop visited an ended run %d times", reads["done"])
	}
}

// slowVisits is visits whose run reads take a while, as they do with
// thousands of runs on a busy machine.
type slowVisits struct{ *visits }

func (v slowVisits) Run(ctx context.Context, id string) (store.Run, error) {
	time.Sleep(5 * time.Millisecond)
	return v.visits.Run(ctx, id)
}

// A deadline sweep over many resting runs goes a slice per pass: a run
// approved while it is under way is advanced within a few slices, not
// after every resting run has been visited.
func TestApprovalIsNotHeldUpByADeadlineSweep(t *testing.T) {
	h := newHarness(t)
	const resting = 80
	for i := range resting {
		if err := h.r.Start(ctx, fmt.Sprintf("rest-%02d", i), "refunds", "1", []byte(large)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.r.Start(ctx, "target", "refunds", "1", []byte(large)); err != nil {
		t.Fatal(err)
	}
	h.idle()
	v := slowVisits{&visits{Store: h.store, reads: map[string]int{}}}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: v, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Poll: 5 * time.Millisecond, DeadlineSweep: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.lastSweep = time.Now().Add(-time.Hour) // a sweep is due at once
	st, err := r.Inspect(ctx, "target")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(loop) }()
	defer func() { stop(); <-done }()
	for { // the sweep is under way
		if _, reads := v.snapshot(); len(reads) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := r.Approve(ctx, "target", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.run("target").State != "SUCCEEDED" {
		if time.Now().After(deadline) {
			t.Fatal("the approved run was never advanced")
		}
		time.Sleep(time.Millisecond)
	}
	_, reads := v.snapshot()
	visited := 0
	for id := range reads {
		if strings.HasPrefix(id, "rest-") {
			visited++
		}
	}
	if visited > resting/2 {
		t.Fatalf("the approved run waited until %d of %d resting runs were visited", visited, resting)
	}
	t.Logf("advanced after %d of %d resting runs were visited", visited, resting)
}

// A sweep is paced to end within half its interval, a slice of at least
// Parallelism runs per pass.
func TestSweepPace(t *testing.T) {
	cases := []struct {
		runs          int
		poll, sweep   time.Duration
		parallel, per int
	}{
		{3334, 200 * time.Millisecond, 30 * time.Second, 4, 45}, // 75 passes
		{10, 200 * time.Millisecond, 30 * time.Second, 4, 4},
		{0, 200 * time.Millisecond, 30 * time.Second, 4, 4},
		{100, time.Second, time.Second, 4, 100}, // no room to spread: all at once
		{100, 5 * time.Millisecond, time.Second, 2, 2},
	}
	for _, c := range cases {
		r := &Runner{cfg: Config{Poll: c.poll, DeadlineSweep: c.sweep, Parallelism: c.parallel}}
		if got := r.sweepPace(c.runs); got != c.per {
			t.Errorf("%d runs, poll %v, sweep %v: %d per pass, want %d", c.runs, c.poll, c.sweep, got, c.per)
		}
	}
}
