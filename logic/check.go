package logic

import (
	"fmt"
	"sort"
	"strings"
)

// Compiled is a checked program ready to evaluate: relations resolved,
// types inferred, rules stratified and join plans chosen. It is immutable
// and may be shared by any number of evaluations.
type Compiled struct {
	prog      *Program
	rels      []*relInfo
	relByName map[string]int
	rules     []*rule
	strata    []*stratum
	tstratum  []int // stratum of each table (rel*2 + sign)
	consts    []string
	constID   map[string]int64
	indexes   [][]uint64 // per table: the column masks that need an index
	warnings  []*Error
	scratch   scratchSize // what an evaluator over this program needs, see plan
	ruled     int         // strata with rules: the entries an evaluation's Stats lists
	// depthBound is the greatest derivation depth any fact of the program
	// can need, or -1 when none holds (see boundDepth).
	depthBound int
}

// Warnings lists what Check found suspicious but legal, in source order:
// a variable that occurs only once in its rule (usually a typo; write _ or
// start the name with _ to say it is intended), a relation used in a body
// but never given facts, rules or .input (facts passed to Evaluate or Solve
// directly make that one harmless).
func (c *Compiled) Warnings() []*Error { return append([]*Error(nil), c.warnings...) }

// relInfo describes a declared relation.
type relInfo struct {
	name     string
	pos      Pos
	attrs    []string
	types    []Type
	input    bool
	output   bool
	inFile   string
	outFile  string
	hasRules [2]bool // some clause has this relation (positive/negative) in its head
}

// stratum is a set of tables evaluated together to a fixpoint, after every
// lower stratum is complete.
type stratum struct {
	tables    []int
	rules     []int
	recursive bool
	// relations names the tables, as StratumStats lists them (an
	// evaluation's stats refer to it; Stats and Progress hand out copies).
	relations []string
}

// Relations lists the declared relations in declaration order.
func (c *Compiled) Relations() []string {
	out := make([]string, len(c.rels))
	for i, r := range c.rels {
		out[i] = r.name
	}
	return out
}

// Inputs lists the relations named by .input, in declaration order.
func (c *Compiled) Inputs() []string { return c.io(true) }

// Outputs lists the relations named by .output, in declaration order.
func (c *Compiled) Outputs() []string { return c.io(false) }

func (c *Compiled) io(in bool) []string {
	var out []string
	for _, r := range c.rels {
		if (in && r.input) || (!in && r.output) {
			out = append(out, r.name)
		}
	}
	return out
}

// IOFile is the file name a relation is read from (.input) or written to
// (.output): rel.facts / rel.csv unless a filename parameter was given.
func (c *Compiled) IOFile(rel string, input bool) string {
	i, ok := c.relByName[rel]
	if !ok {
		return ""
	}
	r := c.rels[i]
	if input {
		if r.inFile != "" {
			return r.inFile
		}
		return rel + ".facts"
	}
	if r.outFile != "" {
		return r.outFile
	}
	return rel + ".csv"
}

// Schema returns the attribute types of a relation.
func (c *Compiled) Schema(rel string) ([]Type, bool) {
	i, ok := c.relByName[rel]
	if !ok {
		return nil, false
	}
	return append([]Type(nil), c.rels[i].types...), true
}

// SharedSchema is Schema without the copy, for callers that only read
// the types: the list is the program's own, capped so that an append
// moves it.
func (c *Compiled) SharedSchema(rel string) ([]Type, bool) {
	i, ok := c.relByName[rel]
	if !ok {
		return nil, false
	}
	t := c.rels[i].types
	return t[:len(t):len(t)], true
}

// NumRules is the number of the program's rules: a rule Support's Rule
// is below it.
func (c *Compiled) NumRules() int { return len(c.rules) }

// NumStrata is the number of strata of the program.
func (c *Compiled) NumStrata() int { return len(c.strata) }

func tableName(c *Compiled, t int) string {
	if t%2 == 1 {
		return "-" + c.rels[t/2].name
	}
	return c.rels[t/2].name
}

