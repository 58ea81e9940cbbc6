package logic

import (
	"encoding/binary"
	"math"
	"slices"
)

// Change is one base-support operation: Diff +1 adds a base support for
// the signed fact, -1 removes one. A fact is a base fact while it has at
// least one base support.
type Change struct {
	Fact Fact
	Diff int
}

// undo records what an update changed, so a failed update can be rolled
// back and leave the materialization exactly as it was.
type undo struct {
	nsyms  int
	n      []int32
	died   []diedRec
	base   []baseRec
	round  uint32
	epoch  uint32
	live   int64
	ndead  []int32
	stats  Stats
	hadDie []int32 // per table: 1 if its death column was on before
}

type diedRec struct {
	t     int
	r     int32
	prev  uint32
	round uint32
}

type baseRec struct {
	t       int
	r       int32
	prev    int32
	existed bool
}

func (m *Materialization) setDied(t int, r int32, v uint32) {
	tb := m.tables[t]
	m.undo.died = append(m.undo.died, diedRec{t, r, tb.died.get(r), tb.round.get(r)})
	tb.died.set(r, v)
}

func (m *Materialization) setBase(t int, r int32, v int32) {
	prev, ok := m.base[t][r]
	m.undo.base = append(m.undo.base, baseRec{t, r, prev, ok})
	if v == 0 {
		delete(m.base[t], r)
	} else {
		if m.base[t] == nil {
			m.base[t] = map[int32]int32{} // Clone leaves an empty one out
		}
		m.base[t][r] = v
	}
}

func (m *Materialization) setRound(t int, r int32, v uint32) {
	tb := m.tables[t]
	m.undo.died = append(m.undo.died, diedRec{t, r, tb.died.get(r), tb.round.get(r)})
	tb.round.set(r, v)
}

// doomRow over-deletes a row that is alive.
func (m *Materialization) doomRow(t int, r int32) bool {
	tb := m.tables[t]
	if tb.died.get(r) != 0 {
		return false
	}
	m.setDied(t, r, m.epoch)
	tb.ndead++
	m.live--
	return true
}

// revive brings back a row over-deleted in the current update.
func (m *Materialization) revive(t int, r int32) {
	tb := m.tables[t]
	if tb.died.get(r) == 0 {
		return
	}
	m.setDied(t, r, 0)
	tb.ndead--
	tb.round.set(r, m.round)
	m.live++
}

func (x *exec) doom() bool {
	h := x.head[:len(x.r.hargs)]
	for k, e := range x.r.hargs {
		v, ok := x.eval(e)
		if !ok {
			return false
		}
		h[k] = v
	}
	t := x.m.tables[x.r.head]
	r := t.find(h)
	if r < 0 || r >= x.m.start[x.r.head] {
		return true
	}
	if x.candOnly {
		if t.died.get(r) == 0 {
			x.doomed = append(x.doomed, r)
		}
	} else if x.m.doomRow(x.r.head, r) {
		x.doomed = append(x.doomed, r)
	}
	return true
}

// Clone returns an independent deep copy of m.
func (m *Materialization) Clone() *Materialization {
	if m.consumed {
		return m // nothing left to copy; every query on it reports the consumption
	}
	// The copy and its own slab in one allocation (m may be carving from
	// its slab).
	both := &struct {
		m  Materialization
		sl slab
	}{m: *m}
	u, sl := &both.m, &both.sl
	// The symbols are only appended to or cut back to a length they had,
	// so the copy shares m's, capped: its first new symbol moves them.
	u.syms = m.syms[:len(m.syms):len(m.syms)]
	u.symID = make(map[string]int64, len(m.symID))
	for i, s := range u.syms {
		u.symID[s] = int64(i)
	}
	// The tables' headers, their index lists and their small slot arrays
	// each come from one allocation for all tables (a program has one
	// table per relation and sign, most of them small or empty).
	n := len(m.tables)
	u.tables = make([]*table, n)
	heads := make([]table, n)
	nidx, nflat := 0, 0
	for _, tb := range m.tables {
		nidx += len(tb.idx)
		if tb.set.segs == nil {
			nflat += len(tb.set.flat)
		}
	}
	idx := make([]*index, nidx)
	var flat []uint32
	if nflat <= cloneSharedSlots {
		flat = make([]uint32, nflat)
	}
	u.base = make([]map[int32]int32, n)
	for t, tb := range m.tables {
		k := len(tb.idx)
		var f []uint32
		if flat != nil && tb.set.segs == nil && len(tb.set.flat) > 0 {
			f = flat[:len(tb.set.flat):len(tb.set.flat)]
			flat = flat[len(tb.set.flat):]
		}
		tb.cloneInto(&heads[t], idx[:k:k], f, sl)
		idx = idx[k:]
		u.tables[t] = &heads[t]
		if len(m.base[t]) > 0 { // an empty one is made when first written (setBase)
			u.base[t] = make(map[int32]int32, len(m.base[t]))
			for r, c := range m.base[t] {
				u.base[t][r] = c
			}
		}
	}
	// An empty ledger is made when Solve first writes it.
	u.ledger, u.byFact = nil, nil
	if len(m.ledger) > 0 {
		u.ledger = make(map[string]ledgerEntry, len(m.ledger))
		for k, v := range m.ledger {
			u.ledger[k] = v
		}
	}
	if len(m.byFact) > 0 {
		u.byFact = make(map[string][]string, len(m.byFact))
		for k, v := range m.byFact {
			u.byFact[k] = slices.Clone(v)
		}
	}
	u.undo = nil
	u.start = nil
	u.spare = nil // an update's scratch is never shared
	return u
}

