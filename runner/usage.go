package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
)

// Usage is a usage report: the tokens and cost (in micro-units of the
// workflow's currency) one piece of work consumed, as its submitter or its
// adapter declares it. The runner cannot measure either — workflows call no
// model — so it charges what is declared, records it beside the work, and
// holds the run to the contract's tokens and cost_micros budgets with it.
type Usage struct {
	Tokens     int64 `json:"tokens"`
	CostMicros int64 `json:"cost_micros"`
}

// Check validates a report: both numbers in [0, control.MaxReported]. The
// error is a *control.Error with the offending member's pointer.
func (u Usage) Check() error {
	return control.CheckReport(control.Usage{Tokens: u.Tokens, CostMicros: u.CostMicros})
}

func (u Usage) zero() bool { return u.Tokens == 0 && u.CostMicros == 0 }

// ReportedInputFormat marks an inbox input that carries its submitter's
// usage report: {"format": ReportedInputFormat, "input": INPUT, "usage":
// {"cost_micros": C, "tokens": T}}. The runner accepts INPUT — the
// workflow never sees the wrapper — and records the report beside it.
const ReportedInputFormat = "flrh-reported-input/1"

// reportedPrefix is how every canonical wrapper begins (members are sorted):
// inputs without a report are told apart without decoding them.
var reportedPrefix = []byte(`{"format":"` + ReportedInputFormat + `","input":`)

type reportedInput struct {
	Format string          `json:"format"`
	Input  json.RawMessage `json:"input"`
	Usage  Usage           `json:"usage"`
}

// splitReported unwraps an inbox input that carries a usage report. ok is
// false for a plain input, and for a wrapper that is not exactly the
// canonical one SubmitWithUsage writes (which only a writer bypassing it
// can store): that is accepted as it is, for the workflow to judge.
func splitReported(body []byte) (input []byte, u Usage, ok bool) {
	if !bytes.HasPrefix(body, reportedPrefix) {
		return nil, Usage{}, false
	}
	var w reportedInput
	if decodeInto(body, &w) != nil || w.Format != ReportedInputFormat || len(w.Input) == 0 || w.Usage.Check() != nil {
		return nil, Usage{}, false
	}
	in, err := cjson.Canonicalize(w.Input)
	if err != nil {
		return nil, Usage{}, false
	}
	// Only the exact wrapper SubmitWithUsage writes counts (both numbers
	// present, nothing else): the accepted record, holding the input and
	// the report, then names exactly which inbox entry it came from.
	v, err := cjson.Decode(in)
	if err != nil {
		return nil, Usage{}, false
	}
	if again, err := reportedBody(v, w.Usage); err != nil || !bytes.Equal(again, body) {
		return nil, Usage{}, false
	}
	return in, w.Usage, true
}

// SubmitWithUsage hands a run a new domain input with its submitter's usage
// report (what producing it cost: an agent's model tokens and spend). The
// report is checked here — a *control.Error when a number is negative or
// out of range — and charged against the run's tokens and cost_micros
// budgets in the commit that accepts the input; an input whose report does
// not fit what is left is refused and the run ends BUDGET_EXHAUSTED. A zero
// report is the same as none.
func (r *Runner) SubmitWithUsage(ctx context.Context, runID string, input []byte, u Usage, by Actor) error {
	if err := u.Check(); err != nil {
		return err
	}
	v, err := cjson.Decode(input)
	if err != nil {
		return err
	}
	if err := plainInput(v); err != nil {
		return err
	}
	if u.zero() {
		return r.submit(ctx, runID, KindInput, by, v)
	}
	return r.submit(ctx, runID, KindInput, by, reported(v, u))
}

// reported wraps an input (a decoded value) with its usage report.
func reported(v any, u Usage) map[string]any {
	return map[string]any{"format": ReportedInputFormat, "input": v,
		"usage": map[string]any{"tokens": u.Tokens, "cost_micros": u.CostMicros}}
}

