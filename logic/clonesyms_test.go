package logic

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestCloneSymbolsStayApart: a clone shares its original's symbols, capped,
// so that a symbol either interns after the clone lands in its own list.
// The original has room past its symbols when cloned; each then interns a
// symbol of its own, at the same position, and each reads back its own.
func TestCloneSymbolsStayApart(t *testing.T) {
	m := mustEval(t, gateProgram, nil)
	var err error
	for i := 0; cap(m.syms) == len(m.syms); i++ {
		if m, err = m.Apply([]Change{{Fact: req(fmt.Sprintf("s%d", i)), Diff: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	u := m.Clone()
	u, err = u.Apply([]Change{{Fact: req("clone"), Diff: 1}})
	if err != nil {
		t.Fatal(err)
	}
	m, err = m.Apply([]Change{{Fact: req("original"), Diff: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m          *Materialization
		own, other string
	}{{u, "clone", "original"}, {m, "original", "clone"}} {
		rows, err := c.m.Tuples("request", false)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r[0].String())
		}
		if !slices.Contains(ids, Sym(c.own).String()) || slices.Contains(ids, Sym(c.other).String()) {
			t.Fatalf("the %s's requests are %v", c.own, ids)
		}
	}
}

// TestUpdateEvaluatorHandedOn: an update leaves its scratch (evaluator and
// undo record), cleared, to the materialization it returns, which reuses
// it; a clone starts without one, so that a clone and its original never
// update through one scratch. Each step is held to an evaluation from
// scratch.
func TestUpdateEvaluatorHandedOn(t *testing.T) {
	m := mustEval(t, gateProgram, nil)
	var err error
	var base []Fact
	for i := 0; i < 4; i++ {
		f := []Fact{req(fmt.Sprintf("r%d", i)), appr(fmt.Sprintf("r%d", i), i%2 == 1)}
		base = append(base, f...)
		if m, err = m.Apply([]Change{{Fact: f[0], Diff: 1}, {Fact: f[1], Diff: 1}}); err != nil {
			t.Fatal(err)
		}
		if m.spare == nil || !reflect.DeepEqual(m.spare.x, exec{}) || m.spare.u.stats.Strata != nil {
			t.Fatalf("step %d: the update left %v, not a cleared scratch", i, m.spare)
		}
		u := m.Clone()
		if u.spare != nil {
			t.Fatalf("step %d: the clone shares its original's evaluator", i)
		}
		want := mustEval(t, gateProgram, base)
		for _, got := range []*Materialization{m, u} {
			if g, w := gateTuples(t, got), gateTuples(t, want); g != w {
				t.Fatalf("step %d: %s, want %s", i, g, w)
			}
		}
	}
}

// gateTuples writes every relation's tuples of gateProgram, each sign,
// sorted.
func gateTuples(t *testing.T, m *Materialization) string {
	var out []string
	for _, rel := range []string{"request", "approved", "allow"} {
		for _, neg := range []bool{false, true} {
			rows, err := m.Tuples(rel, neg)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				out = append(out, fmt.Sprint(neg, rel, r))
			}
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// A scratch taken from a materialization that was updated serves another
// of the same program: a clone of the empty one updated with it, in turn
// with updates of the one it came from, gives what evaluating from
// scratch gives; a materialization of another program, or one with a
// scratch of its own, does not take it.
func TestScratchTakenAndUsed(t *testing.T) {
	empty := mustEval(t, gateProgram, nil)
	m := empty.Clone()
	var err error
	var base []Fact
	for i := 0; i < 6; i++ {
		f := []Fact{req(fmt.Sprintf("r%d", i)), appr(fmt.Sprintf("r%d", i), i%2 == 1)}
		base = append(base, f...)
		if m, err = m.Apply([]Change{{Fact: f[0], Diff: 1}, {Fact: f[1], Diff: 1}}); err != nil {
			t.Fatal(err)
		}
		s := m.TakeScratch()
		if s.s == nil || m.spare != nil {
			t.Fatalf("step %d: no scratch taken", i)
		}
		if other := mustEval(t, ".decl a(x: symbol)\n", nil); other.UseScratch(s) {
			t.Fatalf("step %d: another program's materialization took the scratch", i)
		}
		u := empty.Clone()
		if !u.UseScratch(s) || u.spare != s.s || u.UseScratch(s) {
			t.Fatalf("step %d: the clone did not take the scratch once", i)
		}
		if u, err = u.Apply([]Change{{Fact: f[0], Diff: 1}, {Fact: f[1], Diff: 1}, {Fact: req("x"), Diff: 1}}); err != nil {
			t.Fatal(err)
		}
		if u.spare != s.s {
			t.Fatalf("step %d: the update did not hand the scratch on", i)
		}
		if g, w := gateTuples(t, u), gateTuples(t, mustEval(t, gateProgram, []Fact{f[0], f[1], req("x")})); g != w {
			t.Fatalf("step %d: with the scratch %s, want %s", i, g, w)
		}
		if g, w := gateTuples(t, m), gateTuples(t, mustEval(t, gateProgram, base)); g != w {
			t.Fatalf("step %d: after its scratch was taken %s, want %s", i, g, w)
		}
	}
	if (&Materialization{consumed: true}).TakeScratch() != (Scratch{}) {
		t.Fatal("a consumed materialization gave a scratch")
	}
}
