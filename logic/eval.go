package logic

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Limits bound an evaluation. A zero field means "no limit". Exceeding a
// limit aborts the evaluation with a typed error and no result.
type Limits struct {
	MaxInputs  int   // base facts given at once (INPUT_BUDGET_EXHAUSTED)
	MaxFirings int64 // rule instantiations that reach the head (RULE_BUDGET_EXHAUSTED)
	MaxDepth   int   // height of any fact's shortest proof (DERIVATION_DEPTH_EXCEEDED)
	MaxTuples  int64 // live tuples over all relations (TUPLE_BUDGET_EXHAUSTED)
	// MaxBytes bounds the engine's own storage of the relations, as
	// [Materialization.Footprint] counts it (MEMORY_BUDGET_EXHAUSTED). It is
	// checked every memCheckEvery tuples added and after each bulk insert,
	// so a program may pass it by at most that many rows and one growth of
	// a hash set before it stops.
	MaxBytes int64

	// memEvery, when positive, replaces memCheckEvery: tests check the
	// memory budget after every few tuples to exercise it on small
	// programs.
	memEvery int64

	// Progress, when set, is called after each stratum of a from-scratch
	// evaluation completes, in order. It lets a shell time strata or show
	// progress; it must not call back into the materialization.
	Progress func(StratumStats)
	// Loaded, when set, is called by EvaluateFiles once the files' facts
	// are in their relations, before the first stratum is evaluated: a
	// shell times reading apart from evaluating with it.
	Loaded func()
}

// StratumStats describes the evaluation of one stratum.
type StratumStats struct {
	Index      int // stratum number, as used in absence witnesses
	Relations  []string
	Recursive  bool
	Iterations int
	Firings    int64
	NewTuples  int64
}

// Stats describes the last evaluation or update of a materialization.
type Stats struct {
	Strata  []StratumStats
	Firings int64
	Tuples  int64 // live tuples after the evaluation
	Bytes   int64 // Footprint after the evaluation
}

// Materialization is the evaluated state of a program over some base facts:
// for every relation its positive and negative tuples, plus the base
// supports that feed them. Queries on it are read-only and safe to call
// concurrently; [Materialization.Apply] and [Solve] consume it.
type Materialization struct {
	c      *Compiled
	syms   []string
	symID  map[string]int64
	tables []*table
	base   []map[int32]int32      // per table: row -> number of base supports
	ledger map[string]ledgerEntry // named base supports (Solve)
	byFact map[string][]string    // fact -> its named supports, sorted
	time   int64                  // logical time of the last Solve, -1 before
	round  uint32
	epoch  uint32
	lim    Limits
	stats  Stats
	live   int64
	// memNext is the live count at which the memory budget is next
	// checked: the hot path compares against it only (math.MaxInt64
	// without a budget).
	memNext  int64
	consumed bool
	// unbatched turns off batched inserts (see exec.batch).
	unbatched bool
	// recordChanges makes Apply keep the net fact changes in lastChanges.
	recordChanges bool
	lastChanges   []FactDelta
	// valid only while an update runs
	start []int32
	undo  *undo
	// spare is the scratch of the last update (its evaluator and undo
	// record), cleared, for the next update to reuse: the
	// materialization an update returns takes it over, a clone starts
	// without one.
	spare      *updateScratch
	deltaPlus  [][]int32
	deltaMinus [][]int32
}

// Program returns the compiled program the materialization belongs to.
func (m *Materialization) Program() *Compiled { return m.c }

// Stats returns statistics of the evaluation or update that produced m.
// Each call returns its own copy: the materialization keeps its strata's
// relation names shared with the program and copies them only here.
func (m *Materialization) Stats() Stats { return m.stats.copied() }

// copied returns s with its own Strata list and Relations lists.
func (s Stats) copied() Stats {
	if s.Strata != nil {
		s.Strata = slices.Clone(s.Strata)
		for i := range s.Strata {
			s.Strata[i] = s.Strata[i].copied()
		}
	}
	return s
}

// copied returns s with its own Relations list.
func (s StratumStats) copied() StratumStats {
	s.Relations = slices.Clone(s.Relations)
	return s
}

// addStratum records one evaluated stratum's stats. st.Relations is the
// program's own list, copied only when the stats are handed out.
func (m *Materialization) addStratum(st StratumStats) {
	if m.stats.Strata == nil {
		m.stats.Strata = make([]StratumStats, 0, m.c.ruled)
	}
	m.stats.Strata = append(m.stats.Strata, st)
}

