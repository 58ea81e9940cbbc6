package logic_test

import (
	"fmt"

	"flrh.dev/flrh/logic"
)

func Example() {
	prog, err := logic.Load("paths.dl", []byte(`
.decl edge(x: symbol, y: symbol)
.decl path(x: symbol, y: symbol)
.decl blocked(x: symbol)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
-blocked(x) :- path("a", x).   // reachable from a: evidence it is not blocked
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	edge := func(x, y string) logic.Fact {
		return logic.Fact{Rel: "edge", Args: []logic.Value{logic.Sym(x), logic.Sym(y)}}
	}
	blocked := logic.Fact{Rel: "blocked", Args: []logic.Value{logic.Sym("c")}}
	m, err := logic.Evaluate(prog, []logic.Fact{edge("a", "b"), edge("b", "c"), blocked}, logic.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	paths, _ := m.Tuples("path", false)
	fmt.Println(paths)
	why, _ := m.Why(blocked)
	fmt.Println(why.State)
	fmt.Println(why.Negative.RuleText)
	// Output:
	// [["a" "b"] ["a" "c"] ["b" "c"]]
	// BOTH
	// -blocked(x) :- path("a", x).
}

func ExampleSolve() {
	prog, _ := logic.Load("gate.dl", []byte(`
.decl request(id: symbol)
.decl approved(id: symbol)
.decl allow(id: symbol)
allow(x) :- request(x), approved(x).
`))
	req := logic.Fact{Rel: "request", Args: []logic.Value{logic.Sym("t-1")}}
	ok := logic.Fact{Rel: "approved", Args: []logic.Value{logic.Sym("t-1")}}
	r1, _ := logic.Solve(nil, prog, []logic.FactChange{
		{ID: "ev-1", Fact: req, Diff: +1},
		{ID: "ev-2", Fact: ok, Diff: +1},
	}, 1, logic.Limits{})
	fmt.Println(r1.Changes)
	// Retract exactly the approval's support: allow goes away with it.
	r2, _ := logic.Solve(r1.Materialization, prog, []logic.FactChange{{ID: "ev-2", Fact: ok, Diff: -1}}, 2, logic.Limits{})
	fmt.Println(r2.Changes)
	// Output:
	// [{allow("t-1") 1} {approved("t-1") 1} {request("t-1") 1}]
	// [{allow("t-1") -1} {approved("t-1") -1}]
}
