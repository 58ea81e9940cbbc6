package authority

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
)

// flatEngine evaluates a "flat" gate policy directly: every rule derives a
// gate output or a helper relation from ticket facts, fact-only helper
// relations and helpers derived before it, with positive literals, default
// negation and comparisons, but no arithmetic and no recursion. Most gate
// policies are flat; for them a direct join over one ticket's dozen facts
// is far cheaper than materializing the program. Anything else is
// evaluated by the logic engine, which is also this evaluator's oracle in
// the tests.
type flatEngine struct {
	rules []flatRule
	// derived holds the rules of the derived helper relations, one group
	// per relation, each group after those of the relations it reads: a
	// run derives every helper's rows before any gate output's rule reads
	// them.
	derived []flatGroup
	helpers map[string][][]logic.Value // fact-only helper relations
	relID   map[string]int             // every relation a body reads
	// relNames names the relation of each id; a policy reads a handful
	// of relations, and a run looks each of its facts up (relOf).
	relNames []string
	lim      logic.Limits
	// guards index rules by one symbol constant of a positive literal: a
	// rule can fire only when some row of that relation carries that
	// symbol at that position, so a ticket's handful of rows selects the
	// few rules worth joining instead of every rule being tried. Rules
	// without such a constant are always tried (unguarded).
	guards    map[guardKey][]int32
	guardPos  [][]int // by relation id: the positions some guard reads
	unguarded []int32
	maxVars   int
	outID     map[string]int // gate output relation -> slot in flatRun.out
}

// guardKey is a (relation, position, symbol) a rule requires of some row.
type guardKey struct {
	rel, pos int
	sym      string
}

// flatOutputs are the gate output relations in a fixed order; a run keeps
// the tuples of each in its own slot.
var flatOutputs = [...]string{"decision", "shape_max", "shape_scope", "option", "assess", QuorumRelation, ApproverRelation}

// The slots of flatOutputs, by name.
const (
	outDecision = iota
	outShapeMax
	outShapeScope
	outOption
	outAssess
	outQuorum
	outApprover
)

// flatGroup is the rules of one derived helper relation.
type flatGroup struct {
	rel   int // the relation's id
	rules []flatRule
}

type flatRule struct {
	head string
	// helper is the head's relation id when the rule derives a helper
	// relation, -1 when it derives a gate output.
	helper int
	// out is a gate output's slot in flatRun.out (outID of head), set
	// when the policy is indexed.
	out   int
	args  []fterm
	pos   []flatLit // positive literals, in source order
	neg   []flatLit // default-negated literals
	cmps  []flatCmp
	nvars int
	// where is the rule's source position as its reasons print it,
	// rendered once when the policy is compiled.
	where string
}

// fterm is a compiled term: a wildcard, a variable slot or a constant.
type fterm struct {
	kind uint8 // termWild, termVar, termConst
	slot int
	c    logic.Value
}

const (
	termWild uint8 = iota
	termVar
	termConst
)

type flatLit struct {
	name string
	rel  int
	args []fterm
	// dup says a variable occurs more than once among args, as in
	// p(A, A): a row matches only where those positions are equal.
	dup bool
}

type flatCmp struct {
	op   string
	l, r fterm
}

func (e *flatEngine) rel(name string) int {
	if e.relID == nil {
		e.relID = map[string]int{}
	}
	id, ok := e.relID[name]
	if !ok {
		id = len(e.relID)
		e.relID[name] = id
		e.relNames = append(e.relNames, name)
	}
	return id
}

// relScanMax is the most relations relOf compares one by one: comparing
// a few short names (most differ in length, which settles it) costs less
// than hashing the name for the map.
const relScanMax = 8

// relOf is the id of the relation name, as relID has it.
func (e *flatEngine) relOf(name string) (int, bool) {
	if len(e.relNames) <= relScanMax {
		for id, n := range e.relNames {
			if n == name {
				return id, true
			}
		}
		return 0, false
	}
	id, ok := e.relID[name]
	return id, ok
}

// gateOutputs are the relations a policy's rules conclude: the
// vocabulary's outputs, and the quorum and approver a policy may declare
// (QuorumRelation, ApproverRelation), whose rows the evaluators hand over
// with their reasons.
var gateOutputs = map[string]bool{"decision": true, "shape_max": true, "shape_scope": true, "option": true, "assess": true, QuorumRelation: true, ApproverRelation: true}

