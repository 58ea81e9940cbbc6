package verify

import (
	"encoding/json"
	"strconv"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// ledger is the budget account a runner keeps in each checkpoint, read
// here on its own terms: verify trusts the numbers only as far as the
// record confirms them.
type ledger struct {
	Limits         control.Usage `json:"limits"`
	MaxTransitions int64         `json:"max_transitions"`
	Adopted        bool          `json:"adopted"`
	StartedMillis  int64         `json:"started_millis"`
	ClockMillis    int64         `json:"clock_millis"`
	WallMillis     int64         `json:"wall_millis"`
	SuspendMillis  int64         `json:"suspended_millis"`
	Steps          int64         `json:"steps"`
	ToolCalls      int64         `json:"tool_calls"`
	Breach         *struct {
		Dimension control.Dimension `json:"dimension"`
		Limit     int64             `json:"limit"`
		Used      int64             `json:"used"`
		Requested int64             `json:"requested"`
		Event     string            `json:"event"`
		State     string            `json:"state"`
	} `json:"breach"`
}

// budgetEvents are the interrupts a budget breach issues, with the role
// that issues each.
var budgetEvents = map[string]string{"TIMEOUT": "deadline_controller", "BUDGET_EXHAUSTED": "budget_governor"}

// checkBudgets checks the run's budget ledger against the record, without
// a clock: the counters equal what the log and the attempt rows show;
// every outside input was accepted within the step budget; tool calls
// never exceeded theirs; wall and suspended time add up to exactly the
// span of the recorded clock readings; and a TIMEOUT or BUDGET_EXHAUSTED
// the governor issued rests on a recorded breach that is really over its
// limit (and none is recorded without it). A checkpoint written before runs
// kept a ledger has nothing to check.
func checkBudgets(rep *Report, cpBody []byte, evs []store.Event, attempts int64) {
	var body struct {
		Budget *ledger `json:"budget"`
	}
	if err := json.Unmarshal(cpBody, &body); err != nil || body.Budget == nil {
		return
	}
	l := body.Budget
	const where = "budget"
	if l.WallMillis < 0 || l.SuspendMillis < 0 || l.ClockMillis < l.StartedMillis ||
		l.WallMillis+l.SuspendMillis != l.ClockMillis-l.StartedMillis {
		rep.fail("budget-time", where, "wall %d ms + suspended %d ms is not the %d ms between the first and last clock readings",
			l.WallMillis, l.SuspendMillis, l.ClockMillis-l.StartedMillis)
	}
	var accepted int64
	var issued []control.Record
	for _, e := range evs {
		switch e.Kind {
		case runner.EventAccepted:
			accepted++
			var in struct {
				Kind string `json:"kind"`
			}
			if json.Unmarshal(e.Body, &in) == nil && in.Kind != "receipt" && !l.Adopted && accepted > l.Limits.Steps {
				rep.fail("budget-limit", "event "+strconv.FormatInt(e.Seq, 10), "outside input accepted as step %d of a budget of %d", accepted, l.Limits.Steps)
			}
		case runner.EventControl:
			var rec control.Record
			if json.Unmarshal(e.Body, &rec) == nil && budgetEvents[rec.Event] != "" && rec.ActorRole == budgetEvents[rec.Event] {
				issued = append(issued, rec)
			}
		}
	}
	countOK := func(recorded, counted int64) bool {
		if l.Adopted {
			return recorded <= counted // the ledger opened mid-run
		}
		return recorded == counted
	}
	if !countOK(l.Steps, accepted) {
		rep.fail("budget-count", where, "ledger counts %d steps; the log has %d accepted inputs", l.Steps, accepted)
	}
	if !countOK(l.ToolCalls, attempts) {
		rep.fail("budget-count", where, "ledger counts %d tool calls; %d attempts are recorded", l.ToolCalls, attempts)
	}
	if l.ToolCalls > l.Limits.ToolCalls {
		rep.fail("budget-limit", where, "%d tool calls against a budget of %d", l.ToolCalls, l.Limits.ToolCalls)
	}
	switch {
	case len(issued) > 1:
		rep.fail("budget-breach", where, "the budget governor interrupted the run %d times", len(issued))
	case len(issued) == 1 && l.Breach == nil:
		rep.fail("budget-breach", where, "%s issued with no breach recorded", issued[0].Event)
	case len(issued) == 0 && l.Breach != nil:
		rep.fail("budget-breach", where, "a %s breach is recorded but %s was never issued", l.Breach.Dimension, l.Breach.Event)
	case len(issued) == 1:
		checkBreach(rep, l, issued[0])
	}
}

func checkBreach(rep *Report, l *ledger, rec control.Record) {
	b := l.Breach
	const where = "budget"
	if b.Event != rec.Event || b.State != rec.From {
		rep.fail("budget-breach", where, "breach says %s in %s; the log has %s in %s", b.Event, b.State, rec.Event, rec.From)
	}
	var limit, now int64
	event := "BUDGET_EXHAUSTED"
	switch b.Dimension {
	case control.DimSteps:
		limit, now = l.Limits.Steps, l.Steps
	case control.DimToolCalls:
		limit, now = l.Limits.ToolCalls, l.ToolCalls
	case control.DimWallSeconds:
		limit, now, event = l.Limits.WallSeconds, control.MillisToSeconds(l.WallMillis), "TIMEOUT"
	case control.DimSuspendedSeconds:
		limit, now, event = l.Limits.SuspendedSeconds, control.MillisToSeconds(l.SuspendMillis), "TIMEOUT"
	case runner.DimTransitions:
		limit, now = l.MaxTransitions, b.Used
	default:
		rep.fail("budget-breach", where, "breach of unknown budget %q", b.Dimension)
		return
	}
	if b.Event != event {
		rep.fail("budget-breach", where, "a %s breach issues %s, not %s", b.Dimension, event, b.Event)
	}
	if b.Limit != limit {
		rep.fail("budget-breach", where, "breach names limit %d; the run's %s budget is %d", b.Limit, b.Dimension, limit)
	}
	if b.Requested < 0 || b.Used+b.Requested <= b.Limit {
		rep.fail("budget-breach", where, "%d used + %d requested is within the limit %d", b.Used, b.Requested, b.Limit)
	}
	if b.Used > now {
		rep.fail("budget-breach", where, "breach claims %d %s used; the ledger has only %d", b.Used, b.Dimension, now)
	}
}
