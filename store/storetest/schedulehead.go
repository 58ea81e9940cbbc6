package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testScheduleHeads holds the store to store.ScheduleHeads: a head reads
// back; a later time due replaces it, an earlier one leaves it; schedules
// are apart; bad arguments write nothing.
func testScheduleHeads(t *testing.T, s store.Store, _ *Clock) {
	h, ok := store.ScheduleHeadsOf(s)
	if !ok {
		t.Skip("the store keeps no schedules' heads")
	}
	if _, found, err := h.ScheduleHead(ctx, "nightly"); err != nil || found {
		t.Fatalf("a head before any: %v, %v", found, err)
	}
	due := time.Date(2026, 12, 7, 1, 30, 0, 0, time.UTC)
	read := func(name string) store.ScheduleHead {
		t.Helper()
		got, found, err := h.ScheduleHead(ctx, name)
		if err != nil || !found {
			t.Fatalf("the head of %s: %v, %v", name, found, err)
		}
		return got
	}
	must(t, h.SetScheduleHead(ctx, store.ScheduleHead{Name: "nightly", RunID: "nightly-2026-12-07T01:30:00Z", Due: due}))
	if got := read("nightly"); got != (store.ScheduleHead{Name: "nightly", RunID: "nightly-2026-12-07T01:30:00Z", Due: due}) {
		t.Fatalf("read back %+v", got)
	}
	next := due.Add(24 * time.Hour)
	must(t, h.SetScheduleHead(ctx, store.ScheduleHead{Name: "nightly", RunID: "nightly-2026-12-08T01:30:00Z", Due: next}))
	must(t, h.SetScheduleHead(ctx, store.ScheduleHead{Name: "nightly", RunID: "nightly-2026-12-01T01:30:00Z", Due: due.Add(-6 * 24 * time.Hour)}))
	must(t, h.SetScheduleHead(ctx, store.ScheduleHead{Name: "hourly", RunID: "hourly-1", Due: due}))
	if got := read("nightly"); got.RunID != "nightly-2026-12-08T01:30:00Z" || !got.Due.Equal(next) {
		t.Fatalf("after a later and an earlier time due: %+v", got)
	}
	if got := read("hourly"); got.RunID != "hourly-1" {
		t.Fatalf("another schedule's head: %+v", got)
	}
	// The same time due again, under another id (a template changed):
	// the last written.
	must(t, h.SetScheduleHead(ctx, store.ScheduleHead{Name: "nightly", RunID: "n-2026-12-08", Due: next}))
	if got := read("nightly"); got.RunID != "n-2026-12-08" {
		t.Fatalf("the same time due again: %+v", got)
	}
	// Eight servers at once, each with its own time due: the latest
	// stands, whatever order they commit in.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			errs <- h.SetScheduleHead(ctx, store.ScheduleHead{Name: "racing", RunID: fmt.Sprintf("racing-%d", i), Due: due.Add(time.Duration(i) * time.Hour)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	if got := read("racing"); got.RunID != "racing-7" {
		t.Fatalf("eight at once: %+v", got)
	}
	for _, bad := range []store.ScheduleHead{{Name: "", RunID: "x", Due: due}, {Name: "nightly", RunID: "not an id", Due: next.Add(time.Hour)},
		{Name: "nightly", RunID: "", Due: next.Add(time.Hour)}, {Name: "nightly", RunID: "x", Due: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, {Name: "\xff", RunID: "x", Due: due}} {
		mustCode(t, h.SetScheduleHead(ctx, bad), store.CodeInvalidInput)
	}
	_, _, err := h.ScheduleHead(ctx, "")
	mustCode(t, err, store.CodeInvalidInput)
	if got := read("nightly"); got.RunID != "n-2026-12-08" {
		t.Fatalf("after refused heads: %+v", got)
	}
}