// compileFlat returns a flat engine for the program, or nil when the
// program is not flat.
func compileFlat(prog *logic.Program, inputs map[string]bool, lim logic.Limits) *flatEngine {
	e := &flatEngine{helpers: map[string][][]logic.Value{}, relID: map[string]int{}, lim: lim}
	defined := map[string]bool{}
	ruled := map[string][]*logic.Clause{} // derived helper -> its rules, in source order
	for _, c := range prog.Clauses {
		defined[c.Head.Name] = true
		if len(c.Body) > 0 && !gateOutputs[c.Head.Name] {
			ruled[c.Head.Name] = append(ruled[c.Head.Name], c)
		}
	}
	for _, c := range prog.Clauses {
		if c.Head.Neg {
			return nil
		}
		if len(c.Body) == 0 {
			if gateOutputs[c.Head.Name] || ruled[c.Head.Name] != nil {
				return nil // an unconditional output, or a helper both stated and derived: rare, leave it to the engine
			}
			row, ok := constRow(c.Head.Args)
			if !ok {
				return nil
			}
			e.helpers[c.Head.Name] = append(e.helpers[c.Head.Name], row)
		}
	}
	// The derived helpers in an order that puts every helper after those
	// its rules read, with each one's height: the most rule applications
	// above the ticket's facts any of its rows can stand on (absences add
	// none), as the engine's depth limit counts them.
	order, height := helperOrder(ruled)
	if order == nil && len(ruled) > 0 {
		return nil
	}
	// The engine bounds derivation depth; the outputs stand one rule
	// above their premises. A depth limit any derivation here could reach
	// is left to the engine, whose round counting is the reference.
	top := 1
	//flrh:orderfree a maximum
	for _, h := range height {
		top = max(top, h+1)
	}
	if lim.MaxDepth != 0 && lim.MaxDepth < max(4, top) {
		return nil
	}
	compileRule := func(c *logic.Clause) (flatRule, bool) {
		r := flatRule{head: c.Head.Name, helper: -1, where: c.Pos.String()}
		slots := map[string]int{}
		bound := map[string]bool{}
		compile := func(t logic.Term) (fterm, bool) {
			switch x := t.(type) {
			case *logic.Wildcard:
				return fterm{kind: termWild}, true
			case *logic.Var:
				s, ok := slots[x.Name]
				if !ok {
					s = len(slots)
					slots[x.Name] = s
				}
				return fterm{kind: termVar, slot: s}, true
			case *logic.NumConst:
				return fterm{kind: termConst, c: logic.Num(x.Val)}, true
			case *logic.SymConst:
				return fterm{kind: termConst, c: logic.Sym(x.Val)}, true
			}
			return fterm{}, false
		}
		lit := func(a *logic.AtomExpr) (flatLit, bool) {
			l := flatLit{name: a.Name, rel: e.rel(a.Name)}
			for _, t := range a.Args {
				ft, ok := compile(t)
				if !ok {
					return flatLit{}, false
				}
				for _, prev := range l.args {
					l.dup = l.dup || ft.kind == termVar && prev.kind == termVar && prev.slot == ft.slot
				}
				l.args = append(l.args, ft)
			}
			return l, true
		}
		var negAtoms [][]logic.Term
		var cmpTerms [][]logic.Term
		for _, it := range c.Body {
			switch b := it.(type) {
			case *logic.Literal:
				a := b.Atom
				if a.Neg || gateOutputs[a.Name] {
					return flatRule{}, false
				}
				l, ok := lit(a)
				if !ok {
					return flatRule{}, false // arithmetic in an argument
				}
				if b.Not {
					r.neg = append(r.neg, l)
					negAtoms = append(negAtoms, a.Args)
				} else {
					r.pos = append(r.pos, l)
					for _, t := range a.Args {
						if v, ok := t.(*logic.Var); ok {
							bound[v.Name] = true
						}
					}
				}
			case *logic.Comparison:
				for _, t := range []logic.Term{b.L, b.R} {
					switch t.(type) {
					case *logic.Var, *logic.NumConst:
					case *logic.SymConst:
						if b.Op != "=" && b.Op != "!=" {
							return flatRule{}, false
						}
					default:
						return flatRule{}, false
					}
				}
				l, _ := compile(b.L)
				rt, _ := compile(b.R)
				r.cmps = append(r.cmps, flatCmp{op: b.Op, l: l, r: rt})
				cmpTerms = append(cmpTerms, []logic.Term{b.L, b.R})
			default:
				return flatRule{}, false
			}
		}
		// Every variable of a comparison, a negation or the head must be
		// bound by a positive literal.
		need := func(ts []logic.Term) bool {
			for _, t := range ts {
				if v, ok := t.(*logic.Var); ok && !bound[v.Name] {
					return false
				}
			}
			return true
		}
		for _, ts := range cmpTerms {
			if !need(ts) {
				return flatRule{}, false
			}
		}
		for _, ts := range negAtoms {
			if !need(ts) {
				return flatRule{}, false
			}
		}
		if !need(c.Head.Args) {
			return flatRule{}, false
		}
		for _, t := range c.Head.Args {
			ft, ok := compile(t)
			if !ok {
				return flatRule{}, false
			}
			r.args = append(r.args, ft)
		}
		r.nvars = len(slots)
		return r, true
	}
	for _, name := range order {
		g := flatGroup{rel: e.rel(name)}
		for _, c := range ruled[name] {
			r, ok := compileRule(c)
			if !ok {
				return nil
			}
			r.helper = g.rel
			g.rules = append(g.rules, r)
		}
		e.derived = append(e.derived, g)
	}
	for _, c := range prog.Clauses {
		if len(c.Body) == 0 || !gateOutputs[c.Head.Name] {
			continue
		}
		r, ok := compileRule(c)
		if !ok {
			return nil
		}
		e.rules = append(e.rules, r)
	}
	e.index()
	for _, g := range e.derived {
		e.maxVars = max(e.maxVars, slices.MaxFunc(g.rules, func(a, b flatRule) int { return cmp.Compare(a.nvars, b.nvars) }).nvars)
	}
	return e
}

