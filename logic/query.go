package logic

import (
	"math"
	"slices"
	"sync"
)

// Tuples returns the tuples of one side of a relation (neg selects the
// explicitly negated side), sorted by value: numbers numerically, symbols
// bytewise, column by column.
func (m *Materialization) Tuples(rel string, neg bool) ([][]Value, error) {
	if m.consumed {
		return nil, errConsumed()
	}
	ri, ok := m.c.relByName[rel]
	if !ok {
		return nil, errorf(UndeclaredRelation, Pos{}, "relation %s is not declared", rel)
	}
	t := ri * 2
	if neg {
		t++
	}
	rows := m.sortedRows(t)
	out := make([][]Value, len(rows))
	tup := make([]int64, m.tables[t].arity)
	for i, r := range rows {
		out[i] = m.decode(t, m.tables[t].load(r, tup)).Args
	}
	return out, nil
}

// Count returns the number of tuples of one side of a relation.
func (m *Materialization) Count(rel string, neg bool) int {
	ri, ok := m.c.relByName[rel]
	if !ok || m.consumed {
		return 0
	}
	t := ri * 2
	if neg {
		t++
	}
	return m.tables[t].liveRows()
}

// Has reports whether a signed fact has support.
func (m *Materialization) Has(f Fact) (bool, error) {
	var buf [8]int64 // the tuple is looked up, never kept
	t, tup, ok, err := m.encodeInto(f, false, buf[:0])
	if err != nil || !ok {
		return false, err
	}
	tb := m.tables[t]
	r := tb.find(tup)
	return r >= 0 && tb.alive(r), nil
}

// State returns the four-valued state of an atom (its sign is ignored).
func (m *Materialization) State(atom Fact) (TruthState, error) {
	atom.Neg = false
	pos, err := m.Has(atom)
	if err != nil {
		return Neither, err
	}
	atom.Neg = true
	neg, err := m.Has(atom)
	if err != nil {
		return Neither, err
	}
	return stateOf(pos, neg), nil
}

// Absence is a default-negation witness: no tuple of the (signed) pattern
// has support in the completed stratum that holds it. Wildcard marks the
// arguments that were `_`.
type Absence struct {
	Pattern  Fact
	Wildcard []bool
	Stratum  int
}

func (a Absence) String() string {
	var buf [96]byte
	return string(a.appendText(buf[:0]))
}

// Support is one reason a signed fact holds: either base support (named
// supports in BaseIDs when the fact came through [Solve]) or one
// instantiation of a rule whose premises hold and whose negated atoms are
// absent.
type Support struct {
	Base     bool
	BaseIDs  []string
	Rule     int // rule index in source order, -1 for base support
	RuleText string
	RulePos  Pos
	Premises []Fact
	Absent   []Absence
	// Aggregates are the values the rule's aggregates took, in the
	// rule's order.
	Aggregates []Aggregation
	rows       []int32 // premise rows, parallel to Premises
	tables     []int32 // premise tables, parallel to Premises
}

func (s Support) String() string {
	var buf [256]byte
	b, _ := s.AppendText(buf[:0])
	return string(b)
}

