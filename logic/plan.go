package logic

import "slices"

// A plan is one join order for a rule: a sequence of steps run by a nested
// loop over registers. Each rule has one plan per choice of delta atom (the
// semi-naive variants), one that reads everything in full, and one with the
// head's variables bound in advance (for supports and proofs).

type stepKind uint8

const (
	stScan   stepKind = iota // match an atom against a table
	stNot                    // default negation: no visible row matches
	stFilter                 // comparison
	stAssign                 // reg = expr (an equality that binds)
	stHead                   // head plan: the computed head equals the target
	stAgg                    // reg = the value of aggregate atom of the rule
)

type colReg struct{ col, reg int }

type colExpr struct {
	col int
	e   *expr
}

type step struct {
	kind   stepKind
	atom   int // index into rule.atoms for scans and negations
	table  int
	ix     int     // index position in the table, -1 for none
	key    []*expr // index key values, in index column order
	binds  []colReg
	checks []colExpr
	args   []*expr // stNot: argument values, nil for a wildcard
	op     string
	l, r   *expr
	reg    int
	e      *expr
	other  bool // stNot on the delta atom: check against exec.other
}

// probeSet as a step's index means: all arguments bound, look the tuple
// up in the table's hash set.
const probeSet = -2

type plan struct {
	delta int // atom index read from the delta, -1 for none
	steps []step
	nregs int
}

// plan builds every rule's plans and records the indexes they need.
func (c *Compiled) plan() {
	c.indexes = make([][]uint64, len(c.rels)*2)
	for _, r := range c.rules {
		r.plans = make([]*plan, 1+len(r.atoms))
		r.plans[0] = c.buildPlan(r, -1, nil)
		for i := range r.atoms {
			r.plans[1+i] = c.buildPlan(r, i, nil)
		}
		pre := make([]bool, r.nvars)
		for _, e := range r.hargs {
			if e.kind == exReg {
				pre[e.reg] = true
			}
		}
		r.headPlan = c.buildPlan(r, -1, pre)
		for i := range r.aggs {
			a := &r.aggs[i]
			pre := make([]bool, r.nvars)
			for _, p := range a.params {
				pre[p] = true
			}
			a.plan = c.buildPlan(a.body, -1, pre)
			a.plan.steps = a.plan.steps[:len(a.plan.steps)-1] // no head to check
			if !slices.ContainsFunc(a.params, r.aggResult) {
				a.rulePlan = c.buildPlan(r, -1, pre)
				a.rulePlan.steps = a.rulePlan.steps[:len(a.rulePlan.steps)-1]
			}
			a.paramCols = make([][]int, len(a.body.atoms))
			for k, at := range a.body.atoms {
				a.paramCols[k] = paramColumns(at, a.params)
			}
			if bindsParams(a) {
				a.deltaPlans = make([]*plan, len(a.body.atoms))
				for k := range a.body.atoms {
					a.deltaPlans[k] = c.buildPlan(a.body, k, nil)
				}
			}
		}
	}
	c.scratch = c.measureScratch()
}

// paramColumns is, for each of params, a column of at holding it as a
// plain argument, or nil when one has none.
func paramColumns(at atomRef, params []int) []int {
	cols := make([]int, len(params))
	for j, p := range params {
		cols[j] = slices.IndexFunc(at.args, func(e *expr) bool { return e != nil && e.kind == exReg && e.reg == p })
		if cols[j] < 0 {
			return nil
		}
	}
	return cols
}

// bindsParams reports whether every param of a is a plain argument of a
// positive atom of its body: then each instantiation of the body alone
// binds them all.
func bindsParams(a *aggRef) bool {
	for _, p := range a.params {
		if !slices.ContainsFunc(a.body.atoms[:a.body.npos], func(at atomRef) bool { return paramColumns(at, []int{p}) != nil }) {
			return false
		}
	}
	return true
}

// scratchSize is the largest register file, atom list, step list and
// tuple an evaluator of the program can meet. The program is immutable
// once planned, so it is measured here once: an evaluator is set up for
// every evaluation, query and support check, and walking every rule's
// plans each time cost more than the allocation it sized.
type scratchSize struct {
	atoms, regs, steps, arity int
}