// CloneInto makes into what Clone would return, a deep copy of m, in
// into's own storage where it has room (its table headers, index lists,
// maps, first chunks and hash-set slots), and reports whether it did.
// into must be a materialization of m's program that its holder is done
// with: nothing reads it, updates it or clones it any more, and nothing
// it handed out points into its storage (what its queries return is
// copied out of it). It is then the copy, m unchanged; without a
// materialization of m's program, or while into is consumed or in an
// update, CloneInto changes nothing and returns false. Everything the
// copy computes is what the clone computes (decision 0319).
func (m *Materialization) CloneInto(into *Materialization) bool {
	if m.consumed || into == nil || into == m || into.consumed || into.c != m.c || into.undo != nil ||
		len(into.tables) != len(m.tables) || len(into.base) != len(m.base) {
		return false
	}
	tables, base, ledger, byFact, symID, spare := into.tables, into.base, into.ledger, into.byFact, into.symID, into.spare
	*into = *m
	into.syms = m.syms[:len(m.syms):len(m.syms)]
	clear(symID)
	if symID == nil {
		symID = make(map[string]int64, len(m.symID))
	}
	for i, s := range into.syms {
		symID[s] = int64(i)
	}
	into.symID = symID
	for t, tb := range m.tables {
		tb.cloneOver(tables[t])
		// An emptied map is kept (setBase makes one only when it is nil).
		clear(base[t])
		if base[t] == nil && len(m.base[t]) > 0 {
			base[t] = make(map[int32]int32, len(m.base[t]))
		}
		for r, c := range m.base[t] {
			base[t][r] = c
		}
	}
	into.tables, into.base = tables, base
	clear(ledger)
	clear(byFact)
	if ledger == nil && len(m.ledger) > 0 {
		ledger = make(map[string]ledgerEntry, len(m.ledger))
	}
	if byFact == nil && len(m.byFact) > 0 {
		byFact = make(map[string][]string, len(m.byFact))
	}
	into.ledger, into.byFact = ledger, byFact
	for k, v := range m.ledger {
		into.ledger[k] = v
	}
	for k, v := range m.byFact {
		into.byFact[k] = slices.Clone(v)
	}
	into.undo, into.start, into.spare = nil, nil, spare
	return true
}

// cloneOver makes u a deep copy of t, as cloneInto would, in u's own
// storage where it has room. u is a table of another materialization of
// the same program, which nothing reads any more; its slab stays its own.
func (t *table) cloneOver(u *table) {
	old := *u
	*u = *t
	u.sl = old.sl
	// The rows: the first chunk in u's first chunk when it holds as much
	// as t's would, and at most a full chunk (a first chunk's capacity
	// only ever decides when it moves).
	switch {
	case t.arity > 0 && len(t.chunks) <= 1 && len(old.chunks) > 0 && reusableChunk(old.chunks[0], t):
		c := append(old.chunks[0][:0], firstOf(t.chunks)...)
		u.chunks = append(old.chunks[:0], c)
	case len(t.chunks) == 0:
		u.chunks = nil
	case len(t.chunks) == 1 && cap(t.chunks[0]) <= slabMaxChunk:
		u.chunks = u.sl.firstRows(cap(t.chunks[0]))
		u.chunks[0] = append(u.chunks[0], t.chunks[0]...)
	default:
		u.chunks = make([][]byte, len(t.chunks))
		for i, c := range t.chunks {
			u.chunks[i] = append(make([]byte, 0, cap(c)), c...)
		}
	}
	u.round = rounds{runs: append(old.round.runs[:0], t.round.runs...), vec: t.round.vec.cloneOver(old.round.vec, u.sl)}
	if len(t.round.runs) == 0 {
		u.round.runs = nil
	}
	u.died = t.died.cloneOver(old.died, u.sl)
	if t.set.segs == nil && old.set.segs == nil && len(old.set.flat) >= len(t.set.flat) {
		u.set.flat = old.set.flat[:len(t.set.flat)]
		copy(u.set.flat, t.set.flat)
	} else {
		u.set = t.set.cloneInto(nil)
	}
	u.idx = old.idx
	if len(u.idx) != len(t.idx) {
		u.idx = make([]*index, len(t.idx))
	}
	for i, ix := range t.idx {
		if ix == nil {
			u.idx[i] = nil
			continue
		}
		v := u.idx[i]
		if v == nil {
			v = new(index)
		}
		*v = index{mask: ix.mask, cols: append(v.cols[:0], ix.cols...), slots: append(v.slots[:0], ix.slots...),
			used: ix.used, next: append(v.next[:0], ix.next...)}
		u.idx[i] = v
	}
}

// reusableChunk reports whether c, a first rows chunk of a table, has room
// for t's first chunk as a first chunk: as much as t's has, as much as
// appendRow gives a first chunk, and no more than a full chunk of t's.
func reusableChunk(c []byte, t *table) bool {
	need := 64 * t.stride
	if len(t.chunks) == 1 {
		need = max(need, cap(t.chunks[0]))
	}
	return cap(c) >= need && cap(c) <= rowsPerChunk*t.stride
}

// firstOf is a table's first chunk, or nil without one.
func firstOf(chunks [][]byte) []byte {
	if len(chunks) == 0 {
		return nil
	}
	return chunks[0]
}

// cloneOver is cloneIn into old's first chunk when v has at most one
// chunk and old's first has room for it.
func (v u32vec) cloneOver(old u32vec, sl *slab) u32vec {
	if v.chunks == nil {
		return v
	}
	if len(v.chunks) <= 1 && len(old.chunks) > 0 && cap(old.chunks[0]) >= firstChunkCap && cap(old.chunks[0]) <= rowsPerChunk {
		var first []uint32
		if len(v.chunks) == 1 {
			first = v.chunks[0]
		}
		return u32vec{chunks: append(old.chunks[:0], append(old.chunks[0][:0], first...))}
	}
	return v.cloneIn(sl)
}

// cloneSharedSlots bounds the slots Clone copies into one array shared by
// the tables' sets (each its own capped part of it; a set that grows
// allocates its own). Larger sets are copied each on its own, so that one
// grown table does not keep the others' old slots alive.
const cloneSharedSlots = 4096

// Apply updates the materialization with base-support changes in time
// proportional to the change: stratum by stratum, it deletes what lost
// its support (in recursive strata pruned by ranks, see
// overDeleteRanked), rederives what still has support, and propagates
// insertions semi-naively, including those a deletion below makes true
// through a negation. Changes are applied in order; a -1 on a fact without
// base support is an UNKNOWN_FACT error.
//
// Apply consumes m: on success the returned materialization owns m's
// storage and m answers every later call with MATERIALIZATION_CONSUMED
// (Clone first to keep it). On error m is left exactly as it was and
// nothing is returned.
func (m *Materialization) Apply(changes []Change) (*Materialization, error) {
	if err := m.update(changes); err != nil {
		return nil, err
	}
	next := new(Materialization)
	m.moveTo(next)
	return next, nil
}

