package logic

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestBoundDepth pins the bound on programs whose deepest derivation is
// known, and its absence where there is none.
func TestBoundDepth(t *testing.T) {
	chain := func(k int) string {
		var b strings.Builder
		for i := 0; i <= k; i++ {
			fmt.Fprintf(&b, ".decl r%d(x: number)\n", i)
		}
		for i := 1; i <= k; i++ {
			fmt.Fprintf(&b, "r%d(x) :- r%d(x).\n", i, i-1)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"no rules", ".decl a(x: number)\na(1).\n", 0},
		{"chain of 1", chain(1), 1},
		{"chain of 5", chain(5), 5},
		{"only an absence", ".decl a(x: number)\n.decl b(x: number)\nb(1) :- !a(1).\n", 1},
		{"absence adds nothing", ".decl a(x: number)\n.decl b(x: number)\n.decl c(x: number)\nb(x) :- a(x).\nc(x) :- a(x), !b(x).\n", 1},
		{"explicit negation", ".decl a(x: number)\n.decl b(x: number)\n-b(x) :- a(x).\nb(x) :- a(x), !-b(x).\n", 1},
		{"recursive", chainProgram, -1},
		{"division", ".decl a(x: number)\n.decl b(x: number)\nb(y) :- a(x), y = 6 / x.\n", -1},
		{"remainder", ".decl a(x: number)\n.decl b(x: number)\nb(x) :- a(x), x % 2 = 0.\n", -1},
		{"other arithmetic", ".decl a(x: number)\n.decl b(x: number)\nb(y) :- a(x), y = x * 2 + 1 - x.\n", 1},
	} {
		c, err := Load("t.dl", []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.depthBound != tc.want {
			t.Errorf("%s: bound %d, want %d", tc.name, c.depthBound, tc.want)
		}
	}
	// The chain's bound is met: one step less is refused.
	c, err := Load("t.dl", []byte(chain(5)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate(c, []Fact{{Rel: "r0", Args: []Value{Num(1)}}}, Limits{MaxDepth: 4}); err == nil || !strings.Contains(err.Error(), "derivation depth exceeded") {
		t.Fatalf("a chain of 5 under a depth limit of 4: %v", err)
	}
	if _, err := Evaluate(c, []Fact{{Rel: "r0", Args: []Value{Num(1)}}}, Limits{MaxDepth: 5}); err != nil {
		t.Fatalf("a chain of 5 under a depth limit of 5: %v", err)
	}
}

// TestDepthBoundHoldsTheEnumeration: wherever a generated program has a
// bound, the enumeration under a limit of that bound finds no fact deeper,
// from scratch and after every change.
func TestDepthBoundHoldsTheEnumeration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		if c.depthBound < 0 {
			t.Skip("no bound")
		}
		ms := genBase(t)
		m, err := Evaluate(c, ms.facts(), Limits{MaxTuples: 20000})
		if err != nil {
			t.Skip("evaluation error")
		}
		check := func(m *Materialization, ctx string) {
			m.lim.MaxDepth = max(c.depthBound, 1)
			if err := m.checkDepthFull(); err != nil {
				t.Fatalf("%s: bound %d, enumeration: %v\nprogram:\n%s", ctx, c.depthBound, err, src)
			}
			m.lim.MaxDepth = 0
		}
		check(m, "from scratch")
		for step := range rapid.IntRange(1, 6).Draw(t, "steps") {
			next, err := m.Apply(genChanges(t, ms))
			if err != nil {
				t.Skip("apply error")
			}
			check(next, fmt.Sprintf("step %d", step))
			m = next
		}
	})
}

// TestDepthShortcutIsEnumeration runs generated programs under drawn
// depth limits with the shortcut and without it: the same errors, the
// same materializations, from scratch and after every change.
func TestDepthShortcutIsEnumeration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		lim := Limits{MaxTuples: 20000, MaxDepth: rapid.IntRange(0, 5).Draw(t, "maxdepth")}
		ms := genBase(t)
		both := func(run func() (*Materialization, error)) (*Materialization, *Materialization, error) {
			defer func() { depthShortcut = true }()
			depthShortcut = true
			got, gerr := run()
			depthShortcut = false
			want, werr := run()
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("with the shortcut: %v; without: %v\nbound %d limit %d\nprogram:\n%s", gerr, werr, c.depthBound, lim.MaxDepth, src)
			}
			return got, want, gerr
		}
		facts := ms.facts() // one order for both ways: the error names the first fact too deep
		got, want, err := both(func() (*Materialization, error) { return Evaluate(c, facts, lim) })
		if err != nil {
			return
		}
		assertSameMaterialization(t, got, want, "from scratch\nprogram:\n"+src)
		for step := range rapid.IntRange(1, 6).Draw(t, "steps") {
			changes := genChanges(t, ms)
			// Apply consumes the materialization it is applied to: each
			// way applies the changes to its own.
			g, w := got, want
			var turn int
			got2, want2, err := both(func() (*Materialization, error) {
				turn++
				if turn == 1 {
					return g.Apply(changes)
				}
				return w.Apply(changes)
			})
			if err != nil {
				return
			}
			assertSameMaterialization(t, got2, want2, fmt.Sprintf("step %d\nprogram:\n%s", step, src))
			got, want = got2, want2
		}
	})
}
