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
	inf := int32(math.MaxInt32)
	height := make([][]int32, len(m.tables))
	for t, tb := range m.tables {
		h := make([]int32, tb.n)
		for r := range h {
			h[r] = inf
			if tb.alive(int32(r)) && m.base[t][int32(r)] > 0 {
				h[r] = 0
			}
		}
		height[t] = h
	}
	x := m.newExec()
	x.mode = emitCollect
	head := make([]int64, len(x.head))
	// One callback for every rule and pass, reading the rule in hand
	// (a closure per rule and pass was most of the allocations here).
	var (
		rr      *rule
		ht      *table
		changed bool
	)
	x.onMatch = func([]int64) bool {
		var hgt int32
		if len(rr.atoms) > 0 || rr.npos > 0 {
			hgt = 1
		}
		for ai := 0; ai < rr.npos; ai++ {
			ph := height[rr.atoms[ai].table][x.rows[ai]]
			if ph == inf {
				return true
			}
			hgt = max(hgt, ph+1)
		}
		h := head[:len(rr.hargs)]
		for k, e := range rr.hargs {
			v, ok := x.eval(e)
			if !ok {
				return false
			}
			h[k] = v
		}
		if row := ht.find(h); row >= 0 && hgt < height[rr.head][row] {
			height[rr.head][row] = hgt
			changed = true
		}
		return true
	}
	for pass := 1; pass <= limit+1; pass++ {
		changed = false
		for _, r := range m.c.rules {
			rr, ht = r, m.tables[r.head]
			for ai := range r.atoms {
				x.views[ai] = view{hi: math.MaxInt32}
			}
			x.err = nil
			if err := x.runRule(r, r.plans[0]); err != nil {
				return err
			}
		}
		if !changed {
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
