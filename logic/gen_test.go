package logic

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genRel describes a relation of a generated program.
type genRel struct {
	name  string
	arity int
}

var genRels = []genRel{{"e", 2}, {"f", 1}, {"p", 2}, {"q", 1}, {"r", 2}, {"s", 1}}

// genProgram draws a random, usually well-formed program over small
// numbers: recursion, default and explicit negation, comparisons and
// bounded arithmetic. Programs that fail Check are still useful inputs for
// the checker; differential tests skip them.
// genLoaded draws a program and loads it, skipping the case when the
// checker rejects it (checkOracle holds the rejections to their codes).
// It returns the program's text too, for failure messages.
func genLoaded(t *rapid.T) (*Compiled, string) {
	src := genProgram(t)
	c, err := Load("gen.dl", []byte(src))
	if err != nil {
		t.Skip("rejected program")
	}
	return c, src
}

func genProgram(t *rapid.T) string {
	var b strings.Builder
	for _, r := range genRels {
		attrs := make([]string, r.arity)
		for i := range attrs {
			attrs[i] = fmt.Sprintf("a%d: number", i)
		}
		fmt.Fprintf(&b, ".decl %s(%s)\n", r.name, strings.Join(attrs, ", "))
	}
	nrules := rapid.IntRange(1, 6).Draw(t, "nrules")
	vars := []string{"A", "B", "C"}
	for i := 0; i < nrules; i++ {
		head := genRels[rapid.IntRange(2, len(genRels)-1).Draw(t, "head")]
		var body []string
		bound := map[string]bool{}
		natoms := rapid.IntRange(1, 3).Draw(t, "natoms")
		for j := 0; j < natoms; j++ {
			rel := genRels[rapid.IntRange(0, len(genRels)-1).Draw(t, "brel")]
			args := make([]string, rel.arity)
			for k := range args {
				switch rapid.IntRange(0, 9).Draw(t, "argkind") {
				case 0:
					args[k] = fmt.Sprint(rapid.IntRange(0, 3).Draw(t, "const"))
				case 1:
					args[k] = "_"
				default:
					v := vars[rapid.IntRange(0, len(vars)-1).Draw(t, "var")]
					args[k] = v
					bound[v] = true
				}
			}
			sign := ""
			if rapid.IntRange(0, 6).Draw(t, "bneg") == 0 {
				sign = "-"
			}
			body = append(body, fmt.Sprintf("%s%s(%s)", sign, rel.name, strings.Join(args, ", ")))
		}
		var bvars []string
		for _, v := range vars {
			if bound[v] {
				bvars = append(bvars, v)
			}
		}
		if len(bvars) == 0 {
			bvars = nil
		}
		pick := func(label string) string {
			if len(bvars) == 0 || rapid.IntRange(0, 4).Draw(t, label+"c") == 0 {
				return fmt.Sprint(rapid.IntRange(0, 3).Draw(t, label+"k"))
			}
			return bvars[rapid.IntRange(0, len(bvars)-1).Draw(t, label)]
		}
		if len(bvars) > 0 && rapid.IntRange(0, 3).Draw(t, "hasarith") == 0 {
			op := []string{"+", "-", "*", "/", "%"}[rapid.IntRange(0, 4).Draw(t, "aop")]
			rhs := fmt.Sprint(rapid.IntRange(1, 2).Draw(t, "ak"))
			if rapid.Bool().Draw(t, "avar") {
				rhs = pick("arhs")
			}
			body = append(body, fmt.Sprintf("D = %s %s %s", pick("alhs"), op, rhs), "D >= 0", "D < 5")
			bvars = append(bvars, "D")
		}
		if len(bvars) > 0 && rapid.IntRange(0, 2).Draw(t, "hascmp") == 0 {
			op := []string{"<", "<=", ">", ">=", "=", "!="}[rapid.IntRange(0, 5).Draw(t, "cop")]
			body = append(body, fmt.Sprintf("%s %s %s", pick("cl"), op, pick("cr")))
		}
		for _, res := range []string{"N", "O"}[:rapid.IntRange(genAggMin, 2).Draw(t, "naggs")] {
			agg, binds := genAggregate(t, bvars, res)
			body = append(body, agg)
			if binds {
				bvars = append(bvars, res)
			}
		}
		if genAggMin > 0 && rapid.IntRange(0, 3).Draw(t, "aatom") == 0 {
			// An aggregate as an atom's argument, matched or negated.
			rel := genRels[rapid.IntRange(0, len(genRels)-1).Draw(t, "aarel")]
			args := make([]string, rel.arity)
			for k := range args {
				args[k] = pick("aaarg")
			}
			args[rapid.IntRange(0, rel.arity-1).Draw(t, "aak")] = genAggTerm(t, bvars)
			not := ""
			if rapid.Bool().Draw(t, "aanot") {
				not = "!"
			}
			body = append(body, fmt.Sprintf("%s%s(%s)", not, rel.name, strings.Join(args, ", ")))
		}
		if rapid.IntRange(0, 2).Draw(t, "hasnot") == 0 {
			rel := genRels[rapid.IntRange(0, len(genRels)-1).Draw(t, "nrel")]
			args := make([]string, rel.arity)
			for k := range args {
				if rapid.IntRange(0, 4).Draw(t, "nwild") == 0 {
					args[k] = "_"
				} else {
					args[k] = pick("narg")
				}
			}
			sign := ""
			if rapid.IntRange(0, 5).Draw(t, "nneg") == 0 {
				sign = "-"
			}
			body = append(body, fmt.Sprintf("!%s%s(%s)", sign, rel.name, strings.Join(args, ", ")))
		}
		hargs := make([]string, head.arity)
		for k := range hargs {
			hargs[k] = pick("harg")
		}
		if genAggMin > 0 && rapid.IntRange(0, 3).Draw(t, "hagg") == 0 {
			// An aggregate in the head, over the body's bound variables.
			hargs[rapid.IntRange(0, head.arity-1).Draw(t, "haggk")] = genAggTerm(t, bvars)
		}
		hsign := ""
		if rapid.IntRange(0, 4).Draw(t, "hneg") == 0 {
			hsign = "-"
		}
		fmt.Fprintf(&b, "%s%s(%s) :- %s.\n", hsign, head.name, strings.Join(hargs, ", "), strings.Join(body, ", "))
	}
	return b.String()
}

