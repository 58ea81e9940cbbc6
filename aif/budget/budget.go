// Package budget arbitrates a shared per-tick budget across local
// selections (R11), exactly and without ever over-subscribing it.
//
// Each local field (an agent, a queue, a ranked list of proposals) offers
// mutually exclusive options, each with an integer cost and a fixed-point
// value (higher is better; typically the negated expected free energy
// relative to doing nothing). A field may choose at most one option, and
// only options within its own sub-budget. The coordinator then chooses one
// option (or none) per field so that the summed cost stays within the
// shared budget and the summed value is maximal: the multiple-choice
// knapsack, solved exactly by dynamic programming over integer costs. Ties
// prefer the lower total cost, then earlier fields' earlier options, so the
// result replays exactly.
package budget

import (
	"fmt"

	"flrh.dev/flrh/aif/fixed"
)

// Limits keep the exact solver's table bounded.
const (
	MaxBudget = 1 << 20
	MaxCells  = 1 << 24 // fields × (budget + 1)
	MaxValue  = fixed.Num(1) << 50
)

// Option is one local proposal.
type Option struct {
	ID    string    `json:"id"`
	Cost  int64     `json:"cost"`
	Value fixed.Num `json:"value"`
}

// Field is one local selection with its sub-budget.
type Field struct {
	Name      string   `json:"name"`
	SubBudget int64    `json:"sub_budget"`
	Options   []Option `json:"options"`
}

// Allocation is the coordinator's choice for one field ("" = none).
type Allocation struct {
	Field  string    `json:"field"`
	Option string    `json:"option"`
	Cost   int64     `json:"cost"`
	Value  fixed.Num `json:"value"`
}

// Exclusion records an option a field could not offer.
type Exclusion struct {
	Field  string `json:"field"`
	Option string `json:"option"`
	Reason string `json:"reason"`
}

// Result is the arbitration, in field order.
type Result struct {
	Kind        string       `json:"kind"`
	Budget      int64        `json:"budget"`
	Used        int64        `json:"used"`
	Value       fixed.Num    `json:"value"`
	Allocations []Allocation `json:"allocations"`
	Excluded    []Exclusion  `json:"excluded"`
}

// ResultKind is the kind of an arbitration record.
const ResultKind = "flrh.aif.budget"

// Arbitrate splits budget across the fields.
func Arbitrate(fields []Field, budget int64) (Result, error) {
	if budget < 0 || budget > MaxBudget {
		return Result{}, fmt.Errorf("budget: shared budget %d outside 0..%d", budget, MaxBudget)
	}
	if int64(len(fields))*(budget+1) > MaxCells {
		return Result{}, fmt.Errorf("budget: %d fields × budget %d exceeds the solver limit", len(fields), budget)
	}
	res := Result{Kind: ResultKind, Budget: budget, Allocations: []Allocation{}, Excluded: []Exclusion{}}
	// Local stage: each field keeps the options within its sub-budget.
	local := make([][]Option, len(fields))
	names := map[string]bool{}
	for i, f := range fields {
		if f.Name == "" || names[f.Name] {
			return Result{}, fmt.Errorf("budget: field %d: empty or duplicate name %q", i, f.Name)
		}
		names[f.Name] = true
		if f.SubBudget < 0 {
			return Result{}, fmt.Errorf("budget: field %s: negative sub-budget", f.Name)
		}
		ids := map[string]bool{}
		for j, o := range f.Options {
			switch {
			case o.ID == "" || ids[o.ID]:
				return Result{}, fmt.Errorf("budget: /fields/%d/options/%d: empty or duplicate id %q", i, j, o.ID)
			case o.Cost < 0:
				return Result{}, fmt.Errorf("budget: /fields/%d/options/%d: negative cost", i, j)
			case o.Value > MaxValue || o.Value < -MaxValue:
				return Result{}, fmt.Errorf("budget: /fields/%d/options/%d: value out of range", i, j)
			}
			ids[o.ID] = true
			switch {
			case o.Cost > f.SubBudget:
				res.Excluded = append(res.Excluded, Exclusion{f.Name, o.ID, fmt.Sprintf("cost %d exceeds the field's sub-budget %d", o.Cost, f.SubBudget)})
			case o.Cost > budget:
				res.Excluded = append(res.Excluded, Exclusion{f.Name, o.ID, fmt.Sprintf("cost %d exceeds the shared budget %d", o.Cost, budget)})
			case o.Value <= 0:
				res.Excluded = append(res.Excluded, Exclusion{f.Name, o.ID, "no better than choosing nothing"})
			default:
				local[i] = append(local[i], o)
			}
		}
	}
	// Coordinator: best[i][c] is the best (value, −cost) using fields i.. with
	// at most c units; choice[i][c] the option index taken (−1 none).
	n := len(fields)
	W := int(budget)
	type cell struct {
		value fixed.Num
		cost  int64
	}
	better := func(a, b cell) bool {
		if a.value != b.value {
			return a.value > b.value
		}
		return a.cost < b.cost
	}
	best := make([][]cell, n+1)
	choice := make([][]int32, n)
	best[n] = make([]cell, W+1)
	for i := n - 1; i >= 0; i-- {
		best[i] = make([]cell, W+1)
		choice[i] = make([]int32, W+1)
		for c := 0; c <= W; c++ {
			top := best[i+1][c]
			pick := int32(-1)
			for k, o := range local[i] {
				if o.Cost > int64(c) {
					continue
				}
				rest := best[i+1][c-int(o.Cost)]
				cand := cell{rest.value + o.Value, rest.cost + o.Cost}
				if better(cand, top) {
					top, pick = cand, int32(k)
				}
			}
			best[i][c] = top
			choice[i][c] = pick
		}
	}
	c := W
	for i, f := range fields {
		a := Allocation{Field: f.Name}
		if k := choice[i][c]; k >= 0 {
			o := local[i][k]
			a.Option, a.Cost, a.Value = o.ID, o.Cost, o.Value
			c -= int(o.Cost)
			res.Used += o.Cost
			res.Value += o.Value
		}
		res.Allocations = append(res.Allocations, a)
	}
	if res.Used > budget {
		// Unreachable by construction; refuse rather than over-subscribe.
		return Result{}, fmt.Errorf("budget: internal error: used %d of %d", res.Used, budget)
	}
	return res, nil
}
