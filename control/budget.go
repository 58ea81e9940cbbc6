package control

import (
	"math"
)

// Usage is what a run (with all its descendant work) has consumed. Counters
// add up; RecursionDepth and Parallelism are high-water marks (gauges).
// Cost is in micro-units of the workflow's currency: integers only, so the
// arithmetic is exact and replays bit for bit.
type Usage struct {
	Steps            int64 `json:"steps"`
	ToolCalls        int64 `json:"tool_calls"`
	WallSeconds      int64 `json:"wall_seconds"`
	SuspendedSeconds int64 `json:"suspended_seconds"`
	Tokens           int64 `json:"tokens"`
	CostMicros       int64 `json:"cost_micros"`
	RecursionDepth   int64 `json:"recursion_depth"`
	Parallelism      int64 `json:"parallelism"`
}

// Dimension names one budget dimension.
type Dimension string

// The budget dimensions, in reporting order.
const (
	DimSteps            Dimension = "steps"
	DimToolCalls        Dimension = "tool_calls"
	DimWallSeconds      Dimension = "wall_seconds"
	DimSuspendedSeconds Dimension = "suspended_seconds"
	DimTokens           Dimension = "tokens"
	DimCostMicros       Dimension = "cost_micros"
	DimRecursionDepth   Dimension = "recursion_depth"
	DimParallelism      Dimension = "parallelism"
)

func (u *Usage) dims() [8]struct {
	d     Dimension
	v     *int64
	gauge bool
} {
	return [8]struct {
		d     Dimension
		v     *int64
		gauge bool
	}{
		{DimSteps, &u.Steps, false}, {DimToolCalls, &u.ToolCalls, false},
		{DimWallSeconds, &u.WallSeconds, false}, {DimSuspendedSeconds, &u.SuspendedSeconds, false},
		{DimTokens, &u.Tokens, false}, {DimCostMicros, &u.CostMicros, false},
		{DimRecursionDepth, &u.RecursionDepth, true}, {DimParallelism, &u.Parallelism, true},
	}
}

// Budgets are a contract's hard limits and soft checkpoint boundary.
type Budgets struct {
	Limits               Usage  `json:"limits"`
	RetriesPerTransition int64  `json:"retries_per_transition"`
	SoftPercent          int64  `json:"soft_checkpoint_percent"` // persist a checkpoint and residual-work handoff here
	AggregateDescendants bool   `json:"aggregate_descendants"`
	ExhaustedEvent       string `json:"exhausted_event"` // the event the budget governor issues on a breach
}

// BudgetVerdict is the outcome of charging usage against the budgets.
type BudgetVerdict struct {
	// Over lists dimensions whose usage now exceeds the hard limit: the
	// governor must issue the exhausted event.
	Over []Dimension `json:"over"`
	// SoftCrossed lists dimensions that reached the soft boundary with this
	// charge (they were below it before): persist a checkpoint and a typed
	// residual-work handoff now. It fires once per dimension.
	SoftCrossed []Dimension `json:"soft_crossed"`
	// AtSoft lists every dimension at or past the soft boundary.
	AtSoft []Dimension `json:"at_soft"`
	// Remaining is the headroom left under each hard limit (never negative).
	Remaining Usage `json:"remaining"`
}

// Exhausted reports whether any hard limit is exceeded.
func (v BudgetVerdict) Exhausted() bool { return len(v.Over) > 0 }

