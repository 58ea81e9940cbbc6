package verify

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// stepClock is a fake clock: it moves only when told to.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
func (c *stepClock) Sleep(_ context.Context, d time.Duration) error { c.Advance(d); return nil }

// timedOut records a run that ends TIMEOUT: a large refund waits for an
// approval longer than the suspended-time budget. The fake clock starts
// at start; two recordings with the same start are the same run.
func timedOut(t *testing.T, start time.Time) string {
	t.Helper()
	clock := &stepClock{now: start}
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := control.DefaultContract().Override([]byte(`{"budgets":{"suspended_seconds":60}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &payments{applied: map[string]string{}})
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Contract: c, Owner: "t",
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "slow", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"b","amount":500,"payee":"bob","reason":"y"}]}`)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(1500 * time.Millisecond)
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(60*time.Second + time.Millisecond)
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if run, _ := st.Run(ctx, "slow"); run.State != "TIMED_OUT" || run.Outcome != "timeout" {
		t.Fatalf("run is %s (%s)", run.State, run.Outcome)
	}
	return path
}

func TestTimedOutRunVerifiesAndReplays(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := open(t, timedOut(t, start), true), open(t, timedOut(t, start), true)
	rep, err := Run(ctx, a, nil, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("findings: %+v", rep.Findings)
	}
	rp, err := Replay(ctx, a, wf, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if !rp.OK() || rp.Inputs != 1 {
		t.Fatalf("replay: %+v", rp)
	}
	// The same run under the same clock is the same record, byte for byte.
	record := func(st *sqlite.Store) []byte {
		var buf bytes.Buffer
		evs, _ := st.Events(ctx, "slow", 0)
		for _, e := range evs {
			fmt.Fprintf(&buf, "%s %s\n", e.Kind, e.Body)
		}
		cp, _ := st.Checkpoint(ctx, "slow")
		buf.Write(cp.Body)
		tr, _ := st.Trace(ctx, "slow")
		for _, r := range tr {
			fmt.Fprintf(&buf, "\n%s %s", r.Kind, r.Body)
		}
		return buf.Bytes()
	}
	ra, rb := record(a), record(b)
	if !bytes.Equal(ra, rb) {
		t.Fatalf("two recordings differ at byte %d", firstDiff(ra, rb))
	}
	// The ledger opens at the run's first pass, 1.5 s after it was created.
	for _, want := range []string{`"breach":{"dimension":"suspended_seconds","event":"TIMEOUT","limit":60,"requested":0,"state":"WAIT_APPROVAL","used":61}`,
		`"suspended_millis":60001`, `"started_millis":1767323046500`} {
		if !bytes.Contains(ra, []byte(want)) {
			t.Fatalf("the record lacks %s:\n%s", want, ra)
		}
	}
}

// forgeLedger rewrites the run's latest checkpoint (and its digest), as an
// attacker with file access could.
func forgeLedger(t *testing.T, path, run, from, to string) {
	t.Helper()
	st := open(t, path, false)
	cp, err := st.Checkpoint(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cp.Body), from) {
		t.Fatalf("checkpoint has no %s: %s", from, cp.Body)
	}
	body := strings.Replace(string(cp.Body), from, to, 1)
	for _, s := range []string{"DROP TRIGGER IF EXISTS checkpoints_no_update"} {
		if _, err := st.DB().Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.DB().Exec(`UPDATE checkpoints SET body = ?, digest = ? WHERE run_id = ? AND seq = ?`, []byte(body), store.BodyDigest([]byte(body)), run, cp.Seq); err != nil {
		t.Fatal(err)
	}
}

func TestForgedLedgersAreFound(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct{ name, from, to, want string }{
		{"time that does not add up", `"suspended_millis":60001`, `"suspended_millis":59000`, "budget-time"},
		{"steps miscounted", `"steps":1`, `"steps":0`, "budget-count"},
		{"tool calls miscounted", `"tool_calls":0,"wall_millis"`, `"tool_calls":2,"wall_millis"`, "budget-count"},
		{"breach erased", `"breach":{"dimension":"suspended_seconds","event":"TIMEOUT","limit":60,"requested":0,"state":"WAIT_APPROVAL","used":61}`, `"breach":null`, "budget-breach"},
		{"breach within its limit", `"used":61}`, `"used":60}`, "budget-breach"},
		{"breach of the wrong kind", `"dimension":"suspended_seconds","event":"TIMEOUT"`, `"dimension":"steps","event":"TIMEOUT"`, "budget-breach"},
		{"limit raised after the fact", `"suspended_seconds":60,"tokens"`, `"suspended_seconds":100,"tokens"`, "budget-breach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := timedOut(t, start)
			forgeLedger(t, path, "slow", tc.from, tc.to)
			if got := findings(t, path, "slow"); !strings.Contains(got, tc.want) {
				t.Fatalf("forgery not found as %s; findings:\n%s", tc.want, got)
			}
		})
	}
}

func TestHonestRunsHaveConsistentLedgers(t *testing.T) {
	// recorded() uses the real clock; its runs' ledgers must hold too.
	path := recorded(t)
	st := open(t, path, true)
	for _, id := range []string{"small", "large"} {
		cp, err := st.Checkpoint(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cp.Body), `"budget":{`) {
			t.Fatalf("%s: no ledger in %s", id, cp.Body)
		}
		if got := findings(t, path, id); got != "" {
			t.Fatalf("%s: %s", id, got)
		}
	}
}

