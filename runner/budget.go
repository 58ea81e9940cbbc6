package runner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/store"
)

// The runner is the loop contract's budget governor and deadline
// controller. Each run carries a budget ledger in its checkpoint: the
// limits it started under, what it has used, and the clock reading of its
// last charge. Counters are charged where the work is recorded — a step
// with each accepted input, a tool call with each attempt row, in the same
// commit — so the ledger always equals what the record shows, and verify
// recounts them without trusting the runner. Time is charged from the
// runner's injected clock before every step and at every commit; the
// readings are kept in the ledger, so verify checks the arithmetic without
// a clock of its own.
//
// A breach is recorded once, in the ledger and the trace, and issued to the
// FSM as the interrupt the contract names: TIMEOUT for wall or suspended
// time, BUDGET_EXHAUSTED for everything else. The FSM decides what happens:
// immediately final outside the effect-critical states, deferred (the
// effect reconciled first) inside them.

// ContractedWorkflow is a Workflow that brings its own loop contract (a
// bundle's loop section); the runner governs its runs with it instead of
// Config.Contract. It must bind the runner's FSM table.
type ContractedWorkflow interface {
	LoopContract() *control.Contract
}

// Budget dimensions the runner governs besides the contract's own: the
// runner's hard cap on control transitions (Config.MaxTransitions).
const DimTransitions control.Dimension = "transitions"

// budgetLedger is a run's budget account, persisted with every checkpoint.
type budgetLedger struct {
	Contract       string        `json:"contract"`        // digest of the contract the limits come from
	Limits         control.Usage `json:"limits"`          // the contract's hard limits, bound when the run started
	MaxTransitions int64         `json:"max_transitions"` // the runner's cap on control transitions
	JitterSeed     string        `json:"jitter_seed"`     // the recorded seed of the retry jitter
	Adopted        bool          `json:"adopted"`         // the ledger was opened on a run that had none: counts start there
	StartedMillis  int64         `json:"started_millis"`  // clock reading when the ledger was opened (Unix ms)
	ClockMillis    int64         `json:"clock_millis"`    // latest clock reading charged (never decreases)
	Resting        bool          `json:"resting"`         // the run waited for outside input at that reading
	WallMillis     int64         `json:"wall_millis"`     // time spent working
	SuspendMillis  int64         `json:"suspended_millis"`
	Steps          int64         `json:"steps"`       // accepted inputs (receipts and choices included)
	ToolCalls      int64         `json:"tool_calls"`  // attempts recorded (each is at most one dispatch)
	Tokens         int64         `json:"tokens"`      // reported with accepted inputs and by metered adapters
	CostMicros     int64         `json:"cost_micros"` // likewise
	Breach         *budgetBreach `json:"breach"`      // the breach issued to the FSM, if any
	// MaxAttempts is how many attempts one intent may have (the contract's
	// retries per transition plus one, capped by Config.MaxAttempts),
	// bound when the ledger was opened; 0 in ledgers written before it
	// was kept.
	MaxAttempts int64 `json:"max_attempts,omitempty"`
	// RetriesExhausted is the bounded attempt ledger of the first intent
	// whose retries were spent: the evidence of RETRIES_EXHAUSTED, which
	// the retry controller issues at the next INGEST.
	RetriesExhausted *attemptLedger `json:"retries_exhausted,omitempty"`
}

// attemptLedger is the bounded attempt ledger of one intent whose retries
// were spent: how many attempts it had, the limit, and how each ended, in
// order. The limit is at most control.MaxRetriesCeiling + 1, so the list
// is short.
type attemptLedger struct {
	Intent   string   `json:"intent"`
	Attempts int64    `json:"attempts"`
	Limit    int64    `json:"limit"`
	Outcomes []string `json:"outcomes"`
}

// budgetBreach is the evidence of an exhausted budget: which one, its
// limit, what had been used, and what was asked for (a refused
// reservation: Used+Requested would exceed Limit; a charge already made:
// Used exceeds Limit and Requested is 0).
type budgetBreach struct {
	Dimension control.Dimension `json:"dimension"`
	Limit     int64             `json:"limit"`
	Used      int64             `json:"used"`
	Requested int64             `json:"requested"`
	Event     string            `json:"event"` // the interrupt issued: TIMEOUT or BUDGET_EXHAUSTED
	State     string            `json:"state"` // the FSM state it was issued in
}