func (c *Compiled) measureScratch() scratchSize {
	z := scratchSize{atoms: 1, regs: 1, steps: 1, arity: 1}
	for _, r := range c.rules {
		z.atoms = max(z.atoms, len(r.atoms))
		for _, p := range r.plans {
			z.regs = max(z.regs, p.nregs)
			z.steps = max(z.steps, len(p.steps))
		}
		z.regs = max(z.regs, r.headPlan.nregs)
		z.steps = max(z.steps, len(r.headPlan.steps))
		for _, a := range r.aggs {
			z.atoms = max(z.atoms, len(a.body.atoms))
			z.regs = max(z.regs, a.plan.nregs)
			z.steps = max(z.steps, len(a.plan.steps))
			for _, p := range append([]*plan{a.rulePlan}, a.deltaPlans...) {
				if p != nil {
					z.regs = max(z.regs, p.nregs)
					z.steps = max(z.steps, len(p.steps))
				}
			}
		}
	}
	for _, rel := range c.rels {
		z.arity = max(z.arity, len(rel.types))
	}
	return z
}

func (c *Compiled) needIndex(table int, mask uint64) int {
	for i, m := range c.indexes[table] {
		if m == mask {
			return i
		}
	}
	c.indexes[table] = append(c.indexes[table], mask)
	return len(c.indexes[table]) - 1
}

type pendingCmp struct {
	op   string
	l, r *expr
}

