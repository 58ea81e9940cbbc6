package logic

import (
	"fmt"
	"maps"
	"slices"
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
	// aggReads are the tables its rules' aggregates read, ascending: a
	// change to one makes an update run the aggregates' rules for the
	// params it touches (aggregateDeltas), or evaluate the stratum afresh.
	aggReads []int
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
	// aggs are the rule's aggregates, in source order; a plan computes
	// each (stAgg) once the variables it shares with the rule are bound.
	aggs []aggRef
}

// aggFunc is an aggregate's function.
type aggFunc uint8

const (
	aggCount aggFunc = iota
	aggSum
	aggMin
	aggMax
)

var aggFuncs = map[string]aggFunc{"count": aggCount, "sum": aggSum, "min": aggMin, "max": aggMax}

// aggRef is a compiled aggregate. Its body is compiled as a rule without a
// head over the registers of the rule it belongs to: the rule's variables
// it shares (params) are read from the rule's registers, its own (local)
// variables have registers of their own. Every table it reads is in a
// lower stratum than the rule's head, so its value is fixed while the
// stratum is evaluated.
type aggRef struct {
	pos     Pos
	fn      aggFunc
	target  *expr // sum, min, max: the value taken from each instantiation
	body    *rule // atoms, npos and cmps; no head
	plan    *plan // the body's plan with the params bound
	params  []int // the rule's registers the body reads, ascending
	reg     int   // the register the result is written to
	tables  []int // the tables the body reads, ascending
	divides bool  // the body or the target divides (see buildPlan)
	text    string
	// rulePlan enumerates the instantiations of the rule the aggregate
	// belongs to with its params bound (no head to check): an update
	// that changes what the aggregate reads runs it for the params whose
	// value may have changed. nil when a param is another aggregate's
	// result, which the plan would overwrite.
	rulePlan *plan
	// paramCols gives, for each atom of the body, the column each param
	// is bound to there, in params' order; nil for an atom where some
	// param is no plain argument: a change to its table is traced to the
	// params it touches through the rest of the body (deltaPlans).
	paramCols [][]int
	// deltaPlans, indexed by the body's atoms, enumerate the body's
	// instantiations with that atom's rows taken from a delta, the
	// params bound by the body itself; nil when some param is no plain
	// argument of a positive atom of the body, so that an instantiation
	// would not bind it.
	deltaPlans []*plan
}

