package storetest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testCensus holds a store's census to what a walk of every run's header
// finds, at expiry bounds before, at and after each lease's expiry.
func testCensus(t *testing.T, s store.Store, c *Clock) {
	ct, ok := store.CensusTakerOf(s)
	if !ok {
		t.Skip("this store takes no census")
	}
	now := c.Now()
	if got, err := ct.Census(ctx, store.CensusQuery{ExpiredBy: now, ByState: true}); err != nil || !reflect.DeepEqual(got, store.Census{}) {
		t.Fatalf("an empty store's census: %+v, %v", got, err)
	}
	// Created in an order that is not the ids' order.
	for _, id := range []string{"cs-lease10s", "cs-ended", "cs-quarantined", "cs-idle", "cs-lease1m", "cs-released", "cs-ended-quarantined", "cs-leased-quarantined"} {
		newRun(t, s, id)
	}
	lease := func(run string, ttl time.Duration) store.Lease {
		t.Helper()
		l, err := s.AcquireLease(ctx, run, "runner-"+run, ttl)
		must(t, err)
		return l
	}
	l := lease("cs-idle", time.Hour)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "WAIT_APPROVAL", Events: []store.Event{Ev("WAIT", `{}`)}}))
	must(t, s.ReleaseLease(ctx, l))
	lease("cs-lease10s", 10*time.Second)
	lease("cs-lease1m", time.Minute)
	must(t, s.ReleaseLease(ctx, lease("cs-released", time.Minute)))
	for _, id := range []string{"cs-ended", "cs-ended-quarantined"} {
		l := lease(id, time.Hour)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "SUCCEEDED", Outcome: "success", Events: []store.Event{Ev("END", `{}`)}}))
	}
	must(t, s.Quarantine(ctx, "cs-quarantined", "checkpoint digest mismatch"))
	lease("cs-leased-quarantined", time.Second)
	must(t, s.Quarantine(ctx, "cs-leased-quarantined", store.ParkPrefix+"HUMAN_RECONCILIATION: fencing"))
	// A store may refuse to quarantine a run that has ended; if it takes
	// it, the run still counts as ended.
	_ = s.Quarantine(ctx, "cs-ended-quarantined", "checkpoint digest mismatch")

	// The oracle: every header, paged through in Runs' order.
	walk := func(expiredBy time.Time) store.Census {
		var w store.Census
		after := ""
		for {
			runs, err := s.Runs(ctx, after, 3)
			must(t, err)
			if len(runs) == 0 {
				return w
			}
			for _, r := range runs {
				w.Count(r.State, 1, 0, 0)
				switch {
				case r.Outcome != "":
					w.Ended++
				case r.Quarantine != "":
					w.Quarantined = append(w.Quarantined, r)
				default:
					w.Live++
					if r.Lease.Owner != "" && !r.Lease.ExpiresAt.After(expiredBy) {
						w.Expired = append(w.Expired, r)
					}
				}
			}
			after = runs[len(runs)-1].ID
		}
	}
	expired := map[time.Duration]int{}
	for _, d := range []time.Duration{-time.Hour, 0, 10*time.Second - time.Nanosecond, 10 * time.Second, time.Minute - time.Nanosecond, time.Minute, time.Hour} {
		by := now.Add(d)
		want := walk(by)
		got, err := ct.Census(ctx, store.CensusQuery{ExpiredBy: by, ByState: true})
		must(t, err)
		counts, err := ct.Census(ctx, store.CensusQuery{ExpiredBy: by})
		must(t, err)
		bare := want
		bare.States = nil // not asked for
		if !reflect.DeepEqual(counts, bare) {
			t.Fatalf("census not by state, with leases expired by now%+v:\n got %+v\nwant %+v", d, counts, bare)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("census with leases expired by now%+v:\n got %+v\nwant %+v", d, got, want)
		}
		if got.Runs != 8 || got.Ended != 2 || got.Live != 4 || len(got.Quarantined) != 2 {
			t.Fatalf("census by now%+v counts %d runs, %d ended, %d live, %d quarantined; want 8, 2, 4, 2", d, got.Runs, got.Ended, got.Live, len(got.Quarantined))
		}
		expired[d] = len(got.Expired)
	}
	if want := map[string]int64{"CREATED": 5, "WAIT_APPROVAL": 1, "SUCCEEDED": 2}; !reflect.DeepEqual(walk(now).States, want) {
		t.Fatalf("runs by state %v, want %v", walk(now).States, want)
	}
	// Each lease counts as expired from its expiry on, not a nanosecond
	// before; a released lease and one a quarantined run holds never do.
	want := map[time.Duration]int{-time.Hour: 0, 0: 0, 10*time.Second - time.Nanosecond: 0, 10 * time.Second: 1, time.Minute - time.Nanosecond: 1, time.Minute: 2, time.Hour: 2}
	if !reflect.DeepEqual(expired, want) {
		t.Fatalf("expired leases by bound: %v, want %v", expired, want)
	}

	// The live runs in a state are the walk's, in creation order, each
	// header as the walk reads it; none ended or quarantined.
	live := map[string][]store.Run{}
	runs, err := s.Runs(ctx, "", 100)
	must(t, err)
	for _, r := range runs {
		if r.Outcome == "" && r.Quarantine == "" {
			live[r.State] = append(live[r.State], r)
		}
	}
	hl, isHeadLister := store.As[store.LiveHeadLister](s)
	for _, state := range []string{"CREATED", "WAIT_APPROVAL", "SUCCEEDED", "NOWHERE"} {
		got, err := ct.LiveIn(ctx, state)
		must(t, err)
		if !reflect.DeepEqual(got, live[state]) {
			t.Fatalf("live runs in %s: %+v, want %+v", state, got, live[state])
		}
		// Where each stands, as the store lists it and as the headers say.
		var heads []store.RunHead
		for _, r := range live[state] {
			heads = append(heads, store.HeadOf(r))
		}
		if isHeadLister {
			gotHeads, err := hl.LiveHeadsIn(ctx, state)
			must(t, err)
			if !reflect.DeepEqual(gotHeads, heads) {
				t.Fatalf("live run heads in %s: %+v, want %+v", state, gotHeads, heads)
			}
		}
		viaFallback, err := store.LiveHeadsIn(ctx, PagesOnly{Store: s}, state)
		must(t, err)
		if !reflect.DeepEqual(viaFallback, heads) {
			t.Fatalf("live run heads in %s, paged: %+v, want %+v", state, viaFallback, heads)
		}
	}
	var ids []string
	for _, r := range live["CREATED"] {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"cs-lease10s", "cs-lease1m", "cs-released"}) {
		t.Fatalf("the walk's live runs in CREATED: %v", ids)
	}
}
