package storetest

import (
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testSchedulePausing holds the store to store.SchedulePausing: a pause
// reads back with who, why and since when, on the store's clock; paused
// again it keeps its first pause; resumed it is gone; bad arguments
// write nothing.
func testSchedulePausing(t *testing.T, s store.Store, c *Clock) {
	p, ok := store.SchedulePausingOf(s)
	if !ok {
		t.Skip("the store keeps no schedules' pauses")
	}
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "nightly", By: "olga", Reason: "the ledger is being migrated"}))
	first := c.Now()
	c.Advance(time.Minute)
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "nightly", By: "pete", Reason: "again"}))
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "hourly", By: "pete"}))
	list, err := p.PausedSchedules(ctx)
	must(t, err)
	var never time.Time // no end
	if got := fmt.Sprint(list); got != fmt.Sprintf("[{hourly pete  %s %s %s} {nightly olga the ledger is being migrated %s %s %s}]", c.Now(), never, never, first, never, never) {
		t.Fatalf("paused %s", got)
	}
	if resumed, err := p.ResumeSchedule(ctx, "nightly"); err != nil || !resumed {
		t.Fatalf("resume: %v, %v", resumed, err)
	}
	if resumed, err := p.ResumeSchedule(ctx, "nightly"); err != nil || resumed {
		t.Fatalf("resume again: %v, %v", resumed, err)
	}
	for _, bad := range []store.PausedSchedule{{Name: "", By: "olga"}, {Name: "weekly"}, {Name: "weekly", By: "olga", Reason: "\xff"}} {
		mustCode(t, p.PauseSchedule(ctx, bad), store.CodeInvalidInput)
	}
	_, err = p.ResumeSchedule(ctx, "")
	mustCode(t, err, store.CodeInvalidInput)
	if list, err := p.PausedSchedules(ctx); err != nil || len(list) != 1 || list[0].Name != "hourly" {
		t.Fatalf("after a resume and refused pauses: %v, %v", list, err)
	}

	// A pause until a time reads back with it; paused again before then
	// it keeps its first pause; once its time has passed, a new pause
	// replaces it. A pause without an end is never replaced.
	until := c.Now().Add(time.Hour).Truncate(time.Microsecond)
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "weekly", By: "olga", Reason: "freeze", Until: until}))
	since := c.Now()
	c.Advance(59 * time.Minute)
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "weekly", By: "pete", Reason: "again"}))
	c.Advance(time.Minute)
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "hourly", By: "olga", Until: c.Now().Add(time.Minute)}))
	list, err = p.PausedSchedules(ctx)
	must(t, err)
	if got := fmt.Sprint(list); got != fmt.Sprintf("[{hourly pete  %s %s %s} {weekly olga freeze %s %s %s}]", list[0].Since, never, never, since, never, until) {
		t.Fatalf("paused until %s", got)
	}
	if !list[1].Holds(until.Add(-time.Nanosecond)) || list[1].Holds(until) || !list[0].Holds(until.Add(1e6*time.Hour)) {
		t.Fatalf("holds: %v", list)
	}
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "weekly", By: "pete", Reason: "next freeze"}))
	list, err = p.PausedSchedules(ctx)
	must(t, err)
	if got := fmt.Sprint(list[1]); got != fmt.Sprintf("{weekly pete next freeze %s %s %s}", c.Now(), never, never) {
		t.Fatalf("a pause past its end, paused again: %s", got)
	}
	for _, bad := range []time.Time{time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		mustCode(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "yearly", By: "olga", Until: bad}), store.CodeInvalidInput)
		mustCode(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "yearly", By: "olga", From: bad}), store.CodeInvalidInput)
	}

	// A pause set ahead reads back with its start, holds from it and not
	// before; it stands against a later pause as any other; an end not
	// after its start is refused.
	from := c.Now().Add(24 * time.Hour).Truncate(time.Microsecond)
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "yearly", By: "olga", Reason: "year-end freeze", From: from, Until: from.Add(72 * time.Hour)}))
	set := c.Now()
	c.Advance(time.Minute)
	must(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "yearly", By: "pete", Reason: "now"}))
	mustCode(t, p.PauseSchedule(ctx, store.PausedSchedule{Name: "monthly", By: "olga", From: from, Until: from}), store.CodeInvalidInput)
	list, err = p.PausedSchedules(ctx)
	must(t, err)
	if len(list) != 3 || list[2].Name != "yearly" {
		t.Fatalf("after a pause set ahead: %v", list)
	}
	ahead := list[2]
	if got := fmt.Sprint(ahead); got != fmt.Sprintf("{yearly olga year-end freeze %s %s %s}", set, from, from.Add(72*time.Hour)) {
		t.Fatalf("a pause set ahead: %s", got)
	}
	if ahead.Holds(from.Add(-time.Nanosecond)) || !ahead.Holds(from) || !ahead.Holds(from.Add(72*time.Hour-1)) || ahead.Holds(from.Add(72*time.Hour)) ||
		ahead.Over(from.Add(-time.Nanosecond)) || ahead.Over(from) || !ahead.Over(from.Add(72*time.Hour)) {
		t.Fatalf("a pause from %s until three days on: holds and over wrong", from)
	}
}