// Check resolves and validates a parsed program: every relation declared
// exactly once, arities and types consistent, every variable bound by a
// positive body atom (or an equality with bound expressions), and default
// negation stratified. It reports the first error in source order.
func Check(p *Program) (*Compiled, error) {
	c := &Compiled{prog: p, relByName: map[string]int{}, constID: map[string]int64{}}
	if err := c.declare(); err != nil {
		return nil, err
	}
	for _, cl := range p.Clauses {
		r, err := c.compileRule(cl, len(c.rules))
		if err != nil {
			return nil, err
		}
		c.rules = append(c.rules, r)
		c.warnSingletons(cl)
	}
	c.warnEmpty()
	if err := c.stratify(); err != nil {
		return nil, err
	}
	c.plan()
	c.depthBound = c.boundDepth()
	return c, nil
}

// Load parses and checks a program in one call.
func Load(filename string, src []byte) (*Compiled, error) {
	p, err := Parse(filename, src)
	if err != nil {
		return nil, err
	}
	return Check(p)
}

func (c *Compiled) declare() *Error {
	types := map[string]Type{"number": TypeNumber, "symbol": TypeSymbol}
	// Type aliases may refer to each other in any order; resolve by
	// repeated passes, reporting the first unresolvable one.
	pending := append([]*TypeDecl(nil), c.prog.Types...)
	seen := map[string]Pos{}
	for _, td := range pending {
		if _, ok := types[td.Name]; ok || seen[td.Name] != (Pos{}) {
			return errorf(DuplicateDecl, td.Pos, "type %s is declared more than once", td.Name)
		}
		seen[td.Name] = td.Pos
	}
	for len(pending) > 0 {
		var rest []*TypeDecl
		for _, td := range pending {
			if t, ok := types[td.Base]; ok {
				types[td.Name] = t
			} else {
				rest = append(rest, td)
			}
		}
		if len(rest) == len(pending) {
			td := rest[0]
			if _, ok := seen[td.Base]; ok {
				return errorf(UnknownType, td.Pos, "type %s is defined in terms of itself", td.Name)
			}
			return errorf(UnknownType, td.Pos, "type %s refers to unknown type %s (supported: symbol, number and declared aliases)", td.Name, td.Base)
		}
		pending = rest
	}
	for _, d := range c.prog.Decls {
		if prev, ok := c.relByName[d.Name]; ok {
			return errorf(DuplicateDecl, d.Pos, "relation %s is already declared at %s", d.Name, c.rels[prev].pos)
		}
		if len(d.Attrs) > 64 {
			return errorf(UnsupportedFeature, d.Pos, "relation %s has %d attributes; at most 64 are supported", d.Name, len(d.Attrs))
		}
		ri := &relInfo{name: d.Name, pos: d.Pos}
		names := map[string]bool{}
		for _, a := range d.Attrs {
			t, ok := types[a.TypeName]
			if !ok {
				return errorf(UnknownType, a.Pos, "attribute %s of %s has unknown type %s (supported: symbol, number and declared aliases)", a.Name, d.Name, a.TypeName)
			}
			if names[a.Name] {
				return errorf(DuplicateDecl, a.Pos, "attribute %s of %s is declared twice", a.Name, d.Name)
			}
			names[a.Name] = true
			ri.attrs = append(ri.attrs, a.Name)
			ri.types = append(ri.types, t)
		}
		c.relByName[d.Name] = len(c.rels)
		c.rels = append(c.rels, ri)
	}
	for _, io := range c.prog.Inputs {
		i, ok := c.relByName[io.Name]
		if !ok {
			return errorf(UndeclaredRelation, io.Pos, ".input names undeclared relation %s", io.Name)
		}
		c.rels[i].input = true
		c.rels[i].inFile = io.Filename
	}
	for _, io := range c.prog.Outputs {
		i, ok := c.relByName[io.Name]
		if !ok {
			return errorf(UndeclaredRelation, io.Pos, ".output names undeclared relation %s", io.Name)
		}
		c.rels[i].output = true
		c.rels[i].outFile = io.Filename
	}
	return nil
}

func (c *Compiled) intern(s string) int64 {
	if id, ok := c.constID[s]; ok {
		return id
	}
	id := int64(len(c.consts))
	c.consts = append(c.consts, s)
	c.constID[s] = id
	return id
}

// ---- rules ----

// expr is a compiled term: a constant, a register, or arithmetic.
type expr struct {
	kind uint8 // exConst, exReg, exBin
	op   byte
	val  int64
	reg  int
	l, r *expr
	pos  Pos
}

const (
	exConst uint8 = iota
	exReg
	exBin
)

// atomRef is a compiled atom occurrence in a body.
type atomRef struct {
	pos   Pos
	table int
	args  []*expr // nil entry for a wildcard
	not   bool    // default negation
	text  string
}

