package postgres

import (
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// closedByMap is closedWithResult as it was written first, returning a
// map by intent: the oracle for the one on a caller's room.
func closedByMap(tick store.Tick) map[string]store.Receipt {
	if len(tick.Results) == 0 || len(tick.Receipts) == 0 {
		return nil
	}
	type uses struct{ results, receipts, other int }
	count := map[string]*uses{}
	use := func(id string) *uses {
		if count[id] == nil {
			count[id] = &uses{}
		}
		return count[id]
	}
	for _, r := range tick.Results {
		use(r.IntentID).results++
	}
	for _, rc := range tick.Receipts {
		use(rc.IntentID).receipts++
	}
	for _, id := range tick.Begin {
		use(id).other++
	}
	for _, in := range tick.Intents {
		use(in.ID).other++
	}
	var out map[string]store.Receipt
	for _, rc := range tick.Receipts {
		if u := count[rc.IntentID]; u.results == 1 && u.receipts == 1 && u.other == 0 {
			if out == nil {
				out = map[string]store.Receipt{}
			}
			out[rc.IntentID] = rc
		}
	}
	return out
}

// TestClosedWithResultMatchesMap: for ticks naming a few intents in their
// results, receipts, begins and intents, the closed receipts found on a
// room (none, smaller or larger than needed) are the oracle's: as many,
// each looked up to the same receipt, and every other id not found.
func TestClosedWithResultMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.SampledFrom([]string{"a", "b", "c", "d", "e"})
		var tick store.Tick
		for _, r := range rapid.SliceOfN(id, 0, 5).Draw(t, "results") {
			tick.Results = append(tick.Results, store.AttemptResult{IntentID: r})
		}
		for i, r := range rapid.SliceOfN(id, 0, 5).Draw(t, "receipts") {
			tick.Receipts = append(tick.Receipts, store.Receipt{IntentID: r, Outcome: string(rune('p' + i)), Digest: r + string(rune('0'+i))})
		}
		tick.Begin = rapid.SliceOfN(id, 0, 2).Draw(t, "begins")
		for _, r := range rapid.SliceOfN(id, 0, 2).Draw(t, "intents") {
			tick.Intents = append(tick.Intents, store.Intent{ID: r})
		}
		want := closedByMap(tick)
		room := make(closedReceipts, 0, rapid.IntRange(0, 4).Draw(t, "room"))
		got := closedWithResult(tick, room)
		if len(got) != len(want) {
			t.Fatalf("%d closed, want %d (%v)", len(got), len(want), want)
		}
		for _, i := range []string{"a", "b", "c", "d", "e", "f"} {
			rc, ok := got.get(i)
			wrc, wok := want[i]
			if ok != wok || rc.IntentID != wrc.IntentID || rc.Outcome != wrc.Outcome || rc.Digest != wrc.Digest {
				t.Fatalf("intent %s: %+v %v, want %+v %v", i, rc, ok, wrc, wok)
			}
		}
	})
}
