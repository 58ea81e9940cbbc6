package logic

import (
	"math/bits"
	"slices"
	"strings"
)

// radixMin is the row count from which sortedRows sorts by radix instead
// of by comparison: below it the histograms cost more than they save.
const radixMin = 1 << 12

// sortedRows returns the live rows of a table in value order: numbers
// numerically, symbols bytewise, column by column.
func (m *Materialization) sortedRows(t int) []int32 {
	tb := m.tables[t]
	types := m.c.rels[t/2].types
	rows := make([]int32, 0, tb.liveRows())
	for r := int32(0); r < tb.n; r++ {
		if tb.alive(r) {
			rows = append(rows, r)
		}
	}
	if len(rows) >= radixMin && tb.arity > 0 {
		return m.radixSortRows(tb, types, rows)
	}
	slices.SortFunc(rows, func(a, b int32) int {
		ra, rb := tb.row(a), tb.row(b)
		for i := range ra {
			if ra[i] == rb[i] {
				continue
			}
			if types[i] == TypeSymbol {
				return strings.Compare(m.syms[ra[i]], m.syms[rb[i]])
			}
			if ra[i] < rb[i] {
				return -1
			}
			return 1
		}
		return 0
	})
	return rows
}

// symbolRanks maps every symbol id to its rank in bytewise order; equal
// strings share a rank.
func (m *Materialization) symbolRanks() []uint64 {
	ids := make([]int32, len(m.syms))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(m.syms[a], m.syms[b]) })
	rank := make([]uint64, len(m.syms))
	var k uint64
	for i, id := range ids {
		if i > 0 && m.syms[id] != m.syms[ids[i-1]] {
			k++
		}
		rank[id] = k
	}
	return rank
}

// radixSortRows orders rows by a least-significant-digit radix sort on
// order-preserving 64-bit keys (a number with its sign bit flipped, a
// symbol's rank), last column first. Each column is sorted on its key
// minus the column's smallest key, 16 bits per pass, so a column whose
// values span fewer than 65,536 costs one pass. Counting reads the rows in
// storage order; only the scatter follows the permutation. Tuples are
// distinct, so the order is total and equals the comparison order.
func (m *Materialization) radixSortRows(tb *table, types []Type, rows []int32) []int32 {
	var ranks []uint64
	for _, ty := range types {
		if ty == TypeSymbol {
			ranks = m.symbolRanks()
			break
		}
	}
	tmp := make([]int32, len(rows))
	var hist []int
	for c := tb.arity - 1; c >= 0; c-- {
		sym := types[c] == TypeSymbol
		key := func(r int32) uint64 {
			v := tb.row(r)[c]
			if sym {
				return ranks[v]
			}
			return uint64(v) ^ 1<<63
		}
		lo, hi := ^uint64(0), uint64(0)
		for r := int32(0); r < tb.n; r++ {
			if tb.alive(r) {
				k := key(r)
				lo, hi = min(lo, k), max(hi, k)
			}
		}
		width := bits.Len64(hi - lo)
		for shift := 0; shift < width; shift += 16 {
			buckets := 1 << min(16, width-shift)
			if cap(hist) < buckets {
				hist = make([]int, buckets)
			}
			h := hist[:buckets]
			clear(h)
			mask := uint64(buckets - 1)
			for r := int32(0); r < tb.n; r++ {
				if tb.alive(r) {
					h[(key(r)-lo)>>shift&mask]++
				}
			}
			pos := 0
			for i, n := range h {
				h[i] = pos
				pos += n
			}
			for _, r := range rows {
				d := (key(r) - lo) >> shift & mask
				tmp[h[d]] = r
				h[d]++
			}
			rows, tmp = tmp, rows
		}
	}
	return rows
}
