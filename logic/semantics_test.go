package logic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// The four truth states and the default-negation truth table, transcribed
// from the reference logic-semantics/v0 tables: NEITHER and FALSE_ONLY let
// `!p` succeed, TRUE_ONLY and BOTH do not.
func TestTruthStatesAndDefaultNegation(t *testing.T) {
	src := `.decl p(x: symbol)
.decl probe(x: symbol)
.decl ok(x: symbol)
probe("neither"). probe("true_only"). probe("false_only"). probe("both").
p("true_only"). -p("false_only"). p("both"). -p("both").
ok(x) :- probe(x), !p(x).
`
	m := mustEval(t, src, nil)
	cases := []struct {
		atom     string
		state    TruthState
		succeeds bool
	}{
		{"neither", Neither, true},
		{"true_only", TrueOnly, false},
		{"false_only", FalseOnly, true},
		{"both", Both, false},
	}
	for _, tc := range cases {
		st, err := m.State(Fact{Rel: "p", Args: []Value{Sym(tc.atom)}})
		if err != nil || st != tc.state {
			t.Errorf("state of p(%s) = %v, %v; want %v", tc.atom, st, err, tc.state)
		}
		if DefaultNegationSucceeds(st) != tc.succeeds {
			t.Errorf("DefaultNegationSucceeds(%v) = %v", st, !tc.succeeds)
		}
		has, _ := m.Has(Fact{Rel: "ok", Args: []Value{Sym(tc.atom)}})
		if has != tc.succeeds {
			t.Errorf("!p(%s) succeeded = %v, want %v", tc.atom, has, tc.succeeds)
		}
	}
	cs, err := m.Conflicts()
	if err != nil || len(cs) != 1 || cs[0].Atom.String() != `p("both")` || len(cs[0].Positive) != 1 || len(cs[0].Negative) != 1 {
		t.Fatalf("conflicts = %+v, %v; want exactly p(\"both\") with one support per side", cs, err)
	}
}

// BOTH is never resolved by rule order: reordering the rules that produce
// the two sides changes nothing.
func TestBothIsIndependentOfRuleOrder(t *testing.T) {
	a := ".decl s(x: number)\n.decl p(x: number)\ns(1).\np(x) :- s(x).\n-p(x) :- s(x).\n"
	b := ".decl s(x: number)\n.decl p(x: number)\ns(1).\n-p(x) :- s(x).\np(x) :- s(x).\n"
	for _, src := range []string{a, b} {
		m := mustEval(t, src, nil)
		if st, _ := m.State(Fact{Rel: "p", Args: []Value{Num(1)}}); st != Both {
			t.Fatalf("state = %v, want BOTH", st)
		}
	}
}

