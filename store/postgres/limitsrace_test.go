package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Two slots given back at once with a request waiting for one: two
// newcomers asking at the same instant, on two handles as two processes,
// cannot both pass the waiter; one of them waits behind it. Forty
// rounds, each a limit of its own.
func TestNewcomersDoNotBothPassAWaiter(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{Schema: a.Schema()})
	const hold, queue = time.Minute, 10 * time.Second
	passedBoth := 0
	for round := range 40 {
		name := fmt.Sprintf("deploy-%02d", round)
		s1, ok1, err1 := a.TakeSlot(ctx, name, 2, "h1", hold, queue)
		s2, ok2, err2 := a.TakeSlot(ctx, name, 2, "h2", hold, queue)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			t.Fatalf("round %d: the holders took %v %v (%v %v)", round, ok1, ok2, err1, err2)
		}
		if _, ok, err := a.TakeSlot(ctx, name, 2, "waiter", hold, queue); ok || err != nil {
			t.Fatalf("round %d: the waiter took a slot held twice (%v)", round, err)
		}
		must(t, a.GiveSlot(ctx, name, s1, "h1"))
		must(t, a.GiveSlot(ctx, name, s2, "h2"))
		var wg sync.WaitGroup
		start := make(chan struct{})
		took := make([]bool, 2)
		for i, s := range []*Store{a, b} {
			wg.Go(func() {
				<-start
				_, ok, err := s.TakeSlot(ctx, name, 2, fmt.Sprintf("new-%d", i), hold, queue)
				if err != nil {
					t.Error(err)
				}
				took[i] = ok
			})
		}
		close(start)
		wg.Wait()
		if took[0] && took[1] {
			passedBoth++
		}
		if _, ok, err := a.TakeSlot(ctx, name, 2, "waiter", hold, queue); err != nil || (took[0] && took[1]) == ok {
			t.Fatalf("round %d: newcomers took %v, then the waiter %v (%v)", round, took, ok, err)
		}
	}
	if passedBoth > 0 {
		t.Fatalf("in %d of 40 rounds both newcomers passed the waiter", passedBoth)
	}
}

// Twenty requesters on two handles asking a limit of two for a second
// and a half, each taking, holding a moment and giving back in a loop:
// takes one at a time under the limit's lock fail none (no deadlock, no
// serialization error), never more than two are open, and the limit
// keeps admitting.
func TestSlotsUnderContention(t *testing.T) {
	a := openTest(t, Options{})
	b := openTest(t, Options{Schema: a.Schema()})
	const hold, queue = time.Minute, 5 * time.Second
	var mu sync.Mutex
	open, peak, admitted := 0, 0, 0
	deadline := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range 20 {
		s := []*Store{a, b}[i%2]
		holder := fmt.Sprintf("req-%02d", i)
		wg.Go(func() {
			for time.Now().Before(deadline) {
				slot, ok, err := s.TakeSlot(ctx, "payments", 2, holder, hold, queue)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				mu.Lock()
				open++
				peak = max(peak, open)
				admitted++
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				open--
				mu.Unlock()
				if err := s.GiveSlot(ctx, "payments", slot, holder); err != nil {
					t.Error(err)
					return
				}
			}
			if err := s.LeaveQueue(ctx, "payments", holder); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if peak > 2 || admitted < 20 {
		t.Fatalf("%d admitted, %d open at the peak (at most 2)", admitted, peak)
	}
	t.Logf("%d admitted, %d open at the peak", admitted, peak)
}