// BudgetStatus is a run's budget account as people see it: the limits,
// what has been used (time in whole seconds, rounded up), and the breach,
// if any, as "dimension: used+requested over limit".
type BudgetStatus struct {
	Limits control.Usage `json:"limits"`
	Used   control.Usage `json:"used"`
	Breach string        `json:"breach,omitempty"`
	// Retries names the intent whose retries were spent, if any, as
	// "intent: n of limit attempts (outcome, …)".
	Retries string `json:"retries_exhausted,omitempty"`
}

func (l *budgetLedger) status() *BudgetStatus {
	if l == nil {
		return nil
	}
	s := &BudgetStatus{Limits: l.Limits, Used: l.usage()}
	if b := l.Breach; b != nil {
		s.Breach = fmt.Sprintf("%s: %d used + %d requested over the limit of %d (%s in %s)", b.Dimension, b.Used, b.Requested, b.Limit, b.Event, b.State)
	}
	if a := l.RetriesExhausted; a != nil {
		s.Retries = fmt.Sprintf("%s: %d of %d attempts (%s)", a.Intent, a.Attempts, a.Limit, strings.Join(a.Outcomes, ", "))
	}
	return s
}

// BudgetTraceKind is the trace record kind of a budget breach.
const BudgetTraceKind = "budget_exhausted"

// restingState reports whether a run in state waits for outside input.
func restingState(state string) bool { return slices.Contains(restingStates, state) }

// contractFor returns the loop contract a workflow's runs are governed by.
func (r *Runner) contractFor(wf Workflow) *control.Contract {
	if cw, ok := wf.(ContractedWorkflow); ok {
		if c := cw.LoopContract(); c != nil {
			return c
		}
	}
	return r.contract
}

// openLedger starts a run's budget account at the clock reading now.
func (r *Runner) openLedger(t *tick, adopted bool) *budgetLedger {
	c := r.contractFor(t.wf)
	now := r.cfg.Clock().UnixMilli()
	return &budgetLedger{Contract: c.Digest, Limits: c.Budgets.Limits, MaxTransitions: r.cfg.MaxTransitions,
		JitterSeed: store.BodyDigest([]byte("flrh-retry-seed/1\x00" + t.run.ID)), Adopted: adopted,
		StartedMillis: now, ClockMillis: now, MaxAttempts: r.attemptLimit(t)}
}

// chargeTime charges the time since the ledger's last reading: to
// suspended time when the run then waited for outside input, to wall time
// otherwise. A clock that went backwards charges nothing.
func (l *budgetLedger) chargeTime(nowMillis int64, state string) {
	if d := nowMillis - l.ClockMillis; d > 0 {
		if l.Resting {
			l.SuspendMillis += d
		} else {
			l.WallMillis += d
		}
		l.ClockMillis = nowMillis
	}
	l.Resting = restingState(state)
}

// usage is the ledger as the contract's budget arithmetic sees it.
func (l *budgetLedger) usage() control.Usage {
	return control.Usage{Steps: l.Steps, ToolCalls: l.ToolCalls, Tokens: l.Tokens, CostMicros: l.CostMicros,
		WallSeconds: control.MillisToSeconds(l.WallMillis), SuspendedSeconds: control.MillisToSeconds(l.SuspendMillis)}
}

// ledger returns the run's budget ledger, opening one on a checkpoint
// written before runs kept one.
func (r *Runner) ledger(t *tick) *budgetLedger {
	if t.cp.Budget == nil {
		t.cp.Budget = r.openLedger(t, true)
	}
	return t.cp.Budget
}

// chargeClock reads the clock and charges the run's time.
func (r *Runner) chargeClock(t *tick) {
	r.ledger(t).chargeTime(r.cfg.Clock().UnixMilli(), t.cp.Control.State)
}

// checkTime charges the run's time and, when wall or suspended time is
// over its limit, issues TIMEOUT. It reports whether it issued anything.
func (r *Runner) checkTime(t *tick) (bool, error) {
	r.chargeClock(t)
	l := t.cp.Budget
	if l.Breach != nil {
		return false, nil
	}
	u := l.usage()
	for _, d := range []struct {
		dim         control.Dimension
		used, limit int64
	}{{control.DimWallSeconds, u.WallSeconds, l.Limits.WallSeconds}, {control.DimSuspendedSeconds, u.SuspendedSeconds, l.Limits.SuspendedSeconds}} {
		if d.used > d.limit {
			return true, r.breach(t, budgetBreach{Dimension: d.dim, Limit: d.limit, Used: d.used, Event: "TIMEOUT"})
		}
	}
	return false, nil
}

