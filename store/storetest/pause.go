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
	if got := fmt.Sprint(list); got != fmt.Sprintf("[{hourly pete  %s} {nightly olga the ledger is being migrated %s}]", c.Now(), first) {
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
}
