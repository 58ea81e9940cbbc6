package storetest

import (
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// MigratedWaits holds a store migrated to the schema that keeps each
// route's wait (SQLite 22, PostgreSQL 30), whose one notice,
// r/3/0/approval_waiting, was due and had reached the route chat before:
// the notice is kept as it was, no route waiting, and a retry then keeps
// each route's wait.
func MigratedWaits(t *testing.T, nb store.Noticeboard) {
	t.Helper()
	got, err := nb.ClaimNotices(ctx, "a", time.Minute, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %+v (%v)", got, err)
	}
	if n := got[0]; n.ID != "r/3/0/approval_waiting" || n.Attempts != 3 || !slices.Equal(n.Sent, []string{"chat"}) || n.Waits != nil {
		t.Fatalf("after the migration the notice is %+v", n)
	}
	must(t, nb.NoticeRetry(ctx, got[0].ID, "a", "route pager: down", []string{"chat"},
		[]store.RouteWait{{Route: "pager", After: time.Hour, Failures: 2}, {Route: "mail", Failures: 1}}))
	got, err = nb.ClaimNotices(ctx, "a", time.Minute, 10)
	if err != nil || len(got) != 1 || len(got[0].Waits) != 2 || got[0].Waits[0] != (store.RouteWait{Route: "mail", Failures: 1}) ||
		got[0].Waits[1].Route != "pager" || got[0].Waits[1].Failures != 2 || got[0].Waits[1].After <= 59*time.Minute || got[0].Waits[1].After > time.Hour {
		t.Fatalf("after a retry claimed %+v (%v)", got, err)
	}
}

// MigratedLimits holds a store migrated to the schema that keeps the
// bound each request declared (SQLite 23, PostgreSQL 31), in which slot
// 0 of the limit pay was held by old for the next hour and the rate
// lookups booked as far: the slot stays held, counted, under no bound
// (it binds no one), and takes after it record theirs.
func MigratedLimits(t *testing.T, l store.SharedLimits) {
	t.Helper()
	uses, err := l.LimitsInUse(ctx)
	if err != nil || len(uses) != 2 || uses[1].Name != "pay" || len(uses[1].Held) != 1 || uses[1].Held[0].Holder != "old" ||
		uses[1].Held[0].Bound != 0 || uses[1].Bounds != nil || uses[0].PerSecond != 0 {
		t.Fatalf("after the migration in use: %+v (%v)", uses, err)
	}
	if slot, ok, err := l.TakeSlot(ctx, "pay", 2, "new", time.Minute, 0); err != nil || !ok || slot != 1 {
		t.Fatalf("took slot %d, %v (%v)", slot, ok, err)
	}
	if _, ok, err := l.TakeSlot(ctx, "pay", 3, "more", time.Minute, 0); err != nil || ok {
		t.Fatalf("a third request taken (%v) while two were open under a bound of two", err)
	}
	uses, err = l.LimitsInUse(ctx)
	if err != nil || !slices.Equal(uses[1].Bounds, []int{2}) {
		t.Fatalf("in use: %+v (%v)", uses, err)
	}
}