// checkStep refuses a new outside input once the step budget is spent (or
// the runner's transition cap is reached). Receipts are never refused:
// the effect already happened, and the workflow must hear of it.
func (r *Runner) checkStep(t *tick) (bool, error) {
	l := r.ledger(t)
	if l.Breach != nil {
		return false, nil
	}
	if t.cp.Transitions >= r.cfg.MaxTransitions {
		return true, r.breach(t, budgetBreach{Dimension: DimTransitions, Limit: r.cfg.MaxTransitions, Used: t.cp.Transitions, Requested: 1, Event: "BUDGET_EXHAUSTED"})
	}
	if l.Steps+1 > l.Limits.Steps {
		return true, r.breach(t, budgetBreach{Dimension: control.DimSteps, Limit: l.Limits.Steps, Used: l.Steps, Requested: 1, Event: "BUDGET_EXHAUSTED"})
	}
	return false, nil
}

// fitsCalls reports whether n more tool calls fit the run's budget.
func (r *Runner) fitsCalls(t *tick, n int64) bool {
	l := r.ledger(t)
	return l.ToolCalls+n <= l.Limits.ToolCalls
}

// refuseCalls records and issues the breach of a tool-call reservation.
func (r *Runner) refuseCalls(t *tick, n int64) error {
	l := r.ledger(t)
	if l.Breach != nil {
		return nil
	}
	return r.breach(t, budgetBreach{Dimension: control.DimToolCalls, Limit: l.Limits.ToolCalls, Used: l.ToolCalls, Requested: n, Event: "BUDGET_EXHAUSTED"})
}

// begin records the next attempt of an intent — before any I/O, in the
// next commit — and charges it as a tool call.
func (r *Runner) begin(t *tick, intentID string) {
	t.pending.Begin = append(t.pending.Begin, intentID)
	r.ledger(t).ToolCalls++
}

// breach records b in the ledger and the trace and issues its interrupt.
func (r *Runner) breach(t *tick, b budgetBreach) error {
	b.State = t.cp.Control.State
	t.cp.Budget.Breach = &b
	body, err := cjson.Marshal(map[string]any{"kind": BudgetTraceKind, "breach": b, "ledger": t.cp.Budget})
	if err != nil {
		return err
	}
	t.pending.Trace = append(t.pending.Trace, store.TraceRecord{Kind: BudgetTraceKind, Body: body})
	r.log.Info("budget exhausted", "run", t.run.ID, "dimension", b.Dimension, "limit", b.Limit, "used", b.Used, "event", b.Event)
	return r.fire(t, b.Event, nil, evidence(map[string]any{pendingEvidence(b.Event): b}))
}

func pendingEvidence(event string) string { return "budget_" + pendingName(event) }

// attemptLimit is how many attempts one intent may have: the contract's
// retries plus the first, capped by Config.MaxAttempts when it is set.
func (r *Runner) attemptLimit(t *tick) int64 {
	n := r.contractFor(t.wf).Retry.MaxRetries + 1
	if r.cfg.MaxAttempts > 0 {
		n = min(n, r.cfg.MaxAttempts)
	}
	return n
}

// maxAttempts is the run's attempt limit as its ledger bound it; a ledger
// written before the limit was kept binds it now.
func (r *Runner) maxAttempts(t *tick) int64 {
	l := r.ledger(t)
	if l.MaxAttempts == 0 {
		l.MaxAttempts = r.attemptLimit(t)
	}
	return l.MaxAttempts
}

// DefaultMaxRetryAfter is Config.MaxRetryAfter's default.
const DefaultMaxRetryAfter = time.Minute