// helperOrder orders the derived helper relations so that each comes
// after every derived helper its rules read (positively or not), sorted
// by name where the dependencies leave a choice, and gives each its
// height (see compileFlat). It returns nil when the helpers depend on each
// other in a cycle, which the engine's stratification would have to sort
// out.
func helperOrder(ruled map[string][]*logic.Clause) ([]string, map[string]int) {
	names := make([]string, 0, len(ruled))
	for name := range ruled {
		names = append(names, name)
	}
	slices.Sort(names)
	height := map[string]int{}
	state := map[string]int{} // 1: being visited, 2: done
	var order []string
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case 1:
			return false
		case 2:
			return true
		}
		state[name] = 1
		h := 1
		for _, c := range ruled[name] {
			for _, it := range c.Body {
				l, ok := it.(*logic.Literal)
				if !ok || ruled[l.Atom.Name] == nil {
					continue
				}
				if !visit(l.Atom.Name) {
					return false
				}
				if !l.Not {
					h = max(h, height[l.Atom.Name]+1)
				}
			}
		}
		state[name], height[name] = 2, h
		order = append(order, name)
		return true
	}
	for _, name := range names {
		if !visit(name) {
			return nil, nil
		}
	}
	return order, height
}

// index builds the rule guards. A rule may be guarded by any symbol
// constant of any of its positive literals; it takes the one the fewest
// rules share (the first such in source order on a tie), since a constant
// many rules use (a parameter name, say) is one most tickets carry, while
// one few use (an action) selects few rules.
func (e *flatEngine) index() {
	e.guards = map[guardKey][]int32{}
	e.guardPos = make([][]int, len(e.relID))
	e.outID = map[string]int{}
	for k, name := range flatOutputs {
		e.outID[name] = k
	}
	keys := func(r *flatRule, visit func(guardKey)) {
		for _, l := range r.pos {
			for k, t := range l.args {
				if t.kind == termConst && t.c.IsSym() {
					visit(guardKey{rel: l.rel, pos: k, sym: t.c.Str()})
				}
			}
		}
	}
	shared := map[guardKey]int{}
	for i := range e.rules {
		seen := map[guardKey]bool{}
		keys(&e.rules[i], func(g guardKey) {
			if !seen[g] {
				seen[g] = true
				shared[g]++
			}
		})
	}
	for i := range e.rules {
		r := &e.rules[i]
		r.out = e.outID[r.head]
		e.maxVars = max(e.maxVars, r.nvars)
		var best guardKey
		found := false
		keys(r, func(g guardKey) {
			if !found || shared[g] < shared[best] {
				best, found = g, true
			}
		})
		if !found {
			e.unguarded = append(e.unguarded, int32(i))
			continue
		}
		e.guards[best] = append(e.guards[best], int32(i))
		if !slices.Contains(e.guardPos[best.rel], best.pos) {
			e.guardPos[best.rel] = append(e.guardPos[best.rel], best.pos)
		}
	}
}

func constRow(ts []logic.Term) ([]logic.Value, bool) {
	row := make([]logic.Value, len(ts))
	for i, t := range ts {
		switch x := t.(type) {
		case *logic.NumConst:
			row[i] = logic.Num(x.Val)
		case *logic.SymConst:
			row[i] = logic.Sym(x.Val)
		default:
			return nil, false
		}
	}
	return row, true
}

func sameValue(a, b logic.Value) bool {
	if a.IsSym() != b.IsSym() {
		return false
	}
	if a.IsSym() {
		return a.Str() == b.Str()
	}
	return a.Int() == b.Int()
}

func cmpValues(a, b logic.Value) int {
	if a.IsSym() != b.IsSym() {
		if !a.IsSym() {
			return -1
		}
		return 1
	}
	if a.IsSym() {
		return strings.Compare(a.Str(), b.Str())
	}
	switch {
	case a.Int() < b.Int():
		return -1
	case a.Int() > b.Int():
		return 1
	}
	return 0
}

