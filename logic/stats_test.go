package logic

import (
	"slices"
	"testing"
)

// TestStatsAreCopies holds what Stats and Progress hand out to being the
// caller's own: an evaluation keeps its strata's relation names shared
// with the program, so a caller that changes a list it was given must
// change no later report, nor another materialization's.
func TestStatsAreCopies(t *testing.T) {
	c, err := Load("t.dl", []byte(chainProgram))
	if err != nil {
		t.Fatal(err)
	}
	var progress []StratumStats
	m, err := Evaluate(c, chainEdges(6), Limits{Progress: func(s StratumStats) { progress = append(progress, s) }})
	if err != nil {
		t.Fatal(err)
	}
	first := m.Stats()
	if len(first.Strata) == 0 || len(first.Strata[0].Relations) == 0 || len(progress) != len(first.Strata) {
		t.Fatalf("stats %+v, progress %+v: want every stratum with rules reported", first, progress)
	}
	want := slices.Clone(first.Strata[0].Relations)
	first.Strata[0].Relations[0] = "changed"
	progress[0].Relations[0] = "changed too"
	first.Strata[0].Firings = -1
	if got := m.Stats().Strata[0]; !slices.Equal(got.Relations, want) || got.Firings < 0 {
		t.Fatalf("after changing the reported stats, Stats gives %+v, want relations %v", got, want)
	}
	next, err := m.Clone().Apply([]Change{{Fact: Fact{Rel: "edge", Args: []Value{Num(6), Num(7)}}, Diff: 1}})
	if err != nil {
		t.Fatal(err)
	}
	upd := next.Stats()
	if len(upd.Strata) == 0 || !slices.Equal(upd.Strata[0].Relations, want) {
		t.Fatalf("an update reports %+v, want relations %v", upd.Strata, want)
	}
	upd.Strata[0].Relations[0] = "changed again"
	if got := next.Stats().Strata[0].Relations; !slices.Equal(got, want) {
		t.Fatalf("after changing an update's stats, Stats gives %v, want %v", got, want)
	}
	if got := m.Stats().Strata[0].Relations; !slices.Equal(got, want) {
		t.Fatalf("another materialization's stats changed: %v, want %v", got, want)
	}
}
