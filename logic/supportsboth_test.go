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
		for _, f := range lookedUpFacts(t, c, m) {
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

// lookedUpFacts is every fact m holds, of either sign, in every relation
// of c, and up to six drawn facts that may hold or not: the facts whose
// supports the tests look up.
func lookedUpFacts(t *rapid.T, c *Compiled, m *Materialization) []Fact {
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
	return facts
}

// freshSupports is Supports on an evaluator and collector of its own, as
// every lookup made them before lookups took them from supportLookups.
func freshSupports(m *Materialization, f Fact) ([]Support, error) {
	t, tup, ok, err := m.encode(f, false)
	if err != nil || !ok {
		return nil, err
	}
	return m.supportsIn(t, tup, &supportQuery{})
}

// TestPooledLookupsAreFresh holds the lookups that share evaluators
// through supportLookups to lookups on evaluators of their own: two
// generated programs' materializations looked up in turn, so that each
// lookup takes what the other program's last one gave back.
func TestPooledLookupsAreFresh(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ms []*Materialization
		var facts [][]Fact
		for range 2 {
			c, _ := genLoaded(t)
			m, err := Evaluate(c, genFacts(t), Limits{MaxTuples: 20000})
			if err != nil {
				t.Skip("evaluation error")
			}
			ms, facts = append(ms, m), append(facts, lookedUpFacts(t, c, m))
		}
		for i := 0; i < len(facts[0]) || i < len(facts[1]); i++ {
			for k, m := range ms {
				if i >= len(facts[k]) {
					continue
				}
				f := facts[k][i]
				got, gotErr := m.Supports(f)
				want, wantErr := freshSupports(m, f)
				if fmt.Sprint(got, gotErr) != fmt.Sprint(want, wantErr) {
					t.Fatalf("%s: pooled %v %v, fresh %v %v", f, got, gotErr, want, wantErr)
				}
			}
		}
	})
}
