package logic

import "encoding/binary"

// table stores the tuples of one relation side as dense rows of values
// (symbols are interned ids), with a hash set of rows for deduplication
// (rowSet) and hash indexes on the column sets rules look up by.
// Rows are never moved while an evaluation runs, so row numbers are stable
// handles; deleted rows are marked dead and skipped.
//
// A value takes as few bytes as every value the table ever held needs:
// two while they all fit in a signed 16-bit integer (small numbers, and
// the ids of a program's first 32,768 symbols), four while they fit in 32
// bits, eight otherwise. Each tier holds the low bytes of the next one's
// two's-complement encoding, so the first value that does not fit rewrites
// the whole table at the width it needs, once per tier at most (see widen).
type table struct {
	arity  int
	width  int      // bytes a value: 2, 4 or 8; only grows
	stride int      // bytes a row: arity*width
	chunks [][]byte // rows, rowsPerChunk to a chunk (the first grows up to that)
	n      int32
	round  rounds // round that (re)derived each row: a rank, see overDeleteRanked
	died   u32vec // off until the first update; epoch of death, 0 = alive
	ndead  int32
	// deadWalked counts the rows dead since an earlier update that
	// updates' lookups walked past in index chains since the table was
	// last compacted: the work its dead rows cost (see compactWalked).
	deadWalked int64
	set        rowSet   // every row (dead ones until they are unlinked), by value
	masks      []uint64 // column sets plans look up by
	idx        []*index // per mask, nil until first used
	// sl is where the table's first chunks come from, shared by the
	// tables of one materialization (nil: each its own allocation).
	sl *slab
}

// index maps the values of some columns to a chain of rows, newest first.
type index struct {
	mask  uint64
	cols  []int
	slots []int32 // head row+1 of the chain for one key, 0 empty
	used  int
	next  []int32 // per row: next row in its chain, -1 at the end
}

// indexOne is an index with room for its first slots, columns and chains:
// one allocation for an index few tables grow past. Each is capped at its
// room, so that growing moves it.
type indexOne struct {
	ix    index
	slots [16]int32
	cols  [4]int
	next  [16]int32
}

const hashSeed = 0x9E3779B97F4A7C15

func mix(h uint64, v int64) uint64 {
	h ^= uint64(v)
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 31
	return h
}

func newTable(arity int, masks []uint64) *table {
	return &table{arity: arity, width: 2, stride: 2 * arity, set: newRowSet(0), masks: masks, idx: make([]*index, len(masks))}
}

// index returns index k, building it on first use: an index some plan
// could use but no evaluation needs (say, one only incremental updates
// read) costs nothing until then.
func (t *table) index(k int) *index {
	if ix := t.idx[k]; ix != nil {
		return ix
	}
	m := t.masks[k]
	o := new(indexOne)
	ix := &o.ix
	ix.mask, ix.slots, ix.cols, ix.next = m, o.slots[:], o.cols[:0:len(o.cols)], o.next[:0:len(o.next)]
	for c := 0; c < t.arity; c++ {
		if m&(1<<c) != 0 {
			ix.cols = append(ix.cols, c)
		}
	}
	for r := int32(0); r < t.n; r++ {
		ix.add(t, r)
	}
	t.idx[k] = ix
	return ix
}

// Rows live in fixed-size chunks rather than one growing slice: growth
// never copies the table (which would briefly need twice its memory) and
// the garbage collector never sees one huge object.
const (
	chunkShift   = 16
	rowsPerChunk = 1 << chunkShift
	chunkMask    = rowsPerChunk - 1
)

// words returns the stored bytes of row r.
func (t *table) words(r int32) []byte {
	if t.stride == 0 {
		return nil // a relation without arguments stores no words
	}
	ch := t.chunks[r>>chunkShift]
	o := int(r&chunkMask) * t.stride
	return ch[o : o+t.stride : o+t.stride]
}

