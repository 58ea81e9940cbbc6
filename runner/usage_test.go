package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// metered is the test destination, metered: every call costs cost.
type metered struct {
	*destination
	cost Usage
}

func (m *metered) ExecuteMetered(ctx context.Context, in effect.Intent) (effect.Receipt, Usage, error) {
	rec, err := m.destination.Execute(ctx, in)
	return rec, m.cost, err
}

// newMeteredRig is a budget rig whose adapter reports cost per call.
func newMeteredRig(t *testing.T, override string, cost Usage) *budgetRig {
	t.Helper()
	b := newBudgetRig(t, override)
	c, err := control.DefaultContract().Override([]byte(override))
	if err != nil {
		t.Fatal(err)
	}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", &metered{destination: b.dest, cost: cost}); err != nil {
		t.Fatal(err)
	}
	b.r, err = New(Config{Store: b.store, Workflows: []Workflow{counter{refunds{limit: 100}}}, Adapters: reg, Contract: c,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: b.clock.Now, Sleep: b.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// payReported submits payment i with a usage report (starting the run
// with payment 0 first when i is 1).
func (b *budgetRig) payReported(run string, i int, u Usage) error {
	b.t.Helper()
	if i == 1 {
		b.pay(run, 0, 10)
	}
	body := []byte(`{"amount":10,"id":"p` + string(rune('0'+i)) + `","payee":"p"}`)
	err := b.r.SubmitWithUsage(ctx, run, body, u, payer)
	b.idle()
	return err
}

// accepted returns the run's accepted-input records.
func (h *harness) accepted(run string) []acceptedRecord {
	h.t.Helper()
	evs, err := h.store.Events(ctx, run, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []acceptedRecord
	for _, e := range evs {
		if e.Kind == EventAccepted {
			var rec acceptedRecord
			if err := json.Unmarshal(e.Body, &rec); err != nil {
				h.t.Fatal(err)
			}
			out = append(out, rec)
		}
	}
	return out
}

func TestReportedUsageIsChargedWithTheInput(t *testing.T) {
	b := newBudgetRig(t, `{}`)
	if err := b.payReported("run", 1, Usage{Tokens: 1200, CostMicros: 3400}); err != nil {
		t.Fatal(err)
	}
	l := b.checkLedger("run")
	if l.Tokens != 1200 || l.CostMicros != 3400 || l.Steps != 4 {
		t.Fatalf("ledger %+v", l)
	}
	recs := b.accepted("run")
	in := recs[2] // request, receipt, request
	if in.Usage == nil || *in.Usage != (Usage{Tokens: 1200, CostMicros: 3400}) || in.Kind != KindInput {
		t.Fatalf("accepted record %+v", in)
	}
	// The workflow was handed the input itself, not the wrapper: it paid.
	if string(in.Body) != `{"amount":10,"id":"p1","payee":"p"}` || in.Digest != store.BodyDigest(in.Body) || b.dest.count() != 2 {
		t.Fatalf("body %s digest %s, %d payments", in.Body, in.Digest, b.dest.count())
	}
	ev, _ := b.store.Events(ctx, "run", 0)
	for _, e := range ev {
		if e.Kind == EventAccepted && strings.Contains(string(e.Body), `"usage"`) {
			got, err := DecodeAccepted(e.Body)
			if err != nil || got.Usage == nil || got.Usage.Tokens != 1200 || string(got.Body) != string(in.Body) {
				t.Fatalf("decoded %+v: %v", got, err)
			}
		}
	}
	st, _ := b.r.Inspect(ctx, "run")
	if st.Budget.Used.Tokens != 1200 || st.Budget.Used.CostMicros != 3400 {
		t.Fatalf("status %+v", st.Budget)
	}
	// A zero report is no report: nothing is recorded beside the input.
	if err := b.payReported("run", 2, Usage{}); err != nil {
		t.Fatal(err)
	}
	if recs := b.accepted("run"); recs[len(recs)-2].Usage != nil {
		t.Fatalf("zero report recorded: %+v", recs[len(recs)-2])
	}
}

func TestBadUsageReportsAreRefused(t *testing.T) {
	b := newBudgetRig(t, `{}`)
	b.pay("run", 0, 10)
	for _, tc := range []struct {
		u    Usage
		code control.Code
		ptr  string
	}{
		{Usage{Tokens: -1}, control.CodeInput, "/tokens"},
		{Usage{CostMicros: -5}, control.CodeInput, "/cost_micros"},
		{Usage{Tokens: control.MaxReported + 1}, control.CodeLimit, "/tokens"},
	} {
		err := b.r.SubmitWithUsage(ctx, "run", []byte(`{"amount":1,"id":"x","payee":"p"}`), tc.u, payer)
		var ce *control.Error
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Pointer != tc.ptr {
			t.Fatalf("%+v: %v", tc.u, err)
		}
	}
	// Nor can a report be smuggled inside an input.
	wrapped := []byte(`{"format":"` + ReportedInputFormat + `","input":{"amount":1},"usage":{"cost_micros":0,"tokens":0}}`)
	for _, err := range []error{b.r.Submit(ctx, "run", wrapped, payer), b.r.SubmitWithUsage(ctx, "run", wrapped, Usage{Tokens: 1}, payer)} {
		var ce *control.Error
		if !errors.As(err, &ce) || ce.Pointer != "/format" {
			t.Fatalf("wrapper accepted as an input: %v", err)
		}
	}
	if in, _ := b.store.Inbox(ctx, "run", true); len(in) != 0 {
		t.Fatalf("refused reports reached the inbox: %+v", in)
	}
}

func TestAReportOverTheBudgetIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Usage
		dim  control.Dimension
		used int64
	}{
		{"tokens", Usage{Tokens: 100}, control.DimTokens, 100},
		{"cost", Usage{CostMicros: 100}, control.DimCostMicros, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudgetRig(t, `{"budgets":{"tokens":150,"cost_micros":150}}`)
			if err := b.payReported("run", 1, tc.u); err != nil {
				t.Fatal(err)
			}
			if s := b.run("run").State; s != "INGEST" {
				t.Fatalf("state %s", s)
			}
			if err := b.payReported("run", 2, tc.u); err != nil {
				t.Fatal(err)
			}
			l := b.checkLedger("run")
			run := b.run("run")
			want := budgetBreach{Dimension: tc.dim, Limit: 150, Used: tc.used, Requested: 100, Event: "BUDGET_EXHAUSTED", State: "INGEST"}
			if run.State != "BUDGET_EXHAUSTED" || l.Breach == nil || *l.Breach != want {
				t.Fatalf("run %s breach %+v", run.State, l.Breach)
			}
			if l.Steps != 4 || l.Tokens+l.CostMicros != 100 || b.dest.count() != 2 {
				t.Fatalf("the refused input was accepted: %+v, %d payments", l, b.dest.count())
			}
		})
	}
}