// binding holds a rule's variable slots during a join.
type binding struct {
	vals []logic.Value
	set  []bool
}

func (b *binding) term(t fterm) logic.Value {
	if t.kind == termConst {
		return t.c
	}
	return b.vals[t.slot]
}

type flatRun struct {
	e       *flatEngine
	facts   [][][]logic.Value // by relation id
	firings int64
	// out holds each output relation's tuples (by flatOutputs slot), each
	// tuple's first derivation, in derivation order; keys index them once
	// a relation has more tuples than a scan of them is worth.
	out  [len(flatOutputs)][]flatTuple
	keys [len(flatOutputs)]map[string]int
	// args holds every derived tuple's arguments; tuples live only until
	// result has read them, so their arguments need not be copied out.
	args []logic.Value
	// rows and vals hold the derived helpers' rows and their values,
	// which live only as long as the run.
	rows [][]logic.Value
	vals []logic.Value
	// group is where the rows of the helper being derived start in rows.
	group int
	// factSlots backs the firings' lists of fact strings (factSlice);
	// the strings themselves are cut from the arena join is given (not
	// kept here: a pointer in the run would leave the stack with it).
	factSlots []string
	// rendered remembers the last premises rendered (see factStrings).
	rendered  [4]renderedFact
	nrendered int
	// dst holds the arrays result appends the decisions and risks to.
	dst derived
}

// renderedFact is a premise row rendered once in a run: its relation, its
// row (the run's own, which no run changes while it lasts) and its text.
type renderedFact struct {
	rel string
	row []logic.Value
	s   string
}

// flatScanMax is how many tuples of one relation are compared one by one
// before they are indexed by key.
const flatScanMax = 16

// flatScratch is one run's working memory, recycled through
// flatScratchPool. A run reads only what it wrote itself (counts and
// candidate bits are zeroed when taken; rows, bindings, premises and
// tuples are written before they are read), so no run sees another's
// rows, and no output refers to the scratch. What a run left in it is
// overwritten by the next run rather than cleared: clearing pointers costs
// a write barrier per word while the collector runs, and the pool drops
// its items within two collections, which bounds what they keep alive to
// one ticket's strings each.
type flatScratch struct {
	facts    [][][]logic.Value
	count    []int
	ids      []int
	backing  [][]logic.Value
	cand     []uint64
	vals     []logic.Value
	set      []bool
	premises []logic.Fact
	out      [len(flatOutputs)][]flatTuple
	args     []logic.Value
	rows     [][]logic.Value
	dvals    []logic.Value
}

var flatScratchPool = sync.Pool{New: func() any { return new(flatScratch) }}

// grow returns (*s)[:n], zeroed, reallocating *s when it is too short.
func grow[T any](s *[]T, n int) []T {
	r := reuse(s, n)
	clear(r)
	return r
}

// reuse returns (*s)[:n] as it was left, reallocating *s when it is too
// short: for arrays every element of which is written before it is read.
func reuse[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	*s = (*s)[:n]
	return *s
}

type flatTuple struct {
	args []logic.Value
	why  Reason
}

func (e *flatEngine) derive(facts []logic.Fact) (derived, error) {
	return e.deriveInto(facts, derived{}, nil)
}

