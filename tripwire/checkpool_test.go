package tripwire

import (
	"slices"
	"testing"
)

// TestCheckAllocatesOnlyItsTrips holds Check to allocating nothing of its
// own: what it hands the wires is the set's, reused from one check to the
// next. An idle boundary's wires allocate nothing, and neither does its
// check; the others' counts are what their wires allocate themselves (the
// receipts' and the load's chain links), one more each when Check
// allocates what it hands them.
func TestCheckAllocatesOnlyItsTrips(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("allocation counts (not in -short, nor under the race detector, whose pools drop values)")
	}
	turn, receipt, load, idle := benchBoundaries(t)
	for _, c := range []struct {
		name string
		b    Boundary
		max  float64
	}{{"idle", idle, 0}, {"turn", turn, 1}, {"receipts", receipt, 2}, {"load", load, 49}} {
		if n := testing.AllocsPerRun(50, func() { Check(c.b) }); n > c.max {
			t.Errorf("%s boundary: %.1f allocations a check, want at most %.0f", c.name, n, c.max)
		}
	}
}

// TestReusedCheckingKeepsNothing checks the incidents' boundaries one
// after another through one set, each against its check by a set of its
// own: a check's trips are the caller's, unchanged by the checks after
// it, and nothing of one boundary reaches the next check.
func TestReusedCheckingKeepsNothing(t *testing.T) {
	var all []Boundary
	for _, tc := range incidents {
		s := newSim("incident")
		if tc.bug != "" {
			s.bugs[tc.bug] = true
		}
		tc.run(s)
		all = append(all, s.boundaries...)
	}
	shared := Default()
	var got, want [][]Trip
	for _, b := range all {
		fresh, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fresh.Check(b))
		got = append(got, shared.Check(b))
	}
	tripped := 0
	for i := range all {
		if len(want[i]) > 0 {
			tripped++
		}
		if !slices.EqualFunc(got[i], want[i], tripEqual) {
			t.Fatalf("boundary %d: the shared set's trips%s\nwant%s", i, describe(got[i]), describe(want[i]))
		}
	}
	if tripped == 0 {
		t.Fatal("no boundary tripped: the comparison holds nothing")
	}
}

func tripEqual(a, b Trip) bool {
	return a.Wire == b.Wire && a.Severity == b.Severity && a.Where == b.Where &&
		a.Explanation == b.Explanation && slices.Equal(a.Evidence, b.Evidence)
}
