package logic

// rowSet is a table's hash set of rows, for deduplication and for finding a
// tuple's row: open addressing with linear probing over one array of
// 32-bit slots.
//
// A slot holds row+1 in its low rowBits bits and, above them, the same bits
// of the tuple's hash as a fingerprint that spares most probes a look at
// the row. One word a slot, where a row word and a separate fingerprint
// byte took five bytes, makes the set a fifth smaller, and a probe reads
// one array instead of two. rowBits grows with the table so that a row
// number always fits, giving up one fingerprint bit each time the row count
// doubles past 1<<rowBits (a set of 2M rows keeps 10 bits, of 25M rows 7).
// 0 is an empty slot; a slot with row bits 0 and any bit above them set is
// a tombstone.
//
// Up to segSlots the slots are one array; past that, segments of segSlots,
// so that growing from the rows (which never reads the old slots) clears
// and keeps the slots it has and allocates only the new half. With one
// array the old one, unread but not yet collected, sat beside the new one
// at every growth: half the new set again at the peak of a large closure,
// of which the rows appended afterwards reused only part.
type rowSet struct {
	flat    []uint32            // the slots while there are at most segSlots
	segs    []*[segSlots]uint32 // the slots from then on: slot i is segs[i>>segShift][i&segMask]
	size    int                 // slots: a power of two up to segSlots, then a multiple of segSlots (see nextSize)
	used    int                 // occupied slots, tombstones included
	live    int
	rowBits uint8
	sink    uint32 // see warm
}

// A segment is 4 MB: the directory of the largest sets stays within a few
// cache lines, which every probe reads before its slot.
const (
	segShift = 20
	segSlots = 1 << segShift
	segMask  = segSlots - 1
)

func (s *rowSet) at(i uint64) uint32 {
	if s.segs != nil {
		return s.segs[i>>segShift][i&segMask]
	}
	return s.flat[i]
}

// slot returns slot i for writing.
func (s *rowSet) slot(i uint64) *uint32 {
	if s.segs != nil {
		return &s.segs[i>>segShift][i&segMask]
	}
	return &s.flat[i]
}

// parts returns the slots as slices, in order.
func (s *rowSet) parts() [][]uint32 {
	if s.segs == nil {
		return [][]uint32{s.flat}
	}
	out := make([][]uint32, len(s.segs))
	for i, seg := range s.segs {
		out[i] = seg[:]
	}
	return out
}

// alloc gives the set size empty slots. keep says whether the slots it has
// may be cleared and reused (nothing will read them again); otherwise the
// caller holds on to them if it still needs them.
func (s *rowSet) alloc(size int, keep bool) {
	if size <= segSlots {
		s.flat, s.segs = nil, nil // unreachable before the allocation below can collect
		s.flat = make([]uint32, size)
		s.size = size
		return
	}
	if !keep {
		s.flat, s.segs = nil, nil
	}
	if len(s.flat) == segSlots {
		s.segs = []*[segSlots]uint32{(*[segSlots]uint32)(s.flat)}
	}
	s.flat = nil
	for _, seg := range s.segs {
		clear(seg[:])
	}
	for len(s.segs)*segSlots < size {
		s.segs = append(s.segs, new([segSlots]uint32))
	}
	s.size = size
}

const (
	minRowBits = 16
	maxRowBits = 31
	// denseSlots is the size from which the set fills to three quarters
	// instead of half: the halfway step (see nextSize).
	denseSlots = halfStep
)

// nextSize is the size a set of size slots grows to: the next power of
// two, but for one halfway step, 2M → 3M → 4M slots. A set of 1.05 M to
// 2.36 M rows (the 2,000-node chain's closure has 2.0 M) then takes 12 MB
// of slots instead of 16 MB. Segments make the step free of any transient
// (growth from the rows keeps the slots it has and allocates only the new
// one); its price is one more growth, rehashing the rows, for the tables
// that pass 2.36 M rows. Halfway steps at every size from there on (6M,
// 12M, 24M, ...) cost the 24.7 M-row random graph a tenth more CPU,
// rehashing rows twice as often and probing fuller sets, so larger sets
// keep doubling.
func nextSize(size int) int {
	switch size {
	case 2 * segSlots:
		return halfStep
	case segSlots / 2:
		return flatHalfStep
	case flatHalfStep:
		return 2 * segSlots
	}
	return size + size&-size // 3M → 4M, and doubling
}

