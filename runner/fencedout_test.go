package runner

import (
	"testing"
	"time"
)

// A runner whose clock lags the store's takes the lease it holds for live
// when the store has already given the run to another runner. Its pass
// finds the newer lease on the run's header and leaves the run to its
// holder: it writes nothing, and it does not park the run (the fencing
// wire, seeing a generation newer than the pass's, would park it for
// everyone, its rightful holder included).
func TestAPassUnderALeaseTakenOverLeavesTheRunToItsHolder(t *testing.T) {
	g, a := startedFoldRig(t) // a holds run "c", resting in INGEST
	g.clock.Advance(time.Minute)
	b := g.runner("other", nil, 1000)
	if moved, err := b.SubmitAdvance(ctx, "c", payment(2), inputter); err != nil || !moved {
		t.Fatalf("the other runner's pass: moved %v, %v", moved, err)
	}
	taken, err := g.st.Run(ctx, "c")
	if err != nil || taken.Lease.Owner != "other" {
		t.Fatalf("run %+v, %v; want it leased to the other runner", taken, err)
	}
	// a's clock is an hour behind: by it, its own lease has long to go.
	a.cfg.Clock = func() time.Time { return g.clock.Now().Add(-time.Hour) }
	a.mu.Lock()
	delete(a.cps, "c") // a pass that reads the run from the store
	a.mu.Unlock()
	if err := a.Submit(ctx, "c", payment(3), inputter); err != nil {
		t.Fatal(err)
	}
	if moved, err := a.Advance(ctx, "c"); moved || err != nil {
		t.Fatalf("the fenced-out runner's pass: moved %v, %v", moved, err)
	}
	after, err := g.st.Run(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if after.Quarantine != "" || after.Head != taken.Head || after.Lease != taken.Lease {
		t.Fatalf("the fenced-out pass changed the run: quarantine %q, head %d (was %d), lease %+v (was %+v)",
			after.Quarantine, after.Head, taken.Head, after.Lease, taken.Lease)
	}
	// Its holder goes on, and takes the input.
	if moved, err := b.Advance(ctx, "c"); err != nil || !moved {
		t.Fatalf("the holder's pass: moved %v, %v", moved, err)
	}
}