// Supports returns every support of a signed fact that holds in m: its
// base support first, then each satisfied rule instantiation in rule order
// and premise order. A fact without support has none.
func (m *Materialization) Supports(f Fact) ([]Support, error) {
	t, tup, ok, err := m.encode(f, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	l := m.lookup()
	defer l.release()
	return m.supportsIn(t, tup, &l.q)
}

// SupportsBoth returns what Supports returns for f as a positive fact and
// for f negated (f.Neg is ignored), each with its own error, from one
// encoding of the fact and one evaluator for both.
func (m *Materialization) SupportsBoth(f Fact) (pos, neg []Support, posErr, negErr error) {
	f.Neg = false
	t, tup, ok, err := m.encode(f, false)
	if err != nil {
		return nil, nil, err, err
	}
	if !ok {
		return nil, nil, nil, nil
	}
	l := m.lookup()
	pos, posErr = m.supportsIn(t, tup, &l.q)
	neg, negErr = m.supportsIn(t+1, tup, &l.q)
	l.release()
	return pos, neg, posErr, negErr
}

// EachSupportBoth calls each with every support SupportsBoth returns for
// f, as they are found rather than collected and sorted: those of f as a
// positive fact with neg false, then those of f negated with neg true
// (every positive one before any negative one). The
// Support handed to each, and every list in it, is the lookup's scratch:
// valid only during the call, and not to be changed or kept. A side's
// error is SupportsBoth's; each may have been called for that side before
// it, and those calls are then to be disregarded. For a caller that reads
// each support once, such as one that names it by its text, no support's
// lists are allocated (TestEachSupportBothIsSupportsBoth).
func (m *Materialization) EachSupportBoth(f Fact, each func(neg bool, s *Support)) (posErr, negErr error) {
	f.Neg = false
	t, tup, ok, err := m.encode(f, false)
	if err != nil {
		return err, err
	}
	if !ok {
		return nil, nil
	}
	l := m.lookup()
	l.c.each = each
	posErr = m.eachSupportIn(t, tup, l, false)
	negErr = m.eachSupportIn(t+1, tup, l, true)
	l.release()
	return posErr, negErr
}

// eachSupportIn is supportsIn handing each support to l's collector's
// each, with neg, as it is found, built in l's scratch.
func (m *Materialization) eachSupportIn(t int, tup []int64, l *supportLookup, neg bool) error {
	x, c := &l.x, &l.c
	c.s, c.neg = &l.s, neg
	tb := m.tables[t]
	if r := tb.find(tup); r >= 0 && tb.alive(r) && m.base[t][r] > 0 {
		l.s.sup = Support{Base: true, Rule: -1, BaseIDs: m.sharedBaseIDs(t, tup, &l.s)}
		c.each(neg, &l.s.sup)
	}
	started := false
	for _, r := range m.c.rules {
		if r.head != t {
			continue
		}
		if !started {
			x.onMatch, started = l.q.match, true
		}
		if err := m.runSupportRule(x, c, r, tup); err != nil {
			return err
		}
	}
	return nil
}

// runSupportRule runs rule r over the tuple tup for its instantiations,
// each handed to c's match.
func (m *Materialization) runSupportRule(x *exec, c *supportCollector, r *rule, tup []int64) error {
	x.mode = emitCollect
	for ai := range r.atoms {
		x.views[ai] = view{hi: math.MaxInt32}
	}
	c.rr = r
	x.target = tup
	for k, e := range r.hargs {
		if e.kind == exReg {
			x.regs[e.reg] = tup[k]
		}
	}
	x.err = nil
	return x.runRule(r, r.headPlan)
}

// supportLookup is a supportQuery with its evaluator and collector in one
// allocation, the collector's callback bound once. Lookups may run at the
// same time on one materialization, so none is kept on it: a lookup takes
// one from supportLookups and gives it back cleared, holding nothing of
// the materialization or of what it returned. s is the scratch
// EachSupportBoth builds supports in, whose arrays are kept, emptied.
type supportLookup struct {
	q supportQuery
	x exec
	c supportCollector
	s supportScratch
}

// supportScratch is where EachSupportBoth builds each support it hands
// out: the lists of one support at a time, reused for the next.
type supportScratch struct {
	sup     Support // the support handed out
	prem    []Fact
	args    []Value // the premises' arguments
	absent  []Absence
	wild    []bool  // the absences' wildcards
	absArgs []Value // the absences' patterns' arguments
	vals    []int64 // one absence's pattern, encoded
	key     []byte  // a base fact's text, its ledger key
}

// clear drops every value the scratch holds, keeping its arrays.
func (s *supportScratch) clear() {
	s.sup = Support{}
	clear(s.prem[:cap(s.prem)])
	clear(s.args[:cap(s.args)])
	clear(s.absent[:cap(s.absent)])
	clear(s.absArgs[:cap(s.absArgs)])
}

// grown returns b emptied with room for n, reusing its array when it has
// the room.
func grown[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, 0, n)
	}
	return b[:0]
}

