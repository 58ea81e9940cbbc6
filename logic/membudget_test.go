package logic

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Runaway programs stop at the memory budget with a typed error that names
// the rule, like the tuple budget, and the same error on every run.
func TestRunawayStopsAtMemoryBudget(t *testing.T) {
	var nums []Fact
	for i := range 600 {
		nums = append(nums, Fact{Rel: "n", Args: []Value{Num(int64(i))}})
	}
	cases := []struct {
		name, src string
		facts     []Fact
		pos       string
	}{
		{"arithmetic recursion", ".decl n(x: number)\nn(0).\nn(x + 1) :- n(x).\n", nil, "t.dl:3:1"},
		{"cross product", ".decl n(x: number)\n.decl p(x: number, y: number, z: number)\np(x, y, z) :- n(x), n(y), n(z).\n", nums, "t.dl:3:1"},
		{"wide values", ".decl n(x: number)\nn(0).\nn(x + 4294967296) :- n(x), x < 9000000000000000000.\n", nil, "t.dl:3:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("t.dl", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			const budget = 1 << 20
			var first string
			for run := range 2 {
				m, err := Evaluate(c, tc.facts, Limits{MaxBytes: budget})
				var e *Error
				if m != nil || !errors.As(err, &e) || e.Code != MemoryBudgetExceeded || e.Pos.String() != tc.pos || !strings.Contains(e.Msg, "last rule: ") {
					t.Fatalf("got %v, %v; want MEMORY_BUDGET_EXHAUSTED at %s naming the rule and no materialization", m != nil, err, tc.pos)
				}
				if run == 0 {
					first = err.Error()
				} else if err.Error() != first {
					t.Fatalf("second run: %v, first: %s", err, first)
				}
			}
			// The check is periodic: it stops the program within a few
			// checks of the budget, not gigabytes later.
			if !strings.Contains(first, "exceed the memory budget of 1048576") {
				t.Fatalf("message %q", first)
			}
		})
	}
}

// footprintOracle recomputes a materialization's footprint from each
// table's row count, width, set size and index sizes: a row takes its
// arity times its width, a slot or chain link four bytes, a round run
// eight, and once an update expanded them the round and death columns
// four bytes a row each.
func footprintOracle(m *Materialization) int64 {
	var b int64
	for _, t := range m.tables {
		n := int64(t.n)
		b += n * int64(t.arity*t.width)
		b += 4 * int64(t.set.size)
		for _, ix := range t.idx {
			if ix != nil {
				b += 4*int64(len(ix.slots)) + 4*n
			}
		}
		if t.round.vec.on() {
			b += 4 * n
		} else {
			runs := int64(0)
			for r := int32(0); r < t.n; r++ {
				if r == 0 || t.round.get(r) != t.round.get(r-1) {
					runs++
				}
			}
			b += 8 * runs
		}
		if t.died.on() {
			b += 4 * n
		}
	}
	return b
}

