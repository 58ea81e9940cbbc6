package logic

import (
	"testing"

	"pgregory.net/rapid"
)

// checkSet asserts that the table's hash set finds exactly the tuples of
// the model, at their rows, and that its segment counts add up.
func checkSet(t interface {
	Helper()
	Fatalf(string, ...any)
}, tb *table, model map[[2]int64]int32, absent [][2]int64) {
	t.Helper()
	for k, r := range model {
		if got := tb.find(k[:]); got != r {
			t.Fatalf("find %v = %d, want row %d", k, got, r)
		}
	}
	for _, k := range absent {
		if _, in := model[k]; in {
			continue
		}
		if got := tb.find(k[:]); got != -1 {
			t.Fatalf("find %v = %d, want absent", k, got)
		}
	}
	live, used := 0, 0
	slots := 0
	for _, seg := range tb.set.parts() {
		slots += len(seg)
		for _, x := range seg {
			if x != 0 {
				used++
			}
			if x&tb.set.rowMask() != 0 {
				live++
			}
		}
	}
	if slots != tb.set.size {
		t.Fatalf("%d slots in the segments, size %d", slots, tb.set.size)
	}
	if live != tb.set.live || used != tb.set.used {
		t.Fatalf("set counts live %d used %d, slots say %d and %d", tb.set.live, tb.set.used, live, used)
	}
	if used*4 > tb.set.size*3 {
		t.Fatalf("%d of %d slots used", used, tb.set.size)
	}
	if live != len(model) {
		t.Fatalf("set holds %d rows, model %d", live, len(model))
	}
}

// Inserting, finding, unlinking, rebuilding and cloning agree with a map,
// across growths, widenings of the row bits and tombstones.
func TestRowSetAgreesWithAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tb := newTable(2, nil)
		model := map[[2]int64]int32{}
		var probes [][2]int64
		n := rapid.IntRange(0, 20000).Draw(t, "n")
		span := rapid.Int64Range(1, 40000).Draw(t, "span")
		seed := rapid.Uint64().Draw(t, "seed")
		x := seed | 1
		next := func() int64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int64(x % uint64(span)) }
		for i := 0; i < n; i++ {
			k := [2]int64{next(), next() - span/2}
			probes = append(probes, k)
			switch op := next() % 8; {
			case op == 0 && len(model) > 0:
				// unlink the row of some earlier tuple (as a deletion
				// does once the row died for good)
				p := probes[int(next())%len(probes)]
				if r, in := model[p]; in {
					tb.unlink(r)
					delete(model, p)
				}
			default:
				r, added := tb.insert(k[:], 0)
				if want, in := model[k]; in {
					if added || r != want {
						t.Fatalf("insert %v again: row %d added %v, want row %d", k, r, added, want)
					}
				} else {
					if !added || r != tb.n-1 {
						t.Fatalf("insert %v: row %d added %v, want a new row %d", k, r, added, tb.n-1)
					}
					model[k] = r
				}
			}
		}
		checkSet(t, tb, model, probes)
		c := tb.clone()
		// The clone is independent: new tuples in one are absent in the other.
		k := [2]int64{-1, -1}
		r, _ := tb.insert(k[:], 0)
		if c.find(k[:]) != -1 {
			t.Fatalf("clone sees a tuple inserted after it was made")
		}
		model[k] = r
		checkSet(t, tb, model, probes)
		delete(model, k)
		dead := map[int32]bool{}
		for _, r := range model {
			dead[r] = false
		}
		// rebuild keeps rows out that are not alive; here every row not in
		// the model was unlinked, so mark those dead first.
		c.died = zeroed(c.n)
		for r := int32(0); r < c.n; r++ {
			if _, ok := dead[r]; !ok {
				c.died.set(r, 1)
			}
		}
		c.rebuild()
		checkSet(t, c, model, probes)
	})
}