// update is Apply's work on m itself: on error m is left exactly as it
// was.
func (m *Materialization) update(changes []Change) error {
	if m.consumed {
		return errConsumed()
	}
	if m.lim.MaxInputs > 0 && len(changes) > m.lim.MaxInputs {
		return errorf(InputBudgetExceeded, Pos{}, "%d changes exceed the input budget of %d", len(changes), m.lim.MaxInputs)
	}
	m.beginUndo()
	if err := m.apply(changes); err != nil {
		m.rollback()
		return err
	}
	m.finish()
	return nil
}

// moveTo hands m's storage to next, which Apply returns, and leaves m
// consumed.
func (m *Materialization) moveTo(next *Materialization) {
	*next = *m
	m.consumed = true
	m.tables, m.base, m.ledger, m.byFact, m.spare = nil, nil, nil, nil, nil
}

func (m *Materialization) beginUndo() {
	// The undo record and its lists are the scratch's, the lists emptied.
	s := m.scratch()
	u := &s.u
	*u = undo{nsyms: len(m.syms), round: m.round, epoch: m.epoch, live: m.live, stats: m.stats,
		died: u.died[:0], base: u.base[:0]}
	n := len(m.tables)
	if cap(s.counts) < 4*n {
		s.counts = make([]int32, 4*n) // one array for four per-table columns
	}
	counts := s.counts[:4*n]
	clear(counts)
	u.n, u.ndead, u.hadDie, m.start = counts[:n:n], counts[n:2*n:2*n], counts[2*n:3*n:3*n], counts[3*n:]
	for t, tb := range m.tables {
		u.n[t] = tb.n
		u.ndead[t] = tb.ndead
		if tb.died.on() {
			u.hadDie[t] = 1
		}
		m.start[t] = tb.n
		if !tb.died.on() {
			tb.died = zeroedIn(tb.sl, tb.n)
		}
		tb.round.expandIn(tb.sl, tb.n)
	}
	m.undo = u
	m.epoch++
}

func (m *Materialization) rollback() {
	u := m.undo
	for i := len(u.died) - 1; i >= 0; i-- {
		d := u.died[i]
		m.tables[d.t].died.set(d.r, d.prev)
		m.tables[d.t].round.set(d.r, d.round)
	}
	for i := len(u.base) - 1; i >= 0; i-- {
		b := u.base[i]
		if b.existed {
			m.base[b.t][b.r] = b.prev
		} else {
			delete(m.base[b.t], b.r)
		}
	}
	for _, s := range m.syms[u.nsyms:] {
		delete(m.symID, s)
	}
	m.syms = m.syms[:u.nsyms]
	for t, tb := range m.tables {
		tb.ndead = u.ndead[t]
		if tb.n != u.n[t] {
			tb.truncate(u.n[t])
			tb.round.truncate(tb.n)
			tb.died.truncate(tb.n)
			tb.rebuild()
		}
		if u.hadDie[t] == 0 {
			tb.died = u32vec{}
		}
	}
	m.round, m.epoch, m.live, m.stats = u.round, u.epoch, u.live, u.stats
	u.stats = Stats{}
	m.undo, m.start = nil, nil
}

// rebuild recomputes the hash set and indexes from the rows (after a
// rollback truncated the table). Rows dead before the update are kept out
// of the hash set, as they were.
func (t *table) rebuild() {
	t.set = newRowSet(t.n)
	for k := range t.idx {
		t.idx[k] = nil // rebuilt on next use
	}
	for r := int32(0); r < t.n; r++ {
		if !t.alive(r) {
			continue
		}
		t.set.place(t, r, t.hashRow(r))
	}
}

// finish unlinks rows that died in this update from the hash sets.
func (m *Materialization) finish() {
	m.lastChanges = nil
	if m.recordChanges {
		n := 0
		for t := range m.tables {
			n += len(m.deltaPlus[t]) + len(m.deltaMinus[t])
		}
		if n > 0 {
			m.lastChanges = make([]FactDelta, 0, n)
		}
		// Every change's arguments come from one array, each capped at
		// its own; each row is read into a buffer on the stack.
		vals := 0
		for t, tb := range m.tables {
			vals += (len(m.deltaPlus[t]) + len(m.deltaMinus[t])) * tb.arity
		}
		var args []Value
		if n > 0 {
			args = make([]Value, vals)
		}
		var tbuf [8]int64
		for t, tb := range m.tables {
			tup := tbuf[:]
			if tb.arity > len(tbuf) {
				tup = make([]int64, tb.arity)
			}
			for i, rows := range [2][]int32{m.deltaPlus[t], m.deltaMinus[t]} {
				for _, r := range rows {
					a := args[:tb.arity:tb.arity]
					args = args[tb.arity:]
					m.lastChanges = append(m.lastChanges, FactDelta{Fact: m.decodeInto(t, tb.load(r, tup), a), Diff: 1 - 2*i})
				}
			}
		}
		slices.SortFunc(m.lastChanges, func(a, b FactDelta) int {
			if c := compareFacts(a.Fact, b.Fact); c != 0 {
				return c
			}
			return a.Diff - b.Diff
		})
	}
	for t, tb := range m.tables {
		for _, r := range m.deltaMinus[t] {
			if tb.died.get(r) == m.epoch {
				tb.unlink(r)
			}
		}
	}
	m.stats.Tuples = m.live
	m.undo.stats = Stats{}
	m.undo, m.start, m.deltaMinus, m.deltaPlus = nil, nil, nil, nil
	for t, tb := range m.tables {
		if tb.ndead > compactMin && tb.ndead*2 > tb.n || tb.ndead > 0 && tb.deadWalked > int64(tb.n)*compactWalked {
			m.compact(t)
		}
	}
	m.stats.Bytes = m.Footprint()
}

