package logic

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

const slabProgram = `.decl a(x: number)
.decl b(x: number, y: number)
.decl c(x: number, y: number, z: number)
.decl d(x: number, y: number)
d(x, y) :- b(x, y), a(x).
`

// TestSlabPiecesStayApart grows tables whose first chunks were carved
// one after another from their materialization's slab past those chunks'
// capacity, in updates that interleave the tables, clones of the
// materialization updated on their own, and values wide enough to rewrite
// a table at eight bytes a value (a first chunk too large for the slab).
// Every materialization is compared with a from-scratch evaluation of its
// facts: a piece not capped at its own capacity grows into the next
// table's rows.
func TestSlabPiecesStayApart(t *testing.T) {
	c, err := Load("slab.dl", []byte(slabProgram))
	if err != nil {
		t.Fatal(err)
	}
	arity := map[string]int{"a": 1, "b": 2, "c": 3}
	rapid.Check(t, func(t *rapid.T) {
		type run struct {
			m     *Materialization
			facts []Fact
			seen  map[string]bool
		}
		m0, err := Evaluate(c, nil, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		runs := []*run{{m: m0, seen: map[string]bool{}}}
		steps := rapid.IntRange(1, 12).Draw(t, "steps")
		for step := range steps {
			if rapid.IntRange(0, 3).Draw(t, "clone") == 0 {
				r := runs[rapid.IntRange(0, len(runs)-1).Draw(t, "from")]
				seen := map[string]bool{}
				for k := range r.seen {
					seen[k] = true
				}
				runs = append(runs, &run{m: r.m.Clone(), facts: append([]Fact(nil), r.facts...), seen: seen})
			}
			r := runs[rapid.IntRange(0, len(runs)-1).Draw(t, "run")]
			var changes []Change
			for range rapid.IntRange(1, 200).Draw(t, "n") {
				rel := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "rel")
				args := make([]Value, arity[rel])
				for i := range args {
					v := int64(len(r.facts)) // every fact a new one
					if i > 0 {
						v = int64(rapid.IntRange(0, 40).Draw(t, "v"))
					}
					if rapid.IntRange(0, 400).Draw(t, "wide") == 217 {
						v <<= 40
					}
					args[i] = Num(v)
				}
				f := Fact{Rel: rel, Args: args}
				if r.seen[f.String()] {
					continue
				}
				r.seen[f.String()] = true
				r.facts = append(r.facts, f)
				changes = append(changes, Change{Fact: f, Diff: 1})
			}
			next, err := r.m.Apply(changes)
			if err != nil {
				t.Fatal(err)
			}
			r.m = next
			for i, x := range runs {
				want, err := Evaluate(c, x.facts, Limits{})
				if err != nil {
					t.Fatal(err)
				}
				assertSameMaterialization(t, x.m, want, fmt.Sprintf("step %d, materialization %d", step, i))
			}
		}
	})
}

// TestCloneHasItsOwnSlab: a clone carves its tables' first chunks from a
// slab of its own, never from the one the materialization it came from
// (which may be updated at the same time, on another goroutine) carves
// from.
func TestCloneHasItsOwnSlab(t *testing.T) {
	c, err := Load("slab.dl", []byte(slabProgram))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, []Fact{{Rel: "a", Args: []Value{Num(1)}}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sl := m.tables[0].sl
	nbytes, nlists, ncols := len(sl.bytes), len(sl.lists), len(sl.cols)
	u := m.Clone()
	for i, tb := range u.tables {
		if tb.sl == nil || tb.sl == m.tables[i].sl || tb.sl != u.tables[0].sl {
			t.Fatalf("table %d of the clone carves from %p, the original from %p", i, tb.sl, m.tables[i].sl)
		}
	}
	// The copied first chunks come from the clone's slab: the original's
	// is as it was.
	if len(sl.bytes) != nbytes || len(sl.lists) != nlists || len(sl.cols) != ncols {
		t.Fatalf("Clone carved from the original's slab")
	}
	if len(u.tables[0].sl.lists) == 0 && len(u.tables[0].sl.bytes) == 0 {
		t.Fatalf("the clone's slab gave nothing")
	}
}