// val decodes column c of a row's bytes.
func (t *table) val(w []byte, c int) int64 {
	switch t.width {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(w[2*c:])))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(w[4*c:])))
	}
	return int64(binary.LittleEndian.Uint64(w[8*c:]))
}

// at returns column c of row r.
func (t *table) at(r int32, c int) int64 { return t.val(t.words(r), c) }

// load decodes row r into buf, which must hold arity values, and returns
// buf[:arity].
func (t *table) load(r int32, buf []int64) []int64 {
	buf = buf[:t.arity]
	if t.arity == 0 {
		return buf
	}
	w := t.words(r)
	switch t.width {
	case 2:
		for c := range buf {
			buf[c] = int64(int16(binary.LittleEndian.Uint16(w[2*c:])))
		}
	case 4:
		for c := range buf {
			buf[c] = int64(int32(binary.LittleEndian.Uint32(w[4*c:])))
		}
	default:
		for c := range buf {
			buf[c] = int64(binary.LittleEndian.Uint64(w[8*c:]))
		}
	}
	return buf
}

// tuple returns a fresh copy of row r's values.
func (t *table) tuple(r int32) []int64 { return t.load(r, make([]int64, t.arity)) }

// widthOf is the bytes value x needs: 2, 4 or 8.
func widthOf(x int64) int {
	switch {
	case x == int64(int16(x)):
		return 2
	case x == int64(int32(x)):
		return 4
	}
	return 8
}

// appendRow stores v as the next row.
func (t *table) appendRow(v []int64) {
	if t.arity == 0 {
		return
	}
	if t.width < 8 {
		// A value fits width w when it survives truncation to w bytes and
		// sign extension back: shifting left and back right by 64-8w bits.
		sh := uint(64 - 8*t.width)
		for _, x := range v {
			if x<<sh>>sh != x {
				t.widen(v)
				break
			}
		}
	}
	last := len(t.chunks) - 1
	if last < 0 || len(t.chunks[last]) == rowsPerChunk*t.stride {
		if last < 0 && cap(t.chunks) == 0 {
			t.chunks = t.sl.firstRows(64 * t.stride)
		} else {
			size := rowsPerChunk * t.stride
			if last < 0 {
				size = 64 * t.stride
			}
			t.chunks = append(t.chunks, make([]byte, 0, size))
		}
		last++
	}
	c := t.chunks[last]
	if len(c)+t.stride > cap(c) {
		nc := make([]byte, len(c), min(2*cap(c), rowsPerChunk*t.stride))
		copy(nc, c)
		c = nc
	}
	o := len(c)
	c = c[:o+t.stride]
	putRow(c[o:], t.width, v)
	t.chunks[last] = c
}

// putRow encodes v into w at width bytes a value.
func putRow(w []byte, width int, v []int64) {
	switch width {
	case 2:
		for i, x := range v {
			binary.LittleEndian.PutUint16(w[2*i:], uint16(x))
		}
	case 4:
		for i, x := range v {
			binary.LittleEndian.PutUint32(w[4*i:], uint32(x))
		}
	default:
		for i, x := range v {
			binary.LittleEndian.PutUint64(w[8*i:], uint64(x))
		}
	}
}

// widen rewrites the rows at the width the widest value of v (the row
// about to be appended) needs. It runs at most twice per table (2 → 4 → 8
// bytes, or once 2 → 8), one chunk at a time so that the old and the new
// copy of the whole table are never live together; row numbers, the hash
// set and the indexes stay valid because values are unchanged.
func (t *table) widen(v []int64) {
	to := t.width
	for _, x := range v {
		to = max(to, widthOf(x))
	}
	if to == t.width {
		return
	}
	from := &table{width: t.width}
	buf := make([]int64, t.arity)
	for i, ch := range t.chunks {
		rows := len(ch) / t.stride
		nc := make([]byte, rows*t.arity*to, cap(ch)/t.width*to)
		for r := range rows {
			w := ch[r*t.stride : (r+1)*t.stride]
			for c := range buf {
				buf[c] = from.val(w, c)
			}
			putRow(nc[r*t.arity*to:], to, buf)
		}
		t.chunks[i] = nc
	}
	t.width, t.stride = to, t.arity*to
}