// compact drops dead rows once they are the majority of a table, so a
// long run of updates keeps memory and probe lengths proportional to the
// live data; or once lookups have walked past dead rows in index chains
// compactWalked times the table's rows, so that a key inserted and
// retracted over and over does not lengthen its chains for every lookup
// of it until its dead rows are the majority of a large table (the
// compaction then costs no more than the work the dead rows already
// did). Row numbers change; nothing outside the table and its base
// counts holds them between updates.
func (m *Materialization) compact(t int) {
	tb := m.tables[t]
	remap := make(map[int32]int32, len(m.base[t]))
	w := int32(0)
	packed := &table{arity: tb.arity, width: tb.width, stride: tb.stride}
	tup := make([]int64, tb.arity)
	for r := int32(0); r < tb.n; r++ {
		if tb.died.get(r) != 0 {
			continue
		}
		packed.appendRow(tb.load(r, tup))
		tb.round.set(w, tb.round.get(r))
		if _, ok := m.base[t][r]; ok {
			remap[r] = w
		}
		w++
	}
	base := make(map[int32]int32, len(m.base[t]))
	for r, c := range m.base[t] {
		base[remap[r]] = c
	}
	m.base[t] = base
	tb.n = w
	tb.chunks = packed.chunks
	tb.round.truncate(w)
	tb.died = zeroed(w)
	tb.ndead, tb.deadWalked = 0, 0
	tb.rebuild()
}

// recomputeMin is how many over-deleted tuples a recursive stratum may
// reach before a large over-deletion switches to recomputing the stratum.
// Tests lower it to exercise that path on small programs; below zero, any
// over-deletion in a recursive stratum recomputes it.
var recomputeMin = 1024

// compactMin is how many dead rows a table keeps before compaction is
// considered; tests lower it.
var compactMin int32 = 1024

// compactWalked is how many dead rows, per row of a table, updates'
// lookups may walk past before the table is compacted: walking past one
// costs a small fraction of copying a row and reindexing it.
var compactWalked int64 = 64

func (m *Materialization) apply(changes []Change) error {
	if err := m.applyChanges(changes); err != nil {
		return err
	}
	return m.checkDepth()
}