// halfStep and flatHalfStep are the sizes that are not powers of two.
// flatHalfStep, three quarters of a segment filled to three quarters,
// takes the place of one whole segment filled to half: it holds up to
// 576 K rows in 3 MB of slots, where a segment held 512 K in 4 MB, and
// tables of 512 K to 576 K rows no longer take two segments (8 MB). The
// 20,000-node tree's same-generation relation (519 K rows) is one of them.
// A full flatHalfStep grows straight to two segments, which hold it at
// half, as a full segment did.
const (
	halfStep     = 3 * segSlots
	flatHalfStep = 3 * segSlots / 4
)

// home is the first slot of hash h's probe sequence: the low 32 bits of h
// scaled to the size by a multiply (the size need not be a power of two).
// The fingerprint takes hash bits from 32 up, so the two stay independent.
func (s *rowSet) home(h uint64) uint64 {
	return uint64(uint32(h)) * uint64(s.size) >> 32
}

// next is the slot after slot i, wrapping at the end.
func (s *rowSet) next(i uint64) uint64 {
	i++
	if i == uint64(s.size) {
		i = 0
	}
	return i
}

// newRowSet returns an empty set for a table of n rows.
func newRowSet(n int32) rowSet {
	s := rowSet{rowBits: minRowBits}
	s.alloc(16, false)
	s.fitRows(n)
	return s
}

// fitRows widens the row bits until row n-1 (and so row+1 = n) fits, taking
// the lowest fingerprint bit of every slot: the fingerprint is a slot's
// hash bits above rowBits, so clearing bit rowBits is all it takes.
// Tombstones keep a bit above it set. It reports whether it widened (a
// fingerprint computed before is then stale).
func (s *rowSet) fitRows(n int32) (widened bool) {
	if s.rowBits >= maxRowBits || uint64(n)+1 < 1<<s.rowBits {
		return false // the common case, kept small enough to inline
	}
	return s.widenRows(n)
}

func (s *rowSet) widenRows(n int32) (widened bool) {
	for s.rowBits < maxRowBits && uint64(n)+1 >= 1<<s.rowBits {
		bit := uint32(1) << s.rowBits
		for _, seg := range s.parts() {
			for i, x := range seg {
				seg[i] = x &^ bit
			}
		}
		s.rowBits++
		widened = true
	}
	return widened
}

func (s *rowSet) rowMask() uint32 { return 1<<s.rowBits - 1 }

// tomb is a tombstone: no row, fingerprint bits all set.
func (s *rowSet) tomb() uint32 { return ^s.rowMask() }

// fingerprint is a slot's high bits for hash h: hash bits well away from
// the low ones that choose the slot.
func (s *rowSet) fingerprint(h uint64) uint32 { return uint32(h>>16) &^ s.rowMask() }

// find returns the row holding tuple v, whose hash is h, or -1.
func (s *rowSet) find(t *table, h uint64, v []int64) int32 {
	rm := s.rowMask()
	fp := s.fingerprint(h)
	for i := s.home(h); ; i = s.next(i) {
		x := s.at(i)
		if x == 0 {
			return -1
		}
		if x&^rm == fp && x&rm != 0 && t.equalRow(int32(x&rm)-1, v) {
			return int32(x&rm) - 1
		}
	}
}

// probe looks for tuple v with hash h. It returns the row if present, else
// -1 and the slot where v would go (the first tombstone on its probe
// sequence, or the empty slot that ended it).
func (s *rowSet) probe(t *table, h uint64, v []int64) (int32, uint64) {
	rm := s.rowMask()
	fp := s.fingerprint(h)
	tomb := int64(-1)
	for i := s.home(h); ; i = s.next(i) {
		x := s.at(i)
		if x == 0 {
			if tomb >= 0 {
				return -1, uint64(tomb)
			}
			return -1, i
		}
		if x&rm == 0 {
			if tomb < 0 {
				tomb = int64(i)
			}
			continue
		}
		if x&^rm == fp && t.equalRow(int32(x&rm)-1, v) {
			return int32(x&rm) - 1, 0
		}
	}
}