// cmpRef is a compiled comparison.
type cmpRef struct {
	pos  Pos
	op   string
	l, r *expr
	text string
}

// rule is a compiled clause. Inline facts are rules with an empty body.
type rule struct {
	id      int
	pos     Pos
	text    string
	head    int
	hargs   []*expr
	atoms   []atomRef // positive (matched) body atoms, then negated ones, in source order within each
	npos    int       // atoms[:npos] are matched, atoms[npos:] default-negated
	pargs   int       // the arguments of the matched atoms, all told
	cmps    []cmpRef
	nvars   int
	vars    []string
	stratum int
	// plans, indexed by delta position: plans[0] reads everything in
	// full; plans[1+i] takes its delta from atoms[i].
	plans []*plan
	// headPlan enumerates instantiations with the head's variables bound
	// (for supports, proofs and rederivation).
	headPlan *plan
}

type ruleCtx struct {
	c      *Compiled
	vars   map[string]int
	names  []string
	types  []Type
	tpos   []Pos
	bound  []bool
	isHead bool
}

func (rc *ruleCtx) varReg(v *Var) int {
	if i, ok := rc.vars[v.Name]; ok {
		return i
	}
	i := len(rc.names)
	rc.vars[v.Name] = i
	rc.names = append(rc.names, v.Name)
	rc.types = append(rc.types, 0)
	rc.tpos = append(rc.tpos, v.Pos)
	rc.bound = append(rc.bound, false)
	return i
}

// unify records that register reg has type t, or reports a mismatch.
func (rc *ruleCtx) unify(reg int, t Type, at Pos, what string) *Error {
	if rc.types[reg] == 0 {
		rc.types[reg] = t
		rc.tpos[reg] = at
		return nil
	}
	if rc.types[reg] != t {
		return errorf(TypeMismatch, at, "variable %s is used as %s %s but is %s at %s", rc.names[reg], t, what, rc.types[reg], rc.tpos[reg])
	}
	return nil
}

// term compiles a term expected to have type want (0 = unknown yet).
func (rc *ruleCtx) term(t Term, want Type, what string) (*expr, Type, *Error) {
	switch t := t.(type) {
	case *Var:
		reg := rc.varReg(t)
		if want != 0 {
			if err := rc.unify(reg, want, t.Pos, what); err != nil {
				return nil, 0, err
			}
		}
		return &expr{kind: exReg, reg: reg, pos: t.Pos}, rc.types[reg], nil
	case *NumConst:
		if want == TypeSymbol {
			return nil, 0, errorf(TypeMismatch, t.Pos, "number %d used as symbol %s", t.Val, what)
		}
		return &expr{kind: exConst, val: t.Val, pos: t.Pos}, TypeNumber, nil
	case *SymConst:
		if want == TypeNumber {
			return nil, 0, errorf(TypeMismatch, t.Pos, "symbol %s used as number %s", quoteSym(t.Val), what)
		}
		return &expr{kind: exConst, val: rc.c.intern(t.Val), pos: t.Pos}, TypeSymbol, nil
	case *Wildcard:
		return nil, 0, errorf(UnsafeVariable, t.Pos, "wildcard _ is not allowed %s", what)
	case *BinExpr:
		if want == TypeSymbol {
			return nil, 0, errorf(TypeMismatch, t.Pos, "arithmetic result is a number, used as symbol %s", what)
		}
		l, _, err := rc.term(t.L, TypeNumber, "in arithmetic")
		if err != nil {
			return nil, 0, err
		}
		r, _, err := rc.term(t.R, TypeNumber, "in arithmetic")
		if err != nil {
			return nil, 0, err
		}
		return &expr{kind: exBin, op: t.Op, l: l, r: r, pos: t.Pos}, TypeNumber, nil
	}
	return nil, 0, errorf(SyntaxError, t.termPos(), "unexpected term")
}

func (c *Compiled) resolveAtom(a *AtomExpr) (int, *relInfo, *Error) {
	ri, ok := c.relByName[a.Name]
	if !ok {
		return 0, nil, errorf(UndeclaredRelation, a.Pos, "relation %s is not declared", a.Name)
	}
	rel := c.rels[ri]
	if len(a.Args) != len(rel.types) {
		return 0, nil, errorf(ArityMismatch, a.Pos, "%s has %d argument(s) here but is declared with %d at %s", a.Name, len(a.Args), len(rel.types), rel.pos)
	}
	t := ri * 2
	if a.Neg {
		t++
	}
	return t, rel, nil
}