// The footprint never shrinks while rows are added and matches the oracle
// after every insert, across the width changes 2 → 4 → 8 bytes.
func TestFootprintMonotoneAndMatchesOracle(t *testing.T) {
	c, err := Load("t.dl", []byte(".decl e(x: number, y: number)\n.decl p(x: number)\np(x) :- e(x, y), e(y, x).\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMaterialization(c, Limits{})
	tb := m.tables[0]
	tb.index(0)
	prev := m.Footprint()
	if prev != footprintOracle(m) {
		t.Fatalf("empty: %d, oracle %d", prev, footprintOracle(m))
	}
	for i := range int64(3 * rowsPerChunk) {
		v := i
		switch {
		case i > 2*rowsPerChunk:
			v = i << 40
		case i > rowsPerChunk:
			v = i << 16
		}
		if _, added := tb.insert([]int64{v, -v}, uint32(1+i/1000)); !added {
			t.Fatalf("row %d not added", i)
		}
		f := m.Footprint()
		if f < prev {
			t.Fatalf("row %d: footprint fell from %d to %d", i, prev, f)
		}
		if i%997 == 0 || i < 300 {
			if o := footprintOracle(m); f != o {
				t.Fatalf("row %d: footprint %d, oracle %d", i, f, o)
			}
		}
		prev = f
	}
	if tb.width != 8 {
		t.Fatalf("width %d, want 8", tb.width)
	}
	if min := int64(3*rowsPerChunk) * 16; prev < min {
		t.Fatalf("footprint %d below the rows alone (%d)", prev, min)
	}
}

// Under the budget, a program gives exactly the tables it gives without
// one; over it, the typed error and nothing else. A from-scratch footprint
// only grows, so the budget fails exactly when the unbounded run ends above
// it — whatever the interval between checks. Batched and unbatched inserts
// stop at the same point.
func TestMemoryBudgetIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		base := genFacts(t)
		free, err := Evaluate(c, base, Limits{MaxTuples: 20000})
		if err != nil {
			t.Skip("budget or division")
		}
		f := free.Footprint()
		if o := footprintOracle(free); f != o {
			t.Fatalf("footprint %d, oracle %d\n%s", f, o, src)
		}
		lim := Limits{
			MaxTuples: 20000,
			MaxBytes:  rapid.Int64Range(1, 2*f).Draw(t, "maxBytes"),
			memEvery:  rapid.Int64Range(1, 64).Draw(t, "every"),
		}
		got, err := Evaluate(c, base, lim)
		if lim.MaxBytes >= f {
			if err != nil {
				t.Fatalf("budget %d >= footprint %d: %v\n%s", lim.MaxBytes, f, err, src)
			}
			sameTables(t, got, free)
			if got.Footprint() != f {
				t.Fatalf("footprint %d, want %d", got.Footprint(), f)
			}
		} else {
			var e *Error
			if got != nil || !errors.As(err, &e) || e.Code != MemoryBudgetExceeded {
				t.Fatalf("budget %d < footprint %d: got %v, %v\n%s", lim.MaxBytes, f, got != nil, err, src)
			}
		}
		_, uerr := evaluate(c, base, lim, true)
		if fmt.Sprint(err) != fmt.Sprint(uerr) {
			t.Fatalf("batched %v, unbatched %v\n%s", err, uerr, src)
		}
	})
}

// An update that would take the storage past the budget fails with the
// typed error and leaves the materialization as it was; Solve keeps the
// prior's limits and so the budget too.
func TestApplyHonoursMemoryBudget(t *testing.T) {
	c, err := Load("t.dl", []byte(chainProgram))
	if err != nil {
		t.Fatal(err)
	}
	// The first update turns the round column into one entry a row and
	// adds the death column: measure the footprint after an empty one.
	free, err := Evaluate(c, chainEdges(40), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if free, err = free.Apply(nil); err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxBytes: free.Footprint() + 64, memEvery: 1}
	m, err := Evaluate(c, chainEdges(40), lim)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = m.Apply(nil); err != nil {
		t.Fatal(err)
	}
	if m.Footprint() != free.Footprint() || m.Footprint() != footprintOracle(m) {
		t.Fatalf("footprint %d, want %d (oracle %d)", m.Footprint(), free.Footprint(), footprintOracle(m))
	}
	before := m.Clone()
	var grow []Change
	for i := int64(40); i < 400; i++ {
		grow = append(grow, Change{Fact: Fact{Rel: "edge", Args: []Value{Num(i), Num(i + 1)}}, Diff: 1})
	}
	_, err = m.Apply(grow)
	var e *Error
	if !errors.As(err, &e) || e.Code != MemoryBudgetExceeded {
		t.Fatalf("got %v, want MEMORY_BUDGET_EXHAUSTED", err)
	}
	for _, rel := range []string{"edge", "tc"} {
		g, _ := m.Tuples(rel, false)
		w, _ := before.Tuples(rel, false)
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("%s changed after a failed update", rel)
		}
	}
	// The rollback rebuilt the storage it had grown: the next update
	// still fits.
	if _, err := m.Apply(grow[:0]); err != nil {
		t.Fatal(err)
	}
}
