package logic

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// wideOffsets put generated values just below and above the ends of the
// 32-bit range (so a relation widens when the first value past it
// arrives), or far outside it.
var wideOffsets = []int64{math.MaxInt32 - 2, math.MinInt32 - 2, 1 << 40}

func withOffset(t *testing.T, check func(*rapid.T)) {
	for _, off := range wideOffsets {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			defer func(o int64) { genOffset = o }(genOffset)
			genOffset = off
			rapid.Check(t, check)
		})
	}
}

func TestWideValuesMatchNaiveOracle(t *testing.T) { withOffset(t, checkOracle) }

func TestWideValuesApplyMatchesFromScratch(t *testing.T) { withOffset(t, checkApply) }

func TestWideValuesApplyRecomputeMatchesFromScratch(t *testing.T) {
	defer func(v int, c int32) { recomputeMin, compactMin = v, c }(recomputeMin, compactMin)
	recomputeMin, compactMin = -1, 0
	withOffset(t, checkApply)
}

// A table keeps 32-bit words until a value does not fit, then widens in
// place: every row, the hash set and the indexes still find the same
// values.
func TestTableWidensAtTheFirstValuePast32Bits(t *testing.T) {
	tb := newTable(2, []uint64{1, 2})
	vals := []int64{0, -1, 1, math.MaxInt32, math.MinInt32, 7}
	for i, v := range vals {
		if _, added := tb.insert([]int64{v, int64(i)}, 0); !added {
			t.Fatalf("row %d not added", i)
		}
	}
	ix := tb.index(0) // built while narrow
	if tb.wide || tb.stride != 2 {
		t.Fatalf("wide=%v stride=%d with 32-bit values only", tb.wide, tb.stride)
	}
	big := []int64{math.MaxInt32 + 1, math.MinInt32 - 1, math.MaxInt64, math.MinInt64, 1 << 40}
	// Absent wide values are not found in a narrow table (no truncation).
	for _, v := range big {
		if r := tb.find([]int64{v, 0}); r >= 0 {
			t.Fatalf("find(%d) = %d in a narrow table", v, r)
		}
		if r := ix.lookup(tb, []int64{v}); r >= 0 {
			t.Fatalf("lookup(%d) = %d in a narrow table", v, r)
		}
	}
	if _, added := tb.insert([]int64{math.MinInt32 + 1, 99}, 0); !added || tb.wide {
		t.Fatalf("added=%v wide=%v for a value that fits", added, tb.wide)
	}
	vals = append(vals, math.MinInt32+1)
	for i, v := range big {
		if _, added := tb.insert([]int64{v, int64(100 + i)}, 0); !added {
			t.Fatalf("%d not added", v)
		}
		vals = append(vals, v)
	}
	if !tb.wide || tb.stride != 4 {
		t.Fatalf("wide=%v stride=%d after values past 32 bits", tb.wide, tb.stride)
	}
	if int(tb.n) != len(vals) {
		t.Fatalf("%d rows, want %d", tb.n, len(vals))
	}
	for r, v := range vals {
		if got := tb.at(int32(r), 0); got != v {
			t.Fatalf("row %d column 0 = %d, want %d", r, got, v)
		}
		tup := tb.tuple(int32(r))
		if got := tb.find(tup); got != int32(r) {
			t.Fatalf("find(%v) = %d, want %d", tup, got, r)
		}
		if _, added := tb.insert(tup, 0); added {
			t.Fatalf("%v inserted twice", tup)
		}
		if got := ix.lookup(tb, []int64{v}); got != int32(r) {
			t.Fatalf("index lookup(%d) = %d, want %d", v, got, r)
		}
		// An index built after widening agrees.
		if got := tb.index(1).lookup(tb, tup[1:]); got != int32(r) {
			t.Fatalf("second index lookup(%d) = %d, want %d", tup[1], got, r)
		}
	}
	c := tb.clone()
	for r := range vals {
		if c.hashRow(int32(r)) != hashTuple(tb.tuple(int32(r))) || c.find(tb.tuple(int32(r))) != int32(r) {
			t.Fatalf("clone lost row %d", r)
		}
	}
}

// A relation derived across the boundary (arithmetic carries a chain past
// 2^31 - 1 and below -2^31) renders the same values a 64-bit table would,
// in numeric order, and updates keep it so.
func TestDerivationCrossesThe32BitBoundary(t *testing.T) {
	src := `.decl start(x: number)
.decl n(x: number)
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
n(x) :- start(x).
n(y) :- n(x), y = x + 1, x > 0, x < 2147483651.
n(y) :- n(x), y = x - 4294967296, x > 2147483645, x < 2147483651.
edge(x, y) :- n(x), n(y), y = x + 1.
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
`
	c, err := Load("wide.dl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, []Fact{{Rel: "start", Args: []Value{Num(math.MaxInt32 - 3)}}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var ns []int64
	for v := int64(math.MinInt32 - 2); v <= math.MinInt32+2; v++ {
		ns = append(ns, v)
	}
	for v := int64(math.MaxInt32 - 3); v <= math.MaxInt32+4; v++ {
		ns = append(ns, v)
	}
	var want strings.Builder
	for _, v := range ns {
		fmt.Fprintf(&want, "%d\n", v)
	}
	got, err := m.WriteFacts("n", false)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("n:\n%s\nwant\n%s", got, want.String())
	}
	// tc: every pair i < j within each run of consecutive values.
	want.Reset()
	runs := [][2]int64{{math.MinInt32 - 2, math.MinInt32 + 2}, {math.MaxInt32 - 3, math.MaxInt32 + 4}}
	for _, rn := range runs {
		for i := rn[0]; i <= rn[1]; i++ {
			for j := i + 1; j <= rn[1]; j++ {
				fmt.Fprintf(&want, "%d\t%d\n", i, j)
			}
		}
	}
	if got, _ = m.WriteFacts("tc", false); string(got) != want.String() {
		t.Fatalf("tc:\n%s\nwant\n%s", got, want.String())
	}
	// Retracting the start leaves nothing; restoring it brings every
	// tuple back, matching a fresh evaluation byte for byte.
	start := Fact{Rel: "start", Args: []Value{Num(math.MaxInt32 - 3)}}
	if m, err = m.Apply([]Change{{Fact: start, Diff: -1}}); err != nil {
		t.Fatal(err)
	}
	if n := m.Count("tc", false) + m.Count("n", false); n != 0 {
		t.Fatalf("%d tuples left after retracting the start", n)
	}
	if m, err = m.Apply([]Change{{Fact: start, Diff: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, _ = m.WriteFacts("tc", false); string(got) != want.String() {
		t.Fatalf("tc after re-insertion:\n%s\nwant\n%s", got, want.String())
	}
}
