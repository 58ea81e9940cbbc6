package logic

import (
	"math"
	"slices"
)

// checkDepth enforces Limits.MaxDepth as the reference defines derivation
// depth: the height of a fact's shortest proof, where base facts and
// inline facts have height 0 and a rule instantiation is one more than its
// highest premise (absences add nothing). Heights are relaxed pass by pass
// over every rule instantiation; after k passes every fact whose shortest
// proof has height at most k has its height, so MaxDepth passes decide the
// question exactly. The cost is up to MaxDepth re-enumerations of all
// instantiations, which suits the small rule sets budgets are set for.
func (m *Materialization) checkDepth() error {
	limit := m.lim.MaxDepth
	if limit <= 0 || depthShortcut && m.c.depthBound >= 0 && m.c.depthBound <= limit {
		// No fact of this program can need a deeper derivation.
		return nil
	}
	return m.checkDepthFull()
}

// depthShortcut lets checkDepth skip the enumeration when the program's
// depth bound is within the limit; tests turn it off to hold the shortcut
// to the enumeration.
var depthShortcut = true

// boundDepth is a bound on the height checkDepthFull finds for any fact,
// whatever the facts: 0 for a table no rule derives (its facts are base
// facts), and for a rule's head one more than the bound of its highest
// matched premise, as match counts (1 for a rule with only negated
// atoms or aggregates, 0 for an inline fact); a fact's shortest proof is no higher than
// any of its proofs. It is -1, no bound, when the heights grow without
// end (a rule recursive through its matched atoms), and when a rule does
// arithmetic that can fail (division or remainder): the enumeration
// evaluates its expressions over combinations of rows the evaluation's
// own plans may not have met, so its error is left for it to find.
func (c *Compiled) boundDepth() int {
	for _, r := range c.rules {
		for _, e := range r.hargs {
			if mayFail(e) {
				return -1
			}
		}
		for _, a := range r.atoms {
			for _, e := range a.args {
				if mayFail(e) {
					return -1
				}
			}
		}
		for _, cm := range r.cmps {
			if mayFail(cm.l) || mayFail(cm.r) {
				return -1
			}
		}
		for _, a := range r.aggs {
			if a.divides {
				return -1
			}
		}
	}
	h := make([]int, 2*len(c.rels))
	// Each pass settles at least one more level of the matched-atom
	// dependencies; past one pass per table, only a cycle still grows.
	for pass := 0; pass <= len(h); pass++ {
		changed := false
		for _, r := range c.rules {
			hgt := 0
			if len(r.atoms) > 0 || len(r.aggs) > 0 {
				hgt = 1
			}
			for _, a := range r.atoms[:r.npos] {
				hgt = max(hgt, h[a.table]+1)
			}
			if hgt > h[r.head] {
				h[r.head], changed = hgt, true
			}
		}
		if !changed {
			return slices.Max(append(h, 0))
		}
	}
	return -1
}

// mayFail reports whether evaluating e can fail: whether it applies any
// operator but '+', '-' and '*' (division, remainder) anywhere.
func mayFail(e *expr) bool {
	if e == nil || e.kind != exBin {
		return false
	}
	return (e.op != '+' && e.op != '-' && e.op != '*') || mayFail(e.l) || mayFail(e.r)
}

// checkDepthFull is checkDepth's enumeration.
func (m *Materialization) checkDepthFull() error {
	limit := m.lim.MaxDepth
	// Every table's heights come from one array; the callback's state is
	// one value (a closure per rule and pass, then one variable each that
	// the callback shared, were most of the allocations here).
	rows := 0
	for _, tb := range m.tables {
		rows += int(tb.n)
	}
	x := m.newExec()
	x.mode = emitCollect
	d := &depthCheck{x: x, height: make([][]int32, len(m.tables)), head: make([]int64, len(x.head))}
	all := make([]int32, rows)
	for t, tb := range m.tables {
		h := all[:tb.n:tb.n]
		all = all[tb.n:]
		for r := range h {
			h[r] = depthInf
			if tb.alive(int32(r)) && m.base[t][int32(r)] > 0 {
				h[r] = 0
			}
		}
		d.height[t] = h
	}
	height := d.height
	x.onMatch = d.match
	for pass := 1; pass <= limit+1; pass++ {
		d.changed = false
		for _, r := range m.c.rules {
			d.rr, d.ht = r, m.tables[r.head]
			for ai := range r.atoms {
				x.views[ai] = view{hi: math.MaxInt32}
			}
			x.err = nil
			if err := x.runRule(r, r.plans[0]); err != nil {
				return err
			}
		}
		if !d.changed {
			break
		}
	}
	for t, tb := range m.tables {
		for r := int32(0); r < tb.n; r++ {
			if tb.alive(r) && height[t][r] > int32(limit) {
				return errorf(DepthExceeded, Pos{}, "%s needs a derivation deeper than %d: derivation depth exceeded", m.decode(t, tb.tuple(r)), limit)
			}
		}
	}
	return nil
}

const depthInf = int32(math.MaxInt32)

// depthCheck is checkDepth's state, read by its callback for the rule in
// hand.
type depthCheck struct {
	x       *exec
	height  [][]int32 // per table and row: the shortest proof found so far
	head    []int64
	rr      *rule
	ht      *table
	changed bool
}

// match lowers the height of the head of the rule instantiation just
// matched to one more than its highest premise, if that is lower.
func (d *depthCheck) match([]int64) bool {
	rr, x := d.rr, d.x
	var hgt int32
	if len(rr.atoms) > 0 || len(rr.aggs) > 0 {
		hgt = 1 // a rule applied, over premises, absences or aggregates
	}
	for ai := 0; ai < rr.npos; ai++ {
		ph := d.height[rr.atoms[ai].table][x.rows[ai]]
		if ph == depthInf {
			return true
		}
		hgt = max(hgt, ph+1)
	}
	h := d.head[:len(rr.hargs)]
	for k, e := range rr.hargs {
		v, ok := x.eval(e)
		if !ok {
			return false
		}
		h[k] = v
	}
	if row := d.ht.find(h); row >= 0 && hgt < d.height[rr.head][row] {
		d.height[rr.head][row] = hgt
		d.changed = true
	}
	return true
}
