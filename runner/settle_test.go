package runner

import (
	"testing"
	"time"
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