func (m *Materialization) applyChanges(changes []Change) error {
	c := m.c
	nt := len(m.tables)
	// The apply's six per-table row lists share one outer array, each
	// capped at its own part: the scratch's, every list emptied. A list
	// keeps the array the last update grew for it, up to keptRowList
	// entries (see emptyRowLists).
	s := m.scratch()
	if cap(s.lists) < 6*nt {
		s.lists = make([][]int32, 6*nt)
	}
	lists := s.lists[:6*nt]
	emptyRowLists(lists)
	part := func(k int) [][]int32 { return lists[k*nt : (k+1)*nt : (k+1)*nt] }
	m.deltaPlus, m.deltaMinus = part(0), part(1)
	m.stats = Stats{}
	// Base changes, resolved against the current state in order.
	// A pending insertion counts its base supports in the batch; it is
	// found by its table and tuple, by a linear search while the batch
	// has few, through an index by key once it has more.
	type ins struct {
		t   int
		tup []int64
		cnt int
	}
	var insBuf [8]ins // a small batch's on the stack
	inserts := insBuf[:0]
	var byKey map[string]int // key -> position in inserts, once made
	pending := func(t int, tup []int64) int {
		if byKey != nil {
			var kb [tableKeyBuf]byte
			if i, ok := byKey[string(appendTableKey(kb[:0], t, tup))]; ok {
				return i
			}
			return -1
		}
		for i := range inserts {
			if inserts[i].t == t && slices.Equal(inserts[i].tup, tup) {
				return i
			}
		}
		return -1
	}
	baseDoomed := part(2)
	// The changes' tuples, read only while the apply runs (a table's
	// insert copies its row), are carved from the scratch's array.
	na := 0
	for _, ch := range changes {
		na += len(ch.Fact.Args)
	}
	if cap(s.tuples) < na {
		s.tuples = make([]int64, na)
	}
	tuples := s.tuples[:na]
	for i, ch := range changes {
		if ch.Diff != 1 && ch.Diff != -1 {
			return errorf(MalformedDelta, Pos{}, "change %d: diff must be +1 or -1, got %d", i+1, ch.Diff)
		}
		k := len(ch.Fact.Args)
		t, tup, _, err := m.encodeInto(ch.Fact, true, tuples[:0:k])
		tuples = tuples[k:]
		if err != nil {
			return err
		}
		tb := m.tables[t]
		r := tb.find(tup)
		if r >= 0 && !tb.alive(r) {
			r = -1
		}
		p := -1
		if len(inserts) > 0 {
			p = pending(t, tup)
		}
		if ch.Diff == 1 {
			if r >= 0 && m.base[t][r] > 0 {
				m.setBase(t, r, m.base[t][r]+1)
			} else if p >= 0 && inserts[p].cnt > 0 {
				inserts[p].cnt++
			} else if r >= 0 {
				m.setBase(t, r, 1) // derived fact gains base support
			} else if p >= 0 {
				inserts[p].cnt = 1
			} else {
				inserts = append(inserts, ins{t, tup, 1})
				if byKey != nil || len(inserts) > pendingLinear {
					if byKey == nil {
						byKey = make(map[string]int, 2*len(inserts))
					}
					for i := len(byKey); i < len(inserts); i++ {
						var kb [tableKeyBuf]byte
						byKey[string(appendTableKey(kb[:0], inserts[i].t, inserts[i].tup))] = i
					}
				}
			}
			continue
		}
		switch {
		case p >= 0 && inserts[p].cnt > 0:
			inserts[p].cnt--
		case r >= 0 && m.base[t][r] > 0:
			m.setBase(t, r, m.base[t][r]-1)
			if m.base[t][r] == 0 {
				baseDoomed[t] = append(baseDoomed[t], r)
			}
		default:
			return errorf(UnknownFact, Pos{}, "change %d retracts %s, which has no base support", i+1, ch.Fact)
		}
	}
	x := m.updateExec()
	defer endExec(x)
	// The per-stratum row lists, indexed by table: one outer array each
	// for the whole apply, emptied (every list nil, as a fresh one) at
	// each use instead of made again for every stratum and round.
	allD, addedBy := part(3), part(4)
	next := part(5) // the rounds' second list
	for si, s := range c.strata {
		st := StratumStats{Index: si, Recursive: s.recursive} // Relations: below, reported only for a stratum with rules
		inS := func(t int) bool { return c.tstratum[t] == si }
		// A stratum nothing reaches — no base change to its tables, no
		// change below to a table its rules read — changes nothing: its
		// passes would find nothing to delete, revive or insert. Only
		// what they leave behind is done: the rounds, the budget check,
		// the evaluator's mode and the stratum's stats.
		if skipIdleStrata && m.idleStratum(s, inserts == nil || !slices.ContainsFunc(inserts, func(in ins) bool { return inS(in.t) }), baseDoomed) {
			m.round += 2
			x.mode, x.candOnly, x.track, x.added = emitInsert, false, true, x.added[:0]
			if err := m.checkTuples(); err != nil {
				return err
			}
			if len(s.rules) > 0 {
				if s.recursive {
					st.Iterations = 1
				}
				st.Relations = s.relations
				m.addStratum(st)
			}
			continue
		}
		// 1. Over-delete, reading the old state. An aggregate whose
		// tables changed is no sum of its deltas: its rule is run again,
		// in the old state and then in the new, for each binding of its
		// params a changed fact touches (aggregateDeltas); in a
		// recursive stratum the heads it gave in the old state are
		// candidates of the ranked over-deletion like any other. Where
		// those bindings cannot be told (a param no positive atom of
		// the aggregate's body holds, a param another aggregate binds)
		// the stratum is evaluated afresh instead.
		clearTables(allD, s.tables)
		var recompute bool
		var aggs []aggDelta
		var err error
		if m.changedAny(s.aggReads) {
			var ok bool
			aggs, ok = m.aggregateDeltas(x, s)
			recompute = !ok
		}
		switch {
		case recompute:
		case s.recursive:
			recompute, err = m.overDeleteRanked(si, x, baseDoomed, allD, aggs)
		default:
			err = m.overDeleteOnce(si, x, baseDoomed, allD, aggs)
		}
		if err != nil {
			return err
		}
		// 2. Rederive over-deleted tuples that keep a base support or
		// a rule instantiation over the remaining state.
		if recompute {
			var pend [][]int64
			for _, in := range inserts {
				if inS(in.t) && in.cnt > 0 {
					pend = append(pend, append([]int64{int64(in.t)}, in.tup...))
				}
			}
			if err := m.recomputeStratum(si, pend, allD); err != nil {
				return err
			}
		}
		m.round++
		var revive [][2]int32
		for _, t := range s.tables {
			for _, r := range allD[t] {
				if recompute {
					break // recomputeStratum revived what holds
				}
				if m.base[t][r] > 0 {
					revive = append(revive, [2]int32{int32(t), r})
					continue
				}
				ok, err := m.derivable(x, t, r)
				if err != nil {
					return err
				}
				if ok {
					revive = append(revive, [2]int32{int32(t), r})
				}
			}
		}
		x.mode = emitInsert
		x.track = true
		x.added = x.added[:0]
		clearTables(addedBy, s.tables)
		for _, rv := range revive {
			m.revive(int(rv[0]), rv[1])
			addedBy[rv[0]] = append(addedBy[rv[0]], rv[1])
		}
		m.round++
		// 3. Insert: base facts, then rule instantiations made true by
		// lower-stratum insertions or by deletions a negation now sees.
		for _, in := range inserts {
			if !inS(in.t) {
				continue
			}
			cnt := int32(in.cnt)
			if cnt == 0 {
				continue // inserted and retracted in the same batch
			}
			tb := m.tables[in.t]
			r, added := tb.insert(in.tup, m.round)
			if added {
				m.live++
				addedBy[in.t] = append(addedBy[in.t], r)
			} else if tb.died.get(r) == m.epoch {
				m.revive(in.t, r)
				addedBy[in.t] = append(addedBy[in.t], r)
			}
			m.setBase(in.t, r, m.base[in.t][r]+cnt)
		}
		if err := m.checkTuples(); err != nil {
			return err
		}
		for _, ri := range s.rules {
			if recompute {
				break
			}
			r := c.rules[ri]
			for ai := range r.atoms {
				at := r.atoms[ai].table
				var list []int32
				if ai < r.npos && !inS(at) {
					list = m.deltaPlus[at]
				} else if ai >= r.npos {
					list = m.deltaMinus[at]
				}
				if len(list) == 0 {
					continue
				}
				if err := m.runVariant(x, r, ai, list, view{cur: true}); err != nil {
					return err
				}
				m.collectAdded(x, r.head, addedBy)
			}
		}
		if err := m.runAggregateDeltas(x, aggs, view{cur: true}, addedBy); err != nil {
			return err
		}
		if len(s.rules) > 0 && !s.recursive {
			// nothing feeds back within a non-recursive stratum
		} else {
			rounds := 1
			for {
				any := false
				for _, t := range s.tables {
					if len(addedBy[t]) > 0 {
						any = true
					}
				}
				if !any {
					break
				}
				rounds++
				m.round++
				cur := addedBy
				clearTables(next, s.tables)
				addedBy, next = next, cur
				for _, ri := range s.rules {
					r := c.rules[ri]
					for ai := 0; ai < r.npos; ai++ {
						at := r.atoms[ai].table
						if !inS(at) || len(cur[at]) == 0 {
							continue
						}
						if err := m.runVariant(x, r, ai, cur[at], view{cur: true}); err != nil {
							return err
						}
						m.collectAdded(x, r.head, addedBy)
					}
				}
			}
			st.Iterations = rounds
		}
		// 4. Net changes of this stratum's tables, for the strata above.
		for _, t := range s.tables {
			tb := m.tables[t]
			for _, r := range allD[t] {
				if tb.died.get(r) == m.epoch {
					m.deltaMinus[t] = append(m.deltaMinus[t], r)
				}
			}
			m.deltaPlus[t] = m.deltaPlus[t][:0]
			for r := m.start[t]; r < tb.n; r++ {
				if tb.died.get(r) == 0 {
					m.deltaPlus[t] = append(m.deltaPlus[t], r)
				}
			}
			slices.Sort(m.deltaMinus[t])
			st.NewTuples += int64(len(m.deltaPlus[t])) - int64(len(m.deltaMinus[t]))
		}
		st.Firings = x.firings
		m.stats.Firings += x.firings
		x.firings = 0
		if len(s.rules) > 0 {
			st.Relations = s.relations
			m.addStratum(st)
		}
	}
	return nil
}

// skipIdleStrata lets an update pass over the strata nothing reaches
// (idleStratum); tests turn it off to run every stratum's passes, the
// reference the shortcut is held to.
var skipIdleStrata = true

// keptRowList bounds the capacity, in rows, of a per-table row list that
// an update's scratch keeps for the next update; a longer one is dropped,
// so that one large update does not keep its lists for every later one.
var keptRowList = 1024 // tests lower it

// keepRowLists turns on keeping the row lists' arrays from one update to
// the next; tests turn it off for the reference, every list nil at each
// update's start.
var keepRowLists = true