// flaky is a destination that fails transiently until it has been called
// failFor times, and whose lookups confirm that nothing was applied (or,
// with lookupUnknown, cannot say).
type flaky struct {
	payments
	calls, failFor int
	lookupUnknown  bool
}

func (f *flaky) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	f.calls++
	if f.calls <= f.failFor {
		return effect.Receipt{Outcome: effect.FailedTransient, Code: "HTTP_503"}, nil
	}
	return f.payments.Execute(ctx, in)
}

func (f *flaky) Lookup(_ context.Context, key, _ string) (effect.LookupResult, error) {
	if _, ok := f.applied[key]; ok || f.lookupUnknown {
		return effect.LookupResult{Status: effect.StillUnknown}, nil
	}
	ev := []byte(fmt.Sprintf(`{"not_applied":%q}`, key))
	return effect.LookupResult{Status: effect.ConfirmedFailure, Code: "NOT_APPLIED", Evidence: ev, EvidenceDigest: store.BodyDigest(ev)}, nil
}

// retried records one small refund against a destination that fails
// transiently failFor times, under the default contract (4 attempts), and
// returns the database path and the run's state.
func retried(t *testing.T, failFor int) (string, string) {
	t.Helper()
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &flaky{payments: payments{applied: map[string]string{}}, failFor: failFor})
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "t",
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "flaky", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"a","amount":5,"payee":"alice","reason":"x"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	run, _ := st.Run(ctx, "flaky")
	return path, run.State
}

func TestRetryRunsVerifyAndReplay(t *testing.T) {
	for _, tc := range []struct {
		failFor int
		state   string
	}{{100, "RETRY_EXHAUSTED"}, {3, "SUCCEEDED"}, {1, "SUCCEEDED"}} {
		t.Run(tc.state+fmt.Sprint(tc.failFor), func(t *testing.T) {
			path, state := retried(t, tc.failFor)
			if state != tc.state {
				t.Fatalf("run ended %s, want %s", state, tc.state)
			}
			if got := findings(t, path, "flaky"); got != "" {
				t.Fatalf("findings:\n%s", got)
			}
			rp, err := Replay(ctx, open(t, path, true), wf, "flaky")
			if err != nil {
				t.Fatal(err)
			}
			if !rp.OK() {
				t.Fatalf("replay: %+v", rp.Findings)
			}
		})
	}
}

// forgeAttempt rewrites attempt n of the run's only intent.
func forgeAttempt(t *testing.T, path string, n int, set string) {
	t.Helper()
	tamper(t, path, "DROP TRIGGER IF EXISTS attempts_no_update",
		fmt.Sprintf(`UPDATE attempts SET %s WHERE n = %d`, set, n))
}

func TestForgedRetryExhaustionIsFound(t *testing.T) {
	const spent = `"outcomes":["failed_transient","failed_transient","failed_transient","reconciled_not_applied"]`
	for _, tc := range []struct {
		name   string
		forge  func(t *testing.T, path string)
		expect string
	}{
		{"an attempt that did not fail", func(t *testing.T, path string) {
			forgeAttempt(t, path, 2, `status = 'failed_permanent'`)
		}, "its attempt rows do not show"},
		{"a ledger that differs from the rows", func(t *testing.T, path string) {
			forgeLedger(t, path, "flaky", spent, `"outcomes":["failed_transient","reconciled_not_applied","failed_transient","reconciled_not_applied"]`)
		}, "differs from the attempt rows"},
		{"a limit raised after the fact", func(t *testing.T, path string) {
			forgeLedger(t, path, "flaky", `"max_attempts":4`, `"max_attempts":5`)
		}, "its attempt rows do not show"},
		{"the ledger erased", func(t *testing.T, path string) {
			cp, _ := open(t, path, true).Checkpoint(ctx, "flaky")
			i := strings.Index(string(cp.Body), `,"retries_exhausted":{`)
			j := strings.Index(string(cp.Body)[i:], "]}") + i + 2
			forgeLedger(t, path, "flaky", string(cp.Body)[i:j], "")
		}, "issued with no attempt ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, state := retried(t, 100)
			if state != "RETRY_EXHAUSTED" {
				t.Fatalf("state %s", state)
			}
			tc.forge(t, path)
			if got := findings(t, path, "flaky"); !strings.Contains(got, "retries-exhausted") || !strings.Contains(got, tc.expect) {
				t.Fatalf("forgery not found (%q); findings:\n%s", tc.expect, got)
			}
		})
	}
}