// truncate drops the rows from n on.
func (t *table) truncate(n int32) {
	t.n = n
	if t.arity == 0 {
		return
	}
	k := int((n + chunkMask) >> chunkShift)
	t.chunks = t.chunks[:k]
	if k > 0 {
		t.chunks[k-1] = t.chunks[k-1][:int(n-int32(k-1)*rowsPerChunk)*t.stride]
	}
}

func (t *table) alive(r int32) bool { return !t.died.on() || t.died.get(r) == 0 }

func hashTuple(v []int64) uint64 {
	h := uint64(hashSeed)
	for _, x := range v {
		h = mix(h, x)
	}
	return fmix(h)
}

// fmix is the murmur3 finalizer: it spreads every input bit over the low
// bits that select a slot.
func fmix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// hashRow is hashTuple of row r's values.
func (t *table) hashRow(r int32) uint64 {
	h := uint64(hashSeed)
	if t.arity == 0 {
		return fmix(h)
	}
	w := t.words(r)
	for c := range t.arity {
		h = mix(h, t.val(w, c))
	}
	return fmix(h)
}

func (t *table) equalRow(r int32, v []int64) bool {
	if t.arity == 0 {
		return true
	}
	w := t.words(r)
	switch t.width {
	case 2:
		for i, x := range v {
			if int64(int16(binary.LittleEndian.Uint16(w[2*i:]))) != x {
				return false
			}
		}
		return true
	case 4:
		for i, x := range v {
			if int64(int32(binary.LittleEndian.Uint32(w[4*i:]))) != x {
				return false
			}
		}
		return true
	}
	for i, x := range v {
		if int64(binary.LittleEndian.Uint64(w[8*i:])) != x {
			return false
		}
	}
	return true
}

// find returns the row holding tuple v in the hash set, or -1. The row may
// be dead if it died in the current update (dead rows stay in the set until
// the update finishes).
func (t *table) find(v []int64) int32 { return t.set.find(t, hashTuple(v), v) }

// insert adds tuple v unless present; it returns the row and whether it
// was added. A present row is returned as is (even if dead).
func (t *table) insert(v []int64, round uint32) (int32, bool) {
	return t.insertHashed(v, hashTuple(v), round)
}

// insertHashed is insert of tuple v whose hash is h.
func (t *table) insertHashed(v []int64, h uint64, round uint32) (int32, bool) {
	// Probe first: most derivations of a large closure find their tuple,
	// and only a new row can make the set grow.
	old, at := t.set.probe(t, h, v)
	if old >= 0 {
		return old, false
	}
	if widened := t.set.fitRows(t.n + 1); widened || t.set.full() {
		if t.set.full() {
			t.set.grow(t)
		}
		_, at = t.set.probe(t, h, v)
	}
	r := t.n
	t.n++
	t.appendRow(v)
	t.set.put(at, r, h)
	t.round.pushIn(t.sl, r, round)
	if t.died.on() {
		t.died.pushIn(t.sl, 0)
	}
	for _, ix := range t.idx {
		if ix != nil {
			ix.add(t, r)
		}
	}
	return r, true
}

// unlink removes row r from the hash set (after it died for good).
func (t *table) unlink(r int32) { t.set.unlink(r, t.hashRow(r)) }

func (ix *index) keyHash(t *table, r int32) uint64 {
	h := uint64(hashSeed)
	w := t.words(r)
	for _, c := range ix.cols {
		h = mix(h, t.val(w, c))
	}
	return fmix(h)
}