// retryDelay is the wait before retry number attempt (1-based) of an
// intent, as the contract's retry policy says: capped exponential backoff
// with deterministic equal jitter from the run's recorded seed and the
// effect's idempotency key. When the destination asked for a longer wait
// (asked, from its Retry-After), the runner waits that instead, bounded by
// Config.MaxRetryAfter: retrying a rate-limited service sooner than it
// asked only spends the contract's retries on refusals. The decision is
// traced with the attempt, the destination's ask beside the contract's.
func (r *Runner) retryDelay(t *tick, e *openEffect, attempt int64, asked time.Duration) (time.Duration, error) {
	d, err := r.contractFor(t.wf).Retry.Decide(control.ClassTransient, attempt, r.ledger(t).JitterSeed, e.idempotencyKey())
	if err != nil {
		return 0, err
	}
	if d.Action != control.ActionRetry {
		return 0, fmt.Errorf("runner: retry %d of %s is not allowed (%s)", attempt, e.IntentID, d.Action)
	}
	rec := map[string]any{"kind": "retry_scheduled", "intent": e.IntentID, "retry": d.Retry,
		"base_millis": d.BaseMillis, "delay_millis": d.DelayMillis}
	wait := time.Duration(d.DelayMillis) * time.Millisecond
	if asked > 0 && r.cfg.MaxRetryAfter > 0 {
		// Whole milliseconds, as the contract's delays are.
		honoured := min(asked, r.cfg.MaxRetryAfter).Round(time.Millisecond)
		wait = max(wait, honoured)
		rec["destination_asked_millis"] = asked.Milliseconds()
		rec["wait_millis"] = wait.Milliseconds()
	}
	b, err := cjson.Marshal(rec)
	if err != nil {
		return 0, err
	}
	t.pending.Trace = append(t.pending.Trace, store.TraceRecord{Kind: "retry_scheduled", Body: b})
	return wait, nil
}

// retryVerdict is what follows a retryable failure of attempt n.
type retryVerdict int

const (
	retryGo       retryVerdict = iota // another attempt, after the backoff
	retrySpent                        // the contract's retries are used up: RETRIES_EXHAUSTED once the failure is confirmed
	retryNoBudget                     // a budget stands in the way: its breach is (or was) issued instead
)

// retryAllowed says whether attempt n of an intent may be followed by
// another: the contract's retries are not used up, no budget breach is
// recorded, and a tool call fits the budget. When only the tool-call
// budget stands in the way, its breach is issued.
func (r *Runner) retryAllowed(t *tick, n int64) (retryVerdict, error) {
	if n >= r.maxAttempts(t) {
		return retrySpent, nil
	}
	if r.ledger(t).Breach != nil {
		return retryNoBudget, nil // the run is ending on its budget: no more sends
	}
	if !r.fitsCalls(t, 1) {
		return retryNoBudget, r.refuseCalls(t, 1)
	}
	return retryGo, nil
}

// RetryExhaustedDetail is the detail of the attempt row that closes an
// intent on a failure the destination confirmed after its last allowed
// attempt (or after a retry its budget refused): verify tells a lookup's
// verdict from a person's by it.
const RetryExhaustedDetail = "retry_exhausted_not_applied"

// RetriesTraceKind is the trace record kind of an intent whose retries were
// spent.
const RetriesTraceKind = "retries_exhausted"

// spendRetries records the bounded attempt ledger of an intent whose last
// allowed attempt failed and whose destination confirmed that nothing was
// applied: attempts 1..n-1 as the store holds them, attempt n as it is
// about to be recorded. Only the first such intent of a run is kept; the
// retry controller halts the run on it.
func (r *Runner) spendRetries(ctx context.Context, t *tick, e *openEffect, n int64, last store.AttemptStatus) error {
	l := r.ledger(t)
	if l.RetriesExhausted != nil {
		return nil
	}
	ats, err := r.cfg.Store.Attempts(ctx, e.IntentID)
	if err != nil {
		return err
	}
	// Sized by the rows read, not by n: n is the store's attempt number,
	// and a number changed behind the store's back must not size an
	// allocation (2^31 outcomes once ran the process out of memory).
	a := &attemptLedger{Intent: e.IntentID, Attempts: n, Limit: r.maxAttempts(t), Outcomes: make([]string, 0, len(ats)+1)}
	for _, at := range ats {
		if at.N < n {
			a.Outcomes = append(a.Outcomes, string(at.Status))
		}
	}
	a.Outcomes = append(a.Outcomes, string(last))
	l.RetriesExhausted = a
	b, err := cjson.Marshal(map[string]any{"kind": RetriesTraceKind, "attempts": a})
	if err != nil {
		return err
	}
	t.pending.Trace = append(t.pending.Trace, store.TraceRecord{Kind: RetriesTraceKind, Body: b})
	r.log.Info("retries exhausted", "run", t.run.ID, "intent", e.IntentID, "attempts", n)
	return nil
}