func exprVars(e *expr, into []int) []int {
	if e == nil {
		return into
	}
	switch e.kind {
	case exReg:
		return append(into, e.reg)
	case exBin:
		return exprVars(e.r, exprVars(e.l, into))
	}
	return into
}

func (c *Compiled) compileRule(cl *Clause, id int) (*rule, *Error) {
	rc := &ruleCtx{c: c, vars: map[string]int{}}
	r := &rule{id: id, pos: cl.Pos, text: cl.String()}
	var negs []atomRef
	// Matched atoms first: they fix the types of their variables.
	for _, it := range cl.Body {
		l, ok := it.(*Literal)
		if !ok || l.Not {
			continue
		}
		t, rel, err := c.resolveAtom(l.Atom)
		if err != nil {
			return nil, err
		}
		ar := atomRef{pos: l.Pos, table: t, text: l.String()}
		for i, a := range l.Atom.Args {
			if _, ok := a.(*Wildcard); ok {
				ar.args = append(ar.args, nil)
				continue
			}
			e, _, err := rc.term(a, rel.types[i], fmt.Sprintf("in argument %d (%s) of %s", i+1, rel.attrs[i], rel.name))
			if err != nil {
				return nil, err
			}
			ar.args = append(ar.args, e)
		}
		r.atoms = append(r.atoms, ar)
	}
	r.npos = len(r.atoms)
	for _, a := range r.atoms {
		r.pargs += len(a.args)
	}
	for _, it := range cl.Body {
		l, ok := it.(*Literal)
		if !ok || !l.Not {
			continue
		}
		t, rel, err := c.resolveAtom(l.Atom)
		if err != nil {
			return nil, err
		}
		ar := atomRef{pos: l.Pos, table: t, not: true, text: l.String()}
		for i, a := range l.Atom.Args {
			if _, ok := a.(*Wildcard); ok {
				ar.args = append(ar.args, nil)
				continue
			}
			e, _, err := rc.term(a, rel.types[i], fmt.Sprintf("in argument %d (%s) of %s", i+1, rel.attrs[i], rel.name))
			if err != nil {
				return nil, err
			}
			ar.args = append(ar.args, e)
		}
		negs = append(negs, ar)
	}
	for _, it := range cl.Body {
		cm, ok := it.(*Comparison)
		if !ok {
			continue
		}
		var want Type
		switch cm.Op {
		case "<", "<=", ">", ">=":
			want = TypeNumber
		}
		// Infer the type from whichever side knows it.
		l, lt, err := rc.term(cm.L, want, "in comparison "+cm.String())
		if err != nil {
			return nil, err
		}
		rr, rt, err := rc.term(cm.R, want, "in comparison "+cm.String())
		if err != nil {
			return nil, err
		}
		if lt == 0 && rt != 0 {
			if l, _, err = rc.term(cm.L, rt, "in comparison "+cm.String()); err != nil {
				return nil, err
			}
		} else if rt == 0 && lt != 0 {
			if rr, _, err = rc.term(cm.R, lt, "in comparison "+cm.String()); err != nil {
				return nil, err
			}
		} else if lt != 0 && rt != 0 && lt != rt {
			return nil, errorf(TypeMismatch, cm.Pos, "comparison %s compares a %s with a %s", cm.String(), lt, rt)
		}
		r.cmps = append(r.cmps, cmpRef{pos: cm.Pos, op: cm.Op, l: l, r: rr, text: cm.String()})
	}
	// Head.
	ht, hrel, err := c.resolveAtom(cl.Head)
	if err != nil {
		return nil, err
	}
	r.head = ht
	c.rels[ht/2].hasRules[ht%2] = true
	for i, a := range cl.Head.Args {
		if _, ok := a.(*Wildcard); ok {
			return nil, errorf(UnsafeVariable, a.termPos(), "wildcard _ is not allowed in the head of a rule")
		}
		e, _, err := rc.term(a, hrel.types[i], fmt.Sprintf("in argument %d (%s) of %s", i+1, hrel.attrs[i], hrel.name))
		if err != nil {
			return nil, err
		}
		r.hargs = append(r.hargs, e)
	}
	r.atoms = append(r.atoms, negs...)
	// Safety: a variable is bound by a matched atom (as a plain variable
	// argument) or by an equality whose other side is bound.
	for _, a := range r.atoms[:r.npos] {
		for _, e := range a.args {
			if e != nil && e.kind == exReg {
				rc.bound[e.reg] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, cm := range r.cmps {
			if cm.op != "=" {
				continue
			}
			if cm.l.kind == exReg && !rc.bound[cm.l.reg] && allBound(rc.bound, cm.r) {
				rc.bound[cm.l.reg], changed = true, true
			} else if cm.r.kind == exReg && !rc.bound[cm.r.reg] && allBound(rc.bound, cm.l) {
				rc.bound[cm.r.reg], changed = true, true
			}
		}
	}
	for reg := range rc.names {
		if rc.bound[reg] {
			continue
		}
		where := "in this rule"
		if len(cl.Body) == 0 {
			return nil, errorf(UnsafeVariable, rc.tpos[reg], "variable %s in fact %s: facts must be ground", rc.names[reg], cl.Head.String())
		}
		return nil, errorf(UnsafeVariable, firstUse(cl, rc.names[reg]), "variable %s is not bound by a positive body atom %s (ungrounded variable)", rc.names[reg], where)
	}
	for reg, t := range rc.types {
		if t == 0 {
			return nil, errorf(TypeMismatch, rc.tpos[reg], "cannot infer the type of variable %s", rc.names[reg])
		}
	}
	r.nvars = len(rc.names)
	r.vars = rc.names
	return r, nil
}

func allBound(bound []bool, e *expr) bool {
	for _, v := range exprVars(e, nil) {
		if !bound[v] {
			return false
		}
	}
	return true
}

// firstUse finds the position of the first occurrence of a variable in a
// clause, head first, for error messages.
func firstUse(cl *Clause, name string) Pos {
	var found Pos
	var walk func(t Term)
	walk = func(t Term) {
		if found.Line != 0 {
			return
		}
		switch t := t.(type) {
		case *Var:
			if t.Name == name {
				found = t.Pos
			}
		case *BinExpr:
			walk(t.L)
			walk(t.R)
		}
	}
	for _, a := range cl.Head.Args {
		walk(a)
	}
	for _, it := range cl.Body {
		switch it := it.(type) {
		case *Literal:
			for _, a := range it.Atom.Args {
				walk(a)
			}
		case *Comparison:
			walk(it.L)
			walk(it.R)
		}
	}
	if found.Line == 0 {
		return cl.Pos
	}
	return found
}

// ---- stratification ----

type depEdge struct {
	to   int // head table
	neg  bool
	rule int
	pos  Pos
}

// stratify computes strongly connected components of the table
// dependency graph (Tarjan, visiting tables in declaration order so the
// result is deterministic), rejects components containing a default
// negation, and orders components so every dependency points down.
func (c *Compiled) stratify() *Error {
	n := len(c.rels) * 2
	adj := make([][]depEdge, n) // body table -> head tables
	for _, r := range c.rules {
		for _, a := range r.atoms {
			adj[a.table] = append(adj[a.table], depEdge{to: r.head, neg: a.not, rule: r.id, pos: a.pos})
		}
	}
	index := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	comp := make([]int, n)
	var stack []int
	var comps [][]int
	next := 0
	var strong func(v int)
	strong = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, e := range adj[v] {
			if index[e.to] < 0 {
				strong(e.to)
				low[v] = min(low[v], low[e.to])
			} else if on[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] == index[v] {
			var cc []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp[w] = len(comps)
				cc = append(cc, w)
				if w == v {
					break
				}
			}
			sort.Ints(cc)
			comps = append(comps, cc)
		}
	}
	for v := 0; v < n; v++ {
		if index[v] < 0 {
			strong(v)
		}
	}
	// Tarjan emits components in reverse topological order of the edges
	// body -> head: a component is emitted after everything it reaches,
	// i.e. heads before bodies. Reverse to get bodies (lower strata) first.
	for i, j := 0, len(comps)-1; i < j; i, j = i+1, j-1 {
		comps[i], comps[j] = comps[j], comps[i]
	}
	for ci := range comps {
		for _, t := range comps[ci] {
			comp[t] = ci
		}
	}
	// Negative cycles: a default-negated edge inside one component. Report
	// the one from the earliest rule, with the cycle it closes.
	var bad *depEdge
	var badFrom int
	for from := 0; from < n; from++ {
		for i := range adj[from] {
			e := &adj[from][i]
			if e.neg && comp[from] == comp[e.to] {
				if bad == nil || e.rule < bad.rule || (e.rule == bad.rule && posLess(e.pos, bad.pos)) {
					bad, badFrom = e, from
				}
			}
		}
	}
	if bad != nil {
		cycle := c.cyclePath(adj, comp, bad.to, badFrom)
		names := []string{tableName(c, badFrom)}
		for _, t := range cycle {
			names = append(names, tableName(c, t))
		}
		var b strings.Builder
		b.WriteString("!" + tableName(c, badFrom))
		for _, t := range cycle {
			b.WriteString(" -> " + tableName(c, t))
		}
		return &Error{Code: NegativeRecursion, Pos: bad.pos, Cycle: names,
			Msg: fmt.Sprintf("default negation of %s in a rule for %s is inside a recursive cycle: %s (negation must refer to a lower stratum)", tableName(c, badFrom), tableName(c, bad.to), b.String())}
	}
	recursive := make([]bool, len(comps))
	for from := 0; from < n; from++ {
		for _, e := range adj[from] {
			if comp[from] == comp[e.to] {
				recursive[comp[from]] = true
			}
		}
	}
	// Keep only components that matter (tables with rules or used), but
	// numbering all keeps stratum lookups trivial; empty strata are cheap.
	c.tstratum = comp
	c.strata = make([]*stratum, len(comps))
	for ci, cc := range comps {
		st := &stratum{tables: cc, recursive: recursive[ci]}
		for _, t := range cc {
			st.relations = append(st.relations, tableName(c, t))
		}
		c.strata[ci] = st
	}
	for _, r := range c.rules {
		r.stratum = comp[r.head]
		if len(c.strata[r.stratum].rules) == 0 {
			c.ruled++
		}
		c.strata[r.stratum].rules = append(c.strata[r.stratum].rules, r.id)
	}
	return nil
}

func posLess(a, b Pos) bool {
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Col < b.Col
}

// cyclePath finds a shortest path from -> ... -> to inside one component
// (breadth first, edges in insertion order), returning the tables after
// from, ending with to.
func (c *Compiled) cyclePath(adj [][]depEdge, comp []int, from, to int) []int {
	prev := map[int]int{from: -1}
	queue := []int{from}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if v == to {
			break
		}
		for _, e := range adj[v] {
			if comp[e.to] != comp[from] {
				continue
			}
			if _, ok := prev[e.to]; !ok {
				prev[e.to] = v
				queue = append(queue, e.to)
			}
		}
	}
	var path []int
	for v := to; v != -1; v = prev[v] {
		path = append(path, v)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// warnSingletons warns about named variables that occur once in a clause.
func (c *Compiled) warnSingletons(cl *Clause) {
	count := map[string]int{}
	first := map[string]Pos{}
	var order []string
	var walk func(t Term)
	walk = func(t Term) {
		switch t := t.(type) {
		case *Var:
			if count[t.Name] == 0 {
				first[t.Name] = t.Pos
				order = append(order, t.Name)
			}
			count[t.Name]++
		case *BinExpr:
			walk(t.L)
			walk(t.R)
		}
	}
	for _, a := range cl.Head.Args {
		walk(a)
	}
	for _, it := range cl.Body {
		switch it := it.(type) {
		case *Literal:
			for _, a := range it.Atom.Args {
				walk(a)
			}
		case *Comparison:
			walk(it.L)
			walk(it.R)
		}
	}
	for _, name := range order {
		if count[name] == 1 && name[0] != '_' {
			c.warnings = append(c.warnings, errorf(VariableOccursOnce, first[name], "variable %s occurs only once in this rule; write _ if that is intended", name))
		}
	}
}

// warnEmpty warns about relations used in a rule body that nothing can
// ever fill: no rule, no fact, no .input.
func (c *Compiled) warnEmpty() {
	warned := map[int]bool{}
	for _, r := range c.rules {
		for _, a := range r.atoms {
			rel := c.rels[a.table/2]
			if rel.input || rel.hasRules[a.table%2] || warned[a.table] {
				continue
			}
			warned[a.table] = true
			c.warnings = append(c.warnings, errorf(RelationAlwaysEmpty, a.pos, "%s has no rules, facts or .input, so it is always empty", tableName(c, a.table)))
		}
	}
}
