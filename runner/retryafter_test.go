package runner

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// A destination that answers a transient failure with a Retry-After is
// retried no sooner than it asked, up to the runner's bound, and never
// sooner than the contract's backoff; the trace says what it asked and
// what the runner waited. The wait is working time, charged to the run.
func TestRetryWaitsWhatTheDestinationAsks(t *testing.T) {
	for _, c := range []struct {
		name     string
		asked    time.Duration
		bound    time.Duration // Config.MaxRetryAfter
		want     time.Duration // 0: the contract's backoff
		recorded bool          // the trace names the ask
	}{
		{name: "asks longer than the backoff", asked: 3 * time.Second, want: 3 * time.Second, recorded: true},
		{name: "asks shorter than the backoff", asked: 5 * time.Millisecond, recorded: true},
		{name: "asks beyond the default bound", asked: 10 * time.Minute, want: DefaultMaxRetryAfter, recorded: true},
		{name: "asks beyond a bound set lower", asked: 10 * time.Second, bound: 2 * time.Second, want: 2 * time.Second, recorded: true},
		{name: "asks, and the runner ignores asks", asked: 3 * time.Second, bound: -1},
		{name: "asks nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ct, err := control.DefaultContract().Override([]byte(`{"retry":{"base_millis":200,"cap_millis":500}}`))
			if err != nil {
				t.Fatal(err)
			}
			reg := &effect.Registry{}
			if err := reg.Register("refund.pay", "fake/1", h.dest); err != nil {
				t.Fatal(err)
			}
			h.r, err = New(Config{Store: h.store, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Contract: ct,
				MaxRetryAfter: c.bound, Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
			if err != nil {
				t.Fatal(err)
			}
			h.dest.script = transients(1)
			h.dest.retryAfter = c.asked
			h.start("run", small)
			if run := h.run("run"); run.State != "SUCCEEDED" || h.dest.count() != 1 {
				t.Fatalf("run %s, %d mutations", run.State, h.dest.count())
			}
			if got := h.attemptStatuses("run"); len(got) != 2 || got[0] != string(store.AttemptFailedTransient) || got[1] != string(store.AttemptSucceeded) {
				t.Fatalf("attempts %v", got)
			}
			l := h.checkLedger("run")
			ins, _ := h.store.Intents(ctx, "run")
			backoff := time.Duration(control.Jitter(ct.Retry.Backoff(1), l.JitterSeed, ins[0].IdempotencyKey, 1)) * time.Millisecond
			want := max(c.want, backoff)
			var slept time.Duration
			for _, d := range h.clock.slept() {
				slept += d
			}
			if slept != want {
				t.Fatalf("waited %v before the retry (%v), want %v (the contract's backoff is %v)", slept, h.clock.slept(), want, backoff)
			}
			if l.WallMillis < want.Milliseconds() {
				t.Fatalf("wall %d ms: the wait of %v is working time", l.WallMillis, want)
			}
			tr, err := h.store.Trace(ctx, "run")
			if err != nil {
				t.Fatal(err)
			}
			var recs []map[string]any
			for _, r := range tr {
				if r.Kind == "retry_scheduled" {
					var m map[string]any
					if err := json.Unmarshal(r.Body, &m); err != nil {
						t.Fatal(err)
					}
					recs = append(recs, m)
				}
			}
			if len(recs) != 1 {
				t.Fatalf("%d retry_scheduled records", len(recs))
			}
			m := recs[0]
			if m["delay_millis"] != float64(backoff.Milliseconds()) {
				t.Fatalf("record %v: the contract's delay is %v", m, backoff)
			}
			_, named := m["destination_asked_millis"]
			if named != c.recorded {
				t.Fatalf("record %v: names the ask %v, want %v", m, named, c.recorded)
			}
			if c.recorded && (m["destination_asked_millis"] != float64(c.asked.Milliseconds()) || m["wait_millis"] != float64(want.Milliseconds())) {
				t.Fatalf("record %v: asked %v, waited %v", m, c.asked, want)
			}
			if _, ok := m["wait_millis"]; ok != c.recorded {
				t.Fatalf("record %v", m)
			}
		})
	}
}

// rateLimited refuses every request until a time on the fake clock, each
// refusal a 429 asking to come back then; after it, it is the destination.
type rateLimited struct {
	*destination
	clock *fakeClock
	until time.Time
	asked int
}

func (l *rateLimited) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	if now := l.clock.Now(); now.Before(l.until) {
		l.asked++
		return effect.Receipt{Outcome: effect.FailedTransient, Code: "HTTP_429", RetryAfter: l.until.Sub(now)}, nil
	}
	return l.destination.Execute(ctx, in)
}

// A service that rate-limits for ten seconds outlasts the default
// contract's backoff (0.5 + 1 + 2 s, jittered): a runner that ignores its
// ask spends all four attempts on refusals and the run ends
// retry_exhausted with nothing paid; a runner that heeds it pays on the
// second attempt.
func TestRateLimitOutlastingTheBackoff(t *testing.T) {
	for _, c := range []struct {
		bound    time.Duration
		state    string
		attempts int
		paid     int
	}{{bound: -1, state: "RETRY_EXHAUSTED", attempts: 4, paid: 0}, {bound: 0, state: "SUCCEEDED", attempts: 2, paid: 1}} {
		h := newHarness(t)
		limited := &rateLimited{destination: h.dest, clock: h.clock, until: h.clock.Now().Add(10 * time.Second)}
		reg := &effect.Registry{}
		if err := reg.Register("refund.pay", "fake/1", limited); err != nil {
			t.Fatal(err)
		}
		var err error
		h.r, err = New(Config{Store: h.store, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, MaxRetryAfter: c.bound,
			Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		h.start("run", small)
		if run := h.run("run"); run.State != c.state || h.dest.count() != c.paid {
			t.Fatalf("bound %v: run %s, %d paid; want %s, %d", c.bound, run.State, h.dest.count(), c.state, c.paid)
		}
		if got := h.attemptStatuses("run"); len(got) != c.attempts {
			t.Fatalf("bound %v: attempts %v", c.bound, got)
		}
	}
}