func newMaterialization(c *Compiled, lim Limits) *Materialization {
	m := &Materialization{c: c, symID: make(map[string]int64, len(c.consts)), lim: lim, time: -1, memNext: math.MaxInt64}
	if lim.MaxBytes > 0 {
		m.memNext = m.memEvery()
	}
	m.syms = append([]string(nil), c.consts...)
	for i, s := range m.syms {
		m.symID[s] = int64(i)
	}
	m.tables = make([]*table, len(c.rels)*2)
	m.base = make([]map[int32]int32, len(m.tables))
	sl := new(slab)
	for t := range m.tables {
		m.tables[t] = newTable(len(c.rels[t/2].types), c.indexes[t])
		m.tables[t].sl = sl
		m.base[t] = map[int32]int32{}
	}
	return m
}

func errConsumed() *Error {
	return errorf(Consumed, Pos{}, "materialization was consumed by an update; use the one the update returned, or Clone before updating")
}

func (m *Materialization) internSym(s string) int64 {
	if id, ok := m.symID[s]; ok {
		return id
	}
	id := int64(len(m.syms))
	m.syms = append(m.syms, s)
	m.symID[s] = id
	return id
}

// encode converts a fact to its table and tuple, interning symbols when
// intern is set (otherwise an unknown symbol means the fact is absent,
// reported by ok=false with a nil error).
func (m *Materialization) encode(f Fact, intern bool) (int, []int64, bool, error) {
	return m.encodeInto(f, intern, nil)
}

// encodeInto is encode with the tuple written into buf when it has room
// (a caller that keeps no tuple passes an array of its own).
func (m *Materialization) encodeInto(f Fact, intern bool, buf []int64) (int, []int64, bool, error) {
	if m.consumed {
		return 0, nil, false, errConsumed()
	}
	ri, found := m.c.relByName[f.Rel]
	if !found {
		return 0, nil, false, errorf(UndeclaredRelation, Pos{}, "relation %s is not declared", f.Rel)
	}
	rel := m.c.rels[ri]
	if len(f.Args) != len(rel.types) {
		return 0, nil, false, errorf(ArityMismatch, Pos{}, "%s has %d argument(s) but is declared with %d", f.Rel, len(f.Args), len(rel.types))
	}
	t := ri * 2
	if f.Neg {
		t++
	}
	tup := buf[:0]
	if cap(tup) < len(f.Args) {
		tup = make([]int64, 0, len(f.Args))
	}
	tup = tup[:len(f.Args)]
	ok := true
	for i, a := range f.Args {
		want := rel.types[i]
		if a.sym != (want == TypeSymbol) {
			return 0, nil, false, errorf(TypeMismatch, Pos{}, "argument %d (%s) of %s must be a %s, got %s", i+1, rel.attrs[i], f.Rel, want, a)
		}
		if a.sym {
			if intern {
				tup[i] = m.internSym(a.s)
			} else if id, ok2 := m.symID[a.s]; ok2 {
				tup[i] = id
			} else {
				ok = false
			}
		} else {
			tup[i] = a.n
		}
	}
	return t, tup, ok, nil
}

func (m *Materialization) decode(t int, tup []int64) Fact {
	return m.decodeInto(t, tup, make([]Value, len(tup)))
}

// decodeInto is decode with the fact's arguments written into args, of
// the tuple's length.
func (m *Materialization) decodeInto(t int, tup []int64, args []Value) Fact {
	rel := m.c.rels[t/2]
	f := Fact{Rel: rel.name, Neg: t%2 == 1, Args: args}
	for i, v := range tup {
		if rel.types[i] == TypeSymbol {
			f.Args[i] = Sym(m.syms[v])
		} else {
			f.Args[i] = Num(v)
		}
	}
	return f
}

// Evaluate computes the materialization of a program over base facts from
// scratch. Facts may carry either sign; a relation with rules may also have
// base facts. Facts repeated are one base support.
func Evaluate(c *Compiled, facts []Fact, lim Limits) (*Materialization, error) {
	return evaluate(c, facts, lim, false)
}

// evaluate is Evaluate; unbatched makes every head tuple go into its table
// as soon as it is derived, the plain way batching must agree with.
func evaluate(c *Compiled, facts []Fact, lim Limits, unbatched bool) (*Materialization, error) {
	if lim.MaxInputs > 0 && len(facts) > lim.MaxInputs {
		return nil, errorf(InputBudgetExceeded, Pos{}, "%d base facts exceed the input budget of %d", len(facts), lim.MaxInputs)
	}
	m := newMaterialization(c, lim)
	m.unbatched = unbatched
	if len(facts) >= presizeBase {
		n := make([]int, len(m.tables))
		for _, f := range facts {
			if ri, ok := c.relByName[f.Rel]; ok {
				t := ri * 2
				if f.Neg {
					t++
				}
				n[t]++
			}
		}
		m.presizeBase(n)
	}
	// A fact's tuple is encoded into buf: the table copies what it keeps.
	var buf [8]int64
	for i, f := range facts {
		t, tup, _, err := m.encodeInto(f, true, buf[:0])
		if err != nil {
			e := err.(*Error)
			e.Msg = fmt.Sprintf("base fact %d: %s", i+1, e.Msg)
			return nil, e
		}
		m.addBase(t, tup)
	}
	if err := m.evalBase(); err != nil {
		return nil, err
	}
	return m, nil
}

