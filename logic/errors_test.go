package logic

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const decls = `.decl edge(x: number, y: number)
.decl name(n: symbol)
`

const aggDecls = decls + ".decl tally(x: number, n: number)\n"

func TestProgramErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		code Code
		pos  string // file:line:col
		msg  string // substring of the message
	}{
		{"missing dot", decls + "edge(1, 2)\n", SyntaxError, "t.dl:4:1", "expected ',' or '.'"},
		{"bad token", decls + "edge(1, 2) :- edge(1, 2) $.\n", SyntaxError, "t.dl:3:26", "unexpected character"},
		{"unterminated comment", decls + "/* no end\n", SyntaxError, "t.dl:3:1", "unterminated block comment"},
		{"unterminated string", decls + "name(\"abc).\n", SyntaxError, "t.dl:3:6", "unterminated string"},
		{"undeclared in body", decls + "edge(x, y) :- path(x, y).\n", UndeclaredRelation, "t.dl:3:15", "relation path is not declared"},
		{"undeclared in head", decls + "path(x, y) :- edge(x, y).\n", UndeclaredRelation, "t.dl:3:1", "relation path is not declared"},
		{"undeclared input", decls + ".input path\n", UndeclaredRelation, "t.dl:3:8", "undeclared relation path"},
		{"arity", decls + "edge(x) :- edge(x, _).\n", ArityMismatch, "t.dl:3:1", "edge has 1 argument(s) here but is declared with 2"},
		{"type of constant", decls + "edge(1, \"a\").\n", TypeMismatch, "t.dl:3:9", "symbol \"a\" used as number"},
		{"type of variable", decls + "name(x) :- edge(x, _).\n", TypeMismatch, "t.dl:3:6", "variable x is used as symbol"},
		{"unsafe head variable", decls + "edge(x, y) :- edge(x, _).\n", UnsafeVariable, "t.dl:3:9", "variable y is not bound"},
		{"unsafe negation", decls + "edge(x, x) :- edge(x, _), !edge(y, x).\n", UnsafeVariable, "t.dl:3:33", "variable y is not bound"},
		{"unsafe comparison", decls + "edge(x, x) :- edge(x, _), y < 3.\n", UnsafeVariable, "t.dl:3:27", "variable y is not bound"},
		{"nonground fact", decls + "edge(x, 1).\n", UnsafeVariable, "t.dl:3:6", "facts must be ground"},
		{"wildcard in head", decls + "edge(_, 1) :- edge(1, 1).\n", UnsafeVariable, "t.dl:3:6", "not allowed in the head"},
		{"unknown type", ".decl r(x: float)\n", UnknownType, "t.dl:1:9", "unknown type float"},
		{"duplicate decl", decls + ".decl edge(a: number, b: number)\n", DuplicateDecl, "t.dl:3:1", "already declared at t.dl:1:1"},
		{"ordering on symbols", decls + "name(a) :- name(a), name(b), a < b.\n", TypeMismatch, "t.dl:3:30", "used as number"},
		{"negative cycle", ".decl p(x: number)\n.decl q(x: number)\n.decl r(x: number)\nr(1).\np(x) :- r(x), !q(x).\nq(x) :- p(x).\n", NegativeRecursion, "t.dl:5:15", "!q -> p -> q"},
		{"negative self loop", ".decl p(x: number)\n.decl r(x: number)\np(x) :- r(x), !p(x).\n", NegativeRecursion, "t.dl:3:15", "!p -> p"},
		{"unsupported directive", ".pragma \"x\"\n", UnsupportedFeature, "t.dl:1:1", "directive .pragma is not supported"},
		{"disjunction", decls + "edge(x, y) :- edge(x, y); edge(y, x).\n", UnsupportedFeature, "t.dl:3:25", "disjunction"},
		{"functor", decls + "edge(x, y) :- edge(x, y), y = max(x, 1).\n", UnsupportedFeature, "t.dl:3:31", "functor"},
		{"aggregate in recursion", decls + "edge(x, n) :- edge(x, _), n = count : edge(x, _).\n", RecursiveAggregate, "t.dl:3:39", "an aggregate over edge in a rule for edge is inside a recursive cycle: edge -> edge"},
		{"mean", aggDecls + "tally(x, n) :- edge(x, _), n = mean y : edge(x, y).\n", UnsupportedFeature, "t.dl:4:32", "aggregate mean is not supported"},
		{"nested aggregate", aggDecls + "tally(x, n) :- edge(x, _), n = count : { edge(x, y), y = count : edge(y, _) }.\n", UnsupportedFeature, "t.dl:4:58", "an aggregate inside an aggregate"},
		{"count of an expression", aggDecls + "tally(x, n) :- edge(x, _), n = count y : edge(x, y).\n", SyntaxError, "t.dl:4:38", "count takes no expression"},
		{"sum of nothing", aggDecls + "tally(x, n) :- edge(x, _), n = sum : edge(x, _).\n", SyntaxError, "t.dl:4:36", "sum needs the expression"},
		{"aggregate body not an atom", aggDecls + "tally(x, n) :- edge(x, _), n = count : 3.\n", SyntaxError, "t.dl:4:40", "expected an atom or '{'"},
		{"aggregate as a symbol argument", aggDecls + ".decl lab(x: number, s: symbol)\ntally(x, 1) :- edge(x, _), lab(x, count : edge(x, _)).\n", TypeMismatch, "t.dl:5:35", "is a number, used as symbol in argument 2 (s) of lab"},
		{"aggregate in a head as a symbol", aggDecls + ".decl lab(x: number, s: symbol)\nlab(x, count : edge(x, _)) :- edge(x, _).\n", TypeMismatch, "t.dl:5:8", "is a number, used as symbol in argument 2 (s) of lab"},
		{"aggregate in a head, param unbound", aggDecls + "tally(x, count : edge(x, _)) :- edge(1, _).\n", UnsafeVariable, "t.dl:4:7", "variable x is used in aggregate count : { edge(x, _) } and outside it"},
		{"aggregate in arithmetic, param unbound", aggDecls + "tally(1, n) :- n = 1 + count : edge(x, _), x > 0.\n", UnsafeVariable, "t.dl:4:37", "variable x is used in aggregate"},
		{"unbound in aggregate", aggDecls + "tally(x, n) :- edge(x, _), n = sum z : edge(x, _).\n", UnsafeVariable, "t.dl:4:36", "variable z in aggregate sum z : { edge(x, _) } is not bound"},
		{"bound only in aggregate", aggDecls + "tally(x, n) :- n = count : edge(x, _).\n", UnsafeVariable, "t.dl:4:7", "variable x is used in aggregate count : { edge(x, _) } and outside it"},
		{"sum of symbols", aggDecls + "tally(1, n) :- n = sum s : name(s).\n", TypeMismatch, "t.dl:4:24", "variable s is used as number as the value sum takes but is symbol"},
		{"aggregate against a symbol", aggDecls + "tally(x, 1) :- edge(x, _), count : edge(x, _) = \"a\".\n", TypeMismatch, "t.dl:4:28", "compares a number with a symbol"},
		{"aggregate through negation", aggDecls + ".decl q(x: number)\nq(x) :- tally(x, _).\ntally(x, n) :- edge(x, _), n = count : q(x).\n", RecursiveAggregate, "t.dl:6:40", "tally -> q"},
		{"number out of range", decls + "edge(9223372036854775808, 1).\n", SyntaxError, "t.dl:3:6", `number "9223372036854775808" is out of range`},
		{"negative number out of range", decls + "edge(-9223372036854775809, 1).\n", SyntaxError, "t.dl:3:7", `number "9223372036854775809" is out of range`},
		{"hex out of range", decls + "edge(0x10000000000000000, 1).\n", SyntaxError, "t.dl:3:6", "is out of range"},
		{"malformed number", decls + "edge(12ab, 1).\n", SyntaxError, "t.dl:3:6", `malformed number "12ab"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("t.dl", []byte(tc.src))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *Error %s", err, tc.code)
			}
			if e.Code != tc.code || e.Pos.String() != tc.pos || !strings.Contains(e.Error(), tc.msg) {
				t.Fatalf("got %q (code %s at %s)\nwant code %s at %s containing %q", e.Error(), e.Code, e.Pos, tc.code, tc.pos, tc.msg)
			}
		})
	}
}

func TestNegativeCycleListsTheCycle(t *testing.T) {
	_, err := Load("t.dl", []byte(".decl p(x: number)\n.decl q(x: number)\n.decl r(x: number)\nr(1).\np(x) :- r(x), !q(x).\nq(x) :- p(x).\n"))
	var e *Error
	if !errors.As(err, &e) || strings.Join(e.Cycle, ",") != "q,p,q" {
		t.Fatalf("cycle = %v (err %v), want q,p,q", e, err)
	}
}

func TestExplicitNegationMayRecurse(t *testing.T) {
	src := `.decl blocked(x: number)
.decl link(x: number, y: number)
link(1, 2). link(2, 3).
-blocked(1).
-blocked(y) :- -blocked(x), link(x, y).
`
	m := mustEval(t, src, nil)
	got, _ := m.Tuples("blocked", true)
	if len(got) != 3 {
		t.Fatalf("-blocked = %v, want 1, 2, 3", got)
	}
}

func mustEval(t testing.TB, src string, facts []Fact) *Materialization {
	t.Helper()
	c, err := Load("t.dl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, facts, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWarnings(t *testing.T) {
	c, err := Load("t.dl", []byte(decls+".decl lonely(x: number)\nedge(x, y) :- edge(x, z), edge(y, _), !lonely(y).\nedge(1, _x) :- edge(1, _x).\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.Error())
	}
	want := []string{
		"t.dl:4:23: variable z occurs only once in this rule; write _ if that is intended [VARIABLE_OCCURS_ONCE]",
		"t.dl:4:39: lonely has no rules, facts or .input, so it is always empty [RELATION_ALWAYS_EMPTY]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDeepNestingIsAnError(t *testing.T) {
	src := decls + "edge(x, " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + ") :- edge(x, _).\n"
	_, err := Load("t.dl", []byte(src))
	var e *Error
	if !errors.As(err, &e) || e.Code != SyntaxError || !strings.Contains(e.Msg, "nested more than") {
		t.Fatalf("got %v", err)
	}
	src = decls + "edge(x, " + strings.Repeat("-", 100000) + "x) :- edge(x, _).\n"
	if _, err := Load("t.dl", []byte(src)); !errors.As(err, &e) || e.Code != SyntaxError {
		t.Fatalf("got %v", err)
	}
}

// The least number reads the same in a program as in a fact file, and
// round-trips through the fact writer.
func TestLeastNumberInProgramAndFacts(t *testing.T) {
	c, err := Load("t.dl", []byte(decls+"edge(-9223372036854775808, 9223372036854775807).\nedge(-0x8000000000000000, -1).\n.output edge\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.WriteFacts("edge", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "-9223372036854775808\t-1\n-9223372036854775808\t9223372036854775807\n"; string(got) != want {
		t.Fatalf("program text gave %q, want %q", got, want)
	}
	facts, err := ReadFacts(c, "edge", false, "edge.facts", got)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 2 || facts[0].Args[0] != Num(math.MinInt64) {
		t.Fatalf("fact reader gave %v", facts)
	}
}

// The names of Soufflé's aggregates stay variables where no aggregate
// could be meant.
func TestAggregateNamesAreVariables(t *testing.T) {
	c, err := Load("t.dl", []byte(".decl e(count: number)\n.decl n(sum: number)\ne(1). e(5).\nn(count) :- e(count), count < 3, max = count + 1, max > min, min = 0.\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(c, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Tuples("n", false); err != nil || len(got) != 1 || got[0][0] != Num(1) {
		t.Fatalf("n = %v (%v)", got, err)
	}
}
