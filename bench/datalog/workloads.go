// Command datalog generates the Datalog benchmark workloads, runs flrh's
// engine on them (from scratch and incrementally) and, when a souffle
// binary is on PATH, runs Soufflé's interpreter single-threaded on the same
// files and prints the ratios.
//
//	go run ./datalog                 # chain and tree workloads
//	go run ./datalog -heavy          # also a 2,300-node chain and the 5,000-node random graph (~24.7M tuples)
//	go run ./datalog -out DIR        # keep DIR/<workload>/prog.dl and facts/edge.facts
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// TCProgram is transitive closure.
const TCProgram = `.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
.output tc
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
`

// SGProgram is same-generation.
const SGProgram = `.decl edge(x: number, y: number)
.input edge
.decl sg(x: number, y: number)
.output sg
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
`

// DegreeProgram gives each node with out-edges its out-degree, the sum of
// its successors and the largest one: three aggregates per node.
const DegreeProgram = `.decl edge(x: number, y: number)
.input edge
.decl node(x: number)
node(x) :- edge(x, _).
node(y) :- edge(_, y).
.decl deg(x: number, n: number, s: number, m: number)
.output deg
deg(x, n, s, m) :- node(x), n = count : edge(x, _), s = sum y : edge(x, y), m = max y : edge(x, y).
`

// Edge is a directed edge.
type Edge [2]int64

// Chain is 1 -> 2 -> ... -> n.
func Chain(n int) []Edge {
	out := make([]Edge, 0, n-1)
	for i := 1; i < n; i++ {
		out = append(out, Edge{int64(i), int64(i + 1)})
	}
	return out
}

// RandomGraph draws each directed edge (i, j), i != j, independently with
// probability p, from a fixed seed.
func RandomGraph(n int, p float64, seed uint64) []Edge {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var out []Edge
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && rng.Float64() < p {
				out = append(out, Edge{int64(i), int64(j)})
			}
		}
	}
	return out
}

// RandomTree gives every node i > 0 a parent drawn uniformly from the
// window nodes before it, from a fixed seed.
func RandomTree(n, window int, seed uint64) []Edge {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]Edge, 0, n-1)
	for i := 1; i < n; i++ {
		lo := max(0, i-window)
		out = append(out, Edge{int64(lo + rng.IntN(i-lo)), int64(i)})
	}
	return out
}

// Workload is one benchmark: a program, its edges, and the relation whose
// size is reported.
type Workload struct {
	Name    string
	Program string
	Edges   []Edge
	Output  string
	// Reference timings from the workload description, in seconds (0:
	// not measured there).
	SouffleSeconds, MangleSeconds float64
}

// Workloads returns the standard set; heavy adds the 24.7M-tuple graph.
func Workloads(heavy bool) []Workload {
	ws := []Workload{
		{Name: "tc-chain-2000", Program: TCProgram, Edges: Chain(2000), Output: "tc", SouffleSeconds: 0.67, MangleSeconds: 19.7},
		{Name: "sg-tree-20000", Program: SGProgram, Edges: RandomTree(20000, 50, 1), Output: "sg", SouffleSeconds: 0.22, MangleSeconds: 9.9},
		// About 100,000 edges; every update reaches the aggregates, whose
		// stratum is then evaluated afresh.
		{Name: "agg-random-5000", Program: DegreeProgram, Edges: RandomGraph(5000, 0.004, 1), Output: "deg"},
	}
	if heavy {
		ws = append(ws,
			// 2.64 M rows: past the row count at which the 2,000-node
			// chain's hash set would grow again, a check that a change to
			// the set's sizes does not only move its cost to the next step.
			Workload{Name: "tc-chain-2300", Program: TCProgram, Edges: Chain(2300), Output: "tc"},
			Workload{Name: "tc-random-5000", Program: TCProgram, Edges: RandomGraph(5000, 0.001, 1), Output: "tc", SouffleSeconds: 22.8})
	}
	return ws
}

// Write stores the program as prog.dl and the edges as facts/edge.facts
// under dir/name.
func (w Workload) Write(dir string) (string, error) {
	d := filepath.Join(dir, w.Name)
	if err := os.MkdirAll(filepath.Join(d, "facts"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, "prog.dl"), []byte(w.Program), 0o644); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range w.Edges {
		fmt.Fprintf(&b, "%d\t%d\n", e[0], e[1])
	}
	return d, os.WriteFile(filepath.Join(d, "facts", "edge.facts"), []byte(b.String()), 0o644)
}