// genAggMin, when set, is the fewest aggregates genProgram puts in each
// rule, and makes them read base relations only, so that every program
// has them and few are refused for recursion through one.
var genAggMin = 0

// genAggregate draws an aggregate over the generated relations: count,
// sum, min or max of an atom, possibly with a comparison and a negation,
// sharing some of the rule's bound variables (params) and binding its own
// (L, M). It either binds res (`res = agg`, binds true) or compares the
// aggregate with a constant.
func genAggregate(t *rapid.T, params []string, res string) (string, bool) {
	agg := genAggTerm(t, params)
	if rapid.IntRange(0, 3).Draw(t, "aarith") == 0 {
		// Inside arithmetic.
		agg = []string{"%s + 1", "2 * %s", "3 - %s"}[rapid.IntRange(0, 2).Draw(t, "aarop")]
		agg = fmt.Sprintf(agg, "("+genAggTerm(t, params)+")")
	}
	if rapid.IntRange(0, 2).Draw(t, "aform") == 0 {
		op := []string{"<", "<=", ">", ">=", "=", "!="}[rapid.IntRange(0, 5).Draw(t, "aop")]
		return fmt.Sprintf("%s %s %d", agg, op, rapid.IntRange(0, 4).Draw(t, "ak")), false
	}
	return res + " = " + agg, true
}

// genAggTerm draws the aggregate itself, as genAggregate describes it.
func genAggTerm(t *rapid.T, params []string) string {
	fn := []string{"count", "sum", "min", "max"}[rapid.IntRange(0, 3).Draw(t, "afn")]
	var locals []string
	arg := func(label string, bind bool) string {
		switch k := rapid.IntRange(0, 6).Draw(t, label); {
		case k == 0:
			return fmt.Sprint(rapid.IntRange(0, 3).Draw(t, label+"k"))
		case k == 1:
			return "_"
		case k <= 3 && len(params) > 0:
			return params[rapid.IntRange(0, len(params)-1).Draw(t, label+"p")]
		case bind:
			l := []string{"L", "M"}[rapid.IntRange(0, 1).Draw(t, label+"l")]
			locals = append(locals, l)
			return l
		case len(locals) > 0:
			return locals[rapid.IntRange(0, len(locals)-1).Draw(t, label+"u")]
		}
		return "_"
	}
	atom := func(label string, bind bool) string {
		rels := genRels
		if genAggMin > 0 {
			rels = rels[:2] // base relations: no aggregate in a cycle
		}
		rel := rels[rapid.IntRange(0, len(rels)-1).Draw(t, label)]
		args := make([]string, rel.arity)
		for k := range args {
			args[k] = arg(label+"arg", bind)
		}
		sign := ""
		if rapid.IntRange(0, 5).Draw(t, label+"neg") == 0 {
			sign = "-"
		}
		return sign + rel.name + "(" + strings.Join(args, ", ") + ")"
	}
	items := []string{atom("arel", true)}
	if rapid.IntRange(0, 2).Draw(t, "ajoin") == 0 {
		// A join: a change to one atom reaches the params through the
		// other.
		items = append(items, atom("arel2", true))
	}
	if len(locals) > 0 && rapid.IntRange(0, 2).Draw(t, "acmp") == 0 {
		op := []string{"<", "<=", ">", ">=", "=", "!="}[rapid.IntRange(0, 5).Draw(t, "acop")]
		items = append(items, fmt.Sprintf("%s %s %d", locals[0], op, rapid.IntRange(0, 4).Draw(t, "ack")))
	}
	if rapid.IntRange(0, 3).Draw(t, "anot") == 0 {
		items = append(items, "!"+atom("anrel", false))
	}
	agg := fn
	if fn != "count" {
		target := fmt.Sprint(rapid.IntRange(0, 3).Draw(t, "atk"))
		if len(locals) > 0 {
			target = locals[rapid.IntRange(0, len(locals)-1).Draw(t, "atl")]
			if rapid.Bool().Draw(t, "atarith") {
				target += " * 2 - 1"
			}
		}
		agg += " " + target
	}
	if len(items) == 1 && rapid.Bool().Draw(t, "abare") {
		agg += " : " + items[0]
	} else {
		agg += " : { " + strings.Join(items, ", ") + " }"
	}
	return agg
}