// presizeBase sizes each table's base counts for the n[t] base facts it
// is about to take, at once rather than through every doubling of the
// map.
func (m *Materialization) presizeBase(n []int) {
	for t, k := range n {
		if k > 0 {
			m.base[t] = make(map[int32]int32, k)
		}
	}
}

// addBase takes tup into table t as a base fact; one already there is one
// base support still.
func (m *Materialization) addBase(t int, tup []int64) {
	if r, added := m.tables[t].insert(tup, 0); added {
		m.live++
		m.base[t][r] = 1
	}
}

// evalBase evaluates every rule over the base facts taken.
func (m *Materialization) evalBase() error {
	if err := m.checkTuples(); err != nil {
		return err
	}
	if err := m.evalAll(); err != nil {
		return err
	}
	if err := m.checkDepth(); err != nil {
		return err
	}
	return nil
}

// FactFile is one relation's facts in a Soufflé fact file, as ReadFacts
// reads them: Name is the file's name in error positions.
type FactFile struct {
	Rel  string
	Neg  bool
	Name string
	Data []byte
}

// EvaluateFiles is Evaluate over the facts files hold: the materialization
// and the errors are those of Evaluate over every file's ReadFacts in
// turn. The files are read straight into the relations, so that a large
// input costs its tuples and not a Fact and its arguments a line besides
// (the command line's loading of 100,000 edges, say).
func EvaluateFiles(c *Compiled, files []FactFile, lim Limits) (*Materialization, error) {
	m := newMaterialization(c, lim)
	// A relation not declared is said when its file's turn comes, after
	// the files before it have read, as ReadFacts in turn would.
	scans, tables := make([]*factScanner, 0, len(files)), make([]int, 0, len(files))
	var undeclared error
	n, total := make([]int, len(m.tables)), 0
	for _, f := range files {
		sc, err := scanFacts(c, f.Rel, f.Name, f.Data)
		if err != nil {
			undeclared = err
			break
		}
		t := c.relByName[f.Rel] * 2
		if f.Neg {
			t++
		}
		k := sc.lines()
		n[t] += k
		total += k
		scans, tables = append(scans, sc), append(tables, t)
	}
	if total >= presizeBase {
		m.presizeBase(n)
	}
	var buf [8]int64
	for i, sc := range scans {
		t := tables[i]
		tup := buf[:0]
		if len(sc.cols) > len(buf) {
			tup = make([]int64, 0, len(sc.cols))
		}
		tup = tup[:len(sc.cols)]
		for sc.next() {
			for k, v := range sc.cols {
				if !v.sym {
					tup[k] = v.n
				} else if id, ok := m.symID[v.s]; ok {
					tup[k] = id
				} else {
					// A symbol first seen is copied out of the file,
					// which the symbol table must not keep alive.
					tup[k] = m.internSym(strings.Clone(v.s))
				}
			}
			m.addBase(t, tup)
		}
		if sc.err != nil {
			return nil, sc.err
		}
	}
	if undeclared != nil {
		return nil, undeclared
	}
	if lim.MaxInputs > 0 && total > lim.MaxInputs {
		return nil, errorf(InputBudgetExceeded, Pos{}, "%d base facts exceed the input budget of %d", total, lim.MaxInputs)
	}
	if lim.Loaded != nil {
		lim.Loaded()
	}
	if err := m.evalBase(); err != nil {
		return nil, err
	}
	return m, nil
}

// presizeBase is how many base facts an evaluation takes before it sizes
// the tables' base counts for them first.
const presizeBase = 1024

func (m *Materialization) checkTuples() *Error {
	if m.lim.MaxTuples > 0 && m.live > m.lim.MaxTuples {
		return errorf(TupleBudgetExceeded, Pos{}, "more than %d tuples: the tuple budget is exhausted", m.lim.MaxTuples)
	}
	if m.lim.MaxBytes > 0 {
		if b, over := m.checkMemory(); over {
			return errorf(MemoryBudgetExceeded, Pos{}, "%d bytes of relation storage exceed the memory budget of %d", b, m.lim.MaxBytes)
		}
	}
	return nil
}

// memCheckEvery is how many tuples may be added between two computations
// of the footprint. A computation sums a few sizes per table, so even
// every 65,536 tuples it costs nothing measurable, and between two of them
// storage grows by at most that many rows and one growth per table.
const memCheckEvery = 1 << 16

