package logic

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// EachSupportBoth hands each the supports SupportsBoth returns, side by
// side: over drawn programs, evaluated from drawn facts or solved from
// drawn batches of named supports (so that base supports carry their
// ids), for every fact that holds and some that do not, each side's
// supports — by their text, their rule and their lists — are
// SupportsBoth's, in some order, every positive one handed over before
// any negative one, and the errors are the same.
func TestEachSupportBothIsSupportsBoth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		var m *Materialization
		if rapid.Bool().Draw(t, "solved") {
			for step := rapid.IntRange(1, 4).Draw(t, "steps"); step > 0; step-- {
				r, err := Solve(m, c, drawBatch(t, m), int64(step), Limits{MaxTuples: 20000})
				if err != nil {
					continue
				}
				m = r.Materialization
			}
			if m == nil {
				t.Skip("no batch solved")
			}
		} else {
			var err error
			if m, err = Evaluate(c, genFacts(t), Limits{MaxTuples: 20000}); err != nil {
				t.Skip("evaluation error")
			}
		}
		for _, f := range lookedUpFacts(t, c, m) {
			pos, neg, posErr, negErr := m.SupportsBoth(f)
			var got [2][]string
			gpErr, gnErr := m.EachSupportBoth(f, func(n bool, s *Support) {
				k := 0
				if n {
					k = 1
				} else if len(got[1]) > 0 {
					t.Fatalf("%s: a positive support after a negative one", f)
				}
				got[k] = append(got[k], supportRecord(*s))
			})
			if fmt.Sprint(gpErr) != fmt.Sprint(posErr) || fmt.Sprint(gnErr) != fmt.Sprint(negErr) {
				t.Fatalf("%s: errors %v | %v, want %v | %v\nprogram:\n%s", f, gpErr, gnErr, posErr, negErr, src)
			}
			for k, want := range [2][]Support{pos, neg} {
				if k == 0 && posErr != nil || k == 1 && negErr != nil {
					continue // the side's calls are disregarded
				}
				var w []string
				for _, s := range want {
					w = append(w, supportRecord(s))
				}
				slices.Sort(w)
				slices.Sort(got[k])
				if !slices.Equal(got[k], w) {
					t.Fatalf("%s side %d:\n got %q\nwant %q\nprogram:\n%s", f, k, got[k], w, src)
				}
			}
		}
	})
}

// supportRecord is everything a caller reads of a support, as text.
func supportRecord(s Support) string {
	return fmt.Sprintf("%s|base=%v ids=%q rule=%d text=%q pos=%v premises=%v absent=%v", s, s.Base, s.BaseIDs, s.Rule, s.RuleText, s.RulePos, s.Premises, s.Absent)
}
