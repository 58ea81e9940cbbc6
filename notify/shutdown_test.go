package notify

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// stalled has rc answer only once answer is called, saying on arrived
// that a request came; the test's end answers too, so that a failing
// test does not leave the receiver's server waiting.
func stalled(t *testing.T, rc *receiver) (arrived chan struct{}, answer func()) {
	arrived, gate := make(chan struct{}, 16), make(chan struct{})
	rc.stall = func() {
		arrived <- struct{}{}
		<-gate
	}
	answer = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(answer)
	return arrived, answer
}

// stopDuring runs n until a request has reached a stalled receiver,
// then stops it, lets the receiver answer a moment later, and returns
// once Run has: a shutdown with a delivery under way. Run must not
// return before the receiver answered.
func stopDuring(t *testing.T, n *Notifier, arrived chan struct{}, answer func()) {
	t.Helper()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery began")
	}
	stop()
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) with a delivery under way", err)
	case <-time.After(200 * time.Millisecond):
	}
	answer()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once the delivery was answered")
	}
}

// A deliverer told to stop while a receiver has a notice finishes that
// delivery and settles it, and hands back the notices it claimed with it
// and had not begun: due at once to another deliverer, their attempts
// uncounted, not held until the hold passes. The receiver is sent each
// notice once.
func TestShutdownFinishesTheDeliveryUnderWay(t *testing.T) {
	f := newFixture(t)
	arrived, answer := stalled(t, f.rc)
	var want []string
	for i := range 3 {
		want = append(want, f.ended("r"+strconv.Itoa(i)))
	}
	stopDuring(t, f.notifier("a", func(c *Config) { c.Batch = 3 }), arrived, answer)
	if got := f.rc.deliveries(); len(got) != 1 || got[0].id != want[0] || f.seen["delivered"] != 1 {
		t.Fatalf("deliveries %+v, outcomes %v", got, f.seen)
	}
	if f.backlog() != 2 {
		t.Fatalf("backlog %d, want the 2 notices not begun", f.backlog())
	}
	// Due at once: no clock moves.
	f.pass(f.notifier("b", nil), 2)
	if got := f.rc.deliveries(); !slices.Equal(ids(got), want) || got[1].attempt != "1" || got[2].attempt != "1" || f.backlog() != 0 {
		t.Fatalf("deliveries %v (%+v), backlog %d", ids(got), got, f.backlog())
	}
}

// Stopped between routes, a deliverer settles the route it was sending
// to as taken and leaves the next due at once: the next deliverer sends
// the notice to that route alone.
func TestShutdownBetweenRoutes(t *testing.T) {
	f := newFixture(t)
	first, firstRoute := f.route("first", secret)
	second, secondRoute := f.route("second", secret)
	arrived, answer := stalled(t, first)
	id := f.ended("r1")
	routes := []Route{firstRoute, secondRoute}
	stopDuring(t, f.routed("a", routes), arrived, answer)
	if len(first.deliveries()) != 1 || len(second.deliveries()) != 0 {
		t.Fatalf("first took %d, second %d", len(first.deliveries()), len(second.deliveries()))
	}
	b, err := f.store.NoticeBacklog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o := b.Oldest; b.Count != 1 || o.ID != id || !slices.Equal(o.Sent, []string{"first"}) ||
		!slices.Equal(o.Waits, []store.RouteWait{{Route: "second"}}) || o.LastError != "" || b.Held != 0 {
		t.Fatalf("backlog %+v", b)
	}
	f.pass(f.routed("b", routes), 1)
	if len(first.deliveries()) != 1 || len(second.deliveries()) != 1 || second.deliveries()[0].id != id || f.backlog() != 0 {
		t.Fatalf("first took %d, second %d, backlog %d", len(first.deliveries()), len(second.deliveries()), f.backlog())
	}
}
