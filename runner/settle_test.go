package runner

import (
	"context"
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
	<-s.listed
	st, _ := store.SettlerOf(s.visits.Store)
	return st.Settle(ctx, l, seq, release)
}

// A listing read before a pass settled its run, and handed to the loop
// after that pass ended, does not start a second pass: the run is left to
// the next listing, which reads it settled.
func TestAListingOlderThanAPassDoesNotPassTheRunAgain(t *testing.T) {
	h := newHarness(t)
	h.start("waits", large)
	if err := h.r.Submit(ctx, "waits", []byte(small), inputter); err != nil {
		t.Fatal(err)
	}
	s := &staleListing{visits: &visits{Store: h.store, reads: map[string]int{}}, listed: make(chan struct{})}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: s, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(loop) }()
	time.Sleep(200 * time.Millisecond)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
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