func (m *Materialization) memEvery() int64 {
	if m.lim.memEvery > 0 {
		return m.lim.memEvery
	}
	return memCheckEvery
}

// checkMemory computes the footprint, schedules the next check and reports
// whether the footprint is over the budget. The footprint depends only on
// the tables' sizes, so the same program and limits stop at the same tuple.
func (m *Materialization) checkMemory() (int64, bool) {
	m.memNext = m.live + m.memEvery()
	b := m.Footprint()
	return b, b > m.lim.MaxBytes
}

// memoryOK is the evaluator's memory check, run when the live count
// reaches memNext; false when the budget is exhausted (the error is
// recorded).
func (x *exec) memoryOK() bool {
	if b, over := x.m.checkMemory(); over {
		return x.fail(errorf(MemoryBudgetExceeded, x.r.pos, "%d bytes of relation storage exceed the memory budget of %d (last rule: %s)", b, x.m.lim.MaxBytes, x.r.text))
	}
	return true
}

func (m *Materialization) evalAll() error {
	m.stats = Stats{}
	for si := range m.c.strata {
		if err := m.evalStratum(si); err != nil {
			return err
		}
		// A stratum may end short of the next periodic check: the
		// budget holds at every stratum's end too.
		if m.lim.MaxBytes > 0 {
			if b, over := m.checkMemory(); over {
				return errorf(MemoryBudgetExceeded, Pos{}, "stratum %d: %d bytes of relation storage exceed the memory budget of %d", si, b, m.lim.MaxBytes)
			}
		}
	}
	m.stats.Tuples = m.live
	m.stats.Bytes = m.Footprint()
	return nil
}

// view selects the rows one body atom reads.
type view struct {
	useList bool
	list    []int32
	useRng  bool
	lo, hi  int32 // range (useRng) or upper bound (rows < hi)
	old     bool  // incremental: the state before the current update
	cur     bool  // incremental: the current state, rows of earlier rounds only
	ranked  bool  // incremental: undeleted rows of rounds below exec.rankLimit
}

// empty reports whether the view selects no rows at all: a relation of
// the stratum being evaluated, read before its first round produced
// anything.
func (v *view) empty() bool {
	return v.hi == 0 && !v.useList && !v.useRng && !v.old && !v.cur && !v.ranked
}

// evalStratum runs stratified semi-naive evaluation of one stratum from
// scratch (its tables hold only base facts so far).
func (m *Materialization) evalStratum(si int) error {
	s := m.c.strata[si]
	if len(s.rules) == 0 {
		return nil
	}
	st := StratumStats{Index: si, Recursive: s.recursive, Relations: s.relations}
	x := m.newExec()
	x.mode = emitInsert
	x.batch = !m.unbatched
	inStratum := func(t int) bool { return m.c.tstratum[t] == si }
	hi := make([]int32, len(m.tables))
	snap := func() {
		for t, tb := range m.tables {
			hi[t] = tb.n
		}
	}
	lo := make([]int32, len(m.tables))
	snap()
	m.round++
	st.Iterations = 1
	before := m.live
	for _, ri := range s.rules {
		r := m.c.rules[ri]
		for ai := range r.atoms {
			x.views[ai] = view{hi: hi[r.atoms[ai].table]}
		}
		if err := x.runRule(r, r.plans[0]); err != nil {
			return err
		}
	}
	if s.recursive {
		copy(lo, hi)
		for {
			snap()
			any := false
			for _, t := range s.tables {
				if hi[t] > lo[t] {
					any = true
				}
			}
			if !any {
				break
			}
			m.round++
			st.Iterations++
			// The facts new in the last round need Iterations-1 rule
			// applications of this stratum, so their proofs are at least
			// that high: stop early (checkDepth decides exactly).
			if m.lim.MaxDepth > 0 && st.Iterations-1 > m.lim.MaxDepth {
				return errorf(DepthExceeded, Pos{}, "stratum %d (%s) derives facts more than %d rule applications deep: derivation depth exceeded", si, st.Relations[0], m.lim.MaxDepth)
			}
			for _, ri := range s.rules {
				r := m.c.rules[ri]
				for d := 0; d < r.npos; d++ {
					dt := r.atoms[d].table
					if !inStratum(dt) || hi[dt] == lo[dt] {
						continue
					}
					for ai := range r.atoms {
						t := r.atoms[ai].table
						switch {
						case ai == d:
							x.views[ai] = view{useRng: true, lo: lo[t], hi: hi[t]}
						case ai < d && ai < r.npos && inStratum(t):
							x.views[ai] = view{hi: lo[t]}
						default:
							x.views[ai] = view{hi: hi[t]}
						}
					}
					if err := x.runRule(r, r.plans[1+d]); err != nil {
						return err
					}
				}
			}
			copy(lo, hi)
		}
	}
	st.Firings = x.firings
	st.NewTuples = m.live - before
	m.stats.Firings += x.firings
	m.addStratum(st)
	if m.lim.Progress != nil && m.undo == nil {
		m.lim.Progress(st.copied())
	}
	return nil
}