var supportLookups = sync.Pool{New: func() any {
	l := new(supportLookup)
	l.q.match = l.c.match
	return l
}}

// lookup returns a cleared supportLookup set up for m: what newExec and a
// new collector would give.
func (m *Materialization) lookup() *supportLookup {
	l := supportLookups.Get().(*supportLookup)
	l.x.m = m
	m.carveExec(&l.x)
	l.c.m, l.c.x = m, &l.x
	l.q.x, l.q.c = &l.x, &l.c
	return l
}

// release clears l and returns it to supportLookups.
func (l *supportLookup) release() {
	l.x, l.c = exec{}, supportCollector{}
	l.s.clear()
	l.q.x, l.q.c = nil, nil
	supportLookups.Put(l)
}

// supports enumerates supports of a tuple; views are all-visible unless
// custom is given (used by rederivation with a restricted state).
func (m *Materialization) supports(t int, tup []int64, x *exec) ([]Support, error) {
	return m.supportsIn(t, tup, &supportQuery{x: x})
}

// supportQuery is what lookups of supports can share: the evaluator and
// the collector with its callback, each made when a first rule can derive
// the tuple looked up.
type supportQuery struct {
	x     *exec
	c     *supportCollector
	match func([]int64) bool
}

// supportsIn is supports with the evaluator and collector q holds, or
// makes and keeps in q.
func (m *Materialization) supportsIn(t int, tup []int64, q *supportQuery) ([]Support, error) {
	var out []Support
	tb := m.tables[t]
	if r := tb.find(tup); r >= 0 && tb.alive(r) && m.base[t][r] > 0 {
		out = append(out, Support{Base: true, Rule: -1, BaseIDs: m.baseIDs(t, tup)})
	}
	// The collector, with the evaluator, is made on the first rule that
	// can derive the tuple: a base relation's supports need neither. One
	// collector serves every rule (a closure per rule, and the variables
	// it shared, were allocations of their own).
	var c *supportCollector
	var x *exec
	for _, r := range m.c.rules {
		if r.head != t {
			continue
		}
		if c == nil {
			if q.x == nil {
				q.x = m.newExec()
			}
			if q.c == nil {
				q.c = &supportCollector{m: m, x: q.x}
				q.match = q.c.match
			}
			c, x = q.c, q.x
			c.out = out
			x.onMatch = q.match
		}
		if err := m.runSupportRule(x, c, r, tup); err != nil {
			return nil, err
		}
	}
	if c != nil {
		out, c.out = c.out, nil
	}
	slices.SortStableFunc(out, compareSupports)
	return out, nil
}

// supportRoom holds a small support's premises, their rows and tables,
// and their arguments: one allocation for the three lists, each capped at
// its own length.
type supportRoom struct {
	prem [2]Fact
	rt   [4]int32
	args [4]Value
}

// firstSupportRoom is a lookup's list of supports, room for one, and
// that support's supportRoom.
type firstSupportRoom struct {
	out  [1]Support
	room supportRoom
}

// supportCollector gathers the supports one rule's instantiations give:
// match is the evaluator's callback for the rule in hand (rr).
type supportCollector struct {
	m   *Materialization
	x   *exec
	rr  *rule
	out []Support
	// each, when set (EachSupportBoth), is handed each support, built in
	// s, with neg, instead of its being collected in out.
	each func(neg bool, s *Support)
	neg  bool
	s    *supportScratch
}

