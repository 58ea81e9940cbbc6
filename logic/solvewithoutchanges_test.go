package logic

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// SolveWithoutChanges is Solve but for Result.Changes: over drawn programs
// and drawn sequences of named batches (retractions of live supports, new
// ones, ids reused with other content, malformed diffs), both give the same
// errors, the same materializations (rows, row numbers, rounds, statistics,
// ledger, facts and conflicts) and the same logical times, and
// SolveWithoutChanges no changes.
func TestSolveWithoutChangesIsSolve(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		lim := Limits{MaxTuples: int64(rapid.IntRange(0, 400).Draw(t, "maxTuples"))}
		var got, want *Materialization // nil: the first batch is from no prior
		if rapid.Bool().Draw(t, "fromEmpty") {
			g, gerr := SolveWithoutChanges(nil, c, nil, 0, lim)
			w, werr := Solve(nil, c, nil, 0, lim)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("error %v, want %v\n%s", gerr, werr, src)
			}
			if werr != nil {
				return
			}
			got, want = g.Materialization.Clone(), w.Materialization
		}
		lt := int64(1)
		for step := rapid.IntRange(1, 6).Draw(t, "steps"); step > 0; step-- {
			delta := drawBatch(t, want)
			g, gerr := SolveWithoutChanges(got, c, delta, lt, lim)
			w, werr := Solve(want, c, delta, lt, lim)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("step %d: error %v, want %v\n%s", step, gerr, werr, src)
			}
			if werr != nil {
				continue // both priors untouched
			}
			if g.Changes != nil {
				t.Fatalf("step %d: changes %v", step, g.Changes)
			}
			sameSolved(t, step, g, w)
			got, want = g.Materialization, w.Materialization
			lt += int64(rapid.IntRange(0, 2).Draw(t, "dt"))
		}
	})
}

// drawBatch draws a batch of named changes over the supports of m (nil: no
// supports): retractions of live ones, their ids again perhaps with other
// content, new ones, and malformed diffs.
func drawBatch(t *rapid.T, m *Materialization) []FactChange {
	var ids []string
	if m != nil {
		ids = slices.Sorted(maps.Keys(m.ledger))
	}
	var delta []FactChange
	for n := rapid.IntRange(0, 4).Draw(t, "n"); n > 0; n-- {
		switch k := rapid.IntRange(0, 9).Draw(t, "kind"); {
		case k < 3 && len(ids) > 0:
			id := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "which")]
			delta = append(delta, FactChange{ID: id, Fact: m.ledger[id].fact, Diff: -1})
		case k == 3 && len(ids) > 0:
			id := ids[rapid.IntRange(0, len(ids)-1).Draw(t, "which")]
			delta = append(delta, FactChange{ID: id, Fact: genFacts1(t), Diff: 1})
		case k == 4:
			delta = append(delta, FactChange{ID: "s" + strconv.Itoa(rapid.IntRange(0, 20).Draw(t, "id")), Fact: genFacts1(t), Diff: 2})
		default:
			delta = append(delta, FactChange{ID: "s" + strconv.Itoa(rapid.IntRange(0, 20).Draw(t, "id")), Fact: genFacts1(t), Diff: 1})
		}
	}
	return delta
}

// sameLiveRows asserts that two materializations hold the same rows under the
// same row numbers, with the same rounds and deaths, and the same
// statistics.
// sameSolved fails t unless a step's two results agree in logical time,
// conflicts and materialization (live rows, facts, ledger).
func sameSolved(t *rapid.T, step int, g, w *Result) {
	if g.LogicalTime != w.LogicalTime || fmt.Sprint(g.Conflicts) != fmt.Sprint(w.Conflicts) {
		t.Fatalf("step %d: time %d conflicts %v, want %d %v", step, g.LogicalTime, g.Conflicts, w.LogicalTime, w.Conflicts)
	}
	got, want := g.Materialization, w.Materialization
	sameLiveRows(t, got, want)
	if a, b := render(t, got), render(t, want); a != b {
		t.Fatalf("step %d: facts\n%s\nwant\n%s", step, a, b)
	}
	if fmt.Sprint(got.ledger) != fmt.Sprint(want.ledger) || fmt.Sprint(got.byFact) != fmt.Sprint(want.byFact) {
		t.Fatalf("step %d: ledger %v %v, want %v %v", step, got.ledger, got.byFact, want.ledger, want.byFact)
	}
}

func sameLiveRows(t *rapid.T, a, b *Materialization) {
	for i := range a.tables {
		ta, tb := a.tables[i], b.tables[i]
		if ta.n != tb.n || ta.ndead != tb.ndead {
			t.Fatalf("table %d: %d rows %d dead, want %d %d", i, ta.n, ta.ndead, tb.n, tb.ndead)
		}
		for r := int32(0); r < ta.n; r++ {
			if fmt.Sprint(ta.tuple(r)) != fmt.Sprint(tb.tuple(r)) || ta.round.get(r) != tb.round.get(r) || ta.alive(r) != tb.alive(r) {
				t.Fatalf("table %d row %d: %v round %d, want %v round %d", i, r, ta.tuple(r), ta.round.get(r), tb.tuple(r), tb.round.get(r))
			}
		}
	}
	if fmt.Sprint(a.stats) != fmt.Sprint(b.stats) {
		t.Fatalf("stats %+v, want %+v", a.stats, b.stats)
	}
}