type ruleCtx struct {
	c      *Compiled
	vars   map[string]int
	names  []string
	types  []Type
	tpos   []Pos
	bound  []bool
	isHead bool
	// agg compiles an aggregate met inside a term (arithmetic, a head's
	// argument) where the rule allows one there; nil refuses it (an
	// atom's argument, an aggregate's own body).
	agg func(*Aggregate) (*expr, *Error)
	// lifting, while a rule's own atoms are compiled, takes an aggregate
	// standing as an atom's argument out of the atom (liftAggregate): the
	// argument becomes a variable of its own, and lifted the equality
	// that binds it, compiled with the rule's comparisons.
	lifting bool
	lifted  []*Comparison
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
	case *Aggregate:
		if rc.agg == nil {
			return nil, 0, errorf(UnsupportedFeature, t.Pos, "aggregate %s stands %s; an aggregate may stand in a comparison, arithmetic or a head, not as an atom's argument: bind it first, as in n = %s", t.String(), what, t.String())
		}
		if want == TypeSymbol {
			return nil, 0, errorf(TypeMismatch, t.Pos, "aggregate %s is a number, used as symbol %s", t.String(), what)
		}
		e, err := rc.agg(t)
		return e, TypeNumber, err
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

// bodyAtom compiles an atom of a body, matched or default-negated.
func (rc *ruleCtx) bodyAtom(l *Literal) (atomRef, *Error) {
	t, rel, err := rc.c.resolveAtom(l.Atom)
	if err != nil {
		return atomRef{}, err
	}
	ar := atomRef{pos: l.Pos, table: t, not: l.Not, text: l.String()}
	for i, a := range l.Atom.Args {
		if _, ok := a.(*Wildcard); ok {
			ar.args = append(ar.args, nil)
			continue
		}
		what := fmt.Sprintf("in argument %d (%s) of %s", i+1, rel.attrs[i], rel.name)
		if rc.lifting && holdsAggregate(a) {
			if rel.types[i] == TypeSymbol {
				return atomRef{}, errorf(TypeMismatch, a.termPos(), "aggregate %s is a number, used as symbol %s", a.String(), what)
			}
			a = rc.liftAggregate(a)
		}
		e, _, err := rc.term(a, rel.types[i], what)
		if err != nil {
			return atomRef{}, err
		}
		ar.args = append(ar.args, e)
	}
	return ar, nil
}

// liftAggregate takes t, an atom's argument holding an aggregate, out of
// the atom: it returns the variable that stands for it there, and adds
// the equality binding it (`B(n, max p : …)` is `B(n, v), v = max p :
// …`), so the aggregate is computed once its params are bound and the
// atom then matches its value. The variable's name is none a program can
// write.
func (rc *ruleCtx) liftAggregate(t Term) Term {
	v := &Var{Pos: t.termPos(), Name: fmt.Sprintf("(%s)", t.String())}
	rc.lifted = append(rc.lifted, &Comparison{Pos: t.termPos(), Op: "=", L: v, R: t})
	return v
}

// holdsAggregate reports whether t is an aggregate or arithmetic over one.
func holdsAggregate(t Term) bool {
	switch t := t.(type) {
	case *Aggregate:
		return true
	case *BinExpr:
		return holdsAggregate(t.L) || holdsAggregate(t.R)
	}
	return false
}

// body compiles a body's atoms and comparisons into r: the matched atoms
// first (they fix the types of their variables), then the negated ones,
// then the comparisons, whose aggregates agg compiles (nil refuses them).
func (rc *ruleCtx) body(r *rule, items []BodyItem, agg func(*Aggregate) (*expr, *Error)) *Error {
	var negs []atomRef
	rc.lifting, rc.lifted = agg != nil, nil
	for _, it := range items {
		l, ok := it.(*Literal)
		if !ok {
			continue
		}
		ar, err := rc.bodyAtom(l)
		if err != nil {
			return err
		}
		if l.Not {
			negs = append(negs, ar)
		} else {
			r.atoms = append(r.atoms, ar)
		}
	}
	r.npos = len(r.atoms)
	for _, a := range r.atoms {
		r.pargs += len(a.args)
	}
	r.atoms = append(r.atoms, negs...)
	// Aggregates inside a comparison's arithmetic are compiled as whole
	// sides are (agg); the aggregate's own body, compiled with this
	// context, refuses them, and puts back the rule's on its way out.
	saved := rc.agg
	rc.agg = agg
	defer func() { rc.agg = saved }()
	rc.lifting = false
	if len(rc.lifted) > 0 {
		items = slices.Clone(items)
		for _, cm := range rc.lifted {
			items = append(items, cm)
		}
	}
	for _, it := range items {
		cm, ok := it.(*Comparison)
		if !ok {
			continue
		}
		var want Type
		switch cm.Op {
		case "<", "<=", ">", ">=":
			want = TypeNumber
		}
		what := "in comparison " + cm.String()
		side := func(t Term, want Type) (*expr, Type, *Error) {
			if a, ok := t.(*Aggregate); ok && agg != nil {
				if want == TypeSymbol {
					return nil, 0, errorf(TypeMismatch, a.Pos, "aggregate %s is a number, compared with a symbol %s", a.String(), what)
				}
				e, err := agg(a)
				return e, TypeNumber, err
			}
			return rc.term(t, want, what)
		}
		// Infer the type from whichever side knows it.
		l, lt, err := side(cm.L, want)
		if err != nil {
			return err
		}
		rr, rt, err := side(cm.R, want)
		if err != nil {
			return err
		}
		if lt == 0 && rt != 0 {
			if l, _, err = rc.term(cm.L, rt, what); err != nil {
				return err
			}
		} else if rt == 0 && lt != 0 {
			if rr, _, err = rc.term(cm.R, lt, what); err != nil {
				return err
			}
		} else if lt != 0 && rt != 0 && lt != rt {
			return errorf(TypeMismatch, cm.Pos, "comparison %s compares a %s with a %s", cm.String(), lt, rt)
		}
		r.cmps = append(r.cmps, cmpRef{pos: cm.Pos, op: cm.Op, l: l, r: rr, text: cm.String()})
	}
	return nil
}

func (c *Compiled) compileRule(cl *Clause, id int) (*rule, *Error) {
	rc := &ruleCtx{c: c, vars: map[string]int{}}
	r := &rule{id: id, pos: cl.Pos, text: cl.String()}
	outer := outerNames(cl)
	agg := func(a *Aggregate) (*expr, *Error) { return rc.aggregate(r, a, outer) }
	if err := rc.body(r, cl.Body, agg); err != nil {
		return nil, err
	}
	// An aggregate in the head is computed as one in the body: its result
	// register is the argument.
	rc.agg = agg
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
	rc.agg = nil
	// Safety: a variable is bound by a matched atom (as a plain variable
	// argument), by an equality whose other side is bound, or as an
	// aggregate's result once the variables the aggregate shares are.
	bindings(rc.bound, r)
	for _, a := range r.aggs {
		for _, reg := range a.params {
			if !rc.bound[reg] {
				return nil, errorf(UnsafeVariable, firstUse(cl, rc.names[reg]), "variable %s is used in aggregate %s and outside it, so it must be bound outside it by a positive body atom (ungrounded variable)", rc.names[reg], a.text)
			}
		}
	}
	for reg := range rc.names {
		if rc.bound[reg] {
			continue
		}
		if len(cl.Body) == 0 {
			return nil, errorf(UnsafeVariable, rc.tpos[reg], "variable %s in fact %s: facts must be ground", rc.names[reg], cl.Head.String())
		}
		return nil, errorf(UnsafeVariable, firstUse(cl, rc.names[reg]), "variable %s is not bound by a positive body atom in this rule (ungrounded variable)", rc.names[reg])
	}
	for reg, t := range rc.types {
		if t == 0 {
			return nil, errorf(TypeMismatch, rc.tpos[reg], "cannot infer the type of variable %s", rc.names[reg])
		}
	}
	r.nvars = len(rc.names)
	r.vars = rc.names
	for i := range r.aggs {
		r.aggs[i].body.nvars = r.nvars
	}
	return r, nil
}

// bindings marks in bound the registers r's body binds: plain variable
// arguments of its matched atoms, then, until nothing changes, variables
// an equality equates with bound values and the results of aggregates
// whose params are bound.
func bindings(bound []bool, r *rule) {
	for _, a := range r.atoms[:r.npos] {
		for _, e := range a.args {
			if e != nil && e.kind == exReg {
				bound[e.reg] = true
			}
		}
	}
	assignable := func(e *expr) bool {
		return e.kind == exReg && !bound[e.reg] && !r.aggResult(e.reg)
	}
	for changed := true; changed; {
		changed = false
		for _, cm := range r.cmps {
			if cm.op != "=" {
				continue
			}
			if assignable(cm.l) && allBound(bound, cm.r) {
				bound[cm.l.reg], changed = true, true
			} else if assignable(cm.r) && allBound(bound, cm.l) {
				bound[cm.r.reg], changed = true, true
			}
		}
		for _, a := range r.aggs {
			if !bound[a.reg] && !slices.ContainsFunc(a.params, func(p int) bool { return !bound[p] }) {
				bound[a.reg], changed = true, true
			}
		}
	}
}

// aggResult reports whether reg holds one of r's aggregates' results,
// which only computing the aggregate binds: an equality with it compares.
func (r *rule) aggResult(reg int) bool {
	return slices.ContainsFunc(r.aggs, func(a aggRef) bool { return a.reg == reg })
}

// outerNames are the names of the variables a clause uses outside its
// aggregates: an aggregate shares these with its rule, and every other
// variable in it is its own.
func outerNames(cl *Clause) map[string]bool {
	names := map[string]bool{}
	eachVar(cl, false, func(v *Var) { names[v.Name] = true })
	return names
}

// termVars calls f with every variable of a term, in order, those of an
// aggregate's target and body included when inAggregates says so (an
// aggregate may sit inside arithmetic).
func termVars(t Term, inAggregates bool, f func(*Var)) {
	switch t := t.(type) {
	case *Var:
		f(t)
	case *BinExpr:
		termVars(t.L, inAggregates, f)
		termVars(t.R, inAggregates, f)
	case *Aggregate:
		if !inAggregates {
			return
		}
		if t.Target != nil {
			termVars(t.Target, true, f)
		}
		eachBodyTerm(t.Body, func(t Term) { termVars(t, true, f) })
	}
}

// aggregate compiles an aggregate of rule r into r.aggs and returns the
// register its result is written to. outer names the rule's variables
// outside its aggregates; every other variable of the aggregate is local
// to it (the same name in two aggregates is two variables).
func (rc *ruleCtx) aggregate(r *rule, ag *Aggregate, outer map[string]bool) (*expr, *Error) {
	fn, ok := aggFuncs[ag.Func]
	if !ok {
		return nil, errorf(UnsupportedFeature, ag.Pos, "aggregate %s is not supported (count, sum, min and max are)", ag.Func)
	}
	a := aggRef{pos: ag.Pos, fn: fn, text: ag.String()}
	// The rule's variables get their registers in the rule's scope, the
	// aggregate's own in a scope that ends with it.
	termVars(ag, true, func(v *Var) {
		if outer[v.Name] {
			rc.varReg(v)
		}
	})
	saved := rc.vars
	rc.vars = maps.Clone(saved)
	defer func() { rc.vars = saved }()
	first := len(rc.names)
	a.body = &rule{id: r.id, pos: r.pos, text: r.text, head: -1}
	if err := rc.body(a.body, ag.Body, nil); err != nil {
		return nil, err
	}
	if ag.Target != nil {
		t, _, err := rc.term(ag.Target, TypeNumber, "as the value "+ag.Func+" takes")
		if err != nil {
			return nil, err
		}
		a.target = t
	}
	// Locals are registers made in the aggregate's scope. They must be
	// bound inside it, with the params bound.
	inner := make([]bool, len(rc.names))
	for reg := range first {
		inner[reg] = true // the rule's variables: bound outside, or reported there
	}
	bindings(inner, a.body)
	for reg := first; reg < len(rc.names); reg++ {
		if !inner[reg] {
			name := rc.names[reg]
			return nil, errorf(UnsafeVariable, aggregateUse(ag, name), "variable %s in aggregate %s is not bound by a positive atom of its body (ungrounded variable)", name, a.text)
		}
		rc.bound[reg] = true // checked here, not again by the rule
	}
	collect := func(e *expr) {
		for _, v := range exprVars(e, nil) {
			if v < first {
				a.params = append(a.params, v)
			}
		}
	}
	for _, at := range a.body.atoms {
		for _, e := range at.args {
			collect(e)
		}
		a.tables = append(a.tables, at.table)
		a.divides = a.divides || slices.ContainsFunc(at.args, divides)
	}
	for _, cm := range a.body.cmps {
		collect(cm.l)
		collect(cm.r)
		a.divides = a.divides || divides(cm.l) || divides(cm.r)
	}
	if a.target != nil {
		collect(a.target)
		a.divides = a.divides || divides(a.target)
	}
	slices.Sort(a.params)
	a.params = slices.Compact(a.params)
	slices.Sort(a.tables)
	a.tables = slices.Compact(a.tables)
	a.reg = len(rc.names)
	rc.names = append(rc.names, a.text)
	rc.types = append(rc.types, TypeNumber)
	rc.tpos = append(rc.tpos, ag.Pos)
	rc.bound = append(rc.bound, false)
	r.aggs = append(r.aggs, a)
	return &expr{kind: exReg, reg: a.reg, pos: ag.Pos}, nil
}

// aggregateUse is the position of a variable's first use in an
// aggregate, or the aggregate's.
func aggregateUse(a *Aggregate, name string) Pos {
	found := a.Pos
	done := false
	termVars(a, true, func(v *Var) {
		if !done && v.Name == name {
			found, done = v.Pos, true
		}
	})
	return found
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
	found := cl.Pos
	done := false
	eachVar(cl, true, func(v *Var) {
		if !done && v.Name == name {
			found, done = v.Pos, true
		}
	})
	return found
}

// eachVar calls f with every variable of a clause in source order, the
// head's first; inAggregates says whether those inside aggregates count.
func eachVar(cl *Clause, inAggregates bool, f func(*Var)) {
	walk := func(t Term) { termVars(t, inAggregates, f) }
	for _, a := range cl.Head.Args {
		walk(a)
	}
	eachBodyTerm(cl.Body, walk)
}

// eachBodyTerm calls f with every argument and comparison side of a body.
func eachBodyTerm(body []BodyItem, f func(Term)) {
	for _, it := range body {
		switch it := it.(type) {
		case *Literal:
			for _, a := range it.Atom.Args {
				f(a)
			}
		case *Comparison:
			f(it.L)
			f(it.R)
		}
	}
}

// ---- stratification ----

type depEdge struct {
	to   int // head table
	neg  bool
	agg  bool // the body table is read by an aggregate
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
		for _, ag := range r.aggs {
			for _, a := range ag.body.atoms {
				adj[a.table] = append(adj[a.table], depEdge{to: r.head, agg: true, rule: r.id, pos: a.pos})
			}
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
			if (e.neg || e.agg) && comp[from] == comp[e.to] {
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
		if bad.agg {
			b.WriteString(tableName(c, badFrom))
		} else {
			b.WriteString("!" + tableName(c, badFrom))
		}
		for _, t := range cycle {
			b.WriteString(" -> " + tableName(c, t))
		}
		if bad.agg {
			return &Error{Code: RecursiveAggregate, Pos: bad.pos, Cycle: names,
				Msg: fmt.Sprintf("an aggregate over %s in a rule for %s is inside a recursive cycle: %s (an aggregate must range over a lower stratum)", tableName(c, badFrom), tableName(c, bad.to), b.String())}
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
		st := c.strata[r.stratum]
		st.rules = append(st.rules, r.id)
		for _, ag := range r.aggs {
			st.aggReads = append(st.aggReads, ag.tables...)
		}
	}
	for _, st := range c.strata {
		slices.Sort(st.aggReads)
		st.aggReads = slices.Compact(st.aggReads)
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
	eachVar(cl, true, func(v *Var) {
		if count[v.Name] == 0 {
			first[v.Name] = v.Pos
			order = append(order, v.Name)
		}
		count[v.Name]++
	})
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
		atoms := r.atoms
		for _, ag := range r.aggs {
			atoms = append(slices.Clip(atoms), ag.body.atoms...)
		}
		for _, a := range atoms {
			rel := c.rels[a.table/2]
			if rel.input || rel.hasRules[a.table%2] || warned[a.table] {
				continue
			}
			warned[a.table] = true
			c.warnings = append(c.warnings, errorf(RelationAlwaysEmpty, a.pos, "%s has no rules, facts or .input, so it is always empty", tableName(c, a.table)))
		}
	}
}