// checkRetries issues RETRIES_EXHAUSTED, in INGEST, when an intent's
// retries were spent: the failed effect has been reconciled and its
// receipt committed, and the run halts before any further input (that
// receipt included) is accepted. It reports whether it issued anything.
func (r *Runner) checkRetries(t *tick) (bool, error) {
	a := r.ledger(t).RetriesExhausted
	if a == nil {
		return false, nil
	}
	return true, r.fire(t, r.contractFor(t.wf).Retry.ExhaustedEvent, nil, evidence(map[string]any{"bounded_attempt_ledger": a}))
}

// wait sleeps out a retry delay in the middle of a pass without letting the
// run's lease lapse: it sleeps in slices of a third of the lease's life and
// renews the lease after each. A renewal that fails (another runner took
// the run) ends the pass; the attempt already begun is then found in flight
// and looked up, never sent blindly.
func (r *Runner) wait(ctx context.Context, t *tick, d time.Duration) error {
	for d > 0 {
		slice := min(d, max(r.cfg.LeaseTTL/3, time.Millisecond))
		if err := r.cfg.Sleep(ctx, slice); err != nil {
			return err
		}
		d -= slice
		l, err := r.cfg.Store.RenewLease(ctx, t.lease, r.cfg.LeaseTTL)
		if err != nil {
			return fmt.Errorf("renew lease during backoff: %w", err)
		}
		t.lease = l
	}
	return nil
}

// dueAt is when the run, as t's checkpoint leaves it, next has something
// to do by the clock alone: the first millisecond past its suspended-time
// limit, while it rests with no breach recorded (checkTime then issues
// TIMEOUT). Zero when nothing is due by the clock: the run is working
// (and so ready anyway), has ended, has had its breach, or has no ledger.
// Charging a resting run's time moves its reading and its suspended time
// alike, so the due time stays put from one charge to the next.
func (r *Runner) dueAt(t *tick) time.Time {
	l := t.cp.Budget
	state := t.cp.Control.State
	if l == nil || l.Breach != nil || !l.Resting || !restingState(state) || r.machine.Final(state) {
		return time.Time{}
	}
	// Breached when used > limit, used counting whole seconds started:
	// when more than limit×1000 ms of rest are used.
	const most = math.MaxInt64 / 2
	limit := l.Limits.SuspendedSeconds
	if limit < 0 || limit > most/1000 || l.ClockMillis > most || l.SuspendMillis < 0 {
		return time.Time{} // beyond any clock this runs under
	}
	at := l.ClockMillis + max(limit*1000-l.SuspendMillis, 0) + 1
	return time.UnixMilli(at).UTC()
}

// keepsDue reports whether the store records runs' due times (and so
// lists and claims a resting run once its due time comes), sparing Run
// the deadline sweep.
func (r *Runner) keepsDue() bool {
	_, ok := store.DueSetterOf(r.cfg.Store)
	return ok
}

// dueBy is the clock reading Run hands the store for due times: the
// runner's own clock, the one its ticks' due times come from, when the
// store keeps them.
func (r *Runner) dueBy() time.Time {
	if !r.keepsDue() {
		return time.Time{}
	}
	return r.cfg.Clock()
}

// keepDue records the run's due time, at the end of a pass that leaves it
// resting, when the header read holds another: a run written before
// stores kept due times (the migration marks those due at once), or one
// whose ledger a pass opened afresh. Every tick records it otherwise, so
// a pass whose header agrees writes nothing.
func (r *Runner) keepDue(ctx context.Context, t *tick) error {
	ds, ok := store.DueSetterOf(r.cfg.Store)
	if !ok {
		return nil
	}
	due := r.dueAt(t)
	if due.Equal(t.run.DueAt) {
		return nil
	}
	if err := ds.SetDue(ctx, t.lease, due, false); err != nil {
		r.forgetIfTakenOver(t.lease, err)
		return fmt.Errorf("runner: run %s: record its due time: %w", t.run.ID, err)
	}
	t.run.DueAt = due
	return nil
}

// sweepDue reports whether Run should visit every live run this time, not
// only those with something to do: time budgets run out while a run rests.
// Only a store that does not keep due times needs it (keepsDue).
// The first sweep comes one DeadlineSweep after the runner was made.
func (r *Runner) sweepDue() bool {
	if r.keepsDue() {
		return false
	}
	now := r.cfg.Clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastSweep) < r.cfg.DeadlineSweep {
		return false
	}
	r.lastSweep = now
	return true
}

// sleep is the default Config.Sleep: the real clock.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
