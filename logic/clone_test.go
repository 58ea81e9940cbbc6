package logic

import (
	"fmt"
	"maps"
	"testing"

	"pgregory.net/rapid"
)

// TestCloneIsIndependent holds a clone to the state it was taken from,
// whatever is applied afterwards to the materialization it came from or
// to the clone itself: Clone shares one allocation among the tables'
// headers, index lists and small slot arrays, and leaves empty base maps
// and ledgers to be made when first written, so updates to any of them
// must stay apart. Each is compared with a from-scratch evaluation.
func TestCloneIsIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		lim := Limits{MaxTuples: 20000}
		ms := genBase(t)
		m, err := Evaluate(c, ms.facts(), lim)
		if err != nil {
			t.Skip("evaluation error")
		}
		type snap struct {
			m     *Materialization
			facts []Fact
			ms    baseMultiset
		}
		var snaps []snap
		steps := rapid.IntRange(1, 8).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			if rapid.Bool().Draw(t, "clone") {
				snaps = append(snaps, snap{m.Clone(), ms.facts(), maps.Clone(ms)})
			}
			changes := genChanges(t, ms)
			want, werr := Evaluate(c, ms.facts(), lim)
			got, gerr := m.Apply(changes)
			if werr != nil || gerr != nil {
				t.Skip("an update failed")
			}
			assertSameMaterialization(t, got, want, fmt.Sprintf("step %d changes %v\nprogram:\n%s", step, changes, src))
			m = got
		}
		for i, s := range snaps {
			want, err := Evaluate(c, s.facts, lim)
			if err != nil {
				t.Fatal(err)
			}
			assertSameMaterialization(t, s.m, want, fmt.Sprintf("clone %d after later updates\nprogram:\n%s", i, src))
			// The clone updates on its own, and its own clone stays put.
			again := s.m.Clone()
			sm := s.ms
			changes := genChanges(t, sm)
			want2, werr := Evaluate(c, sm.facts(), lim)
			got2, gerr := s.m.Apply(changes)
			if werr != nil || gerr != nil {
				continue
			}
			assertSameMaterialization(t, got2, want2, fmt.Sprintf("clone %d updated by %v\nprogram:\n%s", i, changes, src))
			assertSameMaterialization(t, again, want, fmt.Sprintf("clone of clone %d after its update\nprogram:\n%s", i, src))
		}
	})
}

// genChanges draws one to four base changes and applies them to ms.
func genChanges(t *rapid.T, ms baseMultiset) []Change {
	var changes []Change
	for i := rapid.IntRange(1, 4).Draw(t, "nch"); i > 0; i-- {
		present := ms.facts()
		if len(present) > 0 && rapid.Bool().Draw(t, "retract") {
			f := sortedFacts(present)[rapid.IntRange(0, len(present)-1).Draw(t, "which")]
			changes = append(changes, Change{Fact: f, Diff: -1})
			e := ms[f.String()]
			e.n--
			ms[f.String()] = e
		} else {
			f := genFacts1(t)
			changes = append(changes, Change{Fact: f, Diff: 1})
			e := ms[f.String()]
			e.f = f
			e.n++
			ms[f.String()] = e
		}
	}
	return changes
}

// TestSolveFromACloneIsSolveFromTheOriginal holds Solve over a clone of a
// materialization with no supports (a run's first tick, in the workflow)
// to Solve over the original: the clone's ledger is made when first
// written.
func TestSolveFromACloneIsSolveFromTheOriginal(t *testing.T) {
	c, err := Load("gate.dl", []byte(gateProgram))
	if err != nil {
		t.Fatal(err)
	}
	empty := func() *Materialization {
		r, err := Solve(nil, c, nil, 0, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Materialization
	}
	kept := empty()
	delta := []FactChange{{ID: "ev-1", Fact: req("a"), Diff: 1}, {ID: "ev-2", Fact: req("b"), Diff: 1}}
	for i := 0; i < 2; i++ { // twice from clones of the one kept
		got, err := Solve(kept.Clone(), c, delta, 1, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := Solve(empty(), c, delta, 1, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Changes) != fmt.Sprint(want.Changes) {
			t.Fatalf("changes from a clone %v, from the original %v", got.Changes, want.Changes)
		}
		for _, f := range []Fact{req("a"), req("b")} {
			g, _ := got.Materialization.Supports(f)
			w, _ := want.Materialization.Supports(f)
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("supports of %s from a clone %v, from the original %v", f, g, w)
			}
		}
		next, err := Solve(got.Materialization, c, []FactChange{{ID: "ev-1", Fact: req("a"), Diff: -1}}, 2, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(next.Changes) == "[]" {
			t.Fatal("retracting a support from a clone's successor changed nothing")
		}
	}
	if len(kept.ledger) != 0 || kept.Count("request", false) != 0 {
		t.Fatal("solving over clones changed the materialization they came from")
	}
}
