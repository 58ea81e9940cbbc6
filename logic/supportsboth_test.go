package logic

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestSupportsBothIsSupports holds SupportsBoth, which looks both signs of
// a fact up with one encoding, evaluator and collector, to Supports of the
// fact positive and negated: every tuple of every relation of generated
// programs, and drawn facts that may hold or not; and every support's
// lists end at their length.
func TestSupportsBothIsSupports(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		m, err := Evaluate(c, genFacts(t), Limits{MaxTuples: 20000})
		if err != nil {
			t.Skip("evaluation error")
		}
		var facts []Fact
		for _, rel := range c.rels {
			for _, neg := range []bool{false, true} {
				tups, _ := m.Tuples(rel.name, neg)
				for _, tup := range tups {
					facts = append(facts, Fact{Rel: rel.name, Neg: neg, Args: tup})
				}
			}
		}
		for range rapid.IntRange(0, 6).Draw(t, "extra") {
			facts = append(facts, genFacts1(t))
		}
		for _, f := range facts {
			pos, neg, posErr, negErr := m.SupportsBoth(f)
			p, n := f, f
			p.Neg, n.Neg = false, true
			wp, wpErr := m.Supports(p)
			wn, wnErr := m.Supports(n)
			if fmt.Sprint(pos, posErr) != fmt.Sprint(wp, wpErr) || fmt.Sprint(neg, negErr) != fmt.Sprint(wn, wnErr) {
				t.Fatalf("%s:\n got %v %v | %v %v\nwant %v %v | %v %v\nprogram:\n%s", f, pos, posErr, neg, negErr, wp, wpErr, wn, wnErr, src)
			}
			// A support's lists share an allocation when small: each
			// must be capped at its length, so that a caller's append
			// moves it instead of writing over its neighbour.
			for _, s := range append(pos, neg...) {
				if cap(s.Premises) != len(s.Premises) || cap(s.rows) != len(s.rows) || cap(s.tables) != len(s.tables) {
					t.Fatalf("%s: a support of %s has room past its lists", f, s)
				}
				for _, p := range s.Premises {
					if cap(p.Args) != len(p.Args) {
						t.Fatalf("%s: premise %s of %s has room past its arguments", f, p, s)
					}
				}
			}
		}
	})
}
