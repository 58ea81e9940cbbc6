package logic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
)

const aggProgram = `.decl e(x: number, y: number)
.decl f(x: number)
.decl node(x: number)
.decl r(x: number, n: number)
node(1). node(2). node(3).
`

// What each aggregate computes, table by table: one value per
// instantiation of its body (each combination of matching facts), zero
// for a count or sum of nothing, no value (and no derivation) for a min
// or max of nothing.
func TestAggregateSemantics(t *testing.T) {
	facts := "e(1, 5). e(1, 7). e(1, 7 + 0). e(2, 4). f(5). f(7). -f(4).\n"
	for _, c := range []struct {
		name, rule string
		want       string // r's tuples
	}{
		{"count per group, zero for none", "r(x, n) :- node(x), n = count : e(x, _).", "[[1 2] [2 1] [3 0]]"},
		{"count with a constant", "r(x, n) :- node(x), n = count : e(1, _).", "[[1 2] [2 2] [3 2]]"},
		{"sum", "r(x, n) :- node(x), n = sum y : e(x, y).", "[[1 12] [2 4] [3 0]]"},
		{"sum of an expression", "r(x, n) :- node(x), n = sum y * 10 + 1 : e(x, y).", "[[1 122] [2 41] [3 0]]"},
		{"sum of a constant counts", "r(x, n) :- node(x), n = sum 2 : e(x, _).", "[[1 4] [2 2] [3 0]]"},
		{"min: none for an empty group", "r(x, n) :- node(x), n = min y : e(x, y).", "[[1 5] [2 4]]"},
		{"max", "r(x, n) :- node(x), n = max y : e(x, y).", "[[1 7] [2 4]]"},
		{"a join counts combinations", "r(x, n) :- node(x), n = count : { e(x, y), f(y) }.", "[[1 2] [2 0] [3 0]]"},
		{"a comparison inside", "r(x, n) :- node(x), n = count : { e(x, y), y > 5 }.", "[[1 1] [2 0] [3 0]]"},
		{"default negation inside", "r(x, n) :- node(x), n = count : { e(x, y), !f(y) }.", "[[1 0] [2 1] [3 0]]"},
		{"explicit negation inside", "r(x, n) :- node(x), n = count : { e(x, y), -f(y) }.", "[[1 0] [2 1] [3 0]]"},
		{"a bare negative atom", "r(x, n) :- node(x), n = count : -f(_).", "[[1 1] [2 1] [3 1]]"},
		{"a comparison with an aggregate on the left", "r(x, 0) :- node(x), count : e(x, _) >= 1.", "[[1 0] [2 0]]"},
		{"on the right", "r(x, 0) :- node(x), 6 < sum y : e(x, y).", "[[1 0]]"},
		{"an equality compares once the value is known", "r(x, 0) :- node(x), count : e(x, _) = 0.", "[[3 0]]"},
		{"the same local name in two aggregates", "r(x, n) :- node(x), n = count : e(x, y), m = max y : e(x, y), m > 4.", "[[1 2]]"},
		{"a param bound by an equality", "r(x, n) :- node(z), x = z - 1, n = count : e(x, _).", "[[0 0] [1 2] [2 1]]"},
		{"one aggregate's value is another's param", "r(n, m) :- n = count : e(1, _), m = count : e(n, _).", "[[2 1]]"},
		{"no params: a global count", "r(n, 0) :- n = count : e(_, _).", "[[3 0]]"},
		{"in a head", "r(x, count : e(x, _)) :- node(x).", "[[1 2] [2 1] [3 0]]"},
		{"in a head, min: none for an empty group", "r(x, min y : e(x, y)) :- node(x).", "[[1 5] [2 4]]"},
		{"in a head's arithmetic", "r(x, 100 - sum y : e(x, y)) :- node(x).", "[[1 88] [2 96] [3 100]]"},
		{"in arithmetic", "r(x, n) :- node(x), n = 1 + count : e(x, _) * 10.", "[[1 21] [2 11] [3 1]]"},
		{"in arithmetic compared", "r(x, 0) :- node(x), max y : e(x, y) - 5 > 0.", "[[1 0]]"},
		{"two in one expression", "r(x, n) :- node(x), n = sum y : e(x, y) - count : e(x, _).", "[[1 10] [2 3] [3 0]]"},
		{"an atom's argument", "r(x, 0) :- node(x), e(x, max y : e(x, y)).", "[[1 0] [2 0]]"},
		{"an atom's argument, arithmetic", "r(x, 0) :- node(x), f(count : e(x, _) + 5).", "[[1 0] [3 0]]"},
		{"a negated atom's argument", "r(x, 0) :- node(x), !f(min y : e(x, y)).", "[[2 0]]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			comp, err := Load("t.dl", []byte(aggProgram+facts+c.rule+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Evaluate(comp, nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := m.Tuples("r", false)
			if fmt.Sprint(got) != c.want {
				t.Fatalf("r = %v, want %s", got, c.want)
			}
		})
	}
}