func (c *Compiled) buildPlan(r *rule, delta int, pre []bool) *plan {
	p := &plan{delta: delta, nregs: r.nvars}
	bound := make([]bool, r.nvars, r.nvars+8)
	copy(bound, pre)
	isBound := func(e *expr) bool {
		for _, v := range exprVars(e, nil) {
			if v >= len(bound) || !bound[v] {
				return false
			}
		}
		return true
	}
	var cmps []pendingCmp
	for _, cm := range r.cmps {
		cmps = append(cmps, pendingCmp{cm.op, cm.l, cm.r})
	}
	negDone := make([]bool, len(r.atoms))
	placed := make([]bool, len(r.atoms))
	aggDone := make([]bool, len(r.aggs))

	scan := func(ai int, useIndex bool) {
		a := &r.atoms[ai]
		s := step{kind: stScan, atom: ai, table: a.table, ix: -1}
		var mask uint64
		var keyCols []int
		var keyExprs []*expr
		newly := map[int]bool{}
		for col, e := range a.args {
			switch {
			case e == nil:
			case isBound(e) && !newlyUses(e, newly):
				if useIndex {
					mask |= 1 << col
					keyCols = append(keyCols, col)
					keyExprs = append(keyExprs, e)
				} else {
					s.checks = append(s.checks, colExpr{col, e})
				}
			case e.kind == exReg && !bound[e.reg]:
				s.binds = append(s.binds, colReg{col, e.reg})
				bound[e.reg] = true
				newly[e.reg] = true
			case e.kind == exReg:
				// repeated variable within this atom
				s.checks = append(s.checks, colExpr{col, e})
			default:
				// an expression over variables not yet bound: capture the
				// column in a temporary and compare once they are.
				tmp := p.nregs
				p.nregs++
				bound = append(bound, true)
				s.binds = append(s.binds, colReg{col, tmp})
				cmps = append(cmps, pendingCmp{"=", e, &expr{kind: exReg, reg: tmp}})
			}
		}
		if useIndex && len(s.binds) == 0 && len(s.checks) == 0 && len(keyCols) == len(a.args) && len(a.args) > 0 {
			// Every argument is bound: probe the hash set, no index.
			s.ix = probeSet
			s.key = keyExprs
		} else if mask != 0 {
			s.ix = c.needIndex(a.table, mask)
			// key exprs must follow the index's column order (ascending)
			_ = keyCols
			s.key = keyExprs
		}
		p.steps = append(p.steps, s)
		placed[ai] = true
	}
	// Comparisons that divide are placed after every atom, so whether a
	// division by zero is reached does not depend on the join order.
	allowDiv := false
	flush := func() {
		for changed := true; changed; {
			changed = false
			for i := 0; i < len(cmps); i++ {
				cm := cmps[i]
				if !allowDiv && (divides(cm.l) || divides(cm.r)) {
					continue
				}
				lb, rb := isBound(cm.l), isBound(cm.r)
				var st step
				switch {
				case lb && rb:
					st = step{kind: stFilter, op: cm.op, l: cm.l, r: cm.r}
				case cm.op == "=" && cm.l.kind == exReg && !lb && rb && !r.aggResult(cm.l.reg):
					st = step{kind: stAssign, reg: cm.l.reg, e: cm.r}
					bound[cm.l.reg] = true
				case cm.op == "=" && cm.r.kind == exReg && !rb && lb && !r.aggResult(cm.r.reg):
					st = step{kind: stAssign, reg: cm.r.reg, e: cm.l}
					bound[cm.r.reg] = true
				default:
					continue
				}
				p.steps = append(p.steps, st)
				cmps = append(cmps[:i], cmps[i+1:]...)
				i--
				changed = true
			}
			for ai := r.npos; ai < len(r.atoms); ai++ {
				if negDone[ai] {
					continue
				}
				a := &r.atoms[ai]
				ok := true
				for _, e := range a.args {
					if e != nil && !isBound(e) {
						ok = false
					}
				}
				if !ok {
					continue
				}
				// When this negation is the delta atom, its rows come from
				// the delta but the absence is still checked against the
				// state the other atoms read (a wildcard pattern may still
				// have other matches).
				st := step{kind: stNot, atom: ai, table: a.table, ix: -1, args: a.args, other: ai == delta}
				var mask uint64
				wild := false
				for col, e := range a.args {
					if e == nil {
						wild = true
					} else {
						mask |= 1 << col
					}
				}
				if wild && mask != 0 {
					st.ix = c.needIndex(a.table, mask)
				}
				p.steps = append(p.steps, st)
				negDone[ai] = true
				changed = true
			}
			// An aggregate is computed once the variables it shares are
			// bound; one that divides waits, as a comparison that does.
			for i := range r.aggs {
				a := &r.aggs[i]
				if aggDone[i] || a.divides && !allowDiv || slices.ContainsFunc(a.params, func(p int) bool { return !bound[p] }) {
					continue
				}
				// Its result register is its own: no head binds it.
				p.steps = append(p.steps, step{kind: stAgg, atom: i, reg: a.reg})
				bound[a.reg] = true
				aggDone[i] = true
				changed = true
			}
		}
	}
	if delta >= 0 {
		scan(delta, false)
		placed[delta] = true
	}
	flush()
	for {
		best, bestScore := -1, -1
		for ai := 0; ai < r.npos; ai++ {
			if placed[ai] {
				continue
			}
			score := 0
			for _, e := range r.atoms[ai].args {
				if e != nil && isBound(e) {
					score++
				}
			}
			// Ties between atoms with bound arguments go to the lowest
			// stratum: base and lower relations are usually the smaller
			// side of a lookup join. With nothing bound, scan in source
			// order, so no index is forced on a growing recursive relation.
			if score > bestScore || (score == bestScore && score > 0 && c.tstratum[r.atoms[ai].table] < c.tstratum[r.atoms[best].table]) {
				best, bestScore = ai, score
			}
		}
		if best < 0 {
			break
		}
		scan(best, true)
		flush()
	}
	allowDiv = true
	flush()
	if pre != nil {
		p.steps = append(p.steps, step{kind: stHead})
	}
	return p
}

func divides(e *expr) bool {
	if e == nil || e.kind != exBin {
		return false
	}
	return e.op == '/' || e.op == '%' || divides(e.l) || divides(e.r)
}

func newlyUses(e *expr, newly map[int]bool) bool {
	for _, v := range exprVars(e, nil) {
		if newly[v] {
			return true
		}
	}
	return false
}
