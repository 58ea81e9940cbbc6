package logic

import "math"

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
	if limit <= 0 {
		return nil
	}
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
	if len(rr.atoms) > 0 || rr.npos > 0 {
		hgt = 1
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
