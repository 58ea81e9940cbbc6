package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// fakeClock is the runner's clock in tests: it moves only when told to,
// or when the runner sleeps out a backoff on it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	// Near the real time: the store checks approval expiry with its own clock.
	return &fakeClock{now: time.Now().UTC().Truncate(time.Second)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// slowAdapter is a destination that takes its time: each Execute moves the
// fake clock by the next delay (the last one repeats).
type slowAdapter struct {
	*destination
	clock  *fakeClock
	delays []time.Duration
}

func (s *slowAdapter) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	if len(s.delays) > 0 {
		s.clock.Advance(s.delays[0])
		if len(s.delays) > 1 {
			s.delays = s.delays[1:]
		}
	}
	return s.destination.Execute(ctx, in)
}

// budgetRig is a runner over the counter workflow (every input asks for one
// payment, nothing ever completes) governed by an overridden contract.
type budgetRig struct {
	*harness
	slow *slowAdapter
}

func newBudgetRig(t *testing.T, override string, workflows ...Workflow) *budgetRig {
	t.Helper()
	h := newHarness(t)
	c, err := control.DefaultContract().Override([]byte(override))
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowAdapter{destination: h.dest, clock: h.clock}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", slow); err != nil {
		t.Fatal(err)
	}
	if len(workflows) == 0 {
		workflows = []Workflow{counter{refunds{limit: 100}}}
	}
	h.r, err = New(Config{Store: h.store, Workflows: workflows, Adapters: reg, Contract: c,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return &budgetRig{harness: h, slow: slow}
}

var payer = Actor{Name: "shop", Role: "agent", Capability: "run.input"}

// pay submits one payment request to a counter run (starting it first).
func (b *budgetRig) pay(run string, i int, amount int64) {
	b.t.Helper()
	body := []byte(fmt.Sprintf(`{"amount":%d,"id":"p%d","payee":"p"}`, amount, i))
	var err error
	if i == 0 {
		err = b.r.Start(ctx, run, "counter", "1", body)
	} else {
		err = b.r.Submit(ctx, run, body, payer)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	b.idle()
}

// ledgerOf reads the budget ledger from the run's stored checkpoint.
func (h *harness) ledgerOf(run string) budgetLedger {
	h.t.Helper()
	cp, err := h.store.Checkpoint(ctx, run)
	if err != nil {
		h.t.Fatal(err)
	}
	var body struct {
		Budget *budgetLedger `json:"budget"`
	}
	if err := json.Unmarshal(cp.Body, &body); err != nil || body.Budget == nil {
		h.t.Fatalf("checkpoint without a budget ledger: %v %s", err, cp.Body)
	}
	return *body.Budget
}

// attemptCount counts the run's attempt rows.
func (h *harness) attemptCount(run string) int64 {
	h.t.Helper()
	ins, err := h.store.Intents(ctx, run)
	if err != nil {
		h.t.Fatal(err)
	}
	var n int64
	for _, in := range ins {
		ats, err := h.store.Attempts(ctx, in.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		n += int64(len(ats))
	}
	return n
}

// checkLedger holds the ledger to the record: counters equal what the store
// shows, and wall plus suspended time is exactly the span of the readings.
func (h *harness) checkLedger(run string) budgetLedger {
	h.t.Helper()
	l := h.ledgerOf(run)
	st, err := h.r.Inspect(ctx, run)
	if err != nil {
		h.t.Fatal(err)
	}
	if l.Steps != st.Accepted {
		h.t.Fatalf("ledger counts %d steps, the run accepted %d inputs", l.Steps, st.Accepted)
	}
	if n := h.attemptCount(run); l.ToolCalls != n {
		h.t.Fatalf("ledger counts %d tool calls, the store holds %d attempts", l.ToolCalls, n)
	}
	if l.WallMillis+l.SuspendMillis != l.ClockMillis-l.StartedMillis || l.WallMillis < 0 || l.SuspendMillis < 0 {
		h.t.Fatalf("time does not add up: %+v", l)
	}
	return l
}

func TestStepBudget(t *testing.T) {
	// Each payment is two steps: the request and its receipt.
	for _, tc := range []struct {
		name     string
		payments int
		state    string
		steps    int64
	}{
		{"under", 2, "INGEST", 4},
		{"at", 3, "INGEST", 6},
		{"over", 4, "BUDGET_EXHAUSTED", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudgetRig(t, `{"budgets":{"steps":6}}`)
			for i := 0; i < tc.payments; i++ {
				b.pay("run", i, 10)
			}
			run := b.run("run")
			l := b.checkLedger("run")
			if run.State != tc.state || l.Steps != tc.steps {
				t.Fatalf("state %s with %d steps, want %s with %d", run.State, l.Steps, tc.state, tc.steps)
			}
			if tc.state == "BUDGET_EXHAUSTED" {
				want := budgetBreach{Dimension: control.DimSteps, Limit: 6, Used: 6, Requested: 1, Event: "BUDGET_EXHAUSTED", State: "INGEST"}
				if run.Outcome != "budget_exhausted" || l.Breach == nil || *l.Breach != want {
					t.Fatalf("outcome %s breach %+v", run.Outcome, l.Breach)
				}
				if b.dest.count() != 3 {
					t.Fatalf("%d payments, the budget allowed 3", b.dest.count())
				}
				st, err := b.r.Inspect(ctx, "run")
				if err != nil || st.Budget == nil || st.Budget.Used.Steps != 6 || st.Budget.Limits.Steps != 6 ||
					st.Budget.Breach != "steps: 6 used + 1 requested over the limit of 6 (BUDGET_EXHAUSTED in INGEST)" {
					t.Fatalf("status budget %+v, %v", st.Budget, err)
				}
			} else if l.Breach != nil {
				t.Fatalf("breach %+v under the limit", l.Breach)
			}
		})
	}
}

func TestToolCallBudget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		payments  int
		transient int // transient failures the destination answers first
		state     string
		calls     int64
		mutations int
		tail      string
	}{
		{"under", 2, 0, "INGEST", 2, 2, "MORE_WORK"},
		{"at", 3, 0, "INGEST", 3, 3, "MORE_WORK"},
		{"over: refused at planning", 4, 0, "BUDGET_EXHAUSTED", 3, 3, "EPOCH_STABLE BUDGET_EXHAUSTED"},
		// Retries are tool calls: the third failure leaves no call for a
		// retry; the destination is asked, the effect closed, then the
		// deferred interrupt honoured.
		{"over: no call left to retry", 1, 3, "BUDGET_EXHAUSTED", 3, 0, "BUDGET_EXHAUSTED ATTEMPT_RECORDED EFFECT_RESULT_CONFIRMED PENDING_BUDGET_EXHAUSTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudgetRig(t, `{"budgets":{"tool_calls":3}}`)
			for i := 0; i < tc.transient; i++ {
				b.dest.script = append(b.dest.script, effect.FailedTransient)
			}
			for i := 0; i < tc.payments; i++ {
				b.pay("run", i, 10)
			}
			run := b.run("run")
			l := b.checkLedger("run")
			if run.State != tc.state || l.ToolCalls != tc.calls || b.dest.count() != tc.mutations {
				t.Fatalf("state %s, %d calls, %d mutations; want %s, %d, %d", run.State, l.ToolCalls, b.dest.count(), tc.state, tc.calls, tc.mutations)
			}
			if path := strings.Join(b.transitions("run"), " "); !strings.HasSuffix(path, tc.tail) {
				t.Fatalf("path %s, want it to end %s", path, tc.tail)
			}
			if l.ToolCalls > l.Limits.ToolCalls {
				t.Fatalf("%d tool calls over the limit %d", l.ToolCalls, l.Limits.ToolCalls)
			}
		})
	}
}

func TestWallTimeBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		work  time.Duration // how long the destination takes
		state string
	}{
		{"under", 9 * time.Second, "INGEST"},
		{"at", 10 * time.Second, "INGEST"},
		{"over", 10*time.Second + time.Millisecond, "TIMED_OUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudgetRig(t, `{"budgets":{"wall_seconds":10}}`)
			b.slow.delays = []time.Duration{tc.work}
			b.pay("run", 0, 10)
			run := b.run("run")
			l := b.checkLedger("run")
			if run.State != tc.state || l.WallMillis != tc.work.Milliseconds() || l.SuspendMillis != 0 {
				t.Fatalf("state %s, ledger %+v; want %s after %v of work", run.State, l, tc.state, tc.work)
			}
			if tc.state != "TIMED_OUT" {
				return
			}
			// The effect was in flight: the timeout waits for its receipt.
			want := budgetBreach{Dimension: control.DimWallSeconds, Limit: 10, Used: 11, Event: "TIMEOUT", State: "RECONCILE"}
			if run.Outcome != "timeout" || l.Breach == nil || *l.Breach != want || b.dest.count() != 1 {
				t.Fatalf("outcome %s breach %+v mutations %d", run.Outcome, l.Breach, b.dest.count())
			}
			if path := strings.Join(b.transitions("run"), " "); !strings.HasSuffix(path, "ATTEMPT_RECORDED TIMEOUT EFFECT_RESULT_CONFIRMED PENDING_TIMEOUT") {
				t.Fatalf("path %s", path)
			}
			rcs, _ := b.store.Receipts(ctx, "run")
			if len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" {
				t.Fatalf("receipts %+v", rcs)
			}
		})
	}
}

func TestSuspendedTimeBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wait  time.Duration // how long the approval takes
		state string
	}{
		{"under", 99 * time.Second, "INGEST"},
		{"at", 100 * time.Second, "INGEST"},
		{"over", 100*time.Second + time.Millisecond, "TIMED_OUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudgetRig(t, `{"budgets":{"suspended_seconds":100,"wall_seconds":1}}`)
			b.pay("run", 0, 500) // above the limit: waits for a person
			if s := b.run("run").State; s != "WAIT_APPROVAL" {
				t.Fatalf("state %s", s)
			}
			b.clock.Advance(tc.wait)
			st, _ := b.r.Inspect(ctx, "run")
			if err := b.r.Approve(ctx, "run", st.Waiting[0].RequestID, approver, time.Hour); err != nil {
				t.Fatal(err)
			}
			b.idle()
			run := b.run("run")
			l := b.checkLedger("run")
			if run.State != tc.state || l.SuspendMillis != tc.wait.Milliseconds() || l.WallMillis != 0 {
				t.Fatalf("state %s, ledger %+v; want %s after waiting %v", run.State, l, tc.state, tc.wait)
			}
			if tc.state == "TIMED_OUT" {
				want := budgetBreach{Dimension: control.DimSuspendedSeconds, Limit: 100, Used: 101, Event: "TIMEOUT", State: "WAIT_APPROVAL"}
				if run.Outcome != "timeout" || l.Breach == nil || *l.Breach != want || b.dest.count() != 0 {
					t.Fatalf("outcome %s breach %+v mutations %d", run.Outcome, l.Breach, b.dest.count())
				}
			} else if b.dest.count() != 1 {
				t.Fatalf("approved payment not made: %d", b.dest.count())
			}
		})
	}
}