// Plus combines two usages: counters add (saturating at MaxInt64), gauges
// take the maximum. It is how descendant usage aggregates into the parent.
func (a Usage) Plus(b Usage) Usage {
	out := a
	od, bd := out.dims(), b.dims()
	for i := range od {
		if od[i].gauge {
			*od[i].v = max(*od[i].v, *bd[i].v)
		} else {
			*od[i].v = satAdd(*od[i].v, *bd[i].v)
		}
	}
	return out
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func validUsage(u Usage, what string) error {
	for _, d := range u.dims() {
		if *d.v < 0 {
			return errorf(CodeInput, "/"+string(d.d), "%s %s is negative (%d)", what, d.d, *d.v)
		}
	}
	return nil
}

// Charge adds delta to used and judges the result. Negative values are an
// INPUT error. The charge is always recorded (usage that happened cannot be
// refused after the fact); use Fits before work to refuse it up front.
func (b Budgets) Charge(used, delta Usage) (Usage, BudgetVerdict, error) {
	if err := validUsage(used, "used"); err != nil {
		return used, BudgetVerdict{}, err
	}
	if err := validUsage(delta, "delta"); err != nil {
		return used, BudgetVerdict{}, err
	}
	next := used.Plus(delta)
	return next, b.judge(used, next), nil
}

// Fits reports whether charging delta would keep every dimension within its
// hard limit. Reserve before dispatching; the governor refuses otherwise.
func (b Budgets) Fits(used, delta Usage) bool {
	if validUsage(used, "used") != nil || validUsage(delta, "delta") != nil {
		return false
	}
	next := used.Plus(delta)
	lim := b.Limits
	for i, d := range next.dims() {
		if *d.v > *lim.dims()[i].v {
			return false
		}
	}
	return true
}

func (b Budgets) judge(before, after Usage) BudgetVerdict {
	v := BudgetVerdict{Over: []Dimension{}, SoftCrossed: []Dimension{}, AtSoft: []Dimension{}}
	lim := b.Limits
	ld, bd, ad, rd := lim.dims(), before.dims(), after.dims(), v.Remaining.dims()
	for i := range ad {
		limit, was, now := *ld[i].v, *bd[i].v, *ad[i].v
		if now > limit {
			v.Over = append(v.Over, ad[i].d)
		}
		if b.atSoft(now, limit) {
			v.AtSoft = append(v.AtSoft, ad[i].d)
			if !b.atSoft(was, limit) {
				v.SoftCrossed = append(v.SoftCrossed, ad[i].d)
			}
		}
		*rd[i].v = max(limit-now, 0)
	}
	return v
}

// atSoft reports value >= SoftPercent% of limit, exactly in integers:
// value*100 >= limit*SoftPercent, computed without overflow.
func (b Budgets) atSoft(value, limit int64) bool {
	if value >= limit {
		return true
	}
	// value < limit <= 2^52, so value*100 and limit*99 both fit in int64.
	return value*100 >= limit*b.SoftPercent
}

// MaxReported bounds each number of one usage report, as every contract
// limit is bounded: sums of two in-range values cannot overflow.
const MaxReported = maxLimit

// CheckReport validates a usage report — what an input's submitter or an
// adapter declares one piece of work consumed. Only tokens and cost are
// reported (steps, tool calls and time are counted by the runner itself;
// recursion depth and parallelism are not usage of one piece of work);
// each is in [0, MaxReported].
func CheckReport(u Usage) error {
	// A report in range is checked without the dimensions' table, which
	// holds pointers into u and so moved every report to the heap.
	if u.Steps == 0 && u.ToolCalls == 0 && u.WallSeconds == 0 && u.SuspendedSeconds == 0 &&
		u.RecursionDepth == 0 && u.Parallelism == 0 &&
		u.Tokens >= 0 && u.Tokens <= MaxReported && u.CostMicros >= 0 && u.CostMicros <= MaxReported {
		return nil
	}
	bad := u
	return checkReport(&bad)
}

// checkReport is CheckReport through the dimensions' table: the error of
// the first dimension out of range, or nil.
func checkReport(u *Usage) error {
	for _, d := range u.dims() {
		switch v := *d.v; {
		case d.d != DimTokens && d.d != DimCostMicros && v != 0:
			return errorf(CodeInput, "/"+string(d.d), "a usage report carries tokens and cost_micros only, not %s", d.d)
		case v < 0:
			return errorf(CodeInput, "/"+string(d.d), "reported %s is negative (%d)", d.d, v)
		case v > MaxReported:
			return errorf(CodeLimit, "/"+string(d.d), "reported %s %d is above %d", d.d, v, int64(MaxReported))
		}
	}
	return nil
}