// emptyRowLists empties an update's per-table row lists at its start,
// each keeping its array when at most keptRowList rows long.
//
// Invariant that makes the keeping safe: every list owns its array. The
// lists are only appended to, emptied (here and in clearTables) or
// swapped whole with their part (the rounds' addedBy and next); no list
// is ever assigned another list or a slice of one, so no two share an
// array, and nothing holds one once the update returns: finish copies
// the changes out of deltaPlus and deltaMinus and drops its references,
// and the evaluator's list views are set again before each use.
func emptyRowLists(lists [][]int32) {
	if !keepRowLists {
		clear(lists)
		return
	}
	for i, l := range lists {
		if cap(l) > keptRowList {
			lists[i] = nil
		} else {
			lists[i] = l[:0]
		}
	}
}

// clearTables empties the lists of a stratum's tables. A stratum's passes
// write and read the per-table lists of its own tables only (a rule's
// head is in its stratum), so the entries another stratum left need not
// be emptied for it.
func clearTables(lists [][]int32, tables []int) {
	if !keepRowLists {
		for _, t := range tables {
			lists[t] = nil
		}
		return
	}
	for _, t := range tables {
		lists[t] = lists[t][:0]
	}
}

// idleStratum reports whether nothing reaches stratum s in this update:
// no base insertion into its tables (noInserts), no base support of its
// rows lost, and no change so far to a table any of its rules reads (the
// tables of lower strata; its own have none before it runs).
func (m *Materialization) idleStratum(s *stratum, noInserts bool, baseDoomed [][]int32) bool {
	if !noInserts {
		return false
	}
	for _, t := range s.tables {
		if len(baseDoomed[t]) > 0 || len(m.deltaPlus[t]) > 0 || len(m.deltaMinus[t]) > 0 {
			return false
		}
	}
	for _, ri := range s.rules {
		for _, a := range m.c.rules[ri].atoms {
			if len(m.deltaPlus[a.table]) > 0 || len(m.deltaMinus[a.table]) > 0 {
				return false
			}
		}
	}
	return !m.changedAny(s.aggReads)
}

// changedAny reports whether this update has so far changed any of the
// tables.
func (m *Materialization) changedAny(tables []int) bool {
	for _, t := range tables {
		if len(m.deltaPlus[t]) > 0 || len(m.deltaMinus[t]) > 0 {
			return true
		}
	}
	return false
}

// aggDelta is an aggregate whose tables an update changed, with the
// bindings of its params a changed fact touches: where its value may
// have changed.
type aggDelta struct {
	r    *rule
	a    *aggRef
	keys [][]int64 // each a value per param, in params' order
}

// aggregateDeltas finds, for each aggregate of stratum s whose tables
// this update changed, the bindings of its params that a fact inserted
// or deleted below takes part in: read from the fact where its atom holds
// each param in a column of its own (paramColumns), else through the rest
// of the aggregate's body (collectParams). Either way they are a superset
// of the bindings whose value changed, which is safe. ok is false where
// they cannot be found: an aggregate whose params another aggregate
// binds, a param no positive atom of the body holds, or an error while
// looking (the fresh evaluation then meets it or not, as a from-scratch
// one would).
func (m *Materialization) aggregateDeltas(x *exec, s *stratum) (out []aggDelta, ok bool) {
	for _, ri := range s.rules {
		r := m.c.rules[ri]
		for i := range r.aggs {
			a := &r.aggs[i]
			if !m.changedAny(a.tables) {
				continue
			}
			if a.rulePlan == nil {
				return nil, false
			}
			d := aggDelta{r: r, a: a}
			seen := map[string]bool{}
			var kb []byte
			// add keeps a binding of the params (vals, a scratch the
			// caller fills), once.
			vals := make([]int64, len(a.params))
			add := func() {
				kb = kb[:0]
				for _, v := range vals {
					kb = binary.LittleEndian.AppendUint64(kb, uint64(v))
				}
				if !seen[string(kb)] {
					seen[string(kb)] = true
					d.keys = append(d.keys, slices.Clone(vals))
				}
			}
			for k, at := range a.body.atoms {
				minus, plus := m.deltaMinus[at.table], m.deltaPlus[at.table]
				if len(minus)+len(plus) == 0 {
					continue
				}
				if cols := a.paramCols[k]; cols != nil {
					tb := m.tables[at.table]
					for _, list := range [2][]int32{minus, plus} {
						for _, row := range list {
							tup := tb.tuple(row)
							for j, c := range cols {
								vals[j] = tup[c]
							}
							add()
						}
					}
					continue
				}
				if a.deltaPlans == nil {
					return nil, false
				}
				// A deleted fact of a matched atom, or an inserted one of
				// a negated atom, took part in instantiations of the
				// state before the update; the others take part in those
				// of the state after it.
				neg := k >= a.body.npos
				for i, list := range [2][]int32{minus, plus} {
					if len(list) > 0 && !m.collectParams(x, a, k, list, (i == 0) != neg, vals, add) {
						return nil, false
					}
				}
			}
			out = append(out, d)
		}
	}
	return out, true
}

// collectParams enumerates the instantiations of aggregate a's body
// that take atom k's rows from list, the other atoms reading the state
// before the update (old) or the current one, and calls add with each
// binding of the params in vals; false when the enumeration failed.
func (m *Materialization) collectParams(x *exec, a *aggRef, k int, list []int32, old bool, vals []int64, add func()) bool {
	saveMode, saveFn := x.mode, x.onMatch
	defer func() { x.mode, x.onMatch = saveMode, saveFn }()
	x.readAll(len(a.body.atoms), view{old: old})
	x.views[k] = view{useList: true, list: list}
	x.mode = emitCollect
	x.onMatch = func(regs []int64) bool {
		for j, p := range a.params {
			vals[j] = regs[p]
		}
		add()
		return true
	}
	x.err = nil
	return x.runRule(a.body, a.deltaPlans[k]) == nil
}

