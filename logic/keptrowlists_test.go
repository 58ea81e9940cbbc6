package logic

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// An update's per-table row lists keep their arrays from one update to the
// next (emptyRowLists) and give what fresh lists give: over drawn
// programs and drawn sequences of named batches (failing ones included,
// which roll back with the lists half filled), solved step by step once
// with the lists kept and once with every list nil at each update's start
// and each stratum's, both give the same errors, changes, conflicts,
// logical times and materializations (rows, row numbers, rounds, deaths,
// statistics, ledger, facts). The bound on a kept list, the recomputing
// of recursive strata and compaction (by dead rows and by dead rows
// walked past) are drawn too.
func TestKeptRowListsAreFresh(t *testing.T) {
	defer func(k bool, n, r int, cm int32, cw int64) {
		keepRowLists, keptRowList, recomputeMin, compactMin, compactWalked = k, n, r, cm, cw
	}(keepRowLists, keptRowList, recomputeMin, compactMin, compactWalked)
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		lim := Limits{MaxTuples: int64(rapid.IntRange(0, 400).Draw(t, "maxTuples"))}
		keptRowList = rapid.SampledFrom([]int{0, 1, 2, 4, 1024}).Draw(t, "keptRowList")
		recomputeMin = rapid.SampledFrom([]int{-1, 2, 1024}).Draw(t, "recomputeMin")
		compactMin = rapid.SampledFrom([]int32{1, 4, 1024}).Draw(t, "compactMin")
		compactWalked = rapid.SampledFrom([]int64{0, 1, 64}).Draw(t, "compactWalked")
		solve := func(keep bool, m *Materialization, delta []FactChange, lt int64) (*Result, error) {
			keepRowLists = keep
			defer func() { keepRowLists = true }()
			return Solve(m, c, delta, lt, lim)
		}
		var got, want *Materialization // nil: the first batch is from no prior
		lt := int64(0)
		for step := rapid.IntRange(1, 10).Draw(t, "steps"); step > 0; step-- {
			delta := drawBatch(t, want)
			g, gerr := solve(true, got, delta, lt)
			w, werr := solve(false, want, delta, lt)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("step %d: error %v, want %v\n%s", step, gerr, werr, src)
			}
			if werr != nil {
				continue // both priors untouched
			}
			if fmt.Sprint(g.Changes) != fmt.Sprint(w.Changes) {
				t.Fatalf("step %d: changes %v, want %v\n%s", step, g.Changes, w.Changes, src)
			}
			sameSolved(t, step, g, w)
			got, want = g.Materialization, w.Materialization
			lt += int64(rapid.IntRange(0, 2).Draw(t, "dt"))
		}
	})
}

// A kept list is emptied and keeps its array; one longer than the bound is
// dropped.
func TestEmptyRowListsBound(t *testing.T) {
	defer func(n int) { keptRowList = n }(keptRowList)
	keptRowList = 4
	small, large := make([]int32, 3, 4), make([]int32, 5)
	lists := [][]int32{small, large, nil}
	emptyRowLists(lists)
	if len(lists[0]) != 0 || cap(lists[0]) != 4 || &lists[0][:1][0] != &small[0] {
		t.Fatalf("small list %v (cap %d) not kept emptied", lists[0], cap(lists[0]))
	}
	if lists[1] != nil || lists[2] != nil {
		t.Fatalf("lists %v, want the large one dropped", lists[1:])
	}
}
