package logic

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// wideOffsets put generated values just below and above the ends of the
// 16-bit and the 32-bit range (so a relation widens when the first value
// past one arrives), or far outside both.
var wideOffsets = []int64{math.MaxInt16 - 2, math.MinInt16 - 2, math.MaxInt32 - 2, math.MinInt32 - 2, 1 << 40}

// mixedOffsets give each value its own offset: a relation starts at any
// width and may widen from 16 to 32 and then to 64 bits, in one
// evaluation or across updates.
var mixedOffsets = []int64{0, math.MaxInt16 - 2, math.MinInt16 - 2, math.MaxInt32 - 2, 1 << 40}

func withOffset(t *testing.T, check func(*rapid.T)) {
	for _, off := range wideOffsets {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			defer func(o int64) { genOffset = o }(genOffset)
			genOffset = off
			rapid.Check(t, check)
		})
	}
	t.Run("mixed", func(t *testing.T) {
		defer func(m []int64) { genMixed = m }(genMixed)
		genMixed = mixedOffsets
		rapid.Check(t, check)
	})
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
	if tb.width != 4 || tb.stride != 8 {
		t.Fatalf("width=%d stride=%d with 32-bit values only", tb.width, tb.stride)
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
	if _, added := tb.insert([]int64{math.MinInt32 + 1, 99}, 0); !added || tb.width != 4 {
		t.Fatalf("added=%v width=%d for a value that fits", added, tb.width)
	}
	vals = append(vals, math.MinInt32+1)
	for i, v := range big {
		if _, added := tb.insert([]int64{v, int64(100 + i)}, 0); !added {
			t.Fatalf("%d not added", v)
		}
		vals = append(vals, v)
	}
	if tb.width != 8 || tb.stride != 16 {
		t.Fatalf("width=%d stride=%d after values past 32 bits", tb.width, tb.stride)
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

// tierValues are values at and around the ends of each width a table
// stores, drawn so that a run of inserts crosses them in any order.
var tierValues = []int64{
	0, 1, -1, math.MaxInt16, math.MinInt16, math.MaxInt16 + 1, math.MinInt16 - 1,
	math.MaxUint16, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1,
	math.MaxUint32, 1 << 40, math.MaxInt64, math.MinInt64,
}

// A table that starts at 16 bits a value and widens as values arrive
// behaves exactly like one that stores 64 bits a value from the start (the
// layout before narrow tiers): same rows, same answers from the hash set
// and every index, same hashes, the same after unlinking, truncating and
// cloning.
func TestNarrowTableMatchesA64BitTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		arity := rapid.IntRange(1, 3).Draw(t, "arity")
		masks := []uint64{1, uint64(1)<<arity - 1}
		if arity > 1 {
			masks = append(masks, 2)
		}
		narrow := newTable(arity, masks)
		wide := newTable(arity, masks)
		wide.width, wide.stride = 8, 8*arity
		// Indexes built at the start see every widening; the others are
		// built after, from the widened rows.
		early := rapid.Bool().Draw(t, "early")
		if early {
			for k := range masks {
				narrow.index(k)
				wide.index(k)
			}
		}
		val := func(label string) int64 {
			if rapid.IntRange(0, 2).Draw(t, label+"kind") == 0 {
				return tierValues[rapid.IntRange(0, len(tierValues)-1).Draw(t, label)]
			}
			return int64(rapid.IntRange(-3, 3).Draw(t, label+"small"))
		}
		tuple := func() []int64 {
			v := make([]int64, arity)
			for i := range v {
				v[i] = val("v")
			}
			return v
		}
		n := rapid.IntRange(0, 300).Draw(t, "n")
		for range n {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				v := tuple()
				if a, b := narrow.find(v), wide.find(v); a != b {
					t.Fatalf("find %v: narrow %d, wide %d", v, a, b)
				}
			case 1:
				if narrow.n > 0 {
					r := int32(rapid.IntRange(0, int(narrow.n)-1).Draw(t, "unlink"))
					narrow.unlink(r)
					wide.unlink(r)
				}
			default:
				v := tuple()
				round := uint32(rapid.IntRange(0, 3).Draw(t, "round"))
				r1, a1 := narrow.insert(v, round)
				r2, a2 := wide.insert(v, round)
				if r1 != r2 || a1 != a2 {
					t.Fatalf("insert %v: narrow (%d, %v), wide (%d, %v)", v, r1, a1, r2, a2)
				}
				if narrow.width < widthOf(slices.Max(v)) || narrow.width < widthOf(slices.Min(v)) {
					t.Fatalf("width %d after inserting %v", narrow.width, v)
				}
			}
		}
		if rapid.Bool().Draw(t, "truncate") && narrow.n > 0 {
			k := int32(rapid.IntRange(0, int(narrow.n)).Draw(t, "keep"))
			narrow.truncate(k)
			wide.truncate(k)
			narrow.rebuild()
			wide.rebuild()
		}
		if rapid.Bool().Draw(t, "clone") {
			narrow = narrow.clone()
		}
		sameRows(t, narrow, wide)
		for k := range masks { // rebuilt if truncate dropped them
			narrow.index(k)
			wide.index(k)
		}
		// Every index yields the same chain of rows for every key a row holds.
		buf := make([]int64, arity)
		for r := range narrow.n {
			for k, m := range masks {
				var key []int64
				for c, x := range narrow.load(r, buf) {
					if m&(1<<c) != 0 {
						key = append(key, x)
					}
				}
				a, b := narrow.idx[k], wide.idx[k]
				ra, rb := a.lookup(narrow, key), b.lookup(wide, key)
				for ra >= 0 || rb >= 0 {
					if ra != rb {
						t.Fatalf("index %b key %v: narrow row %d, wide row %d", m, key, ra, rb)
					}
					ra, rb = a.next[ra], b.next[rb]
				}
			}
		}
	})
}

// sameRows asserts that two tables hold the same rows and find them
// alike.
func sameRows(t *rapid.T, a, b *table) {
	if a.n != b.n {
		t.Fatalf("%d rows against %d", a.n, b.n)
	}
	for r := range a.n {
		va, vb := a.tuple(r), b.tuple(r)
		if !slices.Equal(va, vb) {
			t.Fatalf("row %d: %v against %v", r, va, vb)
		}
		for c := range a.arity {
			if a.at(r, c) != vb[c] {
				t.Fatalf("row %d column %d: at %d, load %d", r, c, a.at(r, c), vb[c])
			}
		}
		if a.hashRow(r) != hashTuple(vb) || b.hashRow(r) != hashTuple(vb) {
			t.Fatalf("row %d hashes differ", r)
		}
		if fa, fb := a.find(va), b.find(vb); fa != fb {
			t.Fatalf("find row %d %v: %d against %d", r, va, fa, fb)
		}
	}
}