// runAggregateDeltas runs each aggregate's rule for each of its keys, its
// atoms and aggregates reading state (the old one while over-deleting,
// the current one while inserting), in x's mode, and collects the heads
// doomed or added into into.
func (m *Materialization) runAggregateDeltas(x *exec, aggs []aggDelta, state view, into [][]int32) error {
	for _, d := range aggs {
		r := d.r
		x.readAll(len(r.atoms), state)
		x.aggOld = state.old
		for _, key := range d.keys {
			for j, p := range d.a.params {
				x.regs[p] = key[j]
			}
			x.err = nil
			if err := x.runRule(r, d.a.rulePlan); err != nil {
				x.aggOld = false
				return err
			}
		}
		x.aggOld = false
		if state.old {
			m.collectDoomed(x, r.head, into)
		} else {
			m.collectAdded(x, r.head, into)
		}
	}
	return nil
}

// recomputeStratum re-evaluates stratum si from scratch in fresh tables
// over the current (updated) state below it, then applies the difference
// to the stratum's tables in place: rows that no longer hold die in this
// epoch, over-deleted rows that still hold are revived, new tuples are
// appended. Unchanged rows keep their numbers, so base counts, the undo
// log and the old view the strata above read all stay valid. pending are
// this update's base insertions into the stratum (table, tuple...).
func (m *Materialization) recomputeStratum(si int, pending [][]int64, allD [][]int32) error {
	s := m.c.strata[si]
	saved := make(map[int]*table, len(s.tables))
	liveBefore := m.live
	for _, t := range s.tables {
		old := m.tables[t]
		fresh := newTable(old.arity, m.c.indexes[t])
		fresh.sl = old.sl
		tup := make([]int64, old.arity)
		for r := int32(0); r < m.start[t]; r++ {
			if m.base[t][r] > 0 {
				fresh.insert(old.load(r, tup), 0)
			}
		}
		for _, p := range pending {
			if int(p[0]) == t {
				fresh.insert(p[1:], 0)
			}
		}
		m.live -= int64(old.liveRows())
		m.live += int64(fresh.liveRows())
		saved[t] = old
		m.tables[t] = fresh
	}
	err := m.evalStratum(si)
	fresh := make(map[int]*table, len(s.tables))
	for _, t := range s.tables {
		fresh[t] = m.tables[t]
		m.tables[t] = saved[t]
	}
	m.live = liveBefore
	if err != nil {
		return err
	}
	for _, t := range s.tables {
		old, nw := m.tables[t], fresh[t]
		tup := make([]int64, old.arity)
		for r := int32(0); r < m.start[t]; r++ {
			if old.died.get(r) != 0 && old.died.get(r) != m.epoch {
				continue // dead before this update
			}
			nr := nw.find(old.load(r, tup))
			switch {
			case nr >= 0:
				// Take the rank the fresh evaluation proved: the old one
				// may rest on rows that are gone.
				m.revive(t, r)
				m.setRound(t, r, nw.round.get(nr))
			case old.died.get(r) == 0:
				m.doomRow(t, r)
				allD[t] = append(allD[t], r)
			}
		}
		for r := int32(0); r < nw.n; r++ {
			if _, added := old.insert(nw.load(r, tup), nw.round.get(r)); added {
				m.live++
			}
		}
	}
	if err := m.checkTuples(); err != nil {
		return err
	}
	return nil
}

// overDeleteOnce over-deletes in a non-recursive stratum: the stratum's
// rows that lose a base support, the heads of instantiations that used a
// fact deleted below or a negation an insertion below falsified, and the
// heads aggs' rules gave in the old state for the params whose aggregates
// may have changed.
func (m *Materialization) overDeleteOnce(si int, x *exec, baseDoomed, allD [][]int32, aggs []aggDelta) error {
	s := m.c.strata[si]
	for _, t := range s.tables {
		for _, r := range baseDoomed[t] {
			if m.doomRow(t, r) {
				allD[t] = append(allD[t], r)
			}
		}
	}
	x.mode, x.candOnly = emitDoom, false
	for _, ri := range s.rules {
		r := m.c.rules[ri]
		for ai := range r.atoms {
			if list := m.lowerDelta(si, r, ai, true); len(list) > 0 {
				if err := m.runVariant(x, r, ai, list, view{old: true}); err != nil {
					return err
				}
				m.collectDoomed(x, r.head, allD)
			}
		}
	}
	return m.runAggregateDeltas(x, aggs, view{old: true}, allD)
}

// lowerDelta is what atom ai of rule r reads as its delta when the change
// comes from a lower stratum: deletions for a matched atom, insertions for
// a negated one (forDelete), or the reverse when propagating insertions.
func (m *Materialization) lowerDelta(si int, r *rule, ai int, forDelete bool) []int32 {
	at := r.atoms[ai].table
	if ai < r.npos {
		if m.c.tstratum[at] == si {
			return nil
		}
		if forDelete {
			return m.deltaMinus[at]
		}
		return m.deltaPlus[at]
	}
	if forDelete {
		return m.deltaPlus[at]
	}
	return m.deltaMinus[at]
}

// candidate is a row that may have lost its support, keyed by its round.
type candidate struct {
	round uint32
	t     int32
	r     int32
}

