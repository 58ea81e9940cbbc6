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
		wa, wb := tb.words(a), tb.words(b)
		for i := range tb.arity {
			va, vb := tb.val(wa, i), tb.val(wb, i)
			if va == vb {
				continue
			}
			if types[i] == TypeSymbol {
				return strings.Compare(m.syms[va], m.syms[vb])
			}
			if va < vb {
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

// radixSortRows orders rows in place by a most-significant-digit radix
// sort (American flag sort) on order-preserving 64-bit keys: a number with
// its sign bit flipped, a symbol's rank. Each column is sorted on its key
// minus the column's smallest key, 16 bits at a time, so a column whose
// values span fewer than 65,536 costs one pass, and a column with one value
// none. Sorting in place needs no second row buffer: on a large relation
// the output's sort is the peak of a whole run's memory. Tuples are
// distinct, so the order is total and equals the comparison order.
func (m *Materialization) radixSortRows(tb *table, types []Type, rows []int32) []int32 {
	s := &flagSort{tb: tb, types: types, lo: make([]uint64, tb.arity), width: make([]int, tb.arity)}
	for _, ty := range types {
		if ty == TypeSymbol {
			s.ranks = m.symbolRanks()
			break
		}
	}
	for c := range tb.arity {
		lo, hi := ^uint64(0), uint64(0)
		for r := int32(0); r < tb.n; r++ {
			if tb.alive(r) {
				k := s.key(r, c)
				lo, hi = min(lo, k), max(hi, k)
			}
		}
		s.lo[c], s.width[c] = lo, bits.Len64(hi-lo)
	}
	s.sort(rows, make([]uint16, len(rows)), 0, s.width[0], 0)
	return rows
}

// flagSortSmall is the bucket size below which flagSort compares instead.
const flagSortSmall = 48

type flagSort struct {
	tb      *table
	types   []Type
	ranks   []uint64
	lo      []uint64
	width   []int
	scratch [][]int // per recursion depth: counts, then bucket ends
}

func (s *flagSort) key(r int32, c int) uint64 {
	v := s.tb.at(r, c)
	if s.types[c] == TypeSymbol {
		return s.ranks[v]
	}
	return uint64(v) ^ 1<<63
}

// sort orders rows whose columns before c are equal and whose column c
// agrees on the bits above top (of the key minus the column's minimum).
// digs is scratch of len(rows) for each row's current digit, so that
// permuting never reads row data.
func (s *flagSort) sort(rows []int32, digs []uint16, c, top, depth int) {
	for c < s.tb.arity && top <= 0 {
		c++
		if c < s.tb.arity {
			top = s.width[c]
		}
	}
	if c >= s.tb.arity || len(rows) < 2 {
		return
	}
	if len(rows) < flagSortSmall && c == s.tb.arity-1 {
		// The last column: an insertion sort on keys read once.
		var keys [flagSortSmall]uint64
		for i, r := range rows {
			keys[i] = s.key(r, c)
		}
		for i := 1; i < len(rows); i++ {
			k, r := keys[i], rows[i]
			j := i
			for ; j > 0 && keys[j-1] > k; j-- {
				keys[j], rows[j] = keys[j-1], rows[j-1]
			}
			keys[j], rows[j] = k, r
		}
		return
	}
	if len(rows) < flagSortSmall {
		slices.SortFunc(rows, func(a, b int32) int {
			for i := c; i < s.tb.arity; i++ {
				if ka, kb := s.key(a, i), s.key(b, i); ka != kb {
					if ka < kb {
						return -1
					}
					return 1
				}
			}
			return 0
		})
		return
	}
	shift := max(0, top-16)
	nb := 1 << (top - shift)
	mask := uint64(nb - 1)
	lo := s.lo[c]
	for len(s.scratch) <= depth {
		s.scratch = append(s.scratch, nil)
	}
	if cap(s.scratch[depth]) < 2*nb {
		s.scratch[depth] = make([]int, 2*nb)
	}
	next, end := s.scratch[depth][:nb], s.scratch[depth][nb:2*nb]
	clear(next)
	for i, r := range rows {
		d := (s.key(r, c) - lo) >> shift & mask
		digs[i] = uint16(d)
		next[d]++
	}
	pos := 0
	for b, n := range next {
		next[b] = pos
		pos += n
		end[b] = pos
	}
	for b := range nb {
		for next[b] < end[b] {
			i := next[b]
			d := int(digs[i])
			if d == b {
				next[b]++
				continue
			}
			j := next[d]
			rows[i], rows[j] = rows[j], rows[i]
			digs[i], digs[j] = digs[j], digs[i]
			next[d]++
		}
	}
	// next[b] == end[b] now; recursing reuses this depth's scratch below.
	start := 0
	for b := range nb {
		stop := s.scratch[depth][nb+b]
		if stop-start > 1 {
			s.sort(rows[start:stop], digs[start:stop], c, shift, depth+1)
		}
		start = stop
	}
}