// reportedBody is the canonical inbox body of an input with its report.
func reportedBody(v any, u Usage) ([]byte, error) { return cjson.Marshal(reported(v, u)) }

// plainInput refuses an input that looks like a usage-report wrapper: a
// report travels beside the input (SubmitWithUsage), never inside it, so
// nobody can smuggle one past the check.
func plainInput(v any) error {
	if m, ok := v.(map[string]any); ok && m["format"] == ReportedInputFormat {
		return &control.Error{Code: control.CodeInput, Pointer: "/format",
			Detail: fmt.Sprintf("an input may not be a %s wrapper; report usage beside it", ReportedInputFormat)}
	}
	return nil
}

// Metered is an adapter that reports what each call cost (a model
// provider's tokens, a paid API's price). The runner calls ExecuteMetered
// instead of Execute and charges the report — checked like any other — to
// the run in the commit that records the attempt, whatever its outcome.
type Metered interface {
	ExecuteMetered(ctx context.Context, in effect.Intent) (effect.Receipt, Usage, error)
}

// reserveReport refuses an outside input whose usage report does not fit
// what is left of the run's tokens or cost budget: the breach is issued
// and the input stays in the inbox. It reports whether it issued anything.
func (r *Runner) reserveReport(t *tick, u Usage) (bool, error) {
	l := r.ledger(t)
	if l.Breach != nil {
		return false, nil
	}
	if l.Tokens+u.Tokens > l.Limits.Tokens {
		return true, r.breach(t, budgetBreach{Dimension: control.DimTokens, Limit: l.Limits.Tokens, Used: l.Tokens, Requested: u.Tokens, Event: "BUDGET_EXHAUSTED"})
	}
	if l.CostMicros+u.CostMicros > l.Limits.CostMicros {
		return true, r.breach(t, budgetBreach{Dimension: control.DimCostMicros, Limit: l.Limits.CostMicros, Used: l.CostMicros, Requested: u.CostMicros, Event: "BUDGET_EXHAUSTED"})
	}
	return false, nil
}

// chargeEffect charges what an adapter reported for one attempt: to the
// ledger, and to the open effect, whose receipt carries the sum to the
// record. The work is done and cannot be refused; when it takes the run
// over a budget, the breach is issued (and, inside EXECUTE, deferred until
// the effect is reconciled), and no further retry is begun.
func (r *Runner) chargeEffect(t *tick, e *openEffect, u Usage) error {
	if u.zero() {
		return nil
	}
	l := r.ledger(t)
	l.Tokens += u.Tokens
	l.CostMicros += u.CostMicros
	if e.Usage == nil {
		e.Usage = &Usage{}
	}
	e.Usage.Tokens += u.Tokens
	e.Usage.CostMicros += u.CostMicros
	if l.Breach != nil {
		return nil
	}
	if l.Tokens > l.Limits.Tokens {
		return r.breach(t, budgetBreach{Dimension: control.DimTokens, Limit: l.Limits.Tokens, Used: l.Tokens, Event: "BUDGET_EXHAUSTED"})
	}
	if l.CostMicros > l.Limits.CostMicros {
		return r.breach(t, budgetBreach{Dimension: control.DimCostMicros, Limit: l.Limits.CostMicros, Used: l.CostMicros, Event: "BUDGET_EXHAUSTED"})
	}
	return nil
}

// execute calls an adapter once, metered when it can be, with the
// request it prepared for the intent when there is one (p non-nil).
func execute(ctx context.Context, a effect.Adapter, in effect.Intent, p *effect.Prepared) (effect.Receipt, Usage, error) {
	if m, ok := a.(Metered); ok {
		return m.ExecuteMetered(ctx, in)
	}
	if pr, ok := a.(effect.Preparer); ok && p != nil {
		rec, err := pr.ExecutePrepared(ctx, in, *p)
		return rec, Usage{}, err
	}
	rec, err := a.Execute(ctx, in)
	return rec, Usage{}, err
}
