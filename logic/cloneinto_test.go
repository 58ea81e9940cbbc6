package logic

import (
	"fmt"
	"maps"
	"testing"

	"pgregory.net/rapid"
)

// solveSteps draws up to steps batches and solves them from m (nil: from
// no prior), returning the last materialization solved, or m.
func solveSteps(t *rapid.T, c *Compiled, m *Materialization, lt int64, steps int, lim Limits) (*Materialization, int64) {
	for i := rapid.IntRange(0, steps).Draw(t, "steps"); i > 0; i-- {
		lt += int64(rapid.IntRange(0, 2).Draw(t, "dt"))
		if r, err := Solve(m, c, drawBatch(t, m), lt, lim); err == nil {
			m = r.Materialization
		}
	}
	return m, lt
}

// CloneInto gives what Clone gives: over drawn programs, a drawn
// materialization copied into another of the same program that drawn
// batches had filled (more, fewer or wider rows, other indexes, a
// scratch), the copy holds the clone's rows, row numbers, rounds, deaths,
// statistics, footprint, ledger, facts and conflicts, and drawn batches
// solved over both give the same results, errors and materializations,
// step by step; the original is unchanged. Into a materialization of
// another program, or a consumed one, it copies nothing.
func TestCloneIntoIsClone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		lim := Limits{MaxTuples: int64(rapid.IntRange(0, 400).Draw(t, "maxTuples"))}
		empty, err := Solve(nil, c, nil, 0, lim)
		if err != nil {
			return
		}
		m, lt := solveSteps(t, c, empty.Materialization, 0, 10, lim)
		husk, _ := solveSteps(t, c, m.Clone(), lt, 4, lim)
		if rapid.Bool().Draw(t, "huskFromScratch") {
			r, err := Solve(nil, c, drawBatch(t, nil), 0, lim)
			if err != nil {
				return
			}
			husk, _ = solveSteps(t, c, r.Materialization, 0, 4, lim)
		}
		before, footprint := render(t, m), m.Footprint()
		want := m.Clone()
		got := husk
		if !m.CloneInto(got) {
			t.Fatalf("CloneInto refused a materialization of the program\n%s", src)
		}
		check := func(step int) {
			sameLiveRows(t, got, want)
			if a, b := render(t, got), render(t, want); a != b {
				t.Fatalf("step %d: facts\n%s\nwant\n%s\n%s", step, a, b, src)
			}
			if fmt.Sprint(got.ledger) != fmt.Sprint(want.ledger) || fmt.Sprint(got.byFact) != fmt.Sprint(want.byFact) {
				t.Fatalf("step %d: ledger %v %v, want %v %v", step, got.ledger, got.byFact, want.ledger, want.byFact)
			}
			for i := range want.base { // an empty map as none
				if !maps.Equal(got.base[i], want.base[i]) {
					t.Fatalf("step %d: table %d base counts %v, want %v", step, i, got.base[i], want.base[i])
				}
			}
			if got.Footprint() != want.Footprint() || got.LogicalTime() != want.LogicalTime() {
				t.Fatalf("step %d: footprint %d time %d, want %d %d", step, got.Footprint(), got.LogicalTime(), want.Footprint(), want.LogicalTime())
			}
		}
		check(0)
		for step := 1; step <= rapid.IntRange(0, 5).Draw(t, "after"); step++ {
			lt += int64(rapid.IntRange(0, 2).Draw(t, "dt"))
			delta := drawBatch(t, want)
			g, gerr := Solve(got, c, delta, lt, lim)
			w, werr := Solve(want, c, delta, lt, lim)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("step %d: error %v, want %v\n%s", step, gerr, werr, src)
			}
			if werr != nil {
				continue
			}
			if fmt.Sprint(g.Changes, g.Conflicts) != fmt.Sprint(w.Changes, w.Conflicts) {
				t.Fatalf("step %d: changes %v %v, want %v %v", step, g.Changes, g.Conflicts, w.Changes, w.Conflicts)
			}
			got, want = g.Materialization, w.Materialization
			check(step)
		}
		if render(t, m) != before || m.Footprint() != footprint {
			t.Fatalf("CloneInto and the copy's updates changed the original\n%s", src)
		}
		other, err := Load("gate.dl", []byte(gateProgram)) // another program, whatever its text
		if err != nil {
			t.Fatal(err)
		}
		r, err := Solve(nil, other, nil, 0, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if m.CloneInto(r.Materialization) || m.CloneInto(nil) || m.CloneInto(m) {
			t.Fatal("CloneInto copied into another program's materialization, nil or itself")
		}
		if _, err := Solve(got, c, nil, lt, lim); err == nil && m.CloneInto(got) {
			t.Fatal("CloneInto copied into a consumed materialization")
		}
	})
}

// CloneInto copies a materialization with many rows and symbols into one
// with none, and one with none into one with many (the copy's hash sets
// and first chunks larger than the other's, then smaller), each then
// updated as its clone is.
func TestCloneIntoLargerAndSmaller(t *testing.T) {
	c, err := Load("gate.dl", []byte(gateProgram))
	if err != nil {
		t.Fatal(err)
	}
	solve := func(n int) *Materialization {
		var delta []FactChange
		for i := range n {
			id := fmt.Sprint("r", i)
			delta = append(delta, FactChange{ID: "req-" + id, Fact: req(id), Diff: 1}, FactChange{ID: "appr-" + id, Fact: appr(id, i%3 == 0), Diff: 1})
		}
		r, err := Solve(nil, c, delta, 1, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Materialization
	}
	for _, sizes := range [][2]int{{300, 0}, {0, 300}, {70, 5}, {5, 70}} {
		m := solve(sizes[0])
		got, want := solve(sizes[1]), m.Clone()
		if !m.CloneInto(got) {
			t.Fatal("CloneInto refused")
		}
		delta := []FactChange{{ID: "req-new", Fact: req("new"), Diff: 1}, {ID: "appr-new", Fact: appr("new", false), Diff: 1}}
		if sizes[0] > 0 {
			delta = append(delta, FactChange{ID: "req-r0", Fact: req("r0"), Diff: -1})
		}
		g, gerr := Solve(got, c, delta, 2, Limits{})
		w, werr := Solve(want, c, delta, 2, Limits{})
		if gerr != nil || werr != nil {
			t.Fatal(gerr, werr)
		}
		if a, b := fmt.Sprint(render(t, g.Materialization), g.Changes), fmt.Sprint(render(t, w.Materialization), w.Changes); a != b {
			t.Fatalf("%v: copy\n%s\nclone\n%s", sizes, a, b)
		}
	}
}