// deriveInto is derive with its decisions and risks appended to into's
// arrays, emptied first, so that a caller can recycle them (Evaluate
// does), and the reasons' fact strings cut from strs (a decision's
// arena; nil: a buffer of the run's own).
func (e *flatEngine) deriveInto(facts []logic.Fact, into derived, strs *strArena) (derived, error) {
	if e.lim.MaxInputs > 0 && len(facts) > e.lim.MaxInputs {
		return derived{}, fmt.Errorf("%d base facts exceed the input budget of %d", len(facts), e.lim.MaxInputs)
	}
	// The run's scratch (rows by relation, their backing, the rule
	// bindings and the candidate set) is recycled between runs; only
	// what a firing derives is allocated.
	sc := flatScratchPool.Get().(*flatScratch)
	// The fact strings' arena: the caller's or the run's.
	var own strArena
	if strs == nil {
		strs = &own
	}
	// Every relation's rows are set below before any is read.
	run := flatRun{e: e, facts: reuse(&sc.facts, len(e.relID)), out: sc.out, args: sc.args[:0], dst: into, factSlots: into.slots[:0:len(into.slots)]}
	for k := range run.out {
		run.out[k] = run.out[k][:0]
	}
	defer func() {
		// What the run grew is kept for the next one.
		sc.out, sc.args = run.out, run.args
		flatScratchPool.Put(sc)
	}()
	// Every relation's rows are carved from one backing array, counted
	// first, instead of each relation growing its own.
	count := grow(&sc.count, len(e.relID))
	total := 0
	//flrh:orderfree summing sizes
	for rel, rows := range e.helpers {
		if id, ok := e.relID[rel]; ok {
			count[id] += len(rows)
			total += len(rows)
		}
	}
	// Each fact's relation id, looked up once for both passes (-1: no
	// rule reads it).
	ids := grow(&sc.ids, len(facts))
	for k, f := range facts {
		ids[k] = -1
		if id, ok := e.relOf(f.Rel); ok {
			ids[k] = id
			count[id]++
			total++
		}
	}
	backing := reuse(&sc.backing, total) // rows are appended into it before they are read
	for id, n := range count {
		run.facts[id], backing = backing[:0:n], backing[n:]
	}
	//flrh:orderfree each helper relation is copied into its own slot
	for rel, rows := range e.helpers {
		if id, ok := e.relID[rel]; ok {
			run.facts[id] = append(run.facts[id], rows...) // sorting and appends stay local
		}
	}
	for k, f := range facts {
		if f.Neg {
			return derived{}, fmt.Errorf("flat policies take no negative evidence")
		}
		if id := ids[k]; id >= 0 { // facts no rule reads cannot matter
			run.facts[id] = append(run.facts[id], f.Args)
		}
	}
	// Rows are joined in value order, so the first derivation of a tuple
	// (its provenance) is the one the engine reports first.
	for _, rows := range run.facts {
		if len(rows) > 1 {
			slices.SortStableFunc(rows, cmpRow)
		}
	}
	// A slot's value is read only once set marks it bound.
	b := binding{vals: reuse(&sc.vals, e.maxVars), set: grow(&sc.set, e.maxVars)}
	if cap(sc.premises) < 8 {
		sc.premises = make([]logic.Fact, 0, 8)
	}
	premises := sc.premises[:0]
	// The derived helpers' rows, each relation's before any rule reads
	// them: distinct, in value order, as the ticket's own rows are. They
	// are carved from one array (rows) whose values live in another
	// (vals); a relation's rows are a window of it, and a later append
	// that moves the array leaves earlier windows where they were.
	run.rows, run.vals = sc.rows[:0], sc.dvals[:0]
	for _, g := range e.derived {
		start := len(run.rows)
		run.group = start
		// Facts the caller stated for the relation stand beside what its
		// rules derive, as base facts do in the engine.
		for _, row := range run.facts[g.rel] {
			run.add(row)
		}
		for k := range g.rules {
			clear(b.set)
			if err := run.join(strs, &g.rules[k], 0, &b, premises); err != nil {
				return derived{}, err
			}
		}
		rows := run.rows[start:len(run.rows):len(run.rows)]
		slices.SortFunc(rows, cmpRow)
		run.facts[g.rel] = rows
	}
	sc.rows, sc.dvals = run.rows, run.vals
	// The candidate rules: the unguarded ones and those whose guard some
	// row meets, tried in source order as before (the order decides which
	// derivation of a tuple is its first).
	cand := grow(&sc.cand, (len(e.rules)+63)/64)
	for _, i := range e.unguarded {
		cand[i/64] |= 1 << (i % 64)
	}
	for rel, ps := range e.guardPos {
		for _, row := range run.facts[rel] {
			for _, k := range ps {
				if k >= len(row) || !row[k].IsSym() {
					continue
				}
				for _, i := range e.guards[guardKey{rel: rel, pos: k, sym: row[k].Str()}] {
					cand[i/64] |= 1 << (i % 64)
				}
			}
		}
	}
	for w, word := range cand {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			clear(b.set)
			if err := run.join(strs, &e.rules[i], 0, &b, premises); err != nil {
				return derived{}, err
			}
		}
	}
	if lim := e.lim.MaxTuples; lim > 0 {
		// Live tuples: the distinct input and helper rows plus the derived
		// outputs. Near the limit this count may differ from the engine's
		// by duplicate inputs; either way an exceeded budget fails closed.
		n := int64(0)
		for _, rows := range run.facts {
			n += int64(len(rows))
		}
		for _, tuples := range run.out {
			n += int64(len(tuples))
		}
		if n > lim {
			return derived{}, fmt.Errorf("%d tuples exceed the tuple budget of %d", n, lim)
		}
	}
	return run.result(), nil
}