func TestMeteredEffectsChargeTheirCost(t *testing.T) {
	b := newMeteredRig(t, `{}`, Usage{Tokens: 7, CostMicros: 250})
	b.pay("run", 0, 10)
	b.pay("run", 1, 10)
	l := b.checkLedger("run")
	if l.Tokens != 14 || l.CostMicros != 500 || l.Breach != nil {
		t.Fatalf("ledger %+v", l)
	}
	// The receipt carries the cost to the record, charged once.
	for _, rec := range b.accepted("run") {
		if rec.Kind == "receipt" && (rec.Usage == nil || *rec.Usage != (Usage{Tokens: 7, CostMicros: 250})) {
			t.Fatalf("receipt record %+v", rec)
		}
	}
}

func TestACostlyEffectEndsTheRunAfterItIsReconciled(t *testing.T) {
	// The first call costs more than the whole budget: the breach is
	// issued inside EXECUTE, deferred, and honoured once the effect is
	// reconciled — the payment is made and its receipt recorded.
	b := newMeteredRig(t, `{"budgets":{"cost_micros":400}}`, Usage{CostMicros: 500})
	b.pay("run", 0, 10)
	l := b.checkLedger("run")
	run := b.run("run")
	want := budgetBreach{Dimension: control.DimCostMicros, Limit: 400, Used: 500, Event: "BUDGET_EXHAUSTED", State: "EXECUTE"}
	if run.State != "BUDGET_EXHAUSTED" || l.Breach == nil || *l.Breach != want || l.CostMicros != 500 || b.dest.count() != 1 {
		t.Fatalf("run %s breach %+v ledger %+v payments %d", run.State, l.Breach, l, b.dest.count())
	}
	path := strings.Join(b.transitions("run"), " ")
	if !strings.HasSuffix(path, "INTENT_COMMITTED BUDGET_EXHAUSTED ATTEMPT_RECORDED EFFECT_RESULT_CONFIRMED PENDING_BUDGET_EXHAUSTED") {
		t.Fatalf("path %s", path)
	}
	if rcs, _ := b.store.Receipts(ctx, "run"); len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" {
		t.Fatalf("receipts %+v", rcs)
	}
	// A breach stops retries: the second attempt's cost goes over, it
	// fails transiently, and the destination is asked instead of a third.
	b = newMeteredRig(t, `{"budgets":{"cost_micros":400}}`, Usage{CostMicros: 300})
	b.dest.script = transients(20)
	b.pay("run", 0, 10)
	l = b.checkLedger("run")
	if run := b.run("run"); run.State != "BUDGET_EXHAUSTED" || b.attemptCount("run") != 2 || l.CostMicros != 600 || l.Breach.State != "EXECUTE" || l.RetriesExhausted != nil {
		t.Fatalf("run %s, %d attempts, ledger %+v", run.State, b.attemptCount("run"), l)
	}
}

