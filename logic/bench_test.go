package logic

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

const tcProgram = `
.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
.output tc
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
`

const sgProgram = `
.decl edge(x: number, y: number)
.input edge
.decl sg(x: number, y: number)
.output sg
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
`

func chainEdges(n int) []Fact {
	out := make([]Fact, 0, n-1)
	for i := 1; i < n; i++ {
		out = append(out, Fact{Rel: "edge", Args: []Value{Num(int64(i)), Num(int64(i + 1))}})
	}
	return out
}

// randomGraph draws each directed edge (i, j), i != j, with probability p.
func randomGraph(n int, p float64, seed uint64) []Fact {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var out []Fact
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && rng.Float64() < p {
				out = append(out, Fact{Rel: "edge", Args: []Value{Num(int64(i)), Num(int64(j))}})
			}
		}
	}
	return out
}

// randomTree gives node i > 0 a parent among the window nodes before it.
func randomTree(n, window int, seed uint64) []Fact {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]Fact, 0, n-1)
	for i := 1; i < n; i++ {
		lo := max(0, i-window)
		p := lo + rng.IntN(i-lo)
		out = append(out, Fact{Rel: "edge", Args: []Value{Num(int64(p)), Num(int64(i))}})
	}
	return out
}

func benchEval(b *testing.B, src string, facts []Fact, rel string, want int) {
	c, err := Load("bench.dl", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := Evaluate(c, facts, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if want > 0 && m.Count(rel, false) != want {
			b.Fatalf("%s has %d tuples, want %d", rel, m.Count(rel, false), want)
		}
	}
}

func BenchmarkTCChain2000(b *testing.B) { benchEval(b, tcProgram, chainEdges(2000), "tc", 1999000) }

// BenchmarkTCChain2300 has 2.64 M rows, past the 2.36 M at which a hash
// set leaves its halfway step (3M slots) for 4M: the band that pays for
// the step (decision 0311).
func BenchmarkTCChain2300(b *testing.B) { benchEval(b, tcProgram, chainEdges(2300), "tc", 2643850) }

func BenchmarkTCChain500(b *testing.B) { benchEval(b, tcProgram, chainEdges(500), "tc", 124750) }

func BenchmarkSGTree20000(b *testing.B) {
	benchEval(b, sgProgram, randomTree(20000, 50, 1), "sg", 0)
}

// BenchmarkTCRandom5000 is the 24.7M-tuple workload; it needs several GB
// and runs only when asked for by name.
func BenchmarkTCRandom5000(b *testing.B) {
	benchEval(b, tcProgram, randomGraph(5000, 0.001, 1), "tc", 0)
}

// incremental: one edge inserted into, then deleted from, the chain closure.
func BenchmarkTCChain2000InsertDeleteEdge(b *testing.B) {
	c, err := Load("bench.dl", []byte(tcProgram))
	if err != nil {
		b.Fatal(err)
	}
	m, err := Evaluate(c, chainEdges(2000), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	e := Fact{Rel: "edge", Args: []Value{Num(2000), Num(2001)}}
	for b.Loop() {
		if m, err = m.Apply([]Change{{Fact: e, Diff: 1}}); err != nil {
			b.Fatal(err)
		}
		if m, err = m.Apply([]Change{{Fact: e, Diff: -1}}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchUpdate(b *testing.B, src string, facts []Fact, e Fact) {
	c, err := Load("bench.dl", []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	m, err := Evaluate(c, facts, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	// The first update builds the indexes only updates use; keep it out
	// of the measurement.
	if m, err = m.Apply([]Change{{Fact: e, Diff: 1}}); err != nil {
		b.Fatal(err)
	}
	if m, err = m.Apply([]Change{{Fact: e, Diff: -1}}); err != nil {
		b.Fatal(err)
	}
	b.Run("insert", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if m, err = m.Apply(nil); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if m, err = m.Apply([]Change{{Fact: e, Diff: 1}}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if m, err = m.Apply([]Change{{Fact: e, Diff: -1}}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("delete", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if m, err = m.Apply([]Change{{Fact: e, Diff: 1}}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if m, err = m.Apply([]Change{{Fact: e, Diff: -1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkUpdateTCChain2000(b *testing.B) {
	benchUpdate(b, tcProgram, chainEdges(2000), Fact{Rel: "edge", Args: []Value{Num(1000), Num(1)}})
}

func BenchmarkUpdateSGTree20000(b *testing.B) {
	benchUpdate(b, sgProgram, randomTree(20000, 50, 1), Fact{Rel: "edge", Args: []Value{Num(7), Num(19000)}})
}

// An edge between existing nodes of the 24.7M-tuple closure.
func BenchmarkUpdateTCRandom5000(b *testing.B) {
	benchUpdate(b, tcProgram, randomGraph(5000, 0.001, 1), Fact{Rel: "edge", Args: []Value{Num(4999), Num(0)}})
}

// BenchmarkWriteFactsTCChain2000 measures rendering the 2M-tuple closure
// of a chain in sorted order, what `flrh datalog` does after evaluating.
func BenchmarkWriteFactsTCChain2000(b *testing.B) {
	c, err := Load("tc.dl", []byte(tcProgram))
	if err != nil {
		b.Fatal(err)
	}
	m, err := Evaluate(c, chainEdges(2000), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n, err := m.WriteFactsTo(io.Discard, "tc", false)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

// BenchmarkWriteFactsSGTree20000 renders the same-generation relation of
// the random tree: many short runs under each first value.
func BenchmarkWriteFactsSGTree20000(b *testing.B) {
	c, err := Load("sg.dl", []byte(sgProgram))
	if err != nil {
		b.Fatal(err)
	}
	m, err := Evaluate(c, randomTree(20000, 50, 1), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n, err := m.WriteFactsTo(io.Discard, "sg", false)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

// degreeProgram gives each node with out-edges its out-degree, the sum of its
// successors and the largest one.
const degreeProgram = `
.decl edge(x: number, y: number)
.input edge
.decl node(x: number)
node(x) :- edge(x, _).
node(y) :- edge(_, y).
.decl deg(x: number, n: number, s: number, m: number)
.output deg
deg(x, n, s, m) :- node(x), n = count : edge(x, _), s = sum y : edge(x, y), m = max y : edge(x, y).
`

// BenchmarkAggregateRandom5000: three aggregates per node over about
// 100,000 edges.
func BenchmarkAggregateRandom5000(b *testing.B) {
	benchEval(b, degreeProgram, randomGraph(5000, 0.004, 1), "deg", 5000)
}

// An edge inserted and removed: each update runs the aggregates' rules
// for the nodes the edge touches.
func BenchmarkUpdateAggregateRandom5000(b *testing.B) {
	benchUpdate(b, degreeProgram, randomGraph(5000, 0.004, 1), Fact{Rel: "edge", Args: []Value{Num(4999), Num(0)}})
}

// capProgram is the shape a run's rules have: a sum per payee over a
// run's refunds, against a cap.
const capProgram = `
.decl refund(r: number, amount: number, payee: number)
.input refund
.decl over_cap(p: number)
over_cap(p) :- refund(_, _, p), sum a : refund(_, a, p) > 150.
-over_cap(p) :- refund(_, _, p), sum a : refund(_, a, p) <= 150.
`

// A run's fiftieth refund added to (and taken from) the forty-nine before
// it, over five payees: what one tick of a capped run pays for its rules.
func BenchmarkUpdateAggregateCap(b *testing.B) {
	var facts []Fact
	for i := range int64(49) {
		facts = append(facts, Fact{Rel: "refund", Args: []Value{Num(i), Num(10 + i%7), Num(i % 5)}})
	}
	benchUpdate(b, capProgram, facts, Fact{Rel: "refund", Args: []Value{Num(49), Num(30), Num(2)}})
}

// benchFactFile is a 100,000-line fact file of two numbers and a symbol a
// line, 500 symbols in all.
func benchFactFile() []byte {
	var data []byte
	for i := range 100000 {
		data = fmt.Appendf(data, "%d\t%d\tnode-%d\n", i, i*7%1000, i%500)
	}
	return data
}

// BenchmarkUpdateAggregateCapLongRun is BenchmarkUpdateAggregateCap late
// in a long run: the 5,000th refund against the 4,999 before it, over 500
// payees. Aggregates are maintained per group, so this costs what the
// 50th refund does. Inserted and retracted many thousand times, the
// refund leaves dead rows in its payee's index chains; the lookups that
// walk past them have the table compacted (compactWalked).
func BenchmarkUpdateAggregateCapLongRun(b *testing.B) {
	var facts []Fact
	for i := range int64(4999) {
		facts = append(facts, Fact{Rel: "refund", Args: []Value{Num(i), Num(10 + i%7), Num(i % 500)}})
	}
	benchUpdate(b, capProgram, facts, Fact{Rel: "refund", Args: []Value{Num(4999), Num(30), Num(2)}})
}

// escalationProgram escalates a ticket up a chain of managers, past none
// who has three tickets open: a recursive stratum whose rules hold an
// aggregate over a relation below it.
const escalationProgram = `
.decl manages(m: number, e: number)
.decl ticket(p: number, t: number)
.decl escalates(x: number, m: number)
escalates(x, m) :- manages(m, x), count : ticket(m, _) < 3.
escalates(x, m) :- escalates(x, y), manages(m, y), count : ticket(m, _) < 3.
`

// escalationFacts are 500 chains of eight people (4,000 in all), each
// manager but the first of a chain with a ticket open.
func escalationFacts() []Fact {
	var facts []Fact
	for c := range int64(500) {
		for d := range int64(7) {
			m, e := c*8+d, c*8+d+1
			facts = append(facts, Fact{Rel: "manages", Args: []Value{Num(m), Num(e)}})
			if d > 0 {
				facts = append(facts, Fact{Rel: "ticket", Args: []Value{Num(m), Num(m)}})
			}
		}
	}
	return facts
}

// BenchmarkUpdateAggregateRecursive opens and closes a third ticket of a
// manager mid-chain: the escalations through them go and come back, in
// one chain of the 500 (a recursive stratum's aggregates are maintained
// per group).
func BenchmarkUpdateAggregateRecursive(b *testing.B) {
	facts := append(escalationFacts(), Fact{Rel: "ticket", Args: []Value{Num(803), Num(-1)}})
	benchUpdate(b, escalationProgram, facts, Fact{Rel: "ticket", Args: []Value{Num(803), Num(-2)}})
}

// BenchmarkReadFacts reads benchFactFile.
func BenchmarkReadFacts(b *testing.B) {
	c, err := Load("r.dl", []byte(".decl e(x: number, y: number, s: symbol)\n.input e\n"))
	if err != nil {
		b.Fatal(err)
	}
	data := benchFactFile()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		facts, err := ReadFacts(c, "e", false, "e.facts", data)
		if err != nil || len(facts) != 100000 {
			b.Fatalf("%d facts (%v)", len(facts), err)
		}
	}
}

// BenchmarkLoadFacts takes benchFactFile's 100,000 lines into a
// program's relation, through ReadFacts and Evaluate ("facts") and
// straight from the file (EvaluateFiles, "files"), side by side.
func BenchmarkLoadFacts(b *testing.B) {
	c, err := Load("r.dl", []byte(".decl e(x: number, y: number, s: symbol)\n.input e\n"))
	if err != nil {
		b.Fatal(err)
	}
	data := benchFactFile()
	check := func(m *Materialization, err error) {
		if err != nil || m.Count("e", false) != 100000 {
			b.Fatalf("%v", err)
		}
	}
	b.Run("facts", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			facts, err := ReadFacts(c, "e", false, "e.facts", data)
			if err != nil {
				b.Fatal(err)
			}
			check(Evaluate(c, facts, Limits{}))
		}
	})
	b.Run("files", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			check(EvaluateFiles(c, []FactFile{{Rel: "e", Name: "e.facts", Data: data}}, Limits{}))
		}
	})
}
