package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// readyCounter counts how often the store's ready listing names each
// run, and the due times recorded outside a tick.
type readyCounter struct {
	store.Store
	rl     store.ReadyLister
	ds     store.DueSetter
	mu     sync.Mutex
	listed map[string]int
	set    int
}

func (c *readyCounter) SetDue(ctx context.Context, l store.Lease, due time.Time, release bool) error {
	c.mu.Lock()
	c.set++
	c.mu.Unlock()
	return c.ds.SetDue(ctx, l, due, release)
}

func (c *readyCounter) Unwrap() store.Store { return c.Store }

func (c *readyCounter) Ready(ctx context.Context, resting []string, due time.Time) ([]string, error) {
	ids, err := c.rl.Ready(ctx, resting, due)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.listed[id]++
	}
	return ids, err
}

func (c *readyCounter) times(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listed[id]
}

// waitingTenSeconds starts a run whose suspended-time budget is 10 s and
// which rests waiting for an approval (of a payment of 500).
func waitingTenSeconds(t *testing.T) (*budgetRig, store.Run) {
	t.Helper()
	b := newBudgetRig(t, `{"budgets":{"suspended_seconds":10}}`)
	b.pay("run", 0, 500)
	run := b.run("run")
	if run.State != "WAIT_APPROVAL" {
		t.Fatalf("state %s", run.State)
	}
	return b, run
}

