package ground

import (
	"fmt"
	"testing"
)

// chainBundle is a one-stratum chain x0 -> x1 -> ... -> xn with a
// default-negated guard in a second stratum on every fifth link.
func chainBundle(n int) (corpus, map[string]any) {
	c := corpus{atoms: map[string]atomT{}, bundles: map[string]bundleT{}, deltas: map[string]deltaT{}}
	var rules []ruleT
	for i := 0; i <= n; i++ {
		c.atoms[fmt.Sprintf("x%d", i)] = obj("predicate", "x", "subject", fmt.Sprintf("%d", i))
		c.atoms[fmt.Sprintf("g%d", i)] = obj("predicate", "guarded", "subject", fmt.Sprintf("%d", i))
		if i > 0 {
			rules = append(rules, r(fmt.Sprintf("rule:x%d", i), 0, pos(fmt.Sprintf("x%d", i)), []litT{pos(fmt.Sprintf("x%d", i-1))}))
		}
		if i%5 == 0 {
			rules = append(rules, r(fmt.Sprintf("rule:g%d", i), 1, pos(fmt.Sprintf("g%d", i)), []litT{pos(fmt.Sprintf("x%d", i))}, defT{fmt.Sprintf("x%d", i+1), 0}))
		}
	}
	c.atoms[fmt.Sprintf("x%d", n+1)] = obj("predicate", "x", "subject", fmt.Sprintf("%d", n+1))
	c.deltas["x0"] = deltaT{ref: "x0", polarity: positive, diff: 1, derivationID: "derivation:x0"}
	c.bundles["chain"] = bundleT{maxFirings: 1000, maxDepth: 8, rules: rules}
	return c, buildBundle(c, "chain", false)
}

func BenchmarkSolveChain(b *testing.B) {
	c, bundle := chainBundle(7)
	deltas := buildDeltas(c, []string{"x0"}, 1, bundle)
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := Solve(nil, bundle, deltas, 1); rej != nil {
			b.Fatal(rej.Wire())
		}
	}
}

func BenchmarkSolve10000Inputs(b *testing.B) {
	bundle := buildBundle(m2, "empty", false)
	ins := manyInputs(bundle, MaxFactDeltaInputs, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := Solve(nil, bundle, ins, 1); rej != nil {
			b.Fatal(rej.Wire())
		}
	}
}

// BenchmarkStepIncrementalNoop measures a step that reuses every cached
// evaluation; it still runs the public Solve twice as the contract's oracle.
func BenchmarkStepIncrementalNoop(b *testing.B) {
	c, bundle := chainBundle(7)
	first, rej := StepIncremental(nil, bundle, buildDeltas(c, []string{"x0"}, 1, bundle), 1)
	if rej != nil {
		b.Fatal(rej.Wire())
	}
	cp := first["next_checkpoint"]
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := StepIncremental(cp, bundle, []any{}, 2); rej != nil {
			b.Fatal(rej.Wire())
		}
	}
}

// BenchmarkSolveTickOver10000 is one runner tick: a prior of 10000 base
// supports and one new input. The contract re-validates the prior by a
// clean recomputation and then recomputes, so the cost is two full
// derivations over the ledger.
func BenchmarkSolveTickOver10000(b *testing.B) {
	bundle := buildBundle(m2, "empty", false)
	ins := manyInputs(bundle, MaxFactDeltaInputs, true)
	first, rej := Solve(nil, bundle, ins, 1)
	if rej != nil {
		b.Fatal(rej.Wire())
	}
	prior := first["next_materialization"]
	tick := buildDeltas(m2, []string{"b_positive"}, 2, bundle)
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := Solve(prior, bundle, tick, 2); rej != nil {
			b.Fatal(rej.Wire())
		}
	}
}
