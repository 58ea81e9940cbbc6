package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// A run resting for a person's approval with a new input pending, which
// its state does not take until the approval comes, is passed once and
// settled: the background loop does not pass it again at every poll. The
// approval, an entry after the settled one, wakes it.
func TestARunRestingWithInputItDoesNotTakeIsPassedOnce(t *testing.T) {
	h := newHarness(t)
	h.start("waits", large)
	if s := h.run("waits").State; s != "WAIT_APPROVAL" {
		t.Fatalf("seeded run is in %s", s)
	}
	if err := h.r.Submit(ctx, "waits", []byte(small), inputter); err != nil {
		t.Fatal(err)
	}
	r, v := h.visitedLoop()

	time.Sleep(200 * time.Millisecond) // some forty polls
	_, reads := v.snapshot()
	// One pass: a header read and a lease. Each further pass would add
	// two.
	if n := reads["waits"]; n == 0 || n > 2 {
		t.Fatalf("the loop read or leased the resting run %d times in 40 polls, want one pass", n)
	}
	if run := h.run("waits"); run.State != "WAIT_APPROVAL" || run.Lease.Owner != "" {
		t.Fatalf("the settled run is in %s, leased by %q", run.State, run.Lease.Owner)
	}
	if in, err := h.store.Inbox(ctx, "waits", true); err != nil || len(in) != 1 {
		t.Fatalf("pending inbox %+v, %v; want the input still there", in, err)
	}

	h.approvedEnds(r, "waits", 1)
}

// staleListing hands the loop its second listing of ready runs only once
// the pass the first listing started has ended, holding that pass's
// settling write until the listing was read: the listing then shows the
// run as it was before the pass settled it.
type staleListing struct {
	*visits
	r        *Runner
	calls    int
	listed   chan struct{} // closed once the second listing was read
	waitedOK bool          // the pass had ended when the second listing was handed over
	// settling is closed once a pass came to its settling write.
	settling     chan struct{}
	settlingOnce sync.Once
}

func (s *staleListing) Unwrap() store.Store { return s.visits }

func (s *staleListing) Ready(ctx context.Context, resting []string, due time.Time) ([]string, error) {
	rl, _ := store.ReadyListerOf(s.visits.Store)
	ids, err := rl.Ready(ctx, resting, due)
	if s.calls++; s.calls != 2 {
		return ids, err
	}
	close(s.listed)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.r.mu.Lock()
		busy := s.r.busy["waits"]
		s.r.mu.Unlock()
		if !busy {
			s.waitedOK = true
			break
		}
	}
	return ids, err
}

func (s *staleListing) Settle(ctx context.Context, l store.Lease, seq int64, release bool) error {
	s.settlingOnce.Do(func() { close(s.settling) })
	<-s.listed
	st, _ := store.SettlerOf(s.visits.Store)
	return st.Settle(ctx, l, seq, release)
}

// staleLoop starts a background loop polling every poll over the
// harness's store behind a staleListing, for a run "waits" resting for an
// approval with an input pending; stop ends the loop.
func staleLoop(t *testing.T, h *harness, poll time.Duration) (s *staleListing, r *Runner, stop func()) {
	h.start("waits", large)
	if err := h.r.Submit(ctx, "waits", []byte(small), inputter); err != nil {
		t.Fatal(err)
	}
	s = &staleListing{visits: &visits{Store: h.store, reads: map[string]int{}}, listed: make(chan struct{}), settling: make(chan struct{})}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: s, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Poll: poll})
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	loop, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(loop) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(stop)
	return s, r, stop
}

// A listing read before a pass settled its run, and handed to the loop
// after that pass ended, does not start a second pass: the run is left to
// the next listing, which reads it settled.
func TestAListingOlderThanAPassDoesNotPassTheRunAgain(t *testing.T) {
	h := newHarness(t)
	s, _, stop := staleLoop(t, h, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	stop()
	if !s.waitedOK || s.calls < 3 {
		t.Fatalf("the rig did not hand over a listing older than the pass (waited %v, %d listings)", s.waitedOK, s.calls)
	}
	// One pass: a header read and a lease. A second would add two.
	if _, reads := s.snapshot(); reads["waits"] != 2 {
		t.Fatalf("the loop read or leased the run %d times, want one pass", reads["waits"])
	}
	if in, err := h.store.Inbox(ctx, "waits", true); err != nil || len(in) != 1 {
		t.Fatalf("pending inbox %+v, %v; want the input still there", in, err)
	}
}

// An approval that comes while a pass of its run is under way wakes the
// loop; the listing that wakening reads may come before the pass ends,
// and leaves the run to the next listing, which comes at once: the
// approval is taken without waiting for the next poll (an hour here).
func TestWorkThatCameDuringAPassIsTakenWithoutWaitingForAPoll(t *testing.T) {
	h := newHarness(t)
	s, r, stop := staleLoop(t, h, time.Hour)
	status, err := h.r.Inspect(ctx, "waits")
	if err != nil || len(status.Waiting) != 1 {
		t.Fatalf("status %+v, %v", status, err)
	}
	// The first listing's pass is held at its settling write, having read
	// the inbox, until the second listing is read; the approval's wake
	// brings that listing.
	select {
	case <-s.settling:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop's pass never came to settle the run")
	}
	if err := r.Approve(ctx, "waits", status.Waiting[0].RequestID, approver, time.Hour); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.run("waits").State != "SUCCEEDED" {
		if time.Now().After(deadline) {
			t.Fatalf("the approved run is still in %s after 5 s", h.run("waits").State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if !s.waitedOK {
		t.Fatal("the rig did not hand over a listing older than the pass")
	}
}