func TestTheFirstInputMayCarryAReport(t *testing.T) {
	b := newBudgetRig(t, `{"budgets":{"tokens":150}}`)
	body := []byte(`{"amount":10,"id":"p0","payee":"p"}`)
	if err := b.r.StartWithUsage(ctx, "run", "counter", "1", body, Usage{Tokens: 100, CostMicros: 9}, payer); err != nil {
		t.Fatal(err)
	}
	b.idle()
	if l := b.checkLedger("run"); l.Tokens != 100 || l.CostMicros != 9 || b.dest.count() != 1 {
		t.Fatalf("ledger %+v, %d payments", l, b.dest.count())
	}
	// One that does not fit a fresh run's budget is refused before it is
	// accepted: the run ends without having done anything.
	if err := b.r.StartWithUsage(ctx, "big", "counter", "1", body, Usage{Tokens: 151}, payer); err != nil {
		t.Fatal(err)
	}
	b.idle()
	l := b.checkLedger("big")
	if run := b.run("big"); run.State != "BUDGET_EXHAUSTED" || l.Steps != 0 || l.Breach == nil || l.Breach.Requested != 151 {
		t.Fatalf("run %s ledger %+v", run.State, l)
	}
	var ce *control.Error
	if err := b.r.StartWithUsage(ctx, "bad", "counter", "1", body, Usage{Tokens: -1}, payer); !errors.As(err, &ce) {
		t.Fatalf("negative report: %v", err)
	}
	if _, err := b.store.Run(ctx, "bad"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a refused start created its run: %v", err)
	}
}

// badMeter reports a negative cost: the call's outcome stands, the report
// is charged as nothing.
type badMeter struct{ *destination }

func (m *badMeter) ExecuteMetered(ctx context.Context, in effect.Intent) (effect.Receipt, Usage, error) {
	rec, err := m.destination.Execute(ctx, in)
	return rec, Usage{CostMicros: -7}, err
}

func TestAnAdapterReportOutOfRangeIsNotCharged(t *testing.T) {
	b := newBudgetRig(t, `{}`)
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", &badMeter{b.dest}); err != nil {
		t.Fatal(err)
	}
	var err error
	b.r, err = New(Config{Store: b.store, Workflows: []Workflow{counter{refunds{limit: 100}}}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: b.clock.Now, Sleep: b.clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	b.pay("run", 0, 10)
	if l := b.checkLedger("run"); l.CostMicros != 0 || b.dest.count() != 1 || b.run("run").State != "INGEST" {
		t.Fatalf("ledger %+v, %d payments, state %s", l, b.dest.count(), b.run("run").State)
	}
}

// An inbox body is either a plain input or a well-formed wrapper, never
// half of each: what splitReported unwraps, wrapped again, is the body.
func FuzzSplitReported(f *testing.F) {
	w, _ := reportedBody(map[string]any{"amount": int64(1)}, Usage{Tokens: 3, CostMicros: 4})
	for _, s := range []string{string(w), `{"amount":1}`, `{"format":"flrh-reported-input/1","input":{},"usage":{"cost_micros":-1,"tokens":0}}`,
		`{"format":"flrh-reported-input/1","input":1,"usage":{"tokens":2}}`, `{"format":"flrh-reported-input/1","input":{},"usage":{},"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, u, ok := splitReported(body)
		if !ok {
			return
		}
		if err := u.Check(); err != nil {
			t.Fatalf("unwrapped an out-of-range report: %v", err)
		}
		v, err := cjson.Decode(in)
		if err != nil {
			t.Fatalf("unwrapped input is not canonical JSON: %v", err)
		}
		again, err := reportedBody(v, u)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := cjson.Canonicalize(body); err == nil && string(c) == string(body) && string(again) != string(body) {
			t.Fatalf("%s unwraps to %s and %+v, which wrap to %s", body, in, u, again)
		}
	})
}
