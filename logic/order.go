package logic

import (
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
// symbol's rank), last column first, one byte per pass. Every byte that is
// the same in all rows is skipped, so small values cost few passes. Tuples
// are distinct, so the order is total and equals the comparison order.
func (m *Materialization) radixSortRows(tb *table, types []Type, rows []int32) []int32 {
	var ranks []uint64
	key := func(c int, v int64) uint64 {
		if types[c] == TypeSymbol {
			return ranks[v]
		}
		return uint64(v) ^ 1<<63
	}
	for _, ty := range types {
		if ty == TypeSymbol {
			ranks = m.symbolRanks()
			break
		}
	}
	tmp := make([]int32, len(rows))
	var hist [8][256]int
	for c := tb.arity - 1; c >= 0; c-- {
		hist = [8][256]int{}
		for _, r := range rows {
			k := key(c, tb.row(r)[c])
			for b := range 8 {
				hist[b][byte(k>>(8*b))]++
			}
		}
		for b := range 8 {
			h := &hist[b]
			if h[byte(key(c, tb.row(rows[0])[c])>>(8*b))] == len(rows) {
				continue // every row has this byte
			}
			pos := 0
			for i, n := range h {
				h[i] = pos
				pos += n
			}
			shift := 8 * uint(b)
			for _, r := range rows {
				d := byte(key(c, tb.row(r)[c]) >> shift)
				tmp[h[d]] = r
				h[d]++
			}
			rows, tmp = tmp, rows
		}
	}
	return rows
}
