package runner

import (
	"context"
	"maps"
	"math"
	"reflect"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/internal/racebuild"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

func storeEvent(digest string) store.Event {
	return store.Event{Kind: EventControl, Digest: digest}
}

// The records a tick keeps, and the evidence maps they hold, read as they
// were kept until the tick commits, however the pass's scratch is reused:
// by the pass's later ticks once a tick commits, by the runner's next
// passes once a pass ends. Drawn: fired events (evidence of one to three
// items), commits and pass ends in any order.
func TestScratchHoldsUntilCommit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &Runner{}
		tk := &tick{}
		r.takeScratch(tk)
		type kept struct {
			rec  *control.Record
			want map[string]string
			id   string
		}
		var held []kept
		check := func() {
			for i, k := range held {
				if !maps.Equal(k.rec.Evidence, k.want) || k.rec.EventID != k.id {
					t.Fatalf("record %d reads %q %v, was kept as %q %v", i, k.rec.EventID, k.rec.Evidence, k.id, k.want)
				}
				if w := tk.wire[i]; w.Record != k.rec || w.Digest != k.id {
					t.Fatalf("wire %d reads %+v", i, w)
				}
			}
		}
		n := 0
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0: // the tick commits
				tk.dropRecords()
				held = nil
			case 1: // the pass ends; the next begins
				r.leaveScratch(tk)
				tk = &tick{}
				r.takeScratch(tk)
				held = nil
			default: // an event is fired
				n++
				items := rapid.IntRange(1, 3).Draw(t, "items")
				kv := make([]string, 0, 2*items)
				want := map[string]string{}
				for j := range items {
					name, d := "e"+strconv.Itoa(j), "d"+strconv.Itoa(n)+"."+strconv.Itoa(j)
					kv = append(kv, name, d)
					want[name] = d
				}
				id := "run:" + strconv.Itoa(n)
				rec := tk.keepRecord(control.Record{EventID: id, Evidence: tk.evd(kv...)})
				tk.appendEvent(storeEvent(id), tripwire.Event{Kind: EventControl, Digest: id, Record: rec})
				held = append(held, kept{rec, want, id})
			}
			check()
		}
	})
}

// A committed tick's evidence maps, records and wire array are the next
// tick's, and a finished pass's the next pass's: the scratch is reused,
// not allocated again.
func TestScratchIsReused(t *testing.T) {
	r := &Runner{}
	tk := &tick{}
	r.takeScratch(tk)
	m := tk.evd("a", "1", "b", "2")
	tk.keepRecord(control.Record{Evidence: m})
	tk.appendEvent(storeEvent("x"), tripwire.Event{Kind: EventControl})
	records, wire := &tk.records[:1][0], &tk.wire[:1][0]
	tk.dropRecords()
	if got := tk.evd("c", "3"); reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(m).UnsafePointer() || len(got) != 1 || got["c"] != "3" {
		t.Fatalf("after a commit evd gave %v, a new map", got)
	}
	held := tk.scratch
	r.leaveScratch(tk)
	if tk.records != nil || tk.wire != nil || tk.evMaps != nil || tk.scratch != nil {
		t.Fatal("a finished pass's tick still holds its scratch")
	}
	next := &tick{}
	r.takeScratch(next) // a sync.Pool may drop what it holds; it does not between these calls
	if next.records == nil || next.wire == nil || len(next.evMaps) != 1 {
		t.Skip("the pool dropped the scratch")
	}
	if &next.records[:1][0] != records || &next.wire[:1][0] != wire {
		t.Fatal("the next pass allocated its own arrays")
	}
	if next.scratch != held || held == nil {
		t.Fatal("the next pass allocated its own scratch")
	}
	if !reflect.ValueOf(next.records[:1][0]).IsZero() {
		t.Fatal("a finished pass's records were handed on uncleared")
	}
}

// A pass holds the input SubmitAdvance hands it, and the inbox it takes
// as empty, in its scratch: no allocation once a pass has left it, and
// nothing of the input is left in it for the next.
func TestFoldHeldInScratch(t *testing.T) {
	r := &Runner{}
	body := []byte(`{"a":1}`)
	fold := &store.Inbound{ID: "input:1", RunID: "run", Kind: KindInput, Body: body, Seq: 7}
	pass := func() *tick {
		tk := &tick{inboxOK: true}
		r.takeScratch(tk)
		tk.records = append(tk.records[:0], control.Record{}) // a pass that left something to hand on
		if err := r.queueFold(context.Background(), tk, fold); err != nil {
			t.Fatal(err)
		}
		if tk.fold == nil || tk.fold == fold || tk.fold.ID != fold.ID || tk.fold.Seq != math.MaxInt64 || &tk.fold.Body[0] != &body[0] {
			t.Fatalf("the pass's fold is %+v", tk.fold)
		}
		if len(tk.inbox) != 1 || tk.inbox[0].ID != fold.ID || tk.inbox[0].Seq != math.MaxInt64 {
			t.Fatalf("the pass's inbox is %+v", tk.inbox)
		}
		if fold.Seq != 7 {
			t.Fatal("the caller's input was changed")
		}
		return tk
	}
	tk := pass()
	held := tk.scratch
	r.leaveScratch(tk)
	if !reflect.ValueOf(held.fold).IsZero() || len(held.inbox) != 0 || !reflect.ValueOf(held.inbox[:cap(held.inbox)][0]).IsZero() {
		t.Fatal("a finished pass's scratch still holds its input")
	}
	if racebuild.Enabled {
		return // the race detector's pools drop what is put back
	}
	if n := testing.AllocsPerRun(100, func() { r.leaveScratch(pass()) }); n > 1 {
		t.Fatalf("%v allocations a pass, want at most the tick's", n)
	}
}

// A pass's begun attempts are kept in an array the next pass takes,
// emptied and cleared.
func TestBegunArrayReused(t *testing.T) {
	r := &Runner{}
	tk := &tick{}
	r.takeScratch(tk)
	tk.records = append(tk.records[:0], control.Record{})
	tk.begun.set(store.Attempt{IntentID: "i", N: 1, Status: store.AttemptStarted})
	first := &tk.begun[0]
	r.leaveScratch(tk)
	if tk.begun != nil {
		t.Fatal("a finished pass's tick still holds its begun attempts")
	}
	next := &tick{}
	r.takeScratch(next)
	if next.scratch == nil || cap(next.begun) == 0 {
		t.Skip("the pool dropped the scratch")
	}
	if len(next.begun) != 0 || &next.begun[:1][0] != first || !reflect.ValueOf(next.begun[:1][0]).IsZero() {
		t.Fatalf("the next pass's begun attempts: %+v", next.begun[:1])
	}
	if _, ok := next.begun.get("i"); ok {
		t.Fatal("the next pass found the last pass's attempt")
	}
}