type emitMode uint8

const (
	emitInsert  emitMode = iota // add the head tuple to its table
	emitCollect                 // call onMatch for every instantiation
	emitDoom                    // mark the (old) head tuple as over-deleted
)

// exec runs plans. It is reused across rules so registers and key buffers
// are allocated once per stratum, not per tuple.
type exec struct {
	m       *Materialization
	r       *rule
	p       *plan
	regs    []int64
	views   []view
	other   view // the state a delta negation is checked against
	keys    [][]int64
	head    []int64
	rows    []int32 // per atom: the row matched (for supports)
	target  []int64 // stHead: the tuple the head must equal
	mode    emitMode
	onMatch func(regs []int64) bool // emitCollect; false stops
	added   []int32                 // rows inserted or revived (when track)
	doomed  []int32                 // rows over-deleted (emitDoom)
	track   bool
	firings int64
	err     error
	stopped bool // an existence scan finished early (not an error)
	// candOnly makes emitDoom collect candidate rows without deleting them.
	candOnly bool
	// aggOld has the rule's aggregates read the state before the current
	// update (view.old), as the rule's atoms do while an update
	// over-deletes; otherwise they read the current state.
	aggOld    bool
	rankLimit uint32 // ranked views see rows of smaller rounds only
	// countDead has lookups count, on each table, the rows dead since an
	// earlier update that they walk past in an index chain
	// (table.deadWalked). Only an update's evaluators count: queries may
	// run at once and write nothing.
	countDead bool
	// batch makes emitInsert queue head tuples in pend and insert them a
	// block at a time (see flush). Only a from-scratch evaluation of a
	// stratum batches: its scans see rows below a fixed bound, so a tuple
	// inserted a little later is invisible to them either way.
	batch bool
	pend  []int64  // queued head tuples, arity values each
	pendH []uint64 // their hashes, filled by flush
	in    execInline
	// ag is what aggregates need, made by the first (aggExec): one
	// pointer here, so that evaluators of programs without them stay as
	// small as they were.
	ag *aggState
}

// execInline is room inside the evaluator itself for the scratch of a
// small program, which is what most are: an evaluator is built for every
// evaluation, query and support check, and one allocation of the evaluator
// is cheaper than one for it and four more for its slices. A program that
// needs more gets its own slices, sized by its scratchSize.
type execInline struct {
	ints  [24]int64
	views [2]view
	rows  [2]int32
	keys  [4][]int64
	pend  [16]int64
}

func (m *Materialization) newExec() *exec {
	x := &exec{m: m}
	m.carveExec(x)
	return x
}

// updateScratch is what an update keeps: the evaluator and the undo
// record in one allocation, the undo's lists and per-table columns, and
// the outer array of the apply's row lists, which keep their capacity
// from update to update.
type updateScratch struct {
	x      exec
	u      undo
	counts []int32
	lists  [][]int32 // applyChanges' per-table row lists, emptied at each use
	tuples []int64   // applyChanges' encoded changes, read only while it runs
}

// scratch returns m's update scratch, made on the first update.
func (m *Materialization) scratch() *updateScratch {
	if m.spare == nil {
		m.spare = new(updateScratch)
	}
	return m.spare
}

// Scratch is an update's scratch taken from one materialization
// (TakeScratch) for another of the same program to update with
// (UseScratch). The zero Scratch holds none.
type Scratch struct {
	c *Compiled
	s *updateScratch
}

// TakeScratch takes m's update scratch, cleared since its last update, if
// it has one: m's next update makes one of its own. A materialization that
// will not be updated again can give it to one that has none yet, such as
// a fresh clone, whose first update would make it.
func (m *Materialization) TakeScratch() Scratch {
	if m.consumed || m.spare == nil || m.undo != nil {
		return Scratch{}
	}
	s := Scratch{c: m.c, s: m.spare}
	m.spare = nil
	return s
}

// UseScratch gives m the scratch s for its updates, when m has none and s
// holds one taken from a materialization of m's program, and reports
// whether it did. The scratch is then m's alone.
func (m *Materialization) UseScratch(s Scratch) bool {
	if s.s == nil || s.c != m.c || m.consumed || m.spare != nil {
		return false
	}
	m.spare = s.s
	return true
}

// updateExec is newExec for an update, on m's scratch; the update clears
// it with endExec.
func (m *Materialization) updateExec() *exec {
	x := &m.scratch().x
	x.m = m
	m.carveExec(x)
	x.countDead = true
	return x
}

// endExec clears an update's evaluator, dropping everything it points at.
func endExec(x *exec) { *x = exec{} }