// A sum wraps as every arithmetic does; a division by zero in an
// aggregate is the typed evaluation error.
func TestAggregateArithmetic(t *testing.T) {
	src := aggProgram + fmt.Sprintf("e(1, %d). e(1, 2).\n", int64(math.MaxInt64)) + "r(x, n) :- node(x), x = 1, n = sum y : e(x, y).\n"
	comp, err := Load("t.dl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(comp, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Tuples("r", false); fmt.Sprint(got) != fmt.Sprintf("[[1 %d]]", int64(math.MinInt64)+1) {
		t.Fatalf("r = %v", got)
	}
	comp, err = Load("t.dl", []byte(aggProgram+"e(1, 0).\nr(x, n) :- node(x), n = sum 10 / y : e(x, y).\n"))
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, err := Evaluate(comp, nil, Limits{}); !errors.As(err, &e) || e.Code != DivisionByZero {
		t.Fatalf("err = %v, want DIVISION_BY_ZERO", err)
	}
}

// Supports and proofs give each aggregate's value and the facts it ranged
// over: all of them for a count or sum, those that attain the value for a
// min or max; an aggregate adds nothing to a proof's height.
func TestAggregateProvenance(t *testing.T) {
	src := aggProgram + "e(1, 5). e(1, 7). e(2, 7). e(3, 5).\n" +
		"r(x, n) :- node(x), n = sum y : e(x, y), m = min y : e(x, y), m > 4.\n"
	comp, err := Load("t.dl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(comp, nil, Limits{MaxDepth: 1})
	if err != nil {
		t.Fatalf("a proof through an aggregate is one rule high: %v", err)
	}
	sups, err := m.Supports(Fact{Rel: "r", Args: []Value{Num(1), Num(12)}})
	if err != nil || len(sups) != 1 {
		t.Fatalf("supports %v (%v)", sups, err)
	}
	want := `rule r(x, n) :- node(x), n = sum y : { e(x, y) }, m = min y : { e(x, y) }, m > 4. (t.dl:7:1) with node(1), ` +
		`sum y : { e(x, y) } = 12 over e(1, 5); e(1, 7), min y : { e(x, y) } = 5 over e(1, 5)`
	if got := sups[0].String(); got != want {
		t.Fatalf("support\n got %s\nwant %s", got, want)
	}
	p, err := m.Explain(Fact{Rel: "r", Args: []Value{Num(1), Num(12)}})
	if err != nil || len(p.Premises) != 1 || len(p.Aggregates) != 2 || p.Aggregates[1].Value != 5 || len(p.Aggregates[1].Over) != 1 {
		t.Fatalf("proof %+v (%v)", p, err)
	}
	var seen int
	if _, err := m.EachSupportBoth(Fact{Rel: "r", Args: []Value{Num(1), Num(12)}}, func(neg bool, s *Support) {
		seen++
		if neg || s.String() != want {
			t.Fatalf("each support %s", s)
		}
	}); err != nil || seen != 1 {
		t.Fatalf("EachSupportBoth: %d supports (%v)", seen, err)
	}
}

// An update that changes what an aggregate reads changes its value: a
// new fact, a retracted one, and one that empties a group.
func TestAggregateUpdates(t *testing.T) {
	comp, err := Load("t.dl", []byte(aggProgram+"r(x, n) :- node(x), n = sum y : e(x, y).\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := func(x, y int64) Fact { return Fact{Rel: "e", Args: []Value{Num(x), Num(y)}} }
	m, err := Evaluate(comp, []Fact{e(1, 5), e(2, 4)}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		changes []Change
		want    string
	}{
		{[]Change{{e(1, 7), 1}}, "[[1 12] [2 4] [3 0]]"},
		{[]Change{{e(1, 5), -1}, {e(3, 1), 1}}, "[[1 7] [2 4] [3 1]]"},
		{[]Change{{e(2, 4), -1}}, "[[1 7] [2 0] [3 1]]"},
	} {
		if m, err = m.Apply(step.changes); err != nil {
			t.Fatal(err)
		}
		if got, _ := m.Tuples("r", false); fmt.Sprint(got) != step.want {
			t.Fatalf("after %v: r = %v, want %s", step.changes, got, step.want)
		}
	}
}

// An aggregate's rule text reads back as written, and a singleton
// variable inside an aggregate is warned about as one outside.
func TestAggregateTextAndWarnings(t *testing.T) {
	p, err := Parse("t.dl", []byte("r(x, n) :- node(x), n = sum y*2 : { e(x, y), y > 1, !f(y) }, count : e(x, z) > 0.\n"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "r(x, n) :- node(x), n = sum y * 2 : { e(x, y), y > 1, !f(y) }, count : { e(x, z) } > 0."
	if got := p.Clauses[0].String(); got != want {
		t.Fatalf("text %s", got)
	}
	comp, err := Load("t.dl", []byte(aggProgram+want+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range comp.Warnings() {
		warned = append(warned, w.Error())
	}
	if len(warned) != 3 || !strings.Contains(warned[0], "variable z occurs only once") || !strings.Contains(warned[1], "e has no rules") || !strings.Contains(warned[2], "f has no rules") {
		t.Fatalf("warnings %q", warned)
	}
	// A parenthesised target is an aggregate's, a functor call is not.
	p, err = Parse("t.dl", []byte("r(x, n) :- node(x), n = max (y + 1) * 2 : e(x, y).\n"))
	if err != nil || p.Clauses[0].String() != "r(x, n) :- node(x), n = max (y + 1) * 2 : { e(x, y) }." {
		t.Fatalf("parenthesised target: %v %v", p, err)
	}
	var e *Error
	if _, err := Parse("t.dl", []byte("r(x, n) :- node(x), n = max(x, 1).\n")); !errors.As(err, &e) || e.Code != UnsupportedFeature || !strings.Contains(e.Msg, "functor") {
		t.Fatalf("functor: %v", err)
	}
	if _, err := Parse("t.dl", []byte("r(x, n) :- node(x), n = max (x) : { e(x, }.\n")); !errors.As(err, &e) || e.Code != SyntaxError {
		t.Fatalf("a broken aggregate body: %v", err)
	}
}

// The instantiations of an aggregate's body count against the rule
// budget, so an aggregate over a large join stops at it.
func TestAggregateWorkIsBudgeted(t *testing.T) {
	comp, err := Load("t.dl", []byte(aggProgram+"r(x, n) :- node(x), n = count : { e(_, _), e(_, _), e(_, _) }.\n"))
	if err != nil {
		t.Fatal(err)
	}
	var facts []Fact
	for i := range int64(20) {
		facts = append(facts, Fact{Rel: "e", Args: []Value{Num(i), Num(i)}})
	}
	var e *Error
	if _, err := Evaluate(comp, facts, Limits{MaxFirings: 5000}); !errors.As(err, &e) || e.Code != RuleBudgetExhausted {
		t.Fatalf("err = %v, want RULE_BUDGET_EXHAUSTED", err)
	}
	m, err := Evaluate(comp, facts, Limits{MaxFirings: 9000})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Tuples("r", false); fmt.Sprint(got) != "[[1 8000] [2 8000] [3 8000]]" {
		t.Fatalf("r = %v", got)
	}
	// It shares no variable with its rule, so it is computed once, not
	// once for each node: 8,000 instantiations, three facts, three heads.
	if f := m.Stats().Firings; f != 8006 {
		t.Fatalf("%d firings, want 8006", f)
	}
	if _, err := m.Supports(Fact{Rel: "r", Args: []Value{Num(1), Num(8000)}}); err != nil {
		t.Fatalf("a support lookup counts against the budget: %v", err)
	}
}

// An update maintains an aggregate per group: a refund to one payee,
// late in a run of 5,000 refunds to 500 payees, makes the work of that
// payee's ten refunds, in and out, where evaluating the stratum afresh
// made that of every refund; the caps are those a fresh evaluation
// gives.
func TestAggregateUpdatesPerGroup(t *testing.T) {
	refund := func(i, a, p int64) Fact { return Fact{Rel: "refund", Args: []Value{Num(i), Num(a), Num(p)}} }
	var facts []Fact
	for i := range int64(5000) {
		facts = append(facts, refund(i, 10+i%7, i%500))
	}
	m := mustEval(t, capProgram, facts)
	for _, ch := range []Change{{refund(5000, 30, 2), 1}, {refund(5000, 30, 2), -1}, {refund(7, 10, 7), -1}} {
		m, facts = applyWithin(t, m, facts, ch, 200, "the work of one payee's refunds")
		want := mustEval(t, capProgram, facts)
		for _, neg := range []bool{false, true} {
			got, _ := m.Tuples("over_cap", neg)
			w, _ := want.Tuples("over_cap", neg)
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Fatalf("%v: over_cap (neg %v) = %v, want %v", ch, neg, got, w)
			}
		}
	}

	// Aggregates whose params a changed atom does not hold: found through
	// the rest of the body (a join, a negation), or, with a param that no
	// atom binds, by evaluating the stratum afresh. Each step is held to a
	// fresh evaluation.
	e := func(x, y int64) Fact { return Fact{Rel: "e", Args: []Value{Num(x), Num(y)}} }
	f := func(x int64) Fact { return Fact{Rel: "f", Args: []Value{Num(x)}} }
	steps := []Change{{e(2, 1), 1}, {f(2), 1}, {e(1, 2), -1}, {f(2), -1}, {e(3, 1), 1}, {f(3), 1}, {e(2, 3), -1}}
	for _, rule := range []string{
		"r(x, n) :- node(x), n = count : { e(x, y), e(y, _) }.",
		"r(x, n) :- node(x), n = count : { e(x, y), !f(y) }.",
		"r(x, n) :- node(x), n = sum z : { e(x, y), e(y, z), !f(z) }.",
		"r(x, n) :- node(x), n = count : { e(_, y), y > x }.",
	} {
		src := aggProgram + rule + "\n"
		base := []Fact{e(1, 2), e(2, 3), e(3, 3), f(1)}
		m := mustEval(t, src, base)
		for _, ch := range steps {
			m, base = applyWithin(t, m, base, ch, math.MaxInt64, "")
			got, _ := m.Tuples("r", false)
			want, _ := mustEval(t, src, base).Tuples("r", false)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s\nafter %v: r = %v, want %v", rule, ch, got, want)
			}
		}
	}
}

// In a recursive stratum too an update that changes what an aggregate
// reads costs the groups it touches: a manager's third ticket stops the
// escalations through them in their own chain: at most 100 firings (8 to
// 27 for these steps) where evaluating the stratum afresh fires 24,504
// times, for all 500 chains; and every step is what a fresh evaluation
// gives.
func TestRecursiveAggregateUpdatesPerGroup(t *testing.T) {
	ticket := func(p, n int64) Fact { return Fact{Rel: "ticket", Args: []Value{Num(p), Num(n)}} }
	manages := func(m, e int64) Fact { return Fact{Rel: "manages", Args: []Value{Num(m), Num(e)}} }
	facts := escalationFacts()
	m := mustEval(t, escalationProgram, facts)
	if n, _ := m.Tuples("escalates", false); len(n) != 500*28 {
		t.Fatalf("%d escalations, want 28 in each of 500 chains", len(n))
	}
	for _, ch := range []Change{
		{ticket(803, -1), 1}, {ticket(803, -2), 1}, // 803 has three: no escalation through them
		{ticket(805, -1), 1}, {ticket(805, -2), 1}, // and 805 downstream
		{ticket(803, -1), -1}, // 803 back below three
		{manages(803, 804), -1}, {manages(803, 804), 1},
		{ticket(805, 805), -1}, {ticket(803, -2), -1},
	} {
		m, facts = applyWithin(t, m, facts, ch, 100, "the work of one chain")
		got, _ := m.Tuples("escalates", false)
		want, _ := mustEval(t, escalationProgram, facts).Tuples("escalates", false)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after %v: %d escalations, want %d", ch, len(got), len(want))
		}
	}
}

// applyWithin applies ch to m, whose base facts are facts, failing t when
// the update fires more than most rules (what it should cost), and
// returns the updated materialization and base facts.
func applyWithin(t *testing.T, m *Materialization, facts []Fact, ch Change, most int64, what string) (*Materialization, []Fact) {
	t.Helper()
	m, err := m.Apply([]Change{ch})
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Stats().Firings; f > most {
		t.Fatalf("%v: %d firings, want %s", ch, f, what)
	}
	if ch.Diff == 1 {
		return m, append(facts, ch.Fact)
	}
	return m, slices.DeleteFunc(facts, func(f Fact) bool { return f.String() == ch.Fact.String() })
}

// Queries are safe to run at once (each lookup has its own evaluators,
// an aggregate's included): supports and proofs of facts an aggregate
// decided, asked from eight goroutines, are what one asks alone.
func TestAggregateQueriesRunConcurrently(t *testing.T) {
	comp, err := Load("t.dl", []byte(aggProgram+"e(1, 5). e(1, 7). e(2, 4). e(3, 9).\n"+
		"r(x, n) :- node(x), n = sum y : e(x, y), count : e(x, _) >= 1.\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Evaluate(comp, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	facts := []Fact{
		{Rel: "r", Args: []Value{Num(1), Num(12)}},
		{Rel: "r", Args: []Value{Num(2), Num(4)}},
		{Rel: "r", Args: []Value{Num(3), Num(9)}},
	}
	answer := func(f Fact) string {
		sups, err := m.Supports(f)
		if err != nil {
			return err.Error()
		}
		p, err := m.Explain(f)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(sups, p.Aggregates)
	}
	want := make([]string, len(facts))
	for i, f := range facts {
		want[i] = answer(f)
		if !strings.Contains(want[i], "sum y : { e(x, y) } =") {
			t.Fatalf("%s: %s", f, want[i])
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				i := (g + k) % len(facts)
				if got := answer(facts[i]); got != want[i] {
					errs <- fmt.Sprintf("%s: %s, want %s", facts[i], got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A rule whose body is an aggregate alone is a rule applied: its facts
// are one derivation deep, as with a body of absences alone.
func TestAggregateOnlyRuleIsOneDeep(t *testing.T) {
	comp, err := Load("t.dl", []byte(aggProgram+".decl s(n: number)\ne(1, 5).\nr(n, 0) :- n = count : e(_, _).\ns(n) :- r(n, _).\n"))
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, err := Evaluate(comp, nil, Limits{MaxDepth: 1}); !errors.As(err, &e) || e.Code != DepthExceeded {
		t.Fatalf("s(1) needs two rules applied: %v", err)
	}
	m, err := Evaluate(comp, nil, Limits{MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Explain(Fact{Rel: "s", Args: []Value{Num(1)}})
	if err != nil || len(p.Premises) != 1 || len(p.Premises[0].Aggregates) != 1 || p.Premises[0].Base {
		t.Fatalf("proof %+v (%v)", p, err)
	}
}
