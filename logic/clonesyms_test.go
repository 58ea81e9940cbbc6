package logic

import (
	"fmt"
	"slices"
	"testing"
)

// TestCloneSymbolsStayApart: a clone shares its original's symbols, capped,
// so that a symbol either interns after the clone lands in its own list.
// The original has room past its symbols when cloned; each then interns a
// symbol of its own, at the same position, and each reads back its own.
func TestCloneSymbolsStayApart(t *testing.T) {
	c, err := Load("gate.dl", []byte(gateProgram))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
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
