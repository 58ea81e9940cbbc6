package sqlite

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// cloneTick's copies, their slices cut from the writer's arenas, are each
// the tick as it was passed: the caller's writing over its slices after
// the copy, the next copies and an append to a copy change none of them.
func TestCloneTickCopiesStayTheTicks(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var w writer
		n := rapid.IntRange(1, 12).Draw(rt, "ticks")
		var want, got []store.Tick
		for k := 0; k < n; k++ {
			var tk store.Tick
			for e := rapid.IntRange(0, 20).Draw(rt, "events"); e > 0; e-- {
				tk.Events = append(tk.Events, storetest.Ev("E", fmt.Sprintf(`{"k":%d,"e":%d}`, k, e)))
			}
			for e := rapid.IntRange(0, 5).Draw(rt, "trace"); e > 0; e-- {
				tk.Trace = append(tk.Trace, store.TraceRecord{Kind: "t", Body: []byte(fmt.Sprint(k, e))})
			}
			for e := rapid.IntRange(0, 3).Draw(rt, "ids"); e > 0; e-- {
				tk.Consume = append(tk.Consume, fmt.Sprint("c", k, e))
				tk.Begin = append(tk.Begin, fmt.Sprint("b", k, e))
				tk.Results = append(tk.Results, store.AttemptResult{IntentID: fmt.Sprint("i", k, e), N: int64(e)})
				tk.Receipts = append(tk.Receipts, store.Receipt{IntentID: fmt.Sprint("i", k, e), Body: []byte{byte(e)}})
			}
			if rapid.Bool().Draw(rt, "reset") {
				w.tickArenas.reset()
				w.arena = w.arena[:0]
				want, got = nil, nil
			}
			want = append(want, deepTick(tk))
			got = append(got, w.cloneTick(tk))
			// The caller writes over what it passed.
			for i := range tk.Events {
				tk.Events[i] = store.Event{Kind: "X"}
			}
			for i := range tk.Consume {
				tk.Consume[i], tk.Begin[i] = "x", "x"
			}
		}
		// An append to a copy writes over no other.
		for i := range got {
			if rapid.Bool().Draw(rt, "append") {
				_ = append(got[i].Events, store.Event{Kind: "Y"})
				_ = append(got[i].Consume, "y")
			}
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				rt.Fatalf("copy %d:\n%+v\nwant\n%+v", i, got[i], want[i])
			}
		}
	})
}

// deepTick is the tick with its slices copied by slices.Clone's rule.
func deepTick(t store.Tick) store.Tick {
	c := t
	c.Events = append(t.Events[:0:0], t.Events...)
	c.Trace = append(t.Trace[:0:0], t.Trace...)
	c.Consume = append(t.Consume[:0:0], t.Consume...)
	c.Begin = append(t.Begin[:0:0], t.Begin...)
	c.Results = append(t.Results[:0:0], t.Results...)
	c.Receipts = append(t.Receipts[:0:0], t.Receipts...)
	return c
}

// A lagging tick's copy, the writer's arenas warm, allocates nothing but
// its checkpoint's header. It fails when a slice is cloned anew.
func TestCloneTickReusesTheArenas(t *testing.T) {
	var w writer
	tk := store.Tick{Checkpoint: &store.Checkpoint{Body: []byte("cp")},
		Results:  []store.AttemptResult{{IntentID: "i", N: 1}},
		Receipts: []store.Receipt{{IntentID: "i", Body: []byte("r")}}, Consume: []string{"c"}, Begin: []string{"b"}}
	for e := 0; e < 6; e++ {
		tk.Events = append(tk.Events, storetest.Ev("E", fmt.Sprintf(`{"e":%d}`, e)))
		tk.Trace = append(tk.Trace, store.TraceRecord{Kind: "t", Body: []byte("t")})
	}
	round := func() {
		w.cloneTick(tk)
		w.cloneTick(tk)
		w.tickArenas.reset()
		w.arena = w.arena[:0]
	}
	round()
	if n := testing.AllocsPerRun(20, round); n > 2 {
		t.Errorf("%.1f allocations for two copies, want 2 (their checkpoints)", n)
	}
}