func TestRetryBackoffFollowsTheContract(t *testing.T) {
	b := newBudgetRig(t, `{"retry":{"base_millis":200,"cap_millis":500}}`)
	b.dest.script = []effect.Outcome{effect.FailedTransient, effect.FailedTransient, effect.FailedTransient}
	b.pay("run", 0, 10)
	if b.dest.count() != 1 || b.attemptCount("run") != 4 {
		t.Fatalf("%d mutations, %d attempts", b.dest.count(), b.attemptCount("run"))
	}
	l := b.checkLedger("run")
	c := b.r.contractFor(counter{})
	ins, _ := b.store.Intents(ctx, "run")
	var want []time.Duration
	for n := int64(1); n <= 3; n++ {
		base := c.Retry.Backoff(n)
		d := control.Jitter(base, l.JitterSeed, ins[0].IdempotencyKey, n)
		if d < base-base/2 || d > base {
			t.Fatalf("delay %d outside [%d, %d]", d, base-base/2, base)
		}
		want = append(want, time.Duration(d)*time.Millisecond)
	}
	if got := b.clock.slept(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slept %v, the contract says %v (bases 200, 400, 500)", got, want)
	}
	var total time.Duration
	for _, d := range want {
		total += d
	}
	if l.WallMillis != total.Milliseconds() {
		t.Fatalf("backoff is working time: wall %d ms, slept %v", l.WallMillis, total)
	}
}

func TestUnknownOutcomeIsNeverRetriedBlindly(t *testing.T) {
	// Applied, the answer lost: the lookup finds it; no second send.
	b := newBudgetRig(t, `{}`)
	b.dest.script = []effect.Outcome{effect.Unknown}
	b.pay("run", 0, 10)
	if b.dest.count() != 1 || b.attemptCount("run") != 1 || len(b.clock.slept()) != 0 {
		t.Fatalf("%d mutations, %d attempts, slept %v", b.dest.count(), b.attemptCount("run"), b.clock.slept())
	}
	// Not applied (a transient failure reported as unknown would be
	// confirmed not applied): only then a retry, after the backoff.
	b2 := newBudgetRig(t, `{}`)
	b2.dest.script = []effect.Outcome{effect.FailedTransient}
	b2.pay("run", 0, 10)
	if b2.dest.count() != 1 || b2.attemptCount("run") != 2 || len(b2.clock.slept()) != 1 {
		t.Fatalf("%d mutations, %d attempts, slept %v", b2.dest.count(), b2.attemptCount("run"), b2.clock.slept())
	}
}

func TestBudgetsWithDeferredInterrupts(t *testing.T) {
	// An unknown outcome no lookup resolves: the run waits for a person in
	// HUMAN_RECONCILIATION, where interrupts are deferred. A timeout and a
	// cancel both arrive; both wait for the effect; the first pending one
	// in the ledger's order is honoured.
	b := newBudgetRig(t, `{"budgets":{"suspended_seconds":60}}`)
	b.dest.script = []effect.Outcome{effect.Unknown}
	b.dest.lookupErr = true
	b.pay("run", 0, 10)
	if s := b.run("run").State; s != "HUMAN_RECONCILIATION" {
		t.Fatalf("state %s", s)
	}
	b.clock.Advance(61 * time.Second)
	b.idle()
	cp, _ := b.store.Checkpoint(ctx, "run")
	if s := b.run("run").State; s != "HUMAN_RECONCILIATION" || !strings.Contains(string(cp.Body), `"pending_interrupts":["TIMEOUT"]`) {
		t.Fatalf("timeout not deferred: %s", s)
	}
	// The breach is recorded: nothing is due by the clock any more, or
	// every poll would list the run again for a timeout already issued.
	if due := b.run("run").DueAt; !due.IsZero() {
		t.Fatalf("due at %v with its timeout deferred", due)
	}
	if err := b.r.Cancel(ctx, "run", "stop", requester); err != nil {
		t.Fatal(err)
	}
	b.idle()
	cp, _ = b.store.Checkpoint(ctx, "run")
	if !strings.Contains(string(cp.Body), `"pending_interrupts":["CANCEL","TIMEOUT"]`) {
		t.Fatalf("cancel not deferred beside the timeout: %s", cp.Body)
	}
	st, _ := b.r.Inspect(ctx, "run")
	if err := b.r.Reconcile(ctx, "run", st.Unknown[0], "confirmed_success", reconciler); err != nil {
		t.Fatal(err)
	}
	b.idle()
	run := b.run("run")
	l := b.checkLedger("run")
	if run.State != "CANCELED" || l.Breach == nil || l.Breach.Event != "TIMEOUT" || l.Breach.State != "HUMAN_RECONCILIATION" || b.dest.count() != 1 {
		t.Fatalf("state %s breach %+v mutations %d", run.State, l.Breach, b.dest.count())
	}
	if path := strings.Join(b.transitions("run"), " "); !strings.HasSuffix(path, "OUTCOME_UNKNOWN TIMEOUT CANCEL HUMAN_RECEIPT_CONFIRMED PENDING_CANCEL") {
		t.Fatalf("path %s", path)
	}
}