// carveExec gives x, fresh or cleared, its scratch for m's program.
func (m *Materialization) carveExec(x *exec) {
	z := m.c.scratch
	// The registers, the head and every step's key share one array, each
	// capped at its own length so that no append reaches a neighbour.
	n := z.regs + z.arity*(1+z.steps)
	var ints []int64
	if n <= len(x.in.ints) {
		ints = x.in.ints[:n]
	} else {
		ints = make([]int64, n)
	}
	carve := func(n int) []int64 {
		s := ints[:n:n]
		ints = ints[n:]
		return s
	}
	x.regs, x.head = carve(z.regs), carve(z.arity)
	x.pend = x.in.pend[:0]
	if z.atoms <= len(x.in.views) {
		x.views, x.rows = x.in.views[:z.atoms:z.atoms], x.in.rows[:z.atoms:z.atoms]
	} else {
		x.views, x.rows = make([]view, z.atoms), make([]int32, z.atoms)
	}
	if z.steps <= len(x.in.keys) {
		x.keys = x.in.keys[:z.steps:z.steps]
	} else {
		x.keys = make([][]int64, z.steps)
	}
	for i := range x.keys {
		x.keys[i] = carve(z.arity)
	}
}

func (x *exec) runRule(r *rule, p *plan) error {
	x.r, x.p = r, p
	if x.ag != nil && len(x.ag.memo) > 0 {
		clear(x.ag.memo) // the values of another pass, or another rule's
	}
	x.run(0)
	if x.err == nil {
		x.flush()
	}
	x.pend = x.pend[:0]
	return x.err
}

// fail records err unless an error came first. Queued head tuples are
// inserted before: they were derived earlier, so a tuple budget they
// exhaust is the error an unbatched evaluation would have met first.
func (x *exec) fail(err *Error) bool {
	if len(x.pend) > 0 {
		x.flush()
	}
	if x.err == nil {
		x.err = err
	}
	return false
}

// eval computes an expression over the registers with C integer semantics
// (Go's truncating / and % agree with C; overflow wraps).
func (x *exec) eval(e *expr) (int64, bool) {
	switch e.kind {
	case exConst:
		return e.val, true
	case exReg:
		return x.regs[e.reg], true
	}
	l, ok := x.eval(e.l)
	if !ok {
		return 0, false
	}
	r, ok := x.eval(e.r)
	if !ok {
		return 0, false
	}
	switch e.op {
	case '+':
		return l + r, true
	case '-':
		return l - r, true
	case '*':
		return l * r, true
	case '/', '%':
		if r == 0 {
			return 0, x.fail(errorf(DivisionByZero, e.pos, "division by zero in rule %s", x.r.text))
		}
		if r == -1 && l == math.MinInt64 {
			if e.op == '/' {
				return l, true // undefined in C; wraps here like every other overflow
			}
			return 0, true
		}
		if e.op == '/' {
			return l / r, true
		}
		return l % r, true
	}
	return 0, x.fail(errorf(SyntaxError, e.pos, "unknown operator %c", e.op))
}

func (x *exec) visible(t *table, v *view, tableIdx int, r int32) bool {
	if v.old {
		if r >= x.m.start[tableIdx] {
			return false
		}
		return !t.died.on() || t.died.get(r) == 0 || t.died.get(r) == x.m.epoch
	}
	if v.cur {
		return (!t.died.on() || t.died.get(r) == 0) && t.round.get(r) < x.m.round
	}
	if v.ranked {
		return t.died.get(r) == 0 && t.round.get(r) < x.rankLimit
	}
	return r < v.hi && (!t.died.on() || t.died.get(r) == 0)
}

// walkedPast counts row r of t, which a lookup walked past in an index
// chain, when it died in an earlier update: no view will see it again,
// and it stays in its chains until the table is compacted.
func (x *exec) walkedPast(t *table, r int32) {
	if x.countDead {
		if d := t.died.get(r); d != 0 && d != x.m.epoch {
			t.deadWalked++
		}
	}
}

// match binds and checks one row against a scan step.
func (x *exec) match(s *step, t *table, r int32) bool {
	row := t.words(r)
	for _, b := range s.binds {
		x.regs[b.reg] = t.val(row, b.col)
	}
	for _, c := range s.checks {
		var v int64
		if c.e.kind == exReg {
			v = x.regs[c.e.reg]
		} else if c.e.kind == exConst {
			v = c.e.val
		} else {
			var ok bool
			if v, ok = x.eval(c.e); !ok {
				return false
			}
		}
		if t.val(row, c.col) != v {
			return false
		}
	}
	return true
}

