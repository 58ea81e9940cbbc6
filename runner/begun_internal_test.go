package runner

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// begunSet answers what the map it replaced answered: random sets, deletes
// and lookups over a few intents, the set and a map side by side.
func TestBegunSetMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b begunSet
		m := map[string]store.Attempt{}
		ids := []string{"a", "b", "c", "d"}
		for i, n := 0, rapid.IntRange(0, 40).Draw(t, "ops"); i < n; i++ {
			id := rapid.SampledFrom(ids).Draw(t, "id")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				a := store.Attempt{IntentID: id, N: int64(i), Status: store.AttemptStarted, Generation: int64(rapid.IntRange(1, 3).Draw(t, "gen"))}
				b.set(a)
				m[id] = a
			case 1:
				b.del(id)
				delete(m, id)
			}
			for _, id := range ids {
				got, gok := b.get(id)
				want, wok := m[id]
				if got != want || gok != wok {
					t.Fatalf("after op %d, get(%s) = %+v, %v; the map holds %+v, %v", i, id, got, gok, want, wok)
				}
			}
			if len(b) != len(m) {
				t.Fatalf("after op %d, %d attempts kept, the map %d: %s", i, len(b), len(m), fmt.Sprint(b))
			}
		}
	})
}