func (ix *index) add(t *table, r int32) {
	if (ix.used+1)*2 >= len(ix.slots) {
		ix.grow(t)
	}
	ix.next = append(ix.next, -1)
	mask := uint64(len(ix.slots) - 1)
	row := t.words(r)
	for i := ix.keyHash(t, r) & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 {
			ix.slots[i] = r + 1
			ix.used++
			return
		}
		head := t.words(s - 1)
		same := true
		for _, c := range ix.cols {
			if t.val(head, c) != t.val(row, c) {
				same = false
				break
			}
		}
		if same {
			ix.next[r] = s - 1
			ix.slots[i] = r + 1
			return
		}
	}
}

func (ix *index) grow(t *table) {
	old := ix.slots
	ix.slots = make([]int32, len(old)*2)
	mask := uint64(len(ix.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := ix.keyHash(t, s-1) & mask
		for ix.slots[i] != 0 {
			i = (i + 1) & mask
		}
		ix.slots[i] = s
	}
}

// lookup returns the newest row whose indexed columns equal key, or -1;
// follow ix.next for older rows.
func (ix *index) lookup(t *table, key []int64) int32 {
	h := uint64(hashSeed)
	for _, x := range key {
		h = mix(h, x)
	}
	h = fmix(h)
	mask := uint64(len(ix.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 {
			return -1
		}
		head := t.words(s - 1)
		same := true
		for k, c := range ix.cols {
			if t.val(head, c) != key[k] {
				same = false
				break
			}
		}
		if same {
			return s - 1
		}
	}
}

// clone deep-copies the table.
func (t *table) clone() *table {
	u := new(table)
	t.cloneInto(u, make([]*index, len(t.idx)), nil, nil)
	return u
}

// cloneInto deep-copies the table into u, with idx (of the table's length)
// as its index list and flat, when the table's set is one array of that
// length, as the set's slots. The copy's first chunks, and those it makes
// later, come from sl: never from t's slab, which t's own materialization
// may be carving from at the same time.
func (t *table) cloneInto(u *table, idx []*index, flat []uint32, sl *slab) {
	*u = *t
	u.sl = sl
	if len(t.chunks) == 1 && cap(t.chunks[0]) <= slabMaxChunk {
		// A table's only chunk, small enough, from the clone's slab
		// as a first chunk would be, with the same capacity.
		u.chunks = sl.firstRows(cap(t.chunks[0]))
		u.chunks[0] = append(u.chunks[0], t.chunks[0]...)
	} else {
		u.chunks = make([][]byte, len(t.chunks))
		for i, c := range t.chunks {
			u.chunks[i] = append(make([]byte, 0, cap(c)), c...)
		}
	}
	u.round = t.round.cloneIn(sl)
	u.died = t.died.cloneIn(sl)
	u.set = t.set.cloneInto(flat)
	u.idx = idx
	for i, ix := range t.idx {
		if ix == nil {
			continue
		}
		v := *ix
		v.cols = append([]int(nil), ix.cols...)
		v.slots = append([]int32(nil), ix.slots...)
		v.next = append([]int32(nil), ix.next...)
		u.idx[i] = &v
	}
}

// liveRows counts rows that are alive.
func (t *table) liveRows() int { return int(t.n - t.ndead) }

// rounds is the per-row round column. A from-scratch evaluation appends
// each table's rows in nondecreasing round order, so until the first
// update changes a row's round it is kept as runs of equal rounds: a few
// entries per table instead of 4 bytes a row, which a one-shot evaluation
// never expands.
type rounds struct {
	runs []roundRun // while vec is off, sorted by first row
	vec  u32vec
}

// roundRun says that rows from first on, up to the next run, have round.
type roundRun struct {
	first int32
	round uint32
}

func (v *rounds) get(r int32) uint32 {
	if v.vec.on() {
		return v.vec.get(r)
	}
	// the last run starting at or before r
	lo, hi := 0, len(v.runs)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if v.runs[mid].first <= r {
			lo = mid
		} else {
			hi = mid
		}
	}
	return v.runs[lo].round
}

// set changes row r's round; the column must have been expanded.
func (v *rounds) set(r int32, x uint32) { v.vec.set(r, x) }

// push records round x for row r, the row just appended.
func (v *rounds) push(r int32, x uint32) { v.pushIn(nil, r, x) }

// pushIn is push with a first chunk from sl.
func (v *rounds) pushIn(sl *slab, r int32, x uint32) {
	if !v.vec.on() {
		last := len(v.runs) - 1
		if last >= 0 && v.runs[last].round == x {
			return
		}
		if last < 0 || v.runs[last].round < x {
			v.runs = append(v.runs, roundRun{r, x})
			return
		}
		v.expandIn(sl, r) // a smaller round than the last: runs cannot say it
	}
	v.vec.pushIn(sl, x)
}

// expand turns the runs of the first n rows into a per-row column, which
// updates set row by row.
func (v *rounds) expand(n int32) { v.expandIn(nil, n) }

// expandIn is expand with a first chunk from sl.
func (v *rounds) expandIn(sl *slab, n int32) {
	if v.vec.on() {
		return
	}
	v.vec = zeroedIn(sl, n)
	for i, run := range v.runs {
		end := n
		if i+1 < len(v.runs) {
			end = min(n, v.runs[i+1].first)
		}
		for r := run.first; r < end; r++ {
			v.vec.set(r, run.round)
		}
	}
	v.runs = nil
}

func (v *rounds) truncate(n int32) {
	if v.vec.on() {
		v.vec.truncate(n)
		return
	}
	for len(v.runs) > 0 && v.runs[len(v.runs)-1].first >= n {
		v.runs = v.runs[:len(v.runs)-1]
	}
}

func (v rounds) clone() rounds { return v.cloneIn(nil) }

// cloneIn is clone with a first chunk from sl.
func (v rounds) cloneIn(sl *slab) rounds {
	return rounds{runs: append([]roundRun(nil), v.runs...), vec: v.vec.cloneIn(sl)}
}

// u32vec is a per-row uint32 column stored in chunks like the rows.
type u32vec struct {
	chunks [][]uint32
}

// on reports whether the column was ever allocated.
func (v *u32vec) on() bool { return v.chunks != nil }

func (v *u32vec) get(r int32) uint32 { return v.chunks[r>>chunkShift][r&chunkMask] }

func (v *u32vec) set(r int32, x uint32) { v.chunks[r>>chunkShift][r&chunkMask] = x }

func (v *u32vec) push(x uint32) { v.pushIn(nil, x) }

// pushIn is push with a first chunk from sl.
func (v *u32vec) pushIn(sl *slab, x uint32) {
	last := len(v.chunks) - 1
	if last < 0 || len(v.chunks[last]) == rowsPerChunk {
		if last < 0 && cap(v.chunks) == 0 {
			v.chunks = sl.firstColumn(0)
		} else {
			size := rowsPerChunk
			if last < 0 {
				size = firstChunkCap
			}
			v.chunks = append(v.chunks, make([]uint32, 0, size))
		}
		last++
	}
	c := v.chunks[last]
	if len(c) == cap(c) {
		nc := make([]uint32, len(c), min(2*cap(c), rowsPerChunk))
		copy(nc, c)
		c = nc
	}
	v.chunks[last] = append(c, x)
}

// zeroed returns a column of n zeros.
func zeroed(n int32) u32vec { return zeroedIn(nil, n) }

// zeroedIn is zeroed with a first chunk from sl.
func zeroedIn(sl *slab, n int32) u32vec {
	if n <= firstChunkCap {
		if n == 0 {
			return u32vec{chunks: [][]uint32{}}
		}
		return u32vec{chunks: sl.firstColumn(int(n))}
	}
	v := u32vec{chunks: [][]uint32{}}
	for n > 0 {
		k := min(n, rowsPerChunk)
		v.chunks = append(v.chunks, make([]uint32, k, max(k, 64)))
		n -= k
	}
	return v
}

func (v *u32vec) truncate(n int32) {
	if v.chunks == nil {
		return
	}
	k := int((n + chunkMask) >> chunkShift)
	v.chunks = v.chunks[:k]
	if k > 0 {
		v.chunks[k-1] = v.chunks[k-1][:int(n-int32(k-1)*rowsPerChunk)]
	}
}

func (v u32vec) clone() u32vec { return v.cloneIn(nil) }

// cloneIn is clone with a first chunk from sl.
func (v u32vec) cloneIn(sl *slab) u32vec {
	if v.chunks == nil {
		return v
	}
	if len(v.chunks) == 1 && cap(v.chunks[0]) <= firstChunkCap {
		u := u32vec{chunks: sl.firstColumn(len(v.chunks[0]))}
		copy(u.chunks[0], v.chunks[0])
		return u
	}
	u := u32vec{chunks: make([][]uint32, len(v.chunks))}
	for i, c := range v.chunks {
		u.chunks[i] = append(make([]uint32, 0, cap(c)), c...)
	}
	return u
}

// firstChunkCap is the capacity of a column's first chunk.
const firstChunkCap = 64

// chunkOne is a column's chunk list with its first chunk's storage: most
// columns never pass one small chunk, and one allocation for both is
// cheaper than one for each.
type chunkOne struct {
	list [1][]uint32
	data [firstChunkCap]uint32
}

// firstChunk returns a chunk list holding one chunk of length n (at most
// firstChunkCap) and capacity firstChunkCap, in one allocation. The list
// is capped at its length: a second chunk moves it, and a chunk that grows
// is replaced in it.
func firstChunk(n int) [][]uint32 {
	c := new(chunkOne)
	c.list[0] = c.data[:n]
	return c.list[:1:1]
}

// slab hands out the first chunks of a materialization's tables — the
// rows' chunk list and first chunk, the round and death columns' first
// chunks — from arrays shared by all its tables: an update that gives a
// handful of empty tables their first rows made four allocations each.
// Every piece is capped at its own length and capacity, so an append
// past it moves it (as a chunk that outgrows its first capacity already
// is moved) and never reaches a neighbour. A slab belongs to one
// materialization: Clone gives the copy its own, since the original may
// be carving from its slab at the same time. A nil slab allocates every
// piece on its own.
type slab struct {
	cols  []chunkOne // first column chunks, with their lists, not yet handed out
	lists [][]byte   // rows' chunk lists, one entry each
	bytes []byte     // rows' first chunks
}

// How many pieces one allocation of a slab holds, and the largest rows'
// first chunk carved from it (a larger one is made on its own).
const (
	slabCols     = 8
	slabLists    = 16
	slabBytes    = 1024
	slabMaxChunk = 512
)

// firstColumn is firstChunk(n) from the slab.
func (s *slab) firstColumn(n int) [][]uint32 {
	if s == nil {
		return firstChunk(n)
	}
	if len(s.cols) == 0 {
		s.cols = make([]chunkOne, slabCols)
	}
	c := &s.cols[0]
	s.cols = s.cols[1:]
	c.list[0] = c.data[:n:firstChunkCap]
	return c.list[:1:1]
}

// firstRows returns a rows' chunk list of length 1 and capacity 1 whose
// chunk is empty with capacity size.
func (s *slab) firstRows(size int) [][]byte {
	if s == nil {
		return [][]byte{make([]byte, 0, size)}
	}
	if len(s.lists) == 0 {
		s.lists = make([][]byte, slabLists)
	}
	list := s.lists[:1:1]
	s.lists = s.lists[1:]
	if size > slabMaxChunk {
		list[0] = make([]byte, 0, size)
		return list
	}
	if len(s.bytes) < size {
		s.bytes = make([]byte, slabBytes)
	}
	list[0] = s.bytes[:0:size]
	s.bytes = s.bytes[size:]
	return list
}
