package authority

import (
	"fmt"
	"sort"
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
	head   string
	args   []logic.Term
	pos    []*logic.AtomExpr // positive literals, in source order
	posRel []int
	neg    []*logic.AtomExpr // default-negated literals
	negRel []int
	cmps   []*logic.Comparison
	where  logic.Pos
}

func (e *flatEngine) rel(name string) int {
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
		r := flatRule{head: c.Head.Name, args: c.Head.Args, where: c.Pos}
		bound := map[string]bool{}
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
				for _, t := range a.Args {
					if _, ok := t.(*logic.BinExpr); ok {
						return nil
					}
				}
				if b.Not {
					r.neg = append(r.neg, a)
					r.negRel = append(r.negRel, e.rel(a.Name))
				} else {
					r.pos = append(r.pos, a)
					r.posRel = append(r.posRel, e.rel(a.Name))
					for _, t := range a.Args {
						if v, ok := t.(*logic.Var); ok {
							bound[v.Name] = true
						}
					}
				}
			case *logic.Comparison:
				for _, t := range []logic.Term{b.L, b.R} {
					switch x := t.(type) {
					case *logic.Var, *logic.NumConst:
					case *logic.SymConst:
						if b.Op != "=" && b.Op != "!=" {
							return nil
						}
						_ = x
					default:
						return nil
					}
				}
				r.cmps = append(r.cmps, b)
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
		for _, cmp := range r.cmps {
			if !need([]logic.Term{cmp.L, cmp.R}) {
				return nil
			}
		}
		for _, a := range r.neg {
			if !need(a.Args) {
				return nil
			}
		}
		if !need(r.args) {
			return nil
		}
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

type binding struct {
	names []string
	vals  []logic.Value
}

func (b *binding) get(name string) (logic.Value, bool) {
	for i := len(b.names) - 1; i >= 0; i-- {
		if b.names[i] == name {
			return b.vals[i], true
		}
	}
	return logic.Value{}, false
}

func (b *binding) term(t logic.Term) (logic.Value, bool) {
	switch x := t.(type) {
	case *logic.Var:
		return b.get(x.Name)
	case *logic.NumConst:
		return logic.Num(x.Val), true
	case *logic.SymConst:
		return logic.Sym(x.Val), true
	}
	return logic.Value{}, false
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
	//flrh:orderfree each helper relation is copied into its own slot
	for rel, rows := range e.helpers {
		if id, ok := e.relID[rel]; ok {
			run.facts[id] = append([][]logic.Value(nil), rows...) // sorting and appends stay local
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
			sort.SliceStable(rows, func(i, j int) bool { return lessRow(rows[i], rows[j]) })
		}
	}
	b := binding{names: make([]string, 0, 16), vals: make([]logic.Value, 0, 16)}
	premises := make([]logic.Fact, 0, 8)
	for i := range e.rules {
		b.names, b.vals = b.names[:0], b.vals[:0]
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
	lit := rule.pos[i]
	for _, row := range r.facts[rule.posRel[i]] {
		if len(row) != len(lit.Args) {
			continue
		}
		mark := len(b.names)
		ok := true
		for k, t := range lit.Args {
			switch x := t.(type) {
			case *logic.Wildcard:
			case *logic.Var:
				if v, have := b.get(x.Name); have {
					ok = sameValue(v, row[k])
				} else {
					b.names, b.vals = append(b.names, x.Name), append(b.vals, row[k])
				}
			default:
				v, _ := b.term(t)
				ok = sameValue(v, row[k])
			}
			if !ok {
				break
			}
		}
		if ok {
			if err := r.join(rule, i+1, b, append(premises, logic.Fact{Rel: lit.Name, Args: row})); err != nil {
				return err
			}
		}
		b.names, b.vals = b.names[:mark], b.vals[:mark]
	}
	return nil
}

func (r *flatRun) finish(rule *flatRule, b *binding, premises []logic.Fact) error {
	for _, c := range rule.cmps {
		l, _ := b.term(c.L)
		rv, _ := b.term(c.R)
		d := cmpValues(l, rv)
		var ok bool
		switch c.Op {
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
	for ni, a := range rule.neg {
		pat := logic.Fact{Rel: a.Name, Args: make([]logic.Value, len(a.Args))}
		wild := make([]bool, len(a.Args))
		for k, t := range a.Args {
			if _, ok := t.(*logic.Wildcard); ok {
				wild[k] = true
				continue
			}
			pat.Args[k], _ = b.term(t)
		}
		for _, row := range r.facts[rule.negRel[ni]] {
			match := len(row) == len(pat.Args)
			for k := 0; match && k < len(row); k++ {
				match = wild[k] || sameValue(row[k], pat.Args[k])
			}
			if match {
				return nil
			}
		}
		absent = append(absent, logic.Absence{Pattern: pat, Wildcard: wild}.String())
	}
	r.firings++
	if r.e.lim.MaxFirings > 0 && r.firings > r.e.lim.MaxFirings {
		return fmt.Errorf("rule firings exceed the budget of %d", r.e.lim.MaxFirings)
	}
	args := make([]logic.Value, len(rule.args))
	for k, t := range rule.args {
		args[k], _ = b.term(t)
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
	why := Reason{Facts: make([]string, len(premises)), Absent: absent, Detail: rule.where.String()}
	for k, p := range premises {
		why.Facts[k] = p.String()
	}
	if why.Absent == nil {
		why.Absent = []string{}
	}
	tuples[key] = &flatTuple{args: args, why: why}
	return nil
}

func lessRow(a, b []logic.Value) bool {
	for k := 0; k < len(a) && k < len(b); k++ {
		if c := cmpValues(a[k], b[k]); c != 0 {
			return c < 0
		}
	}
	return len(a) < len(b)
}

// tupleKey identifies a tuple within its relation.
func tupleKey(args []logic.Value) string {
	n := 0
	for _, a := range args {
		n += len(a.Str()) + 21
	}
	b := make([]byte, 0, n)
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
func (r *flatRun) sorted(rel string) []*flatTuple {
	out := make([]*flatTuple, 0, len(r.out[rel]))
	for _, t := range r.out[rel] {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].args, out[j].args
		for k := range a {
			if c := cmpValues(a[k], b[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	return out
}

func (r *flatRun) result() derived {
	d := derived{caps: map[[2]string][]capSpec{}, options: map[[2]string][]string{}}
	for _, t := range r.sorted("decision") {
		why := t.why
		why.Rule = t.args[2].Str()
		d.decisions = append(d.decisions, derivedDecision{gate: t.args[0].Str(), verdict: t.args[1].Str(), rule: why.Rule, why: why})
	}
	for _, t := range r.sorted("shape_max") {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		d.caps[k] = append(d.caps[k], capSpec{param: t.args[2].Str(), max: t.args[3].Int()})
	}
	for _, t := range r.sorted("shape_scope") {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		d.caps[k] = append(d.caps[k], capSpec{scope: t.args[2].Str()})
	}
	for _, t := range r.sorted("option") {
		k := [2]string{t.args[0].Str(), t.args[1].Str()}
		d.options[k] = append(d.options[k], t.args[2].Str())
	}
	for _, t := range r.sorted("assess") {
		why := t.why
		why.Rule = t.args[1].Str()
		d.risks = append(d.risks, derivedRisk{risk: t.args[0].Str(), why: why})
	}
	return d
}