// The due time a tick records is the first millisecond past the run's
// suspended-time budget, counted from when it came to rest; a tick that
// leaves a run working, or ended, records none.
func TestATickRecordsItsRunsDueTime(t *testing.T) {
	b, run := waitingTenSeconds(t)
	// Nothing was sent: the run came to rest at the clock's reading, and
	// is due 10 s and 1 ms after it.
	if want := b.clock.Now().Truncate(time.Millisecond).Add(10*time.Second + time.Millisecond); !run.DueAt.Equal(want) {
		t.Fatalf("due at %v, want %v", run.DueAt, want)
	}
	// A millisecond short of it, a pass leaves the run as it is.
	b.clock.Advance(10 * time.Second)
	if _, err := b.r.Advance(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	if after := b.run("run"); after.State != "WAIT_APPROVAL" || !after.DueAt.Equal(run.DueAt) {
		t.Fatalf("a millisecond before its due time: %s, due at %v", after.State, after.DueAt)
	}
	b.clock.Advance(time.Millisecond)
	if _, err := b.r.Advance(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	if run := b.run("run"); run.State != "TIMED_OUT" || !run.DueAt.IsZero() {
		t.Fatalf("after its due time: %s, due at %v", run.State, run.DueAt)
	}
}

// A run whose header was marked due at once, as the migration to due
// times marks every run not ended, is visited, records its checkpoint's
// due time, and is then left alone until that time comes, when it times
// out. The polling loop makes no sweep: the store keeps due times.
func TestARunMarkedDueRecordsItsDueTime(t *testing.T) {
	b, run := waitingTenSeconds(t)
	want := run.DueAt
	if want.IsZero() {
		t.Fatal("no due time recorded for a run resting with a time budget")
	}
	l, err := b.store.AcquireLease(ctx, "run", "migration", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.SetDue(ctx, l, time.Unix(0, 1), true); err != nil {
		t.Fatal(err)
	}
	c := &readyCounter{Store: b.store, rl: b.store, ds: b.store, listed: map[string]int{}}
	b.r.cfg.Store = c
	b.r.cfg.Poll, b.r.cfg.DeadlineSweep = 5*time.Millisecond, time.Hour
	stop := background(t, b.r)
	defer stop()
	deadline := time.Now().Add(5 * time.Second)
	for !b.run("run").DueAt.Equal(want) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := b.run("run").DueAt; !got.Equal(want) {
		t.Fatalf("due at %v, want the checkpoint's %v", got, want)
	}
	n := c.times("run")
	time.Sleep(150 * time.Millisecond) // thirty polls
	if more := c.times("run") - n; more > 1 {
		t.Fatalf("listed %d more times once its due time was recorded", more)
	}
	if s := b.run("run").State; s != "WAIT_APPROVAL" {
		t.Fatalf("state %s before its due time", s)
	}
	b.clock.Advance(11 * time.Second)
	for b.run("run").State == "WAIT_APPROVAL" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s := b.run("run").State; s != "TIMED_OUT" {
		t.Fatalf("state %s after its due time", s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set != 1 {
		t.Fatalf("%d due times recorded outside a tick; the one the migration left wrong is all", c.set)
	}
}

// A run resting for its next input after paying is due as well: the
// receipt's commit, which may lag, records the due time, and the polling
// loop times the run out once it has come.
func TestARunRestingForInputIsDue(t *testing.T) {
	b := newBudgetRig(t, `{"budgets":{"suspended_seconds":10}}`)
	b.pay("run", 0, 10)
	run := b.run("run")
	if run.State != "INGEST" || b.dest.count() != 1 {
		t.Fatalf("state %s after %d payments", run.State, b.dest.count())
	}
	if left := run.DueAt.Sub(b.clock.Now()); left <= 9*time.Second || left > 10*time.Second+time.Millisecond {
		t.Fatalf("due at %v, %v from now", run.DueAt, left)
	}
	b.r.cfg.Poll, b.r.cfg.DeadlineSweep = 5*time.Millisecond, time.Hour
	stop := background(t, b.r)
	defer stop()
	b.clock.Advance(11 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for b.run("run").State == "INGEST" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if run := b.run("run"); run.State != "TIMED_OUT" || b.dest.count() != 1 {
		t.Fatalf("state %s after its due time, %d payments", run.State, b.dest.count())
	}
}

// Against a model: runs come to rest at drawn clock readings, some for
// their next input (paid) and some for an approval, under a drawn
// suspended budget, and the clock moves in drawn steps down to the
// millisecond. At every step the store lists as ready exactly the resting
// runs whose rest has passed their budget (more than the budget's
// milliseconds since they came to rest), and a pass of each times it out.
// Any pass of every run (a new run's start visits them all) times out
// those past their budget as well.
func TestDueTimesListExactlyTheRunsPastTheirBudget(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		budget := rapid.Int64Range(1, 20).Draw(rt, "suspended seconds")
		b := newBudgetRig(t, fmt.Sprintf(`{"budgets":{"suspended_seconds":%d}}`, budget))
		type modelRun struct {
			rest     int64 // the clock reading it came to rest at, in ms
			timedOut bool
		}
		model := map[string]*modelRun{}
		now := func() int64 { return b.clock.Now().UnixMilli() }
		past := func(m *modelRun) bool { return !m.timedOut && now()-m.rest > budget*1000 }
		step := func(d time.Duration) { b.clock.Advance(d) }
		n := 0
		for range rapid.IntRange(1, 12).Draw(rt, "steps") {
			switch rapid.IntRange(0, 2).Draw(rt, "what") {
			case 0: // a new run; its start visits every live run
				for _, m := range model {
					if past(m) {
						m.timedOut = true
					}
				}
				id := fmt.Sprintf("run-%d", n)
				n++
				amount := int64(10)
				if rapid.Bool().Draw(rt, "for approval") {
					amount = 500
				}
				// Each run pays under its own payment id: one idempotency
				// key per logical payment.
				if err := b.r.Start(ctx, id, "counter", "1", []byte(fmt.Sprintf(`{"amount":%d,"id":%q,"payee":"p"}`, amount, id))); err != nil {
					rt.Fatal(err)
				}
				b.idle()
				if s := b.run(id).State; s != "INGEST" && s != "WAIT_APPROVAL" {
					rt.Fatalf("%s is %s after its start", id, s)
				}
				model[id] = &modelRun{rest: now()}
			case 1:
				step(time.Duration(rapid.Int64Range(0, budget*1500).Draw(rt, "ms")) * time.Millisecond)
			case 2:
				step(time.Duration(rapid.SampledFrom([]int64{1, 999, 1000, budget*1000 - 1, budget * 1000}).Draw(rt, "near ms")) * time.Millisecond)
			}
			listed, err := b.store.Ready(ctx, restingStates, b.clock.Now())
			if err != nil {
				rt.Fatal(err)
			}
			for id, m := range model {
				if got, want := slices.Contains(listed, id), past(m); got != want {
					r := b.run(id)
					rt.Fatalf("%s, at rest since %d ms, %d ms later: listed %v, want %v (budget %d s); %s due at %d", id, m.rest, now()-m.rest, got, want, budget, r.State, r.DueAt.UnixMilli())
				}
			}
			for _, id := range listed {
				if _, err := b.r.Advance(ctx, id); err != nil {
					rt.Fatal(err)
				}
				model[id].timedOut = true
			}
			for id, m := range model {
				if s := b.run(id).State; (s == "TIMED_OUT") != m.timedOut {
					rt.Fatalf("%s is %s; timed out by the model: %v", id, s, m.timedOut)
				}
			}
		}
	})
}
