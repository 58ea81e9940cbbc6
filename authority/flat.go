package authority

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"flrh.dev/flrh/logic"
)

// flatEngine evaluates a "flat" gate policy directly: every rule derives a
// gate output from ticket facts and fact-only helper relations, with
// positive literals, default negation and comparisons, but no arithmetic,
// no recursion and no derived helper relations. Most gate policies are
// flat; for them a direct join over one ticket's dozen facts is far cheaper
// than materializing the program. Anything else is evaluated by the logic
// engine, which is also this evaluator's oracle in the tests.
type flatEngine struct {
	rules   []flatRule
	helpers map[string][][]logic.Value // fact-only helper relations
	relID   map[string]int             // every relation a body reads
	lim     logic.Limits
}

type flatRule struct {
	head  string
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
	}
	return id
}

var gateOutputs = map[string]bool{"decision": true, "shape_max": true, "shape_scope": true, "option": true, "assess": true}

// compileFlat returns a flat engine for the program, or nil when the
// program is not flat.
func compileFlat(prog *logic.Program, inputs map[string]bool, lim logic.Limits) *flatEngine {
	// A flat program evaluates in one round per stratum, far below any
	// depth limit of 4 or more; a smaller depth limit is left to the
	// engine, whose round counting is the reference.
	if lim.MaxDepth != 0 && lim.MaxDepth < 4 {
		return nil
	}
	e := &flatEngine{helpers: map[string][][]logic.Value{}, relID: map[string]int{}, lim: lim}
	defined := map[string]bool{}
	for _, c := range prog.Clauses {
		defined[c.Head.Name] = true
	}
	for _, c := range prog.Clauses {
		if c.Head.Neg {
			return nil
		}
		if len(c.Body) == 0 {
			if gateOutputs[c.Head.Name] {
				return nil // an unconditional output; rare, leave it to the engine
			}
			row, ok := constRow(c.Head.Args)
			if !ok {
				return nil
			}
			e.helpers[c.Head.Name] = append(e.helpers[c.Head.Name], row)
		}
	}
	for _, c := range prog.Clauses {
		if len(c.Body) == 0 {
			continue
		}
		if !gateOutputs[c.Head.Name] {
			return nil // a derived helper relation
		}
		r := flatRule{head: c.Head.Name, where: c.Pos.String()}
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
					return nil
				}
				if !inputs[a.Name] && (defined[a.Name] && e.helpers[a.Name] == nil) {
					return nil
				}
				l, ok := lit(a)
				if !ok {
					return nil // arithmetic in an argument
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
							return nil
						}
					default:
						return nil
					}
				}
				l, _ := compile(b.L)
				rt, _ := compile(b.R)
				r.cmps = append(r.cmps, flatCmp{op: b.Op, l: l, r: rt})
				cmpTerms = append(cmpTerms, []logic.Term{b.L, b.R})
			default:
				return nil
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
				return nil
			}
		}
		for _, ts := range negAtoms {
			if !need(ts) {
				return nil
			}
		}
		if !need(c.Head.Args) {
			return nil
		}
		for _, t := range c.Head.Args {
			ft, ok := compile(t)
			if !ok {
				return nil
			}
			r.args = append(r.args, ft)
		}
		r.nvars = len(slots)
		e.rules = append(e.rules, r)
	}
	return e
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
	out     map[string]map[string]*flatTuple // relation -> tuple key -> first derivation
}

type flatTuple struct {
	args []logic.Value
	why  Reason
}