// warm reads, without using them, the first slot of each of a block of
// hashes and (unless t is nil) the row its fingerprint points at, so that the probes that
// follow find them in the cache. The loads of one pass do not depend on
// each other, so the processor overlaps their misses, where a probe at a
// time waits for each miss in turn; their sum goes to sink only so that
// the compiler keeps them.
func (s *rowSet) warm(t *table, hs []uint64) {
	var acc uint32
	var xs [insertBatch]uint32
	hs = hs[:min(len(hs), insertBatch)]
	for k, h := range hs {
		x := s.at(s.home(h))
		xs[k] = x
		acc += x
	}
	if t != nil && t.stride > 0 {
		rm := s.rowMask()
		for k, h := range hs {
			x := xs[k]
			if x&rm != 0 && x&^rm == s.fingerprint(h) {
				if r := int32(x&rm) - 1; r < t.n {
					acc += uint32(t.chunks[r>>chunkShift][int(r&chunkMask)*t.stride])
				}
			}
		}
	}
	s.sink = acc
}

// full reports whether the set must grow before another insert.
func (s *rowSet) full() bool { return !roomFor(s.size, s.used+1) }

// roomFor reports whether a set of size slots may hold n used slots. Sets
// of up to two segments stay at most half full (short probes); larger
// ones may fill to three quarters, which keeps memory near Soufflé's for
// large closures while fingerprints keep long probes cheap.
func roomFor(size, n int) bool {
	if size >= denseSlots || size == flatHalfStep {
		return n*4 < size*3
	}
	return n*2 < size
}

// put records row r with hash h in slot at, where probe said its tuple
// would go (nothing changed the set since).
func (s *rowSet) put(at uint64, r int32, h uint64) {
	p := s.slot(at)
	if *p == 0 {
		s.used++
	}
	s.live++
	*p = s.fingerprint(h) | uint32(r+1)
}

// place adds row r with hash h, which the set does not hold yet.
func (s *rowSet) place(t *table, r int32, h uint64) {
	s.fitRows(r + 1)
	if s.full() {
		s.grow(t)
	}
	s.placeNew(r, h)
}

// placeNew puts row r into the first empty slot of its probe sequence; the
// set has room.
func (s *rowSet) placeNew(r int32, h uint64) {
	i := s.home(h)
	for s.at(i) != 0 {
		i = s.next(i)
	}
	*s.slot(i) = s.fingerprint(h) | uint32(r+1)
	s.used++
	s.live++
}

// grow rebuilds the set from its live rows at (at least) the next size,
// dropping tombstones, with room for a quarter more rows again.
func (s *rowSet) grow(t *table) {
	size := nextSize(s.size)
	for !roomFor(size, s.live+1+s.live/4) {
		size = nextSize(size)
	}
	if s.live == int(t.n) {
		// The set holds every row of the table (each at most once), as
		// it does throughout a from-scratch evaluation: take them in row
		// order, which reads the rows sequentially instead of one cache
		// miss a row, and place them a block at a time so that the misses
		// on the new slots overlap. The old slots are not read, so their
		// segments are cleared and kept (see alloc).
		s.alloc(size, true)
		s.used, s.live = 0, 0
		var hs [insertBatch]uint64
		for r0 := int32(0); r0 < t.n; r0 += insertBatch {
			b := hs[:min(insertBatch, t.n-r0)]
			for k := range b {
				b[k] = t.hashRow(r0 + int32(k))
			}
			s.warm(nil, b)
			for k, h := range b {
				s.placeNew(r0+int32(k), h)
			}
		}
		return
	}
	old := s.parts()
	s.alloc(size, false)
	s.used, s.live = 0, 0
	rm := s.rowMask()
	for _, seg := range old {
		for _, x := range seg {
			if x&rm == 0 {
				continue
			}
			r := int32(x&rm) - 1
			s.placeNew(r, t.hashRow(r))
		}
	}
}

// unlink removes row r, whose hash is h.
func (s *rowSet) unlink(r int32, h uint64) {
	rm := s.rowMask()
	for i := s.home(h); ; i = s.next(i) {
		x := s.at(i)
		if x == 0 {
			return
		}
		if x&rm == uint32(r+1) {
			*s.slot(i) = s.tomb()
			s.live--
			return
		}
	}
}

// cloneInto deep-copies the set, with flat, when it is not nil, as the
// copy's slots: it must have the length of s's one array.
func (s *rowSet) cloneInto(flat []uint32) rowSet {
	u := *s
	if flat != nil && s.segs == nil {
		u.flat = flat
		copy(u.flat, s.flat)
	} else {
		u.flat = append([]uint32(nil), s.flat...)
	}
	if s.segs != nil {
		u.segs = make([]*[segSlots]uint32, len(s.segs))
		for i, seg := range s.segs {
			c := *seg
			u.segs[i] = &c
		}
	}
	return u
}