func TestArithmeticHasCSemantics(t *testing.T) {
	src := `.decl in(a: number, b: number)
.decl out(op: symbol, v: number)
in(-7, 2). in(7, -2). in(9223372036854775807, 1).
out("div", a / b) :- in(a, b).
out("mod", a % b) :- in(a, b).
out("sum", a + b) :- in(a, b).
out("neg", -a * b) :- in(a, b).
`
	m := mustEval(t, src, nil)
	got, _ := m.Tuples("out", false)
	want := fmt.Sprint([][]Value{
		{Sym("div"), Num(-3)}, {Sym("div"), Num(math.MaxInt64)},
		{Sym("mod"), Num(-1)}, {Sym("mod"), Num(0)}, {Sym("mod"), Num(1)},
		{Sym("neg"), Num(-9223372036854775807)}, {Sym("neg"), Num(14)},
		{Sym("sum"), Num(math.MinInt64)}, {Sym("sum"), Num(-5)}, {Sym("sum"), Num(5)},
	})
	if fmt.Sprint(got) != want {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestDivisionByZeroIsTyped(t *testing.T) {
	c, err := Load("t.dl", []byte(".decl in(a: number)\n.decl out(a: number)\nin(0).\nout(10 / a) :- in(a).\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate(c, nil, Limits{})
	var e *Error
	if !errors.As(err, &e) || e.Code != DivisionByZero || e.Pos.String() != "t.dl:4:8" {
		t.Fatalf("got %v, want DIVISION_BY_ZERO at t.dl:4:8", err)
	}
}

const chainProgram = `.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
`

func TestBudgets(t *testing.T) {
	c, err := Load("t.dl", []byte(chainProgram))
	if err != nil {
		t.Fatal(err)
	}
	edges := chainEdges(20) // 19 edges, 190 closure tuples, depth 18
	cases := []struct {
		lim  Limits
		code Code
	}{
		{Limits{MaxInputs: 18}, InputBudgetExceeded},
		{Limits{MaxFirings: 189}, RuleBudgetExhausted},
		{Limits{MaxDepth: 18}, DepthExceeded},
		{Limits{MaxTuples: 19 + 189}, TupleBudgetExceeded},
	}
	for _, tc := range cases {
		m, err := Evaluate(c, edges, tc.lim)
		var e *Error
		if m != nil || !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("limits %+v: got %v, %v; want %s and no materialization", tc.lim, m != nil, err, tc.code)
		}
	}
	// The exact boundaries are admitted.
	for _, lim := range []Limits{{MaxInputs: 19}, {MaxFirings: 190}, {MaxDepth: 19}, {MaxTuples: 19 + 190}} {
		if _, err := Evaluate(c, edges, lim); err != nil {
			t.Errorf("limits %+v: %v", lim, err)
		}
	}
}

// A failing update leaves the materialization exactly as it was.
func TestFailedApplyChangesNothing(t *testing.T) {
	c, err := Load("t.dl", []byte(chainProgram))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, chainEdges(10), Limits{MaxTuples: 60})
	if err != nil {
		t.Fatal(err)
	}
	before := m.Clone()
	// Extending the chain by one node adds 10 closure tuples: over budget.
	_, err = m.Apply([]Change{{Fact: Fact{Rel: "edge", Args: []Value{Num(10), Num(11)}}, Diff: 1}})
	var e *Error
	if !errors.As(err, &e) || e.Code != TupleBudgetExceeded {
		t.Fatalf("got %v, want TUPLE_BUDGET_EXHAUSTED", err)
	}
	_, err = m.Apply([]Change{{Fact: Fact{Rel: "edge", Args: []Value{Num(5), Num(7)}}, Diff: -1}})
	if !errors.As(err, &e) || e.Code != UnknownFact {
		t.Fatalf("got %v, want UNKNOWN_FACT", err)
	}
	for _, rel := range []string{"edge", "tc"} {
		g, _ := m.Tuples(rel, false)
		w, _ := before.Tuples(rel, false)
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("%s changed after a failed update", rel)
		}
	}
	// And it is still usable.
	m2, err := m.Apply([]Change{{Fact: Fact{Rel: "edge", Args: []Value{Num(1), Num(2)}}, Diff: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if n := m2.Count("tc", false); n != 36 {
		t.Fatalf("after removing the first edge tc has %d tuples, want 36", n)
	}
}

func TestWhyGivesOneProofPerSide(t *testing.T) {
	m := mustEval(t, ".decl s(x: number)\n.decl p(x: number)\ns(1).\np(x) :- s(x).\n-p(x) :- s(x), !p(2).\n", nil)
	e, err := m.Why(Fact{Rel: "p", Args: []Value{Num(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if e.State != Both || e.Positive == nil || e.Negative == nil {
		t.Fatalf("explanation %+v, want BOTH with two proofs", e)
	}
	if len(e.Negative.Absent) != 1 || e.Negative.Absent[0].String() != "!p(2)" {
		t.Fatalf("negative proof absences = %v, want !p(2)", e.Negative.Absent)
	}
	if len(e.Positive.Premises) != 1 || e.Positive.Premises[0].RuleText != "s(1)." {
		t.Fatalf("positive proof premises = %+v, want the inline fact s(1)", e.Positive.Premises[0])
	}
}

// Proofs are minimal: on a chain with a shortcut the proof uses it.
func TestExplainPicksTheShortestProof(t *testing.T) {
	facts := append(chainEdges(6), Fact{Rel: "edge", Args: []Value{Num(1), Num(5)}})
	m := mustEval(t, chainProgram, facts)
	p, err := m.Explain(Fact{Rel: "tc", Args: []Value{Num(1), Num(6)}})
	if err != nil {
		t.Fatal(err)
	}
	height := 0
	for q := p; len(q.Premises) > 0; q = q.Premises[0] {
		height++
	}
	if height != 2 {
		t.Fatalf("proof height %d, want 2 (via edge(1, 5))", height)
	}
}

// A program that never converges stops at the tuple budget with a typed
// error instead of exhausting memory.
func TestRunawayStopsAtTupleBudget(t *testing.T) {
	c, err := Load("t.dl", []byte(".decl n(x: number)\nn(0).\nn(x + 1) :- n(x).\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate(c, nil, Limits{MaxTuples: 10000})
	var e *Error
	if !errors.As(err, &e) || e.Code != TupleBudgetExceeded || e.Pos.String() != "t.dl:3:1" {
		t.Fatalf("got %v, want TUPLE_BUDGET_EXHAUSTED at the runaway rule", err)
	}
}

func TestConsumedMaterializationReportsIt(t *testing.T) {
	m := mustEval(t, chainProgram, chainEdges(3))
	if _, err := m.Apply(nil); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, err := m.Tuples("tc", false); !errors.As(err, &e) || e.Code != Consumed {
		t.Fatalf("Tuples on a consumed materialization: %v", err)
	}
	if _, err := m.State(Fact{Rel: "tc", Args: []Value{Num(1), Num(2)}}); !errors.As(err, &e) || e.Code != Consumed {
		t.Fatalf("State on a consumed materialization: %v", err)
	}
	if _, err := m.Apply(nil); !errors.As(err, &e) || e.Code != Consumed {
		t.Fatalf("Apply on a consumed materialization: %v", err)
	}
}

// Corners of the language, each checked against the naive oracle and a
// hand-computed answer.
func TestLanguageCorners(t *testing.T) {
	cases := []struct {
		name, src, rel, want string
	}{
		{"nullary", ".decl p(x: number)\n.decl flag()\n.decl q(x: number)\n.decl r(x: number)\np(1). p(2).\nflag() :- p(2).\nq(x) :- p(x), flag().\nr(x) :- p(x), !flag().\n", "q", "1\n2\n"},
		{"nullary negation", ".decl p(x: number)\n.decl flag()\n.decl r(x: number)\np(1).\nr(x) :- p(x), !flag().\n", "r", "1\n"},
		{"repeated head variable", ".decl q(x: number)\n.decl p(x: number, y: number)\nq(1). q(2).\np(x, x) :- q(x).\n", "p", "1\t1\n2\t2\n"},
		{"expression in a body atom", ".decl q(x: number)\n.decl p(x: number)\nq(1). q(2). q(3).\np(x) :- q(x), q(x + 1).\n", "p", "1\n2\n"},
		{"expression binding later", ".decl q(x: number)\n.decl p(x: number)\nq(1). q(2). q(4).\np(y) :- q(y * 2), q(y).\n", "p", "1\n2\n"},
		{"assignment chain", ".decl q(x: number)\n.decl p(x: number, z: number)\nq(3).\np(x, z) :- q(x), y = x + 1, z = y * 2.\n", "p", "3\t8\n"},
		{"symbol comparison", ".decl s(x: symbol)\n.decl t(x: symbol, y: symbol)\ns(\"a\"). s(\"b\").\nt(x, y) :- s(x), s(y), x != y, y != \"a\".\n", "t", "a\tb\n"},
		{"constant in head", ".decl q(x: number)\n.decl p(k: symbol, x: number)\nq(7).\np(\"k\", x) :- q(x).\n", "p", "k\t7\n"},
		{"wildcard negation", ".decl e(x: number, y: number)\n.decl n(x: number)\n.decl sink(x: number)\ne(1, 2). e(2, 3).\nn(1). n(2). n(3).\nsink(x) :- n(x), !e(x, _).\n", "sink", "3\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustEval(t, tc.src, nil)
			got, err := m.WriteFacts(tc.rel, false)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("%s = %q, want %q", tc.rel, got, tc.want)
			}
			n, err := naiveEval(m.c, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, rel := range m.c.rels {
				g, _ := m.Tuples(rel.name, false)
				if fmt.Sprint(g) != fmt.Sprint(n.sorted(rel.name)) {
					t.Fatalf("%s differs from the oracle: %v vs %v", rel.name, g, n.sorted(rel.name))
				}
			}
		})
	}
}

func TestProgramIntrospection(t *testing.T) {
	c, err := Load("t.dl", []byte(".type Id <: symbol\n.decl e(a: Id, n: number)\n.input e(filename=\"edges.tsv\")\n.decl p(a: Id)\n.output p\np(a) :- e(a, _).\n"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Relations(), c.Inputs(), c.Outputs()) != "[e p] [e] [p]" {
		t.Fatalf("relations %v inputs %v outputs %v", c.Relations(), c.Inputs(), c.Outputs())
	}
	if c.IOFile("e", true) != "edges.tsv" || c.IOFile("p", false) != "p.csv" {
		t.Fatalf("io files %q %q", c.IOFile("e", true), c.IOFile("p", false))
	}
	if ty, ok := c.Schema("e"); !ok || fmt.Sprint(ty) != "[symbol number]" {
		t.Fatalf("schema %v %v", ty, ok)
	}
	// SharedSchema is Schema without the copy, capped: an append to it
	// leaves the program's types as they were.
	for _, rel := range append(c.Relations(), "missing") {
		ty, ok := c.Schema(rel)
		sh, sok := c.SharedSchema(rel)
		if ok != sok || !slices.Equal(ty, sh) || cap(sh) != len(sh) {
			t.Fatalf("%s: SharedSchema %v %v, Schema %v %v", rel, sh, sok, ty, ok)
		}
		_ = append(sh, TypeNumber)
		if again, _ := c.Schema(rel); !slices.Equal(again, ty) {
			t.Fatalf("%s: an append to the shared schema changed it", rel)
		}
	}
	if c.NumStrata() < 2 {
		t.Fatalf("%d strata", c.NumStrata())
	}
	r, err := Solve(nil, c, []FactChange{{ID: "x", Fact: Fact{Rel: "e", Args: []Value{Sym("a"), Num(1)}}, Diff: 1}}, 4, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Materialization
	if m.LogicalTime() != 4 || m.Program() != c || m.Stats().Tuples != 2 {
		t.Fatalf("time %d, stats %+v", m.LogicalTime(), m.Stats())
	}
}