func TestNoProgressAndStepBudgetTogether(t *testing.T) {
	// chooser never makes progress: the plateau detector ends it after its
	// window (3 rounds) unless the step budget ends it first.
	for _, tc := range []struct {
		steps int64
		state string
	}{{2, "BUDGET_EXHAUSTED"}, {3, "NO_PROGRESS"}, {10, "NO_PROGRESS"}} {
		t.Run(fmt.Sprint(tc.steps), func(t *testing.T) {
			b := newBudgetRig(t, fmt.Sprintf(`{"budgets":{"steps":%d}}`, tc.steps), chooser{})
			if err := b.r.Start(ctx, "run", "chooser", "1", []byte(`{"x":0}`)); err != nil {
				t.Fatal(err)
			}
			b.idle()
			for i := 1; i < 5 && b.run("run").Outcome == ""; i++ {
				if err := b.r.Submit(ctx, "run", []byte(fmt.Sprintf(`{"x":%d}`, i)), payer); err != nil {
					t.Fatal(err)
				}
				b.idle()
			}
			l := b.checkLedger("run")
			if s := b.run("run").State; s != tc.state || l.Steps > tc.steps {
				t.Fatalf("state %s after %d steps, want %s within %d", s, l.Steps, tc.state, tc.steps)
			}
		})
	}
}

// TestBudgetsAreNeverExceededBeyondTheContract drives random runs —
// payments, slow destinations, transient failures, people taking their
// time — under random budgets, and holds every run to them: tool calls
// never exceed their limit (reserved before dispatch); steps exceed theirs
// by at most the one receipt owed for an effect in flight; time over a
// limit has ended the run TIMEOUT (or another budget ended it first); and
// the ledger always equals the record.
func TestBudgetsAreNeverExceededBeyondTheContract(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		steps := rapid.Int64Range(1, 12).Draw(rt, "steps")
		calls := rapid.Int64Range(1, 8).Draw(rt, "tool_calls")
		wall := rapid.Int64Range(1, 30).Draw(rt, "wall_seconds")
		susp := rapid.Int64Range(1, 60).Draw(rt, "suspended_seconds")
		b := newBudgetRig(t, fmt.Sprintf(`{"budgets":{"steps":%d,"tool_calls":%d,"wall_seconds":%d,"suspended_seconds":%d},"retry":{"base_millis":100,"cap_millis":400}}`,
			steps, calls, wall, susp))
		n := rapid.IntRange(1, 8).Draw(rt, "actions")
		for i := 0; i < n && b.run1() == ""; i++ {
			b.clock.Advance(time.Duration(rapid.Int64Range(0, 20_000).Draw(rt, "idle_ms")) * time.Millisecond)
			b.slow.delays = []time.Duration{time.Duration(rapid.Int64Range(0, 8_000).Draw(rt, "work_ms")) * time.Millisecond}
			for k := rapid.IntRange(0, 2).Draw(rt, "transient"); k > 0; k-- {
				b.dest.script = append(b.dest.script, effect.FailedTransient)
			}
			b.pay("run", i, 10)
		}
		b.idle() // a pass that finds the run over a limit ends it
		l := b.checkLedger("run")
		run := b.run("run")
		if l.ToolCalls > l.Limits.ToolCalls {
			rt.Fatalf("%d tool calls, limit %d", l.ToolCalls, l.Limits.ToolCalls)
		}
		if l.Steps > l.Limits.Steps+1 {
			rt.Fatalf("%d steps, limit %d", l.Steps, l.Limits.Steps)
		}
		u := l.usage()
		if (u.WallSeconds > l.Limits.WallSeconds || u.SuspendedSeconds > l.Limits.SuspendedSeconds) && run.Outcome != "timeout" &&
			(l.Breach == nil || l.Breach.Event == "TIMEOUT") {
			rt.Fatalf("time over its limit (%+v) but the run is %s, breach %+v", u, run.State, l.Breach)
		}
		if (run.Outcome == "timeout" || run.Outcome == "budget_exhausted") != (l.Breach != nil) {
			rt.Fatalf("outcome %q with breach %+v", run.Outcome, l.Breach)
		}
		if l.Breach != nil && l.Breach.Used+l.Breach.Requested <= l.Breach.Limit {
			rt.Fatalf("a breach that is not over its limit: %+v", l.Breach)
		}
	})
}

