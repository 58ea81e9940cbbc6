package logic

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// sameTables asserts that two materializations hold the same rows under
// the same row numbers with the same rounds, table by table: batching may
// change when a row is inserted but never which number it gets.
func sameTables(t interface{ Fatalf(string, ...any) }, a, b *Materialization) {
	for i := range a.tables {
		ta, tb := a.tables[i], b.tables[i]
		if ta.n != tb.n {
			t.Fatalf("table %d: %d rows, want %d", i, ta.n, tb.n)
		}
		for r := int32(0); r < ta.n; r++ {
			if fmt.Sprint(ta.tuple(r)) != fmt.Sprint(tb.tuple(r)) || ta.round.get(r) != tb.round.get(r) {
				t.Fatalf("table %d row %d: %v round %d, want %v round %d", i, r, ta.tuple(r), ta.round.get(r), tb.tuple(r), tb.round.get(r))
			}
			if got := ta.find(ta.tuple(r)); got != r {
				t.Fatalf("table %d: find row %d's tuple = %d", i, r, got)
			}
		}
	}
	if fmt.Sprint(a.stats) != fmt.Sprint(b.stats) {
		t.Fatalf("stats %+v, want %+v", a.stats, b.stats)
	}
}

// Batched inserts give every program the rows, row numbers, rounds,
// statistics and errors (budgets included) of inserting each tuple at once.
func TestBatchedInsertsAgreeWithUnbatched(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, src := genLoaded(t)
		base := genFacts(t)
		lim := Limits{
			MaxTuples:  int64(rapid.IntRange(0, 60).Draw(t, "maxTuples")),
			MaxFirings: int64(rapid.IntRange(0, 200).Draw(t, "maxFirings")),
		}
		got, gerr := evaluate(c, base, lim, false)
		want, werr := evaluate(c, base, lim, true)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("error %v, want %v\n%s", gerr, werr, src)
		}
		if werr == nil {
			sameTables(t, got, want)
		}
	})
}

// Closures large enough to fill many blocks and grow the hash set several
// times keep their row order too.
func TestBatchedInsertsKeepRowOrder(t *testing.T) {
	for _, w := range []struct {
		name, src string
		facts     []Fact
	}{
		{"chain", tcProgram, chainEdges(300)},
		{"random", tcProgram, randomGraph(300, 0.01, 3)},
		{"tree", sgProgram, randomTree(2000, 50, 1)},
	} {
		t.Run(w.name, func(t *testing.T) {
			c, err := Load(w.name+".dl", []byte(w.src))
			if err != nil {
				t.Fatal(err)
			}
			got, err := evaluate(c, w.facts, Limits{}, false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := evaluate(c, w.facts, Limits{}, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.live < 10*insertBatch {
				t.Fatalf("only %d tuples: too few to fill many blocks", got.live)
			}
			sameTables(t, got, want)
		})
	}
}

// Every tuple budget and rule budget, with a division by zero among the
// derivations, stops a batched evaluation with the error an unbatched one
// meets first: tuples queued before a failure count before it.
func TestBatchedInsertsFailFirstAsUnbatched(t *testing.T) {
	src := tcProgram + `
.decl q(x: number, y: number)
.output q
q(x, d) :- tc(x, y), d = 1000 / (y - 25).
`
	c, err := Load("budget.dl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	// A chain of 24 nodes never divides by zero.
	for _, facts := range [][]Fact{chainEdges(30), chainEdges(24)} {
		for maxTuples := int64(0); maxTuples <= 900; maxTuples += 13 {
			for maxFirings := int64(0); maxFirings <= 1400; maxFirings += 17 {
				lim := Limits{MaxTuples: maxTuples, MaxFirings: maxFirings}
				got, gerr := evaluate(c, facts, lim, false)
				want, werr := evaluate(c, facts, lim, true)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Fatalf("%+v: error %v, want %v", lim, gerr, werr)
				}
				if werr == nil {
					sameTables(t, got, want)
					kinds["none"] = true
				} else {
					kinds[string(werr.(*Error).Code)] = true
				}
			}
		}
	}
	// The grid must reach every way of stopping, or it proves little.
	for _, k := range []string{"none", string(TupleBudgetExceeded), string(RuleBudgetExhausted), string(DivisionByZero)} {
		if !kinds[k] {
			t.Errorf("no limits ended in %s; met %v", k, kinds)
		}
	}
}