func (x *exec) run(i int) bool {
	if i == len(x.p.steps) {
		return x.emit()
	}
	s := &x.p.steps[i]
	switch s.kind {
	case stScan:
		t := x.m.tables[s.table]
		v := &x.views[s.atom]
		switch {
		case v.useList:
			for _, r := range v.list {
				if x.match(s, t, r) && !x.next(s, r, i) {
					return x.endScan()
				}
			}
		case v.useRng:
			for r := v.lo; r < v.hi; r++ {
				if t.died.on() && t.died.get(r) != 0 {
					continue
				}
				if x.match(s, t, r) && !x.next(s, r, i) {
					return x.endScan()
				}
			}
		case s.ix == probeSet:
			key := x.keys[i][:len(s.key)]
			for k, e := range s.key {
				val, ok := x.eval(e)
				if !ok {
					return false
				}
				key[k] = val
			}
			if r := t.find(key); r >= 0 && x.visible(t, v, s.table, r) && !x.next(s, r, i) {
				return x.endScan()
			}
		case s.ix >= 0:
			key := x.keys[i][:len(s.key)]
			for k, e := range s.key {
				switch e.kind {
				case exReg:
					key[k] = x.regs[e.reg]
				case exConst:
					key[k] = e.val
				default:
					val, ok := x.eval(e)
					if !ok {
						return false
					}
					key[k] = val
				}
			}
			if v.empty() {
				// Nothing to find; building the index now would keep it
				// up to date through every later insert for nothing (a
				// first-round plan reading a recursive relation).
				return x.err == nil
			}
			ix := t.index(s.ix)
			for r := ix.lookup(t, key); r >= 0; r = ix.next[r] {
				if !x.visible(t, v, s.table, r) {
					x.walkedPast(t, r)
					continue
				}
				if x.match(s, t, r) && !x.next(s, r, i) {
					return x.endScan()
				}
			}
		default:
			n := t.n
			for r := int32(0); r < n; r++ {
				if !x.visible(t, v, s.table, r) {
					continue
				}
				if x.match(s, t, r) && !x.next(s, r, i) {
					return x.endScan()
				}
			}
		}
		return x.err == nil
	case stNot:
		t := x.m.tables[s.table]
		v := &x.views[s.atom]
		if s.other {
			v = &x.other
		}
		key := x.keys[i]
		if s.ix >= 0 {
			key = key[:0]
			for _, e := range s.args {
				if e != nil {
					val, ok := x.eval(e)
					if !ok {
						return false
					}
					key = append(key, val)
				}
			}
			ix := t.index(s.ix)
			for r := ix.lookup(t, key); r >= 0; r = ix.next[r] {
				if x.visible(t, v, s.table, r) {
					return true // a matching row exists: negation fails
				}
				x.walkedPast(t, r)
			}
			return x.run(i + 1)
		}
		if len(s.args) > 0 && s.args[0] == nil {
			// every argument is a wildcard
			for r := int32(0); r < t.n; r++ {
				if x.visible(t, v, s.table, r) {
					return true
				}
			}
			return x.run(i + 1)
		}
		key = key[:len(s.args)]
		for k, e := range s.args {
			val, ok := x.eval(e)
			if !ok {
				return false
			}
			key[k] = val
		}
		if r := t.find(key); r >= 0 && x.visible(t, v, s.table, r) {
			return true
		}
		return x.run(i + 1)
	case stFilter:
		l, ok := x.eval(s.l)
		if !ok {
			return false
		}
		r, ok := x.eval(s.r)
		if !ok {
			return false
		}
		var pass bool
		switch s.op {
		case "=":
			pass = l == r
		case "!=":
			pass = l != r
		case "<":
			pass = l < r
		case "<=":
			pass = l <= r
		case ">":
			pass = l > r
		case ">=":
			pass = l >= r
		}
		if !pass {
			return true
		}
		return x.run(i + 1)
	case stAssign:
		v, ok := x.eval(s.e)
		if !ok {
			return false
		}
		x.regs[s.reg] = v
		return x.run(i + 1)
	case stAgg:
		v, ok := x.aggregate(&x.r.aggs[s.atom], false)
		if !ok {
			return x.err == nil
		}
		x.regs[s.reg] = v
		return x.run(i + 1)
	case stHead:
		for k, e := range x.r.hargs {
			v, ok := x.eval(e)
			if !ok {
				return false
			}
			if v != x.target[k] {
				return true
			}
		}
		return x.run(i + 1)
	}
	return true
}

// next records the matched row and runs the rest of the plan.
func (x *exec) next(s *step, r int32, i int) bool {
	x.rows[s.atom] = r
	if !x.run(i + 1) {
		return false
	}
	// An atom that binds nothing is an existence test: once one row
	// matched, the rest of the plan has run for every binding it could
	// see, so other rows would only repeat the same instantiations
	// (supports still enumerate each matching row).
	return len(s.binds) != 0 || x.mode == emitCollect || x.stopScan()
}