func TestARunThatShouldHaveHaltedIsFound(t *testing.T) {
	// Three transient failures, then an unknown outcome no lookup settles:
	// a person confirms the failure, the workflow hears it, and the run
	// ends FAILED_PERMANENT. That is right, and verifies.
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dest := &flaky{payments: payments{applied: map[string]string{}}, failFor: 3, lookupUnknown: true}
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &lostAnswer{dest})
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "t",
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "flaky", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"a","amount":5,"payee":"alice","reason":"x"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := r.Inspect(ctx, "flaky")
	if s.State != "HUMAN_RECONCILIATION" {
		t.Fatalf("state %s", s.State)
	}
	if err := r.Reconcile(ctx, "flaky", s.Unknown[0], "confirmed_failure", runner.Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.confirm_external"}); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if run, _ := open(t, path, true).Run(ctx, "flaky"); run.State != "FAILED_PERMANENT" {
		t.Fatalf("state %s", run.State)
	}
	if got := findings(t, path, "flaky"); got != "" {
		t.Fatalf("findings:\n%s", got)
	}
	// Forged to say the destination, not a person, confirmed the failure
	// of the last allowed attempt: then the run should have halted.
	forgeAttempt(t, path, 4, fmt.Sprintf(`detail = '%s'`, runner.RetryExhaustedDetail))
	got := findings(t, path, "flaky")
	for _, want := range []string{"should have halted", "not RETRY_EXHAUSTED", "the ledger does not say so"} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %q; findings:\n%s", want, got)
		}
	}
}

// lostAnswer applies a flaky destination's last call but loses its answer.
type lostAnswer struct{ *flaky }

func (l *lostAnswer) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	rec, err := l.flaky.Execute(ctx, in)
	if err == nil && rec.Outcome == effect.Succeeded {
		return effect.Receipt{Outcome: effect.Unknown, Code: "TRANSPORT_AFTER_SEND"}, nil
	}
	return rec, err
}

// meteredPayments reports a cost for every call.
type meteredPayments struct{ payments }

func (m *meteredPayments) ExecuteMetered(ctx context.Context, in effect.Intent) (effect.Receipt, runner.Usage, error) {
	rec, err := m.payments.Execute(ctx, in)
	return rec, runner.Usage{Tokens: 3, CostMicros: 900}, err
}

// reported records a run whose input comes with a usage report and whose
// adapter is metered, and returns the database path.
func reported(t *testing.T) string {
	t.Helper()
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &meteredPayments{payments{applied: map[string]string{}}})
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "t",
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	// The first input, reported, asks for two refunds.
	if err := r.StartWithUsage(ctx, "used", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"a","amount":5,"payee":"alice","reason":"x"},{"id":"b","amount":6,"payee":"bob","reason":"x"}]}`),
		runner.Usage{Tokens: 40, CostMicros: 200}, runner.Actor{Name: "model", Role: "agent", Capability: "run.input"}); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportedUsageVerifies(t *testing.T) {
	path := reported(t)
	st := open(t, path, true)
	cp, _ := st.Checkpoint(ctx, "used")
	if run, _ := st.Run(ctx, "used"); run.State != "SUCCEEDED" {
		t.Fatalf("run ended %s", run.State)
	}
	if !strings.Contains(string(cp.Body), `"tokens":46,"tool_calls":2`) || !strings.Contains(string(cp.Body), `"cost_micros":2000`) {
		t.Fatalf("ledger does not count the report and the metered calls: %s", cp.Body)
	}
	if got := findings(t, path, "used"); got != "" {
		t.Fatalf("findings:\n%s", got)
	}
	rp, err := Replay(ctx, st, wf, "used")
	if err != nil || !rp.OK() {
		t.Fatalf("replay %+v: %v", rp, err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"tokens under-counted", `"tokens":46,"tool_calls":2`, `"tokens":6,"tool_calls":2`},
		{"cost over-counted", `"cost_micros":2000`, `"cost_micros":2100`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := reported(t)
			forgeLedger(t, path, "used", tc.from, tc.to)
			if got := findings(t, path, "used"); !strings.Contains(got, "budget-count") || !strings.Contains(got, "reports on record") {
				t.Fatalf("forgery not found; findings:\n%s", got)
			}
		})
	}
}