func (r *flatRun) join(a *strArena, rule *flatRule, i int, b *binding, premises []logic.Fact) error {
	if i == len(rule.pos) {
		return r.finish(a, rule, b, premises)
	}
	lit := &rule.pos[i]
	var fresh [8]int
rows:
	for _, row := range r.facts[lit.rel] {
		if len(row) != len(lit.args) {
			continue
		}
		// Constants and already-bound variables first: most rows fail here.
		for k, t := range lit.args {
			switch {
			case t.kind == termConst && !sameValue(t.c, row[k]):
				continue rows
			case t.kind == termVar && b.set[t.slot] && !sameValue(b.vals[t.slot], row[k]):
				continue rows
			}
		}
		n := 0
		for k, t := range lit.args {
			if t.kind != termVar || b.set[t.slot] {
				continue
			}
			b.vals[t.slot], b.set[t.slot] = row[k], true
			if n < len(fresh) {
				fresh[n] = t.slot
			}
			n++
		}
		// A variable this literal repeats was bound at its first
		// position above; the row must hold the same value at the others.
		if lit.dup && !repeatsAgree(lit, b, row) {
			unbind(rule, i, lit, b, fresh[:min(n, len(fresh))], n > len(fresh))
			continue
		}
		err := r.join(a, rule, i+1, b, append(premises, logic.Fact{Rel: lit.name, Args: row}))
		unbind(rule, i, lit, b, fresh[:min(n, len(fresh))], n > len(fresh))
		if err != nil {
			return err
		}
	}
	return nil
}

// repeatsAgree reports whether row holds, at every position of lit's
// variables, the value the binding holds for that variable.
func repeatsAgree(lit *flatLit, b *binding, row []logic.Value) bool {
	for k, t := range lit.args {
		if t.kind == termVar && !sameValue(b.vals[t.slot], row[k]) {
			return false
		}
	}
	return true
}

// unbind undoes the bindings literal i made: the slots in fresh, or, when
// it bound more than fresh holds (overflow), every slot of the literal
// that no literal before it binds.
func unbind(rule *flatRule, i int, lit *flatLit, b *binding, fresh []int, overflow bool) {
	for _, s := range fresh {
		b.set[s] = false
	}
	if overflow {
		for _, t := range lit.args {
			if t.kind == termVar {
				b.set[t.slot] = b.set[t.slot] && slotBoundEarlier(rule, i, t.slot)
			}
		}
	}
}

// slotBoundEarlier reports whether a variable slot is bound by a positive
// literal before literal i.
func slotBoundEarlier(rule *flatRule, i, slot int) bool {
	for _, l := range rule.pos[:i] {
		for _, t := range l.args {
			if t.kind == termVar && t.slot == slot {
				return true
			}
		}
	}
	return false
}

func (r *flatRun) finish(a *strArena, rule *flatRule, b *binding, premises []logic.Fact) error {
	for _, c := range rule.cmps {
		l, rv := b.term(c.l), b.term(c.r)
		d := cmpValues(l, rv)
		var ok bool
		switch c.op {
		case "=":
			ok = sameValue(l, rv)
		case "!=":
			ok = !sameValue(l, rv)
		case "<":
			ok = d < 0
		case "<=":
			ok = d <= 0
		case ">":
			ok = d > 0
		case ">=":
			ok = d >= 0
		}
		if !ok {
			return nil
		}
	}
	if rule.helper >= 0 {
		return r.derive(rule, b)
	}
	var absent []string
	for _, a := range rule.neg {
		if r.matches(a, b) {
			return nil
		}
		pat := logic.Fact{Rel: a.name, Args: make([]logic.Value, len(a.args))}
		wild := make([]bool, len(a.args))
		for k, t := range a.args {
			if t.kind == termWild {
				wild[k] = true
				continue
			}
			pat.Args[k] = b.term(t)
		}
		absent = append(absent, logic.Absence{Pattern: pat, Wildcard: wild}.String())
	}
	r.firings++
	if r.e.lim.MaxFirings > 0 && r.firings > r.e.lim.MaxFirings {
		return fmt.Errorf("rule firings exceed the budget of %d", r.e.lim.MaxFirings)
	}
	start := len(r.args)
	for _, t := range rule.args {
		r.args = append(r.args, b.term(t))
	}
	args := r.args[start:len(r.args):len(r.args)]
	o := rule.out
	if r.seen(o, args) {
		r.args = r.args[:start]
		return nil
	}
	why := Reason{Facts: r.factStrings(a, premises), Absent: absent, Detail: rule.where}
	if why.Absent == nil {
		why.Absent = []string{}
	}
	tuple := flatTuple{args: args, why: why}
	r.out[o] = append(r.out[o], tuple)
	if m := r.keys[o]; m != nil {
		m[tupleKey(tuple.args)] = len(r.out[o]) - 1
	} else if len(r.out[o]) > flatScanMax {
		m = make(map[string]int, 2*len(r.out[o]))
		for k, t := range r.out[o] {
			m[tupleKey(t.args)] = k
		}
		r.keys[o] = m
	}
	return nil
}

