package logic

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

// render prints every relation, both signs, and every conflict: the whole
// observable output of an evaluation.
func render(t interface{ Fatal(...any) }, m *Materialization) string {
	var b strings.Builder
	for _, rel := range m.c.rels {
		for _, neg := range []bool{false, true} {
			data, err := m.WriteFacts(rel.name, neg)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s neg=%v\n%s", rel.name, neg, data)
		}
	}
	cs, err := m.Conflicts()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "conflict %s\n", c.Atom)
	}
	return b.String()
}

func evalRender(t *rapid.T, src string, facts []Fact) (string, bool) {
	c, err := Load("m.dl", []byte(src))
	if err != nil {
		return "error " + string(err.(*Error).Code), false
	}
	m, err := Evaluate(c, facts, Limits{MaxTuples: 20000})
	if err != nil {
		return "error " + string(err.(*Error).Code), false
	}
	return render(t, m), true
}

var ruleLine = regexp.MustCompile(`(?m)^[-a-z].*:-.*\.$`)

// Metamorphic relations: renaming variables, reordering rules, reordering
// body items and duplicating rules never change the output.
func TestMetamorphic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		src := genProgram(t)
		facts := genFacts(t)
		want, ok := evalRender(t, src, facts)
		if !ok {
			t.Skip(want)
		}
		lines := strings.Split(strings.TrimSpace(src), "\n")
		var decls, rules []string
		for _, l := range lines {
			if ruleLine.MatchString(l) {
				rules = append(rules, l)
			} else {
				decls = append(decls, l)
			}
		}
		// 1. rename variables
		ren := strings.NewReplacer("A", "Xa", "B", "Yb", "C", "Zc", "D", "Wd")
		var renamed []string
		for _, r := range rules {
			renamed = append(renamed, ren.Replace(r))
		}
		// 2. permute rules and 3. permute body items
		perm := rapid.Permutation(renamed).Draw(t, "perm")
		var shuffled []string
		for _, r := range perm {
			head, body, _ := strings.Cut(strings.TrimSuffix(r, "."), " :- ")
			items := splitBody(body)
			items = rapid.Permutation(items).Draw(t, "body")
			shuffled = append(shuffled, head+" :- "+strings.Join(items, ", ")+".")
		}
		// 4. duplicate a rule
		if len(shuffled) > 0 {
			shuffled = append(shuffled, shuffled[rapid.IntRange(0, len(shuffled)-1).Draw(t, "dup")])
		}
		src2 := strings.Join(decls, "\n") + "\n" + strings.Join(shuffled, "\n") + "\n"
		got, _ := evalRender(t, src2, facts)
		if got != want {
			t.Fatalf("output changed\noriginal:\n%s\nvariant:\n%s\nwant:\n%s\ngot:\n%s", src, src2, want, got)
		}
	})
}

// splitBody splits a rule body at top-level commas.
func splitBody(body string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range body {
		switch r {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(body[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(body[start:]))
}

type evalInput struct {
	Src   string
	Facts []Fact
}

// Evaluation is a pure function of its inputs: two runs on deep copies
// agree and neither mutates its input.
func TestEvaluateIsDeterministic(t *testing.T) {
	in := evalInput{Src: chainProgram + "-tc(x, y) :- tc(x, y), x = y.\n", Facts: append(chainEdges(30), Fact{Rel: "edge", Args: []Value{Num(30), Num(1)}})}
	out := determinism.Check(t, in, func(in evalInput) string {
		c, err := Load("d.dl", []byte(in.Src))
		if err != nil {
			return err.Error()
		}
		m, err := Evaluate(c, in.Facts, Limits{})
		if err != nil {
			return err.Error()
		}
		return render(t, m)
	})
	if !strings.Contains(out, "conflict tc(1, 1)") {
		t.Fatalf("expected a conflict on the cycle, got:\n%s", out)
	}
}

type solveInput struct {
	Src   string
	Delta []FactChange
}

// Solve is a pure function of its inputs too.
func TestSolveIsDeterministic(t *testing.T) {
	in := solveInput{Src: gateProgram, Delta: []FactChange{
		{ID: "ev-2", Fact: appr("a", true), Diff: 1},
		{ID: "ev-1", Fact: req("a"), Diff: 1},
		{ID: "ev-3", Fact: appr("a", false), Diff: 1},
	}}
	out := determinism.Check(t, in, func(in solveInput) string {
		c, err := Load("g.dl", []byte(in.Src))
		if err != nil {
			return err.Error()
		}
		r, err := Solve(nil, c, in.Delta, 7, Limits{})
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(r.Changes, r.Conflicts)
	})
	if !strings.Contains(out, `allow("a")`) {
		t.Fatalf("unexpected result %s", out)
	}
}
