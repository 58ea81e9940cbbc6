package logic

// Footprint is the bytes the materialization's relation storage takes, as
// [Limits.MaxBytes] counts it: each table's rows at their current value
// width, its hash-set slots, the slots and chains of the indexes built so
// far, and the round and death columns. It is computed from sizes alone,
// never from the Go runtime, so it is the same on every run. Rows count
// as stored, not as reserved: the chunk being filled reserves up to twice
// its rows, and a rolled-back update keeps that room, but counting it
// would leave a materialization over its budget after an update that
// failed and changed nothing. Interned symbols, base-support counts and
// the garbage of past growth are not in it.
func (m *Materialization) Footprint() int64 {
	var b int64
	for _, t := range m.tables {
		b += t.footprint()
	}
	return b
}

func (t *table) footprint() int64 {
	var b int64
	for _, c := range t.chunks {
		b += int64(len(c))
	}
	b += 4 * int64(t.set.slots())
	for _, ix := range t.idx {
		if ix != nil {
			b += 4 * int64(len(ix.slots)+len(ix.next))
		}
	}
	b += 8*int64(len(t.round.runs)) + t.round.vec.bytes() + t.died.bytes()
	return b
}

// slots is the number of slots the set holds allocated.
func (s *rowSet) slots() int {
	return len(s.flat) + len(s.segs)*segSlots
}

// bytes is the storage the column's entries take.
func (v *u32vec) bytes() int64 {
	var b int64
	for _, c := range v.chunks {
		b += 4 * int64(len(c))
	}
	return b
}