// factStrings renders a firing's premises. A premise is a row of the
// run's relations, and rules that share a literal (the ticket's action,
// say) name the same row in their reasons: a row rendered earlier in the
// run, recognised by its relation and the address of its first value
// (rows are never moved or rewritten while the run lasts), is given the
// same string instead of being rendered again. The text is that of
// factStringsInto either way (TestFlatFactStringsReuseRows).
func (r *flatRun) factStrings(a *strArena, premises []logic.Fact) []string {
	out := r.factSlice(len(premises))
	for k, f := range premises {
		if s, ok := r.renderedText(f); ok {
			out[k] = s
			continue
		}
		factStringsInto(a, out[k:k+1], premises[k:k+1])
		if len(f.Args) > 0 {
			r.rendered[r.nrendered%len(r.rendered)] = renderedFact{rel: f.Rel, row: f.Args, s: out[k]}
			r.nrendered++
		}
	}
	return out
}

// renderedText is the text of a premise row rendered earlier in the run.
func (r *flatRun) renderedText(f logic.Fact) (string, bool) {
	if len(f.Args) == 0 {
		return "", false
	}
	for i := range min(r.nrendered, len(r.rendered)) {
		e := &r.rendered[i]
		if len(e.row) == len(f.Args) && &e.row[0] == &f.Args[0] && e.rel == f.Rel {
			return e.s, true
		}
	}
	return "", false
}

// factSlice returns n elements for a firing's fact strings, carved
// (capped, so that no firing's list runs into the next) from an array the
// run shares among its firings instead of one array per firing. The
// lists are the run's output, so the array is the run's own, never
// recycled. An empty list is empty, not nil.
func (r *flatRun) factSlice(n int) []string {
	if n == 0 {
		return []string{}
	}
	if cap(r.factSlots)-len(r.factSlots) < n {
		r.factSlots = make([]string, 0, max(8, n))
	}
	k := len(r.factSlots)
	r.factSlots = r.factSlots[:k+n]
	return r.factSlots[k : k+n : k+n]
}

// matches reports whether some row of a's relation meets the literal a
// under the binding b.
func (r *flatRun) matches(a flatLit, b *binding) bool {
	for _, row := range r.facts[a.rel] {
		match := len(row) == len(a.args)
		for k := 0; match && k < len(row); k++ {
			match = a.args[k].kind == termWild || sameValue(row[k], b.term(a.args[k]))
		}
		if match {
			return true
		}
	}
	return false
}

// derive ends a helper rule's firing: unless a default-negated literal
// matches, the head's row joins its relation's rows, once.
func (r *flatRun) derive(rule *flatRule, b *binding) error {
	for _, a := range rule.neg {
		if r.matches(a, b) {
			return nil
		}
	}
	r.firings++
	if r.e.lim.MaxFirings > 0 && r.firings > r.e.lim.MaxFirings {
		return fmt.Errorf("rule firings exceed the budget of %d", r.e.lim.MaxFirings)
	}
	start := len(r.vals)
	for _, t := range rule.args {
		r.vals = append(r.vals, b.term(t))
	}
	if !r.add(r.vals[start:len(r.vals):len(r.vals)]) {
		r.vals = r.vals[:start]
	}
	return nil
}

// add adds a row to the rows of the helper being derived unless they
// hold it already, and reports whether it did. The relation's rows so far
// are the run's last ones: its rules run one after another, after every
// other relation's.
func (r *flatRun) add(row []logic.Value) bool {
	for _, have := range r.rows[r.group:] {
		if slices.EqualFunc(have, row, sameValue) {
			return false
		}
	}
	r.rows = append(r.rows, row)
	return true
}

// seen reports whether output slot o already holds the tuple args.
func (r *flatRun) seen(o int, args []logic.Value) bool {
	if m := r.keys[o]; m != nil {
		_, ok := m[tupleKey(args)]
		return ok
	}
	for k := range r.out[o] {
		if slices.EqualFunc(r.out[o][k].args, args, sameValue) {
			return true
		}
	}
	return false
}

// factStrings renders facts exactly as logic.Fact.String does, into one
// shared string: a firing's reasons cost two allocations (the strings and
// their slice) instead of several per fact.
func factStrings(fs []logic.Fact) []string {
	return factStringsInto(nil, make([]string, len(fs)), fs)
}

// factStringsInto is factStrings into out, which has one element per
// fact, with the strings carved from a (a new buffer for a nil a).
func factStringsInto(a *strArena, out []string, fs []logic.Fact) []string {
	n := 0
	for _, f := range fs {
		n += len(f.Rel) + 3
		for _, a := range f.Args {
			n += len(a.Str()) + 4
		}
	}
	var endsArr [16]int
	ends := endsArr[:0]
	if a == nil {
		a = new(strArena)
	}
	a.roomFor(n, factChunk)
	sb := &a.sb
	start := sb.Len()
	var factArr [256]byte
	var seen string // a symbol of these facts found plain
	for _, f := range fs {
		// Each fact is rendered on the stack and copied into the
		// builder, whose strings are handed over without a further copy.
		sb.Write(appendFactText(factArr[:0], f, &seen))
		ends = append(ends, sb.Len())
	}
	all := sb.String()
	for k, end := range ends {
		out[k], start = all[start:end], end
	}
	return out
}

