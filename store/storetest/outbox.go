package storetest

import (
	"reflect"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testOpenOutbox holds an OutboxLister to what walking every run's intents
// gives: the intents whose outbox row is not done — pending, in flight,
// due for a retry, waiting for a person — in the runs' creation order and
// each run's commit order, none that a receipt closed.
func testOpenOutbox(t *testing.T, s store.Store, _ *Clock) {
	ol, ok := s.(store.OutboxLister)
	if !ok {
		t.Skip("this store does not list its open outbox")
	}
	if got, err := ol.OpenOutbox(ctx); err != nil || len(got) != 0 {
		t.Fatalf("an empty store's open outbox: %+v, %v", got, err)
	}
	// Created in an order that is not the ids' order.
	for _, id := range []string{"ob-c", "ob-a", "ob-b"} {
		newRun(t, s, id)
	}
	commit := func(run string, ticks ...store.Tick) {
		t.Helper()
		l, err := s.AcquireLease(ctx, run, "runner", time.Hour)
		must(t, err)
		for _, tk := range ticks {
			must(t, s.Commit(ctx, l, tk))
		}
		must(t, s.ReleaseLease(ctx, l))
	}
	rc := []byte(`{"ok":true}`)
	commit("ob-c",
		store.Tick{Intents: []store.Intent{In("oc-1", "koc-1", "pay 1"), In("oc-2", "koc-2", "pay 2")}, Begin: []string{"oc-2"}},
		store.Tick{Results: []store.AttemptResult{{IntentID: "oc-2", N: 1, Status: store.AttemptFailedTransient, Outbox: store.OutboxRetry, Route: "503"}}})
	commit("ob-a",
		store.Tick{Intents: []store.Intent{In("oa-1", "koa-1", "pay 3")}, Begin: []string{"oa-1"}},
		store.Tick{Results: []store.AttemptResult{{IntentID: "oa-1", N: 1, Status: store.AttemptSucceeded, Outbox: store.OutboxDone}},
			Receipts: []store.Receipt{{IntentID: "oa-1", Outcome: "confirmed_success", Body: rc, Digest: store.BodyDigest(rc)}}},
		store.Tick{Intents: []store.Intent{In("oa-2", "koa-2", "pay 4")}, Begin: []string{"oa-2"}},
		store.Tick{Results: []store.AttemptResult{{IntentID: "oa-2", N: 1, Status: store.AttemptUnknown, Outbox: store.OutboxHuman, Route: "ambiguous"}}})
	commit("ob-b", store.Tick{Intents: []store.Intent{In("ob-1", "kob-1", "pay 5")}, Begin: []string{"ob-1"}})

	// The oracle: every run, in Runs' order, and its intents not done.
	var want []store.OutboxEntry
	runs, err := s.Runs(ctx, "", 1000)
	must(t, err)
	for _, r := range runs {
		ins, err := s.Intents(ctx, r.ID)
		must(t, err)
		for _, in := range ins {
			if in.Outbox != store.OutboxDone {
				want = append(want, store.OutboxEntry{RunID: r.ID, IntentID: in.ID, EffectType: in.EffectType, Status: in.Outbox, Route: in.Route, Attempts: in.Attempts})
			}
		}
	}
	if len(want) != 4 {
		t.Fatalf("the runs hold %d intents not done, want 4: %+v", len(want), want)
	}
	got, err := ol.OpenOutbox(ctx)
	must(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("open outbox\n got %+v\nwant %+v", got, want)
	}
}