func (e *flatEngine) derive(facts []logic.Fact) (derived, error) {
	if e.lim.MaxInputs > 0 && len(facts) > e.lim.MaxInputs {
		return derived{}, fmt.Errorf("%d base facts exceed the input budget of %d", len(facts), e.lim.MaxInputs)
	}
	run := flatRun{e: e, facts: make([][][]logic.Value, len(e.relID)), out: map[string]map[string]*flatTuple{}}
	// Every relation's rows are carved from one backing array, counted
	// first, instead of each relation growing its own.
	var countArr [32]int
	count := countArr[:0]
	if len(e.relID) <= len(countArr) {
		count = countArr[:len(e.relID)]
	} else {
		count = make([]int, len(e.relID))
	}
	total := 0
	//flrh:orderfree summing sizes
	for rel, rows := range e.helpers {
		if id, ok := e.relID[rel]; ok {
			count[id] += len(rows)
			total += len(rows)
		}
	}
	for _, f := range facts {
		if id, ok := e.relID[f.Rel]; ok {
			count[id]++
			total++
		}
	}
	backing := make([][]logic.Value, total)
	for id, n := range count {
		run.facts[id], backing = backing[:0:n], backing[n:]
	}
	//flrh:orderfree each helper relation is copied into its own slot
	for rel, rows := range e.helpers {
		if id, ok := e.relID[rel]; ok {
			run.facts[id] = append(run.facts[id], rows...) // sorting and appends stay local
		}
	}
	for _, f := range facts {
		if f.Neg {
			return derived{}, fmt.Errorf("flat policies take no negative evidence")
		}
		if id, ok := e.relID[f.Rel]; ok { // facts no rule reads cannot matter
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
	maxVars := 0
	for i := range e.rules {
		maxVars = max(maxVars, e.rules[i].nvars)
	}
	b := binding{vals: make([]logic.Value, maxVars), set: make([]bool, maxVars)}
	premises := make([]logic.Fact, 0, 8)
	for i := range e.rules {
		clear(b.set)
		if err := run.join(&e.rules[i], 0, &b, premises[:0]); err != nil {
			return derived{}, err
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
		//flrh:orderfree summing sizes
		for _, tuples := range run.out {
			n += int64(len(tuples))
		}
		if n > lim {
			return derived{}, fmt.Errorf("%d tuples exceed the tuple budget of %d", n, lim)
		}
	}
	return run.result(), nil
}

func (r *flatRun) join(rule *flatRule, i int, b *binding, premises []logic.Fact) error {
	if i == len(rule.pos) {
		return r.finish(rule, b, premises)
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
		err := r.join(rule, i+1, b, append(premises, logic.Fact{Rel: lit.name, Args: row}))
		for j := 0; j < n && j < len(fresh); j++ {
			b.set[fresh[j]] = false
		}
		if n > len(fresh) {
			// More fresh variables than the fast list holds: recompute
			// which ones this literal bound by rescanning it.
			for _, t := range lit.args {
				if t.kind == termVar {
					b.set[t.slot] = b.set[t.slot] && slotBoundEarlier(rule, i, t.slot)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
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

func (r *flatRun) finish(rule *flatRule, b *binding, premises []logic.Fact) error {
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
	var absent []string
	for _, a := range rule.neg {
		for _, row := range r.facts[a.rel] {
			match := len(row) == len(a.args)
			for k := 0; match && k < len(row); k++ {
				match = a.args[k].kind == termWild || sameValue(row[k], b.term(a.args[k]))
			}
			if match {
				return nil
			}
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
	args := make([]logic.Value, len(rule.args))
	for k, t := range rule.args {
		args[k] = b.term(t)
	}
	key := tupleKey(args)
	tuples := r.out[rule.head]
	if tuples == nil {
		tuples = map[string]*flatTuple{}
		r.out[rule.head] = tuples
	}
	if _, seen := tuples[key]; seen {
		return nil
	}
	why := Reason{Facts: factStrings(premises), Absent: absent, Detail: rule.where}
	if why.Absent == nil {
		why.Absent = []string{}
	}
	tuples[key] = &flatTuple{args: args, why: why}
	return nil
}

// factStrings renders facts exactly as logic.Fact.String does, into one
// shared string: a firing's reasons cost three allocations instead of
// several per fact.
func factStrings(fs []logic.Fact) []string {
	out := make([]string, len(fs))
	n := 0
	for _, f := range fs {
		n += len(f.Rel) + 3
		for _, a := range f.Args {
			n += len(a.Str()) + 4
		}
	}
	var endsArr [16]int
	ends := endsArr[:0]
	buf := make([]byte, 0, n)
	for _, f := range fs {
		buf = appendFact(buf, f)
		ends = append(ends, len(buf))
	}
	all, start := string(buf), 0
	for k, end := range ends {
		out[k], start = all[start:end], end
	}
	return out
}

// appendFact appends logic.Fact.String's rendering of f: a sign, the
// relation, and its arguments in parentheses separated by ", ", symbols
// quoted with \", \\, \n, \t and \r escaped.
func appendFact(b []byte, f logic.Fact) []byte {
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
		b = append(b, '"')
		s := a.Str()
		for j := 0; j < len(s); j++ {
			switch c := s[j]; c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, c)
			}
		}
		b = append(b, '"')
	}
	return append(b, ')')
}

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
func (r *flatRun) sorted(rel string) []*flatTuple {
	tuples := r.out[rel]
	if len(tuples) == 0 {
		return nil
	}
	out := make([]*flatTuple, 0, len(tuples))
	for _, t := range tuples {
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y *flatTuple) int {
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
	var d derived
	addCap := func(k [2]string, c capSpec) {
		if d.caps == nil {
			d.caps = map[[2]string][]capSpec{}
		}
		d.caps[k] = append(d.caps[k], c)
	}
	for _, t := range r.sorted("decision") {
		why := t.why
		why.Rule = t.args[2].Str()
		d.decisions = append(d.decisions, derivedDecision{gate: t.args[0].Str(), verdict: t.args[1].Str(), rule: why.Rule, why: why})
	}
	for _, t := range r.sorted("shape_max") {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		addCap(k, capSpec{param: t.args[2].Str(), max: t.args[3].Int()})
	}
	for _, t := range r.sorted("shape_scope") {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		addCap(k, capSpec{scope: t.args[2].Str()})
	}
	for _, t := range r.sorted("option") {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		if d.options == nil {
			d.options = map[[2]string][]string{}
		}
		d.options[k] = append(d.options[k], t.args[2].Str())
	}
	for _, t := range r.sorted("assess") {
		why := t.why
		why.Rule = t.args[1].Str()
		d.risks = append(d.risks, derivedRisk{risk: t.args[0].Str(), why: why})
	}
	return d
}