// appendFactText appends f's text, exactly as logic.Fact.AppendText
// writes it. A symbol that cjson.Plain accepts (printable ASCII without
// '"' or '\\') is one logic's quoting copies unchanged, so it is copied
// between quotes after a word-at-a-time test instead of logic's byte by
// byte scan; a symbol equal to *seen, which an earlier fact's test found
// plain (the ticket's id, an argument of every ticket fact), is copied
// without a test. A fact with a symbol that is not plain is rendered by
// AppendText. TestFactStringsMatchLogic holds it to logic.Fact.String.
func appendFactText(b []byte, f logic.Fact, seen *string) []byte {
	start := len(b)
	if f.Neg {
		b = append(b, '-')
	}
	b = append(b, f.Rel...)
	b = append(b, '(')
	for i, a := range f.Args {
		if i > 0 {
			b = append(b, ", "...)
		}
		if !a.IsSym() {
			b = strconv.AppendInt(b, a.Int(), 10)
			continue
		}
		s := a.Str()
		if s != *seen {
			if !cjson.Plain(s) {
				return f.AppendText(b[:start])
			}
			*seen = s
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	return append(b, ')')
}

// factChunk is the size of a run's buffer for its firings' fact strings.
const factChunk = 512

// cmpRow orders rows by value, column by column, a shorter row before
// its extensions.
func cmpRow(a, b []logic.Value) int {
	for k := 0; k < len(a) && k < len(b); k++ {
		if c := cmpValues(a[k], b[k]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// tupleKey identifies a tuple within its relation.
func tupleKey(args []logic.Value) string {
	n := 0
	for _, a := range args {
		n += len(a.Str()) + 21
	}
	var buf [128]byte // most keys fit: only the string escapes
	b := buf[:0]
	if n > len(buf) {
		b = make([]byte, 0, n)
	}
	for _, a := range args {
		if a.IsSym() {
			b = append(b, 's')
			b = append(b, a.Str()...)
		} else {
			b = append(b, 'n')
			b = strconv.AppendInt(b, a.Int(), 10)
		}
		b = append(b, 0)
	}
	return string(b)
}

// sorted returns a relation's tuples in the engine's order: by value,
// column by column.
// Distinct tuples of one relation never compare equal, so the order is
// total and any sort gives the same result; slices.SortFunc does not
// allocate as sort.Slice does.
func (r *flatRun) sorted(slot int) []flatTuple {
	out := r.out[slot]
	if len(out) < 2 {
		return out
	}
	slices.SortFunc(out, func(x, y flatTuple) int {
		a, b := x.args, y.args
		for k := range a {
			if c := cmpValues(a[k], b[k]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

func (r *flatRun) result() derived {
	// caps and options stay nil (readable, empty) unless a rule fills them.
	d := derived{decisions: r.dst.decisions[:0], risks: r.dst.risks[:0]}
	addCap := func(k [2]string, c capSpec) {
		if d.caps == nil {
			d.caps = map[[2]string][]capSpec{}
		}
		d.caps[k] = append(d.caps[k], c)
	}
	for _, t := range r.sorted(outDecision) {
		why := t.why
		why.Rule = t.args[2].Str()
		d.decisions = append(d.decisions, derivedDecision{gate: t.args[0].Str(), verdict: t.args[1].Str(), rule: why.Rule, why: why})
	}
	for _, t := range r.sorted(outShapeMax) {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		addCap(k, capSpec{param: t.args[2].Str(), max: t.args[3].Int()})
	}
	for _, t := range r.sorted(outShapeScope) {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		addCap(k, capSpec{scope: t.args[2].Str()})
	}
	for _, t := range r.sorted(outOption) {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		if d.options == nil {
			d.options = map[[2]string][]string{}
		}
		d.options[k] = append(d.options[k], t.args[2].Str())
	}
	for _, t := range r.sorted(outAssess) {
		why := t.why
		why.Rule = t.args[1].Str()
		d.risks = append(d.risks, derivedRisk{risk: t.args[0].Str(), why: why})
	}
	for _, t := range r.sorted(outQuorum) {
		why := t.why
		why.Rule = t.args[1].Str()
		d.quorums = append(d.quorums, derivedQuorum{n: t.args[0].Int(), why: why})
	}
	for _, t := range r.sorted(outApprover) {
		why := t.why
		why.Rule = t.args[1].Str()
		d.approvers = append(d.approvers, derivedApprover{name: t.args[0].Str(), why: why})
	}
	return d
}
