package verify

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/internal/racebuild"
	"flrh.dev/flrh/store"
)

// TestAttemptsOfMatchesFilingByIntent holds attemptsOf to filing the
// attempts read in bulk by intent, one after the other: whether they come
// grouped in byte order of their intent ids (kept as they are, found by a
// binary search) or in any other order (filed in a map), every intent, and
// an id no attempt names, gets the same attempts in the same order.
func TestAttemptsOfMatchesFilingByIntent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := []string{"", "a", "a:1", "a:10", "a:2", "b", "intent:\xff", "z"}
		n := rapid.IntRange(0, 12).Draw(t, "n")
		ats := make([]store.Attempt, n)
		for i := range ats {
			ats[i] = store.Attempt{IntentID: rapid.SampledFrom(ids).Draw(t, "intent"), N: int64(i + 1),
				Detail: fmt.Sprint(i)}
		}
		if rapid.Bool().Draw(t, "grouped") {
			// Grouped in byte order, each intent's attempts in the order drawn.
			sortStable(ats)
		}
		var intents []store.Intent
		for _, id := range ids {
			intents = append(intents, store.Intent{ID: id})
		}
		r := &record{intents: intents, bulk: true}
		r.setEffects(ats, nil)
		want := map[string][]store.Attempt{}
		for _, a := range ats {
			want[a.IntentID] = append(want[a.IntentID], a)
		}
		for _, id := range append(ids, "absent", "a:") {
			got, err := r.attemptsOf(ctx, id)
			if err != nil || !reflect.DeepEqual(got, want[id]) {
				t.Fatalf("intent %q: got %v %v, want %v (attempts %v)", id, got, err, want[id], ats)
			}
			if r.grouped != nil && cap(got) != len(got) {
				t.Fatalf("intent %q: capacity %d beyond its %d attempts", id, cap(got), len(got))
			}
		}
	})
}

// sortStable orders attempts by intent id, keeping each intent's order.
func sortStable(ats []store.Attempt) {
	for i := 1; i < len(ats); i++ {
		for j := i; j > 0 && ats[j-1].IntentID > ats[j].IntentID; j-- {
			ats[j-1], ats[j] = ats[j], ats[j-1]
		}
	}
}

// TestSetEffectsKeepsGroupedAttempts: attempts grouped by intent in byte
// order, as the SQLite store reads them, are kept as read rather than
// filed in a map; in another order they are filed.
func TestSetEffectsKeepsGroupedAttempts(t *testing.T) {
	intents := []store.Intent{{ID: "a"}, {ID: "b"}}
	r := &record{intents: intents, bulk: true}
	r.setEffects([]store.Attempt{{IntentID: "a", N: 1}, {IntentID: "a", N: 2}, {IntentID: "b", N: 1}}, nil)
	if r.attempts != nil || len(r.grouped) != 3 {
		t.Fatalf("grouped attempts filed in a map: %v %v", r.attempts, r.grouped)
	}
	r = &record{intents: intents, bulk: true}
	r.setEffects([]store.Attempt{{IntentID: "b", N: 1}, {IntentID: "a", N: 1}}, nil)
	if r.attempts == nil || r.grouped != nil {
		t.Fatalf("attempts out of order not filed: %v %v", r.attempts, r.grouped)
	}
}

// TestDecodeAcceptedMakesOneString: an accepted input's actor, role,
// capability and digest are cut from one string; with the members' slice
// and the body's copy, three allocations.
func TestDecodeAcceptedMakesOneString(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocations are not counted under the race detector")
	}
	b := []byte(`{"actor":"alice","actor_role":"operator","body":{"x":1},"capability":"submit","digest":"sha256:00ff","kind":"input","seq":1}`)
	in, err := decodeAcceptedAs(b, true)
	if err != nil || in.Actor != "alice" || in.ActorRole != "operator" || in.Capability != "submit" || in.Digest != "sha256:00ff" ||
		in.Kind != "input" || in.Seq != 1 || string(in.Body) != `{"x":1}` {
		t.Fatalf("%+v %v", in, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeAcceptedAs(b, true) }); n > 3 {
		t.Fatalf("%v allocations, want at most 3", n)
	}
}