// run1 is the outcome of the rig's run, "" while it lives (or before it
// starts).
func (b *budgetRig) run1() string {
	r, err := b.store.Run(ctx, "run")
	if store.CodeOf(err) == store.CodeNotFound {
		return ""
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return r.Outcome
}

func TestBackoffLongerThanTheLeaseKeepsTheLease(t *testing.T) {
	// A lease of 300 ms and a first backoff of 250–500 ms: the pass renews
	// its lease while it waits, and its next commit is not fenced.
	h := newHarness(t)
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
		t.Fatal(err)
	}
	var err error
	h.r, err = New(Config{Store: h.store, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, LeaseTTL: 300 * time.Millisecond,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	h.dest.script = []effect.Outcome{effect.FailedTransient}
	h.start("run", small)
	if s := h.run("run").State; s != "SUCCEEDED" || h.attemptCount("run") != 2 {
		t.Fatalf("state %s, %d attempts", s, h.attemptCount("run"))
	}
	if slept := h.clock.slept(); len(slept) < 2 {
		t.Fatalf("the backoff was not sliced under the lease: %v", slept)
	}
}

func TestBackgroundLoopTimesOutARestingRun(t *testing.T) {
	// The run waits for an approval that never comes; nothing in its inbox
	// makes it ready. Its due time, recorded with its header, lists it once
	// it is past its budget.
	b := newBudgetRig(t, `{"budgets":{"suspended_seconds":10}}`)
	b.pay("run", 0, 500)
	if s := b.run("run").State; s != "WAIT_APPROVAL" {
		t.Fatalf("state %s", s)
	}
	b.r.cfg.Poll, b.r.cfg.DeadlineSweep = 5*time.Millisecond, 20*time.Second
	b.clock.Advance(11 * time.Second)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.r.Run(runCtx) }()
	deadline := time.Now().Add(30 * time.Second)
	for b.run("run").State == "WAIT_APPROVAL" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		b.clock.Advance(2 * time.Second)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if run := b.run("run"); run.State != "TIMED_OUT" {
		t.Fatalf("a resting run past its budget is still %s", run.State)
	}
}

// An attempt number changed behind the store's back does not size an
// allocation: a run resumed after a crash with its attempt in flight,
// whose attempt row now says it is attempt 2^24, spends its retries (the
// number is past every limit) with the attempt ledger sized by the rows it
// read. (Sized by the number, an attempt 2^31 ran the process out of
// memory.)
func TestAnAttemptNumberChangedBehindTheStoreSizesNoAllocation(t *testing.T) {
	h := newHarness(t)
	h.crashAt("after-intent-commit", "run", small)
	if _, err := h.store.DB().Exec(`UPDATE attempts SET n = ?`, 1<<24); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour) // the dead runner's lease lapses
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := h.runner(nil)
	r.RunToIdle(ctx) // what becomes of the run is the tamper tests'; here, what it costs
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("resuming the run allocated %d MiB", grew>>20)
	}
}