func (c *supportCollector) match(regs []int64) bool {
	if c.each != nil {
		return c.matchEach()
	}
	m, x, rr := c.m, c.x, c.rr
	s := Support{Rule: rr.id, RuleText: rr.text, RulePos: rr.pos}
	if rr.npos > 0 {
		// Sized once: the premises are known before they are read.
		// Their rows and tables share one array, and their
		// arguments another, each premise's capped at its own.
		var rt []int32
		var args []Value
		if rr.npos <= len(supportRoom{}.prem) && rr.pargs <= len(supportRoom{}.args) {
			// A small support's lists share one allocation; a lookup's
			// first support, the list that holds it too.
			var o *supportRoom
			if c.out == nil {
				f := new(firstSupportRoom)
				o, c.out = &f.room, f.out[:0:len(f.out)]
			} else {
				o = new(supportRoom)
			}
			s.Premises = o.prem[:rr.npos:rr.npos]
			rt, args = o.rt[:2*rr.npos:2*rr.npos], o.args[:rr.pargs:rr.pargs]
		} else {
			s.Premises = make([]Fact, rr.npos)
			rt, args = make([]int32, 2*rr.npos), make([]Value, rr.pargs)
		}
		s.rows, s.tables = rt[:rr.npos:rr.npos], rt[rr.npos:]
		for ai := 0; ai < rr.npos; ai++ {
			at := rr.atoms[ai].table
			row := x.rows[ai]
			n := len(rr.atoms[ai].args)
			s.Premises[ai] = m.decodeInto(at, m.tables[at].tuple(row), args[:n:n])
			args = args[n:]
			s.rows[ai], s.tables[ai] = row, int32(at)
		}
	}
	if n := len(rr.atoms) - rr.npos; n > 0 {
		s.Absent = make([]Absence, 0, n)
	}
	for ai := rr.npos; ai < len(rr.atoms); ai++ {
		a := &rr.atoms[ai]
		ab := Absence{Stratum: m.c.tstratum[a.table], Wildcard: make([]bool, len(a.args))}
		vals := make([]int64, len(a.args))
		for k, e := range a.args {
			if e == nil {
				ab.Wildcard[k] = true
				continue
			}
			v, _ := x.eval(e)
			vals[k] = v
		}
		ab.Pattern = m.decode(a.table, vals)
		for k := range ab.Wildcard {
			if ab.Wildcard[k] {
				ab.Pattern.Args[k] = Value{}
			}
		}
		s.Absent = append(s.Absent, ab)
	}
	if len(rr.aggs) > 0 {
		s.Aggregates = m.aggregations(x)
	}
	c.out = append(c.out, s)
	return true
}

// matchEach is match building the support in the scratch and handing it
// to each: the same support, its premises and absences decoded alike,
// without its premises' rows and tables, which only a collected support
// keeps.
func (c *supportCollector) matchEach() bool {
	m, x, rr, sc := c.m, c.x, c.rr, c.s
	sc.sup = Support{Rule: rr.id, RuleText: rr.text, RulePos: rr.pos}
	s := &sc.sup
	if rr.npos > 0 {
		sc.prem = grown(sc.prem, rr.npos)[:rr.npos]
		sc.args = grown(sc.args, rr.pargs)[:rr.pargs]
		args := sc.args
		for ai := 0; ai < rr.npos; ai++ {
			at := rr.atoms[ai].table
			n := len(rr.atoms[ai].args)
			sc.prem[ai] = m.decodeInto(at, m.tables[at].tuple(x.rows[ai]), args[:n:n])
			args = args[n:]
		}
		s.Premises = sc.prem
	}
	if n := len(rr.atoms) - rr.npos; n > 0 {
		nargs := 0
		for ai := rr.npos; ai < len(rr.atoms); ai++ {
			nargs += len(rr.atoms[ai].args)
		}
		sc.absent = grown(sc.absent, n)
		wild, pat := grown(sc.wild, nargs)[:nargs], grown(sc.absArgs, nargs)[:nargs]
		sc.wild, sc.absArgs = wild, pat
		for ai := rr.npos; ai < len(rr.atoms); ai++ {
			a := &rr.atoms[ai]
			k := len(a.args)
			ab := Absence{Stratum: m.c.tstratum[a.table], Wildcard: wild[:k:k]}
			sc.vals = grown(sc.vals, k)[:k]
			for j, e := range a.args {
				ab.Wildcard[j] = e == nil
				sc.vals[j] = 0
				if e != nil {
					sc.vals[j], _ = x.eval(e)
				}
			}
			ab.Pattern = m.decodeInto(a.table, sc.vals, pat[:k:k])
			for j := range ab.Wildcard {
				if ab.Wildcard[j] {
					ab.Pattern.Args[j] = Value{}
				}
			}
			sc.absent = append(sc.absent, ab)
			wild, pat = wild[k:], pat[k:]
		}
		s.Absent = sc.absent
	}
	if len(rr.aggs) > 0 {
		s.Aggregates = m.aggregations(x)
	}
	c.each(c.neg, s)
	return true
}