// overDeleteRanked over-deletes in a recursive stratum, but only what has
// really lost its support as far as ranks can tell. Every row's round is a
// rank: each row has a derivation whose premises in the stratum have
// strictly smaller rounds. Candidates (heads of instantiations that used a
// deleted fact) are examined in increasing round order; one that still has
// an instantiation over the new state below and over undeleted rows of
// smaller round in the stratum keeps a well-founded proof and survives, so
// the deletion does not spread through it. Only the others are deleted,
// and their dependants become candidates. On a dense graph, where almost
// every fact has another derivation, this stops the cascade that plain
// delete/rederive would run through the whole closure. The heads that
// aggs' rules gave in the old state, for the params whose aggregates may
// have changed, are candidates too: survives then weighs them against
// the aggregates' new values. It reports whether the deletion grew so
// large that recomputing the stratum is cheaper.
func (m *Materialization) overDeleteRanked(si int, x *exec, baseDoomed, allD [][]int32, aggs []aggDelta) (bool, error) {
	s := m.c.strata[si]
	var heap []candidate
	push := func(t int, r int32) {
		heap = append(heap, candidate{m.tables[t].round.get(r), int32(t), r})
		for i := len(heap) - 1; i > 0; {
			p := (i - 1) / 2
			if !candLess(heap[i], heap[p]) {
				break
			}
			heap[i], heap[p] = heap[p], heap[i]
			i = p
		}
	}
	pop := func() candidate {
		top := heap[0]
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		for i := 0; ; {
			l, small := 2*i+1, i
			if l < len(heap) && candLess(heap[l], heap[small]) {
				small = l
			}
			if l+1 < len(heap) && candLess(heap[l+1], heap[small]) {
				small = l + 1
			}
			if small == i {
				break
			}
			heap[i], heap[small] = heap[small], heap[i]
			i = small
		}
		return top
	}
	for _, t := range s.tables {
		for _, r := range baseDoomed[t] {
			push(t, r)
		}
	}
	x.mode, x.candOnly = emitDoom, true
	defer func() { x.candOnly = false }()
	found := make([][]int32, len(m.tables))
	collect := func() {
		for t := range found {
			for _, r := range found[t] {
				push(t, r)
			}
			found[t] = found[t][:0]
		}
	}
	for _, ri := range s.rules {
		r := m.c.rules[ri]
		for ai := range r.atoms {
			if list := m.lowerDelta(si, r, ai, true); len(list) > 0 {
				if err := m.runVariant(x, r, ai, list, view{old: true}); err != nil {
					return false, err
				}
				m.collectDoomed(x, r.head, found)
			}
		}
	}
	if err := m.runAggregateDeltas(x, aggs, view{old: true}, found); err != nil {
		return false, err
	}
	collect()
	var live, doomed int
	for _, t := range s.tables {
		live += m.tables[t].liveRows()
	}
	checked := map[int64]bool{}
	one := make([]int32, 1)
	for len(heap) > 0 {
		cd := pop()
		t, r := int(cd.t), cd.r
		key := int64(t)<<32 | int64(r)
		if checked[key] || m.tables[t].died.get(r) != 0 {
			continue
		}
		checked[key] = true
		ok, err := m.survives(x, si, t, r)
		if err != nil {
			return false, err
		}
		if ok {
			continue
		}
		m.doomRow(t, r)
		allD[t] = append(allD[t], r)
		doomed++
		if doomed > recomputeMin && (recomputeMin < 0 || doomed*4 > live+doomed) {
			return true, nil
		}
		one[0] = r
		for _, ri := range s.rules {
			ru := m.c.rules[ri]
			for ai := 0; ai < ru.npos; ai++ {
				if ru.atoms[ai].table != t {
					continue
				}
				if err := m.runVariant(x, ru, ai, one, view{old: true}); err != nil {
					return false, err
				}
				m.collectDoomed(x, ru.head, found)
			}
		}
		collect()
	}
	return false, nil
}

func candLess(a, b candidate) bool {
	if a.round != b.round {
		return a.round < b.round
	}
	if a.t != b.t {
		return a.t < b.t
	}
	return a.r < b.r
}

// survives reports whether row r of table t (in recursive stratum si) has
// a base support or a rule instantiation whose premises below the stratum
// hold in the new state and whose premises in the stratum are undeleted
// rows of smaller round.
func (m *Materialization) survives(x *exec, si, t int, r int32) (bool, error) {
	if m.base[t][r] > 0 {
		return true, nil
	}
	tb := m.tables[t]
	tup := tb.tuple(r)
	found := false
	saveMode, saveFn, saveCand := x.mode, x.onMatch, x.candOnly
	defer func() { x.mode, x.onMatch, x.candOnly = saveMode, saveFn, saveCand }()
	x.mode = emitCollect
	x.onMatch = func([]int64) bool { found = true; return false }
	x.rankLimit = tb.round.get(r)
	for _, ru := range m.c.rules {
		if ru.head != t {
			continue
		}
		for k := range ru.atoms {
			if m.c.tstratum[ru.atoms[k].table] == si {
				x.views[k] = view{ranked: true, hi: math.MaxInt32}
			} else {
				x.views[k] = view{hi: math.MaxInt32}
			}
		}
		x.target = tup
		for k, e := range ru.hargs {
			if e.kind == exReg {
				x.regs[e.reg] = tup[k]
			}
		}
		x.err = nil
		if err := x.runRule(ru, ru.headPlan); err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// readAll has the first n atoms of x's next rule, and a delta negation
// (exec.other), read every row of state (old or current) there is.
func (x *exec) readAll(n int, state view) {
	state.hi = math.MaxInt32
	for k := range n {
		x.views[k] = state
	}
	x.other = state
}

// runVariant runs rule r with atom ai reading the given rows and every
// other atom reading the state described by other.
func (m *Materialization) runVariant(x *exec, r *rule, ai int, list []int32, other view) error {
	x.readAll(len(r.atoms), other)
	x.views[ai] = view{useList: true, list: list}
	x.err = nil
	x.aggOld = other.old
	err := x.runRule(r, r.plans[1+ai])
	x.aggOld = false
	return err
}

func (m *Materialization) collectDoomed(x *exec, head int, into [][]int32) {
	into[head] = append(into[head], x.doomed...)
	x.doomed = x.doomed[:0]
}

func (m *Materialization) collectAdded(x *exec, head int, into [][]int32) {
	into[head] = append(into[head], x.added...)
	x.added = x.added[:0]
}

// derivable reports whether some rule derives row r of table t from the
// current state (alive rows of earlier rounds).
func (m *Materialization) derivable(x *exec, t int, r int32) (bool, error) {
	tup := m.tables[t].tuple(r)
	found := false
	saveMode, saveFn := x.mode, x.onMatch
	defer func() { x.mode, x.onMatch = saveMode, saveFn }()
	x.mode = emitCollect
	x.onMatch = func([]int64) bool { found = true; return false }
	for _, ru := range m.c.rules {
		if ru.head != t {
			continue
		}
		for k := range ru.atoms {
			x.views[k] = view{cur: true, hi: math.MaxInt32}
		}
		x.target = tup
		for k, e := range ru.hargs {
			if e.kind == exReg {
				x.regs[e.reg] = tup[k]
			}
		}
		x.err = nil
		if err := x.runRule(ru, ru.headPlan); err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// appendTableKey appends the key identifying a tuple of a table in maps
// local to one update (each value's eight bytes, little-endian, the
// table's first) to b: a lookup of
// string(appendTableKey(buf[:0], ...)) in a map makes no string.
func appendTableKey(b []byte, t int, tup []int64) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t))
	for _, v := range tup {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// pendingLinear is how many pending insertions an update finds by a
// linear search of its list; past it, they are indexed by key. Tests
// lower it.
var pendingLinear = 16

// tableKeyBuf is the room a key of a tuple of up to seven values takes.
const tableKeyBuf = 64
