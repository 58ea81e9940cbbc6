package logic

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestRecordedChangesAreTheDifference holds the net changes an update
// records (each change's arguments cut from one array shared by all of
// them) to the difference between the facts before and after it, over
// generated programs and update sequences, and checks that no change's
// arguments reach into another's.
func TestRecordedChangesAreTheDifference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c, src := genLoaded(rt)
		ms := genBase(rt)
		m, err := Evaluate(c, ms.facts(), Limits{MaxTuples: 20000})
		if err != nil {
			rt.Skip("evaluation error")
		}
		m.recordChanges = true
		for step := range rapid.IntRange(1, 8).Draw(rt, "steps") {
			changes := genChanges(rt, ms)
			before := map[string]Fact{}
			for _, f := range m.allFacts() {
				before[f.Fact.String()] = f.Fact
			}
			got, err := m.Apply(changes)
			if err != nil {
				rt.Skip("update failed")
			}
			after := map[string]Fact{}
			for _, f := range got.allFacts() {
				after[f.Fact.String()] = f.Fact
			}
			var want []string
			for k := range after {
				if _, ok := before[k]; !ok {
					want = append(want, fmt.Sprint(FactDelta{Fact: after[k], Diff: 1}))
				}
			}
			for k := range before {
				if _, ok := after[k]; !ok {
					want = append(want, fmt.Sprint(FactDelta{Fact: before[k], Diff: -1}))
				}
			}
			var have []string
			for _, d := range got.lastChanges {
				have = append(have, fmt.Sprint(d))
				if cap(d.Fact.Args) != len(d.Fact.Args) {
					rt.Fatalf("step %d: %v's arguments have room for %d", step, d, cap(d.Fact.Args))
				}
			}
			slices.Sort(want)
			slices.Sort(have)
			if fmt.Sprint(have) != fmt.Sprint(want) {
				rt.Fatalf("step %d changes %v\n got %v\nwant %v\nprogram:\n%s", step, changes, have, want, src)
			}
			m = got
		}
	})
}