// compareSupports orders supports deterministically: base first, then by
// rule, premises and absences, independent of storage order.
func compareSupports(a, b Support) int {
	if a.Rule != b.Rule {
		return a.Rule - b.Rule
	}
	for i := 0; i < len(a.Premises) && i < len(b.Premises); i++ {
		if c := compareFacts(a.Premises[i], b.Premises[i]); c != 0 {
			return c
		}
	}
	for i := 0; i < len(a.Absent) && i < len(b.Absent); i++ {
		if c := compareFacts(a.Absent[i].Pattern, b.Absent[i].Pattern); c != 0 {
			return c
		}
	}
	return 0
}

// Proof is a well-founded proof tree for a signed fact: a base support, or
// a rule with the proofs of its premises and the absences it relied on.
// Proofs of shared premises are the same *Proof value.
type Proof struct {
	Fact     Fact
	Base     bool
	BaseIDs  []string
	Rule     int
	RuleText string
	RulePos  Pos
	Premises []*Proof
	Absent   []Absence
	// Aggregates are the values the rule's aggregates took, with the
	// facts each ranged over (see [Aggregation]).
	Aggregates []Aggregation
}

// Explanation is the answer to "why": an atom's state and one proof for
// each side that holds (two for a BOTH conflict).
type Explanation struct {
	Atom     Fact
	State    TruthState
	Positive *Proof
	Negative *Proof
}

