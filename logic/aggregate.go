package logic

import (
	"math"
	"slices"
)

// Aggregation is the value an aggregate took in a rule instantiation,
// with the facts it ranged over: every fact of every instantiation of its
// body for count and sum, those of the instantiations that attain the
// value for min and max (none for a count or sum of nothing). Like an
// absence, it reads a lower stratum that is complete, so it adds nothing
// to a proof's height.
type Aggregation struct {
	Text  string // the aggregate as the program states it
	Value int64
	Over  []Fact // sorted, each once
}

func (a Aggregation) String() string {
	var buf [96]byte
	return string(a.appendText(buf[:0]))
}

// aggAcc is what the evaluation of one aggregate accumulates.
type aggAcc struct {
	a   *aggRef
	n   int64 // instantiations seen
	val int64 // count, sum, or the least or greatest value so far
	// rows, when collecting (supports), holds (table, row) pairs of the
	// matched atoms of the instantiations that count.
	collect bool
	rows    [][2]int32
}

// aggState is an evaluator's part in aggregates: a rule's evaluator
// holds the evaluator its aggregates run in (sub), which holds the rule's
// (parent) and what the aggregate in hand accumulates.
type aggState struct {
	sub    *exec
	parent *exec
	acc    aggAcc
	// memo holds, for one pass of a rule (runRule), each aggregate's
	// value by its params' values: the tables an aggregate reads do not
	// change while its rule runs, and a rule often meets the same params
	// again (a sum per payee, for every refund to that payee).
	memo map[aggKey]aggValue
}

// aggKey names an aggregate of the rule in hand (by its result register)
// and the values of its params; memoParams bounds the params a memoised
// aggregate may have, so that a key is a value and costs no allocation.
type aggKey struct {
	reg int
	p   [memoParams]int64
}

const memoParams = 3

// aggValue is a memoised aggregate's result.
type aggValue struct {
	v  int64
	ok bool
}

// aggExec returns the evaluator x computes its aggregates with, made on
// the first: an aggregate's body runs to the end for each binding of the
// rule's variables it shares, with registers of its own.
func (x *exec) aggExec() *exec {
	if x.ag == nil {
		sub := x.m.newExec()
		sub.mode = emitCollect
		sub.onMatch = sub.aggMatch
		sub.ag = &aggState{parent: x}
		sub.countDead = x.countDead
		x.ag = &aggState{sub: sub}
	}
	return x.ag.sub
}

// aggregate computes aggregate a over the current registers. It reports
// false when a has no value (min or max of nothing), and when evaluating
// it failed (x.err is then set).
func (x *exec) aggregate(a *aggRef, collect bool) (int64, bool) {
	sub := x.aggExec()
	if collect || len(a.params) > memoParams {
		return x.aggregateIn(sub, a, collect)
	}
	ag := x.ag
	k := aggKey{reg: a.reg}
	for i, p := range a.params {
		k.p[i] = x.regs[p]
	}
	if r, ok := ag.memo[k]; ok {
		return r.v, r.ok
	}
	v, ok := x.aggregateIn(sub, a, false)
	if x.err != nil {
		return v, ok
	}
	if ag.memo == nil {
		ag.memo = map[aggKey]aggValue{}
	}
	if len(ag.memo) < memoEntries {
		ag.memo[k] = aggValue{v, ok}
	}
	return v, ok
}

// memoEntries bounds a pass's memo: where params rarely repeat (a value
// per node of a large graph) a memo of every one would cost megabytes and
// save nothing.
const memoEntries = 4096

// aggregateIn is aggregate computed by enumeration in sub.
func (x *exec) aggregateIn(sub *exec, a *aggRef, collect bool) (int64, bool) {
	copy(sub.regs, x.regs)
	sub.r, sub.p = a.body, a.plan
	for ai := range a.body.atoms {
		sub.views[ai] = view{hi: math.MaxInt32, old: x.aggOld}
	}
	acc := &sub.ag.acc
	*acc = aggAcc{a: a, collect: collect, rows: acc.rows[:0]}
	sub.err, sub.stopped = nil, false
	sub.run(0)
	if sub.err != nil {
		return 0, x.fail(sub.err.(*Error))
	}
	switch a.fn {
	case aggCount:
		return acc.n, true
	case aggSum:
		return acc.val, true
	}
	return acc.val, acc.n > 0
}

// aggMatch is an aggregate evaluator's callback: one instantiation of the
// body.
func (x *exec) aggMatch(_ []int64) bool {
	acc := &x.ag.acc
	a := acc.a
	// An evaluation counts the instantiations of an aggregate's body as
	// firings of its rule: they are the rule's work, and the rule budget
	// bounds it. Queries (supports, proofs, depth) count none.
	if p := x.ag.parent; p.mode != emitCollect {
		p.firings++
		if lim := x.m.lim.MaxFirings; lim > 0 && x.m.stats.Firings+p.firings > lim {
			return x.fail(errorf(RuleBudgetExhausted, p.r.pos, "more than %d rule firings: the rule budget is exhausted (last rule: %s)", lim, p.r.text))
		}
	}
	var v int64
	if a.target != nil {
		var ok bool
		if v, ok = x.eval(a.target); !ok {
			return false
		}
	}
	keep := true
	switch a.fn {
	case aggSum:
		acc.val += v // wraps, as all arithmetic does
	case aggMin, aggMax:
		better := acc.n == 0 || a.fn == aggMin && v < acc.val || a.fn == aggMax && v > acc.val
		if better {
			acc.val = v
			acc.rows = acc.rows[:0]
		} else {
			keep = v == acc.val
		}
	}
	acc.n++
	if acc.collect && keep {
		for ai := 0; ai < a.body.npos; ai++ {
			acc.rows = append(acc.rows, [2]int32{int32(a.body.atoms[ai].table), x.rows[ai]})
		}
	}
	return true
}

// aggregations computes the aggregates of x's rule over its registers,
// with the facts each ranged over, for a support.
func (m *Materialization) aggregations(x *exec) []Aggregation {
	r := x.r
	out := make([]Aggregation, 0, len(r.aggs))
	for i := range r.aggs {
		a := &r.aggs[i]
		v, _ := x.aggregate(a, true)
		ag := Aggregation{Text: a.text, Value: v}
		rows := x.ag.sub.ag.acc.rows
		slices.SortFunc(rows, func(p, q [2]int32) int {
			if p[0] != q[0] {
				return int(p[0] - q[0])
			}
			return int(p[1] - q[1])
		})
		rows = slices.Compact(rows)
		for _, tr := range rows {
			t := int(tr[0])
			ag.Over = append(ag.Over, m.decode(t, m.tables[t].tuple(tr[1])))
		}
		slices.SortFunc(ag.Over, compareFacts)
		out = append(out, ag)
	}
	return out
}
