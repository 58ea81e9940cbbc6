package logic

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// An update finds its pending insertions by a linear search while it has
// few and through an index by key past pendingLinear: every threshold
// gives each step the materialization an evaluation from scratch gives.
func TestPendingInsertionsMatchFromScratch(t *testing.T) {
	defer func(v int) { pendingLinear = v }(pendingLinear)
	for _, n := range []int{0, 1, 2} {
		pendingLinear = n
		t.Run(fmt.Sprint(n), func(t *testing.T) { rapid.Check(t, checkApply) })
	}
}

// The linear search and the index agree row for row on one batch of many
// insertions, repeats and retractions of facts still pending.
func TestPendingSearchIsTheIndex(t *testing.T) {
	defer func(v int) { pendingLinear = v }(pendingLinear)
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		ms := genBase(t)
		start := ms.facts()
		var batch []Change
		for i := rapid.IntRange(1, 40).Draw(t, "n"); i > 0; i-- {
			f := genFacts1(t)
			e := ms[f.String()]
			if e.n > 0 && rapid.Bool().Draw(t, "retract") {
				batch = append(batch, Change{Fact: e.f, Diff: -1})
				e.n--
			} else {
				batch = append(batch, Change{Fact: f, Diff: 1})
				e.f, e.n = f, e.n+1
			}
			ms[f.String()] = e
		}
		var got [2]*Materialization
		var errs [2]error
		for k, n := range []int{1 << 30, 0} {
			pendingLinear = n
			m, err := Evaluate(c, start, Limits{MaxTuples: 20000})
			if err != nil {
				t.Skip("evaluation error")
			}
			got[k], errs[k] = m.Apply(batch)
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
			t.Fatalf("linear: %v; indexed: %v\n%s", errs[0], errs[1], src)
		}
		if errs[0] != nil {
			return
		}
		sameRowsAndBases(t, got[0], got[1])
		want, err := Evaluate(c, ms.facts(), Limits{MaxTuples: 20000})
		if err != nil {
			t.Skip("evaluation error")
		}
		assertSameMaterialization(t, got[0], want, fmt.Sprintf("batch %v\nprogram:\n%s", batch, src))
	})
}

// sameRowsAndBases asserts that two materializations hold the same rows, alive or
// dead, under the same numbers with the same rounds and base counts.
func sameRowsAndBases(t *rapid.T, a, b *Materialization) {
	for i := range a.tables {
		ta, tb := a.tables[i], b.tables[i]
		if ta.n != tb.n {
			t.Fatalf("table %d: %d rows, want %d", i, ta.n, tb.n)
		}
		for r := int32(0); r < ta.n; r++ {
			if fmt.Sprint(ta.tuple(r)) != fmt.Sprint(tb.tuple(r)) || ta.round.get(r) != tb.round.get(r) ||
				ta.alive(r) != tb.alive(r) || a.base[i][r] != b.base[i][r] {
				t.Fatalf("table %d row %d: %v round %d alive %v base %d, want %v round %d alive %v base %d", i, r,
					ta.tuple(r), ta.round.get(r), ta.alive(r), a.base[i][r], tb.tuple(r), tb.round.get(r), tb.alive(r), b.base[i][r])
			}
		}
	}
	if fmt.Sprint(a.stats) != fmt.Sprint(b.stats) {
		t.Fatalf("stats %+v, want %+v", a.stats, b.stats)
	}
}