// Why explains an atom: its state, and a minimal proof of each side present.
func (m *Materialization) Why(atom Fact) (*Explanation, error) {
	atom.Neg = false
	st, err := m.State(atom)
	if err != nil {
		return nil, err
	}
	e := &Explanation{Atom: atom, State: st}
	if st == TrueOnly || st == Both {
		if e.Positive, err = m.Explain(atom); err != nil {
			return nil, err
		}
	}
	if st == FalseOnly || st == Both {
		neg := atom
		neg.Neg = true
		if e.Negative, err = m.Explain(neg); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Explain returns a minimal proof tree for a signed fact: among all
// well-founded proofs it picks, at every node, a support of least height
// (the height of a base fact is 0, of a derived fact one more than its
// highest premise), ties broken by rule and premise order. Heights are
// computed over the fact's backward closure in the current state (a
// Knuth-style generalization of Dijkstra's algorithm), so the proof never
// depends on evaluation history or storage order.
func (m *Materialization) Explain(f Fact) (*Proof, error) {
	t, tup, ok, err := m.encode(f, false)
	if err != nil {
		return nil, err
	}
	r := int32(-1)
	if ok {
		r = m.tables[t].find(tup)
	}
	if r < 0 || !m.tables[t].alive(r) {
		return nil, errorf(UnknownFact, Pos{}, "%s has no support", f)
	}
	return m.explainRow(t, r)
}

type proofNode struct {
	t     int
	r     int32
	sups  []Support
	level int
	done  bool
	proof *Proof
}

type supRef struct{ node, sup int }

func (m *Materialization) explainRow(t int, r int32) (*Proof, error) {
	x := m.newExec()
	index := map[[2]int32]int{}
	var nodes []*proofNode
	var users [][]supRef
	var add func(t int, r int32) (int, error)
	add = func(t int, r int32) (int, error) {
		k := [2]int32{int32(t), r}
		if i, ok := index[k]; ok {
			return i, nil
		}
		i := len(nodes)
		index[k] = i
		n := &proofNode{t: t, r: r, level: -1}
		nodes = append(nodes, n)
		users = append(users, nil)
		if m.base[t][r] > 0 {
			return i, nil
		}
		sups, err := m.supports(t, m.tables[t].tuple(r), x)
		if err != nil {
			return 0, err
		}
		n.sups = sups
		return i, nil
	}
	if _, err := add(t, r); err != nil {
		return nil, err
	}
	// Discover the backward closure breadth first.
	for i := 0; i < len(nodes); i++ {
		for si, s := range nodes[i].sups {
			for k, pr := range s.rows {
				j, err := add(int(s.tables[k]), pr)
				if err != nil {
					return nil, err
				}
				users[j] = append(users[j], supRef{i, si})
			}
		}
	}
	// Finalize heights in increasing order.
	remaining := make([][]int, len(nodes))
	var buckets [][]int
	push := func(node, level int) {
		for len(buckets) <= level {
			buckets = append(buckets, nil)
		}
		buckets[level] = append(buckets[level], node)
	}
	for i, n := range nodes {
		if m.base[n.t][n.r] > 0 {
			push(i, 0)
			continue
		}
		remaining[i] = make([]int, len(n.sups))
		for si, s := range n.sups {
			remaining[i][si] = len(s.rows)
			if len(s.rows) == 0 {
				push(i, 1)
			}
		}
	}
	for level := 0; level < len(buckets); level++ {
		for _, i := range buckets[level] {
			n := nodes[i]
			if n.done {
				continue
			}
			n.done, n.level = true, level
			for _, u := range users[i] {
				remaining[u.node][u.sup]--
				if remaining[u.node][u.sup] == 0 {
					push(u.node, level+1)
				}
			}
		}
	}
	var build func(i int) (*Proof, error)
	build = func(i int) (*Proof, error) {
		n := nodes[i]
		if n.proof != nil {
			return n.proof, nil
		}
		tup := m.tables[n.t].tuple(n.r)
		p := &Proof{Fact: m.decode(n.t, tup), Rule: -1}
		n.proof = p
		if m.base[n.t][n.r] > 0 {
			p.Base = true
			p.BaseIDs = m.baseIDs(n.t, tup)
			return p, nil
		}
		best, bestLevel := -1, 0
		for si, s := range n.sups {
			h := 1
			ok := true
			for k, pr := range s.rows {
				pn := nodes[index[[2]int32{s.tables[k], pr}]]
				if !pn.done || pn.level >= n.level {
					ok = false
					break
				}
				h = max(h, pn.level+1)
			}
			if ok && (best < 0 || h < bestLevel) {
				best, bestLevel = si, h
			}
		}
		if best < 0 {
			return nil, errorf(UnknownFact, Pos{}, "internal error: %s has no well-founded support", p.Fact)
		}
		s := n.sups[best]
		p.Rule, p.RuleText, p.RulePos, p.Absent, p.Aggregates = s.Rule, s.RuleText, s.RulePos, s.Absent, s.Aggregates
		for k, pr := range s.rows {
			sub, err := build(index[[2]int32{int32(s.tables[k]), pr}])
			if err != nil {
				return nil, err
			}
			p.Premises = append(p.Premises, sub)
		}
		return p, nil
	}
	return build(0)
}

// Conflict is an atom in state BOTH with the supports of each side.
type Conflict struct {
	Atom     Fact
	Positive []Support
	Negative []Support
}

// Conflicts lists every BOTH atom, sorted by relation and arguments.
func (m *Materialization) Conflicts() ([]Conflict, error) {
	if m.consumed {
		return nil, errConsumed()
	}
	var atoms []Fact
	for ri := range m.c.rels {
		pt, nt := m.tables[ri*2], m.tables[ri*2+1]
		if nt.liveRows() == 0 || pt.liveRows() == 0 {
			continue
		}
		for r := int32(0); r < nt.n; r++ {
			if !nt.alive(r) {
				continue
			}
			tup := nt.tuple(r)
			if pr := pt.find(tup); pr >= 0 && pt.alive(pr) {
				atoms = append(atoms, m.decode(ri*2, tup))
			}
		}
	}
	slices.SortFunc(atoms, compareFacts)
	out := make([]Conflict, 0, len(atoms))
	for _, a := range atoms {
		c := Conflict{Atom: a}
		var err error
		if c.Positive, err = m.Supports(a); err != nil {
			return nil, err
		}
		neg := a
		neg.Neg = true
		if c.Negative, err = m.Supports(neg); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
