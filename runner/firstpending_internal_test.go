package runner

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// pendingList is what the pass looked up before firstPending: every
// unconsumed entry of the kind, in the inbox's order. It is written
// independently of firstPending's scan: the consumed ids as a set, the
// inbox filtered by kind and then by that set.
func pendingList(t *tick, kind string) []store.Inbound {
	consumed := make(map[string]bool, len(t.pending.Consume))
	for _, id := range t.pending.Consume {
		consumed[id] = true
	}
	var ofKind []store.Inbound
	for _, in := range t.inbox {
		if in.Kind == kind {
			ofKind = append(ofKind, in)
		}
	}
	var out []store.Inbound
	for _, in := range ofKind {
		if !consumed[in.ID] {
			out = append(out, in)
		}
	}
	return out
}

// TestFirstPendingIsTheListsFirst holds firstPending to the first entry
// of the list of a kind's unconsumed entries, over inboxes of mixed kinds
// with some of their entries consumed by the pass, and to allocating
// nothing.
func TestFirstPendingIsTheListsFirst(t *testing.T) {
	kinds := []string{KindInput, KindChoice, KindControl, KindCancel, KindDeny, KindApprove, KindReconcile}
	r := &Runner{}
	rapid.Check(t, func(rt *rapid.T) {
		tk := &tick{inboxOK: true}
		for i := range rapid.IntRange(0, 12).Draw(rt, "entries") {
			id := fmt.Sprintf("in-%d", rapid.IntRange(0, 8).Draw(rt, fmt.Sprint("id ", i)))
			tk.inbox = append(tk.inbox, store.Inbound{ID: id, Kind: rapid.SampledFrom(kinds).Draw(rt, "kind"), Seq: int64(i + 1), Body: []byte(fmt.Sprint(i))})
		}
		for i := range rapid.IntRange(0, 4).Draw(rt, "consumed") {
			tk.pending.Consume = append(tk.pending.Consume, fmt.Sprintf("in-%d", rapid.IntRange(0, 8).Draw(rt, fmt.Sprint("consumed ", i))))
		}
		for _, kind := range kinds {
			got, ok, err := r.firstPending(context.Background(), tk, kind)
			if err != nil {
				rt.Fatal(err)
			}
			list := pendingList(tk, kind)
			if ok != (len(list) > 0) || ok && (got.ID != list[0].ID || got.Seq != list[0].Seq || string(got.Body) != string(list[0].Body)) {
				rt.Fatalf("%s: firstPending = %+v, %v; the list %+v", kind, got, ok, list)
			}
		}
	})
	tk := &tick{inboxOK: true, inbox: []store.Inbound{{ID: "a", Kind: KindInput}, {ID: "b", Kind: KindInput}}, pending: store.Tick{Consume: []string{"a"}}}
	if n := testing.AllocsPerRun(20, func() { r.firstPending(context.Background(), tk, KindInput) }); n != 0 {
		t.Errorf("firstPending: %.1f allocations, want 0", n)
	}
}