// A set from three segments on fills to three quarters instead of half, the
// halfway step between two and four segments holds 2.2M rows, and a row
// count past 1<<16 widens the row bits of every slot.
func TestRowSetDenseAndWiderRows(t *testing.T) {
	n := 2_200_000
	if testing.Short() {
		n = 200_000
	}
	tb := newTable(2, nil)
	model := make(map[[2]int64]int32, n)
	for i := 0; i < n; i++ {
		k := [2]int64{int64(i % 1999), int64(i / 1999)}
		r, added := tb.insert(k[:], 0)
		if !added {
			t.Fatalf("insert %v: not added", k)
		}
		model[k] = r
	}
	if tb.set.rowBits <= minRowBits {
		t.Fatalf("row bits %d after %d rows", tb.set.rowBits, n)
	}
	// 2.2M rows in 3M slots: a halfway step, filled past two thirds, which
	// only the three-quarter rule allows.
	if want := 3 * segSlots; !testing.Short() && tb.set.size != want {
		t.Fatalf("%d slots after %d rows, want %d", tb.set.size, n, want)
	}
	checkSet(t, tb, model, [][2]int64{{-5, 3}, {2000, 0}, {0, int64(n)}})
}

// A set of several segments grows both ways: from the rows while it holds
// every row (clearing and keeping its slots, the one flat array becoming
// the first segment), and from its old slots once rows were unlinked
// (fresh segments); both keep every live tuple findable and no unlinked
// one.
func TestRowSetSegmentsGrowWithTombstones(t *testing.T) {
	tb := newTable(2, nil)
	model := map[[2]int64]int32{}
	var absent [][2]int64
	key := func(i int) [2]int64 { return [2]int64{int64(i % 701), int64(i / 701)} }
	n := segSlots/2 + segSlots/16 // past half of one segment: two segments
	for i := range n {
		k := key(i)
		r, _ := tb.insert(k[:], 0)
		model[k] = r
	}
	if len(tb.set.segs) != 2 {
		t.Fatalf("%d segments after %d rows", len(tb.set.segs), n)
	}
	checkSet(t, tb, model, nil)
	for i := 0; i < n; i += 3 {
		k := key(i)
		tb.unlink(model[k])
		delete(model, k)
		absent = append(absent, k)
	}
	before := tb.set.size
	for i := n; tb.set.size == before; i++ {
		k := key(i)
		r, added := tb.insert(k[:], 0)
		if !added {
			t.Fatalf("insert %v: not added", k)
		}
		model[k] = r
	}
	if tb.set.live == int(tb.n) {
		t.Fatalf("no tombstones when the set grew")
	}
	checkSet(t, tb, model, absent)
	c := tb.clone()
	checkSet(t, c, model, absent)
}

// The size ladder doubles but for two halfway steps: three quarters of a
// segment instead of one segment, and three segments between two and
// four; every step past one segment is a whole number of segments, and a
// set that grows from full keeps room for what it held.
func TestRowSetSizeLadder(t *testing.T) {
	var got []int
	var flat []int
	for size := 16; size <= 64*segSlots; size = nextSize(size) {
		if size > segSlots {
			got = append(got, size/segSlots)
			if size%segSlots != 0 {
				t.Fatalf("size %d is not a whole number of segments", size)
			}
		} else if size&(size-1) != 0 {
			flat = append(flat, size)
		}
		next := nextSize(size)
		full := size / 2
		if size >= denseSlots || size == flatHalfStep {
			full = size * 3 / 4
		}
		if !roomFor(next, full+full/4) {
			t.Fatalf("growing from %d full slots (%d used) to %d leaves no room", size, full, next)
		}
	}
	if len(flat) != 1 || flat[0] != 3*segSlots/4 {
		t.Fatalf("flat sizes that are not powers of two: %v, want only %d", flat, 3*segSlots/4)
	}
	want := []int{2, 3, 4, 8, 16, 32, 64}
	if len(got) != len(want) {
		t.Fatalf("ladder in segments %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ladder in segments %v, want %v", got, want)
		}
	}
}
