package logic

import "testing"

// The evaluator's scratch is sized from the compiled program; a small
// program's fits inside the evaluator, a larger one's gets slices of its
// own. Either way every slice is as long as the program needs and capped
// there, so that an append by one step cannot reach another's key.
func TestExecScratch(t *testing.T) {
	small := ".decl e(a: number, b: number)\n.decl p(a: number, b: number)\ne(1, 2).\np(x, y) :- e(x, y).\n"
	big := `.decl e(a: number, b: number, c: number, d: number, f: number, g: number)
.decl p(a: number, b: number)
e(1, 2, 3, 4, 5, 6).
p(a, g) :- e(a, b, c, d, f, g), e(b, c, d, f, g, a), e(c, d, f, g, a, b), !e(g, f, d, c, b, a), a + b < g.
`
	for _, tc := range []struct {
		name   string
		src    string
		inline bool
	}{{"small", small, true}, {"big", big, false}} {
		c, err := Load("scratch.dl", []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		z := c.scratch
		m, err := Evaluate(c, nil, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		x := m.newExec()
		if len(x.regs) != z.regs || cap(x.regs) != z.regs || len(x.head) != z.arity || cap(x.head) != z.arity {
			t.Errorf("%s: regs %d/%d head %d/%d, want %d and %d", tc.name, len(x.regs), cap(x.regs), len(x.head), cap(x.head), z.regs, z.arity)
		}
		if len(x.views) != z.atoms || len(x.rows) != z.atoms || len(x.keys) != z.steps {
			t.Errorf("%s: views %d rows %d keys %d, want %d atoms and %d steps", tc.name, len(x.views), len(x.rows), len(x.keys), z.atoms, z.steps)
		}
		for i, k := range x.keys {
			if len(k) != z.arity || cap(k) != z.arity {
				t.Errorf("%s: key %d is %d/%d, want %d", tc.name, i, len(k), cap(k), z.arity)
			}
		}
		// Writing every register, head word and key word must leave all the
		// others as written: the carved pieces do not overlap.
		var all [][]int64
		all = append(all, x.regs, x.head)
		all = append(all, x.keys...)
		v := int64(0)
		for _, s := range all {
			for i := range s {
				v++
				s[i] = v
			}
		}
		v = 0
		for _, s := range all {
			for i := range s {
				v++
				if s[i] != v {
					t.Fatalf("%s: scratch pieces overlap", tc.name)
				}
			}
		}
		if got := &x.views[0] == &x.in.views[0]; got != tc.inline {
			t.Errorf("%s: views inside the evaluator = %v, want %v", tc.name, got, tc.inline)
		}
		allocs := testing.AllocsPerRun(20, func() { m.newExec() })
		if tc.inline && allocs != 1 {
			t.Errorf("%s: newExec makes %v allocations, want 1", tc.name, allocs)
		}
		if !tc.inline && allocs < 2 {
			t.Errorf("%s: newExec makes %v allocations, want its own slices", tc.name, allocs)
		}
	}
}
