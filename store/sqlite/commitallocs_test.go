package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"

	"flrh.dev/flrh/internal/racebuild"
)

// A step's two commits, a lagging tick and the durable tick that joins
// its transaction, allocate only what their rows need: the request each
// Commit queues is reused (commitReqs) and carries the tick itself, not
// a closure over it, and the timer of the lagging tick's open
// transaction is made once and set again. It fails when a commit
// allocates its request or its work's closure again, a lagging batch
// its timer, or a tick the text of its run's head hash.
func TestCommitStepAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	s.lingerFor = time.Hour
	l := leasedRun(t, s)
	ev := []store.Event{storetest.Ev("E", `{"n":1}`)}
	head := int64(0)
	var failed error
	step := func() {
		for _, lag := range []bool{true, false} {
			if err := s.Commit(ctx, l, store.Tick{ExpectHead: head, Events: ev, MayLag: lag}); err != nil && failed == nil {
				failed = err
			}
			head++
		}
	}
	step()
	n := testing.AllocsPerRun(50, step)
	if failed != nil {
		t.Fatal(failed)
	}
	// What is left: the lagging tick's copy of its events (cloneTick,
	// its arena made again as it fills). The chain hash is kept as its
	// sum and its text written where the run's row is bound
	// (writeRunRow), not made as a string for each tick.
	if n > 1 {
		t.Errorf("%.1f allocations a step of two commits, want at most 1", n)
	}
}