// endScan is what a scan loop returns when the rest of its plan said
// stop: true (go on with the enclosing loops) when it was an existence
// scan finishing early, false when evaluation must abort.
func (x *exec) endScan() bool {
	if x.stopped {
		x.stopped = false
		return x.err == nil
	}
	return false
}

// stopScan ends the current scan early: it reports false to the scan loop
// after setting a flag that tells run not to treat it as an abort.
func (x *exec) stopScan() bool {
	x.stopped = true
	return false
}

func (x *exec) emit() bool {
	if x.mode == emitCollect {
		return x.onMatch(x.regs)
	}
	if x.mode == emitDoom {
		return x.doom()
	}
	x.firings++
	if x.m.lim.MaxFirings > 0 && x.m.stats.Firings+x.firings > x.m.lim.MaxFirings {
		return x.fail(errorf(RuleBudgetExhausted, x.r.pos, "more than %d rule firings: the rule budget is exhausted (last rule: %s)", x.m.lim.MaxFirings, x.r.text))
	}
	h := x.head[:len(x.r.hargs)]
	for k, e := range x.r.hargs {
		switch e.kind {
		case exReg:
			h[k] = x.regs[e.reg]
		case exConst:
			h[k] = e.val
		default:
			v, ok := x.eval(e)
			if !ok {
				return false
			}
			h[k] = v
		}
	}
	if x.batch && len(h) > 0 {
		if len(x.pend)+len(h) > cap(x.pend) {
			// Past the few tuples the evaluator holds inline, take
			// room for a whole block at once.
			p := make([]int64, len(x.pend), insertBatch*len(h))
			copy(p, x.pend)
			x.pend = p
		}
		x.pend = append(x.pend, h...)
		if len(x.pend) >= insertBatch*len(h) {
			return x.flush()
		}
		return true
	}
	t := x.m.tables[x.r.head]
	r, added := t.insert(h, x.m.round)
	if added {
		x.m.live++
		if x.m.lim.MaxTuples > 0 && x.m.live > x.m.lim.MaxTuples {
			return x.fail(errorf(TupleBudgetExceeded, x.r.pos, "more than %d tuples: the tuple budget is exhausted (last rule: %s)", x.m.lim.MaxTuples, x.r.text))
		}
		if x.m.live >= x.m.memNext && !x.memoryOK() {
			return false
		}
		if x.track {
			x.added = append(x.added, r)
		}
	} else if x.track && t.died.on() && t.died.get(r) == x.m.epoch {
		// rederived in an update: it counts as new for propagation
		x.m.revive(x.r.head, r)
		x.added = append(x.added, r)
	}
	return true
}

// insertBatch is how many head tuples a batching evaluator queues before
// inserting them. Most derivations of a large closure are duplicates whose
// cost is a cache miss on a random hash slot; a block of them lets the
// misses overlap (see rowSet.warm). A block's tuples stay in the cache
// until they are inserted.
const insertBatch = 128

// smallFlush is the fewest queued tuples a flush reads ahead for.
const smallFlush = 8

// flush inserts the queued head tuples in the order they were derived,
// so rows get the numbers an unbatched evaluation gives them.
func (x *exec) flush() bool {
	a := len(x.r.hargs)
	n := len(x.pend) / max(a, 1)
	if n == 0 {
		return true
	}
	pend := x.pend
	x.pend = x.pend[:0] // a failure below must not flush these again
	t := x.m.tables[x.r.head]
	if n < smallFlush {
		// Too few to be worth a first pass (and the hashes' array):
		// what a small program's rules derive.
		for k := range n {
			if _, added := t.insert(pend[k*a:(k+1)*a], x.m.round); added && !x.counted() {
				return false
			}
		}
		return true
	}
	if cap(x.pendH) < n {
		x.pendH = make([]uint64, insertBatch)
	}
	hs := x.pendH[:n]
	for k := range hs {
		hs[k] = hashTuple(pend[k*a : (k+1)*a])
	}
	t.set.warm(t, hs)
	for k, h := range hs {
		if _, added := t.insertHashed(pend[k*a:(k+1)*a], h, x.m.round); added && !x.counted() {
			return false
		}
	}
	return true
}

// counted counts a tuple a flush added; false when that exhausts the tuple
// budget (the error is recorded).
func (x *exec) counted() bool {
	x.m.live++
	if x.m.lim.MaxTuples > 0 && x.m.live > x.m.lim.MaxTuples {
		return x.fail(errorf(TupleBudgetExceeded, x.r.pos, "more than %d tuples: the tuple budget is exhausted (last rule: %s)", x.m.lim.MaxTuples, x.r.text))
	}
	if x.m.live >= x.m.memNext {
		return x.memoryOK()
	}
	return true
}