// genOffset is added to every generated fact value: tests that set it
// make relations hold values on both sides of the 16-bit or 32-bit
// boundary.
var genOffset int64

// genMixed, when set, draws each generated fact value's offset from it
// instead of using genOffset, so that one relation can hold values of
// every width and widen twice as facts arrive.
var genMixed []int64

// genValue is a generated fact value: small, plus an offset.
func genValue(t *rapid.T) int64 {
	off := genOffset
	if len(genMixed) > 0 {
		off = genMixed[rapid.IntRange(0, len(genMixed)-1).Draw(t, "foff")]
	}
	return off + int64(rapid.IntRange(0, 4).Draw(t, "fv"))
}

func genFacts(t *rapid.T) []Fact {
	n := rapid.IntRange(0, 14).Draw(t, "nfacts")
	var out []Fact
	for i := 0; i < n; i++ {
		rel := genRels[rapid.IntRange(0, len(genRels)-1).Draw(t, "frel")]
		f := Fact{Rel: rel.name, Neg: rapid.IntRange(0, 5).Draw(t, "fneg") == 0}
		for k := 0; k < rel.arity; k++ {
			f.Args = append(f.Args, Num(genValue(t)))
		}
		out = append(out, f)
	}
	return out
}

// assertSameAsOracle compares every relation, both signs, with the naive
// evaluator.
func assertSameAsOracle(t *rapid.T, c *Compiled, m *Materialization, base []Fact, src string) {
	n, err := naiveEval(c, base)
	if err != nil {
		t.Skip("oracle:", err)
	}
	for _, rel := range c.rels {
		for _, neg := range []bool{false, true} {
			got, _ := m.Tuples(rel.name, neg)
			want := n.sorted(map[bool]string{false: "", true: "-"}[neg] + rel.name)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("relation %s neg=%v:\n got %v\nwant %v\nprogram:\n%s\nfacts: %v", rel.name, neg, got, want, src, base)
			}
		}
	}
}

func TestEvaluateMatchesNaiveOracle(t *testing.T) { rapid.Check(t, checkOracle) }

// The same over programs whose every rule has an aggregate. They are
// quick to check, and a wrong minimum or sum shows only where a group has
// two rows that differ, so they are drawn twenty times as often.
func TestAggregatesMatchNaiveOracle(t *testing.T) {
	defer func() { genAggMin = 0 }()
	genAggMin = 1
	for range 20 {
		rapid.Check(t, checkOracle)
	}
}

func checkOracle(t *rapid.T) {
	{
		src := genProgram(t)
		c, err := Load("gen.dl", []byte(src))
		if err != nil {
			if e, ok := err.(*Error); !ok || (e.Code != NegativeRecursion && e.Code != RecursiveAggregate && e.Code != UnsafeVariable && e.Code != TypeMismatch) {
				t.Fatalf("unexpected check error %v for\n%s", err, src)
			}
			t.Skip("rejected program")
		}
		base := genFacts(t)
		m, err := Evaluate(c, base, Limits{MaxTuples: 20000})
		if err != nil {
			if e, ok := err.(*Error); ok && (e.Code == DivisionByZero || e.Code == TupleBudgetExceeded) {
				t.Skip("budget or division")
			}
			t.Fatalf("evaluate: %v\n%s", err, src)
		}
		assertSameAsOracle(t, c, m, base, src)
	}
}
