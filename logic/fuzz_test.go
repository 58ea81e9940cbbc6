package logic

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse: any input either parses and checks or fails with a typed
// error carrying a position; nothing panics. Programs that check are
// evaluated under a small budget.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		chainProgram,
		gateProgram,
		tcProgram,
		sgProgram,
		".decl p(x: number)\np(1 + 2 * 3 - -4 / 2 % 5).\n",
		".type T <: symbol\n.decl p(x: T)\n.input p(filename=\"a.tsv\")\n-p(\"a\\tb\").\n",
		"/* c */ // d\n.decl p(x: number)\n.decl q(x: number)\nq(x) :- p(x), !-p(x), x != 3.\n",
		".decl p()\np().\n",
		".decl e(x: number, y: number)\n.decl n(x: number, c: number, s: number)\nn(x, c, s) :- e(x, _), c = count : e(x, _), s = sum y : { e(x, y), y > 1 }.\n",
		".decl e(x: number, y: number)\n.decl n(x: number, c: number, s: number)\nn(x, count : e(x, _), 1 + max y : e(x, y)) :- e(x, _), sum y : e(x, y) * 2 > 3.\n",
		".decl e(x: number, y: number)\n.decl c(x: number)\nc(x) :- e(x, _), e(x, max p : { e(x, p) }), !e(min p : e(p, _) + 1, x).\n",
		".decl e(x: number, y: number)\n.decl m(x: number)\nm(x) :- e(x, _), min y : { e(x, y), !e(y, x) } < max y : -e(x, y).\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Load("f.dl", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// A rule's text, which supports and proofs show, reads back as
		// the same rule.
		for _, cl := range c.prog.Clauses {
			p, err := Parse("r.dl", []byte(cl.String()))
			if err != nil || len(p.Clauses) != 1 || p.Clauses[0].String() != cl.String() {
				t.Fatalf("rule text %q does not read back (%v)", cl.String(), err)
			}
		}
		// The memory budget is checked every 16 tuples so that fuzzed
		// programs reach it, not only the tuple budget.
		m, err := Evaluate(c, nil, Limits{MaxTuples: 2000, MaxFirings: 20000, MaxDepth: 50, MaxBytes: 48 << 10, memEvery: 16})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := m.Conflicts(); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
		}
	})
}

// FuzzReadFacts: fact files either read or fail with name:line:col.
func FuzzReadFacts(f *testing.F) {
	c, err := Load("f.dl", []byte(".decl r(a: number, b: symbol)\n.decl u(x: symbol)\n.decl z()\n"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"1\ta\n2\tb\n", "1\ta", "x\ty\n", "1\n", "\n\n", "-9223372036854775808\t\xff\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rel := range []string{"r", "u", "z"} {
			facts, err := ReadFacts(c, rel, false, "in.facts", data)
			if _, derr := EvaluateFiles(c, []FactFile{{Rel: rel, Name: "in.facts", Data: data}}, Limits{}); fmt.Sprint(derr) != fmt.Sprint(err) {
				t.Fatalf("%s: EvaluateFiles says %v, ReadFacts %v", rel, derr, err)
			}
			// The reader agrees with the plain one that splits lines and
			// columns into strings, fact for fact and error for error.
			want, werr := naiveReadFacts(c, rel, "in.facts", data)
			if fmt.Sprint(err) != fmt.Sprint(werr) || (err == nil && len(facts)+len(want) > 0 && !reflect.DeepEqual(facts, want)) {
				t.Fatalf("%s: read %v (%v), the plain reader %v (%v)", rel, facts, err, want, werr)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Pos.Line == 0 || e.Code != MalformedFact {
					t.Fatalf("error without position: %v", err)
				}
				continue
			}
			m, err := Evaluate(c, facts, Limits{})
			if err != nil {
				t.Fatalf("facts that read must evaluate: %v", err)
			}
			// Read straight into the relations, the file evaluates to the
			// same facts.
			direct, err := EvaluateFiles(c, []FactFile{{Rel: rel, Name: "in.facts", Data: data}}, Limits{})
			if err != nil {
				t.Fatalf("EvaluateFiles: %v", err)
			}
			if a, b := writeAll(t, m), writeAll(t, direct); a != b {
				t.Fatalf("EvaluateFiles:\n%s\nEvaluate:\n%s", b, a)
			}
			// What is written reads back to the same set.
			out, _ := m.WriteFacts(rel, false)
			again, err := ReadFacts(c, rel, false, "out.csv", out)
			if err != nil {
				t.Fatalf("output does not read back: %v\n%q", err, out)
			}
			m2, _ := Evaluate(c, again, Limits{})
			out2, _ := m2.WriteFacts(rel, false)
			if string(out) != string(out2) {
				t.Fatalf("round trip changed the relation:\n%q\n%q", out, out2)
			}
		}
	})
}

// FuzzParseFact: a query atom either parses against the declarations or
// fails with a typed error.
func FuzzParseFact(f *testing.F) {
	c, err := Load("f.dl", []byte(".decl r(a: number, b: symbol)\n.decl z()\n"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`r(1, "a")`, `-r(-5, "")`, `z()`, `r(1, "a").`, `r(x, "a")`, `r(1)`, `-`, `r(1, "a") r`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fact, err := ParseFact(c, text)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// What parses renders back to text that parses to the same fact.
		again, err := ParseFact(c, fact.String())
		if err != nil || again.String() != fact.String() {
			t.Fatalf("%q -> %s -> %v, %v", text, fact, again, err)
		}
	})
}

// naiveReadFacts is the plain reading of a fact file the reader is held
// to: a string per line, split at tabs.
func naiveReadFacts(c *Compiled, rel, name string, data []byte) ([]Fact, error) {
	info := c.rels[c.relByName[rel]]
	var out []Fact
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if len(info.types) == 0 {
			out = append(out, Fact{Rel: rel})
			continue
		}
		cols := strings.Split(l, "\t")
		if len(cols) != len(info.types) {
			what := "line"
			if l == "" {
				what = "empty line"
			}
			return nil, errorf(MalformedFact, Pos{File: name, Line: i + 1, Col: 1}, "%s has %d column(s) but %s is declared with %d", what, len(cols), rel, len(info.types))
		}
		f := Fact{Rel: rel, Args: make([]Value, len(cols))}
		col := 1
		for k, s := range cols {
			if info.types[k] == TypeNumber {
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return nil, errorf(MalformedFact, Pos{File: name, Line: i + 1, Col: col}, "column %d (%s) of %s must be a number, found %q", k+1, info.attrs[k], rel, s)
				}
				f.Args[k] = Num(n)
			} else {
				if strings.ToValidUTF8(s, "\uFFFD") != s {
					return nil, errorf(MalformedFact, Pos{File: name, Line: i + 1, Col: col}, "column %d (%s) of %s is not valid UTF-8", k+1, info.attrs[k], rel)
				}
				f.Args[k] = Sym(s)
			}
			col += len(s) + 1
		}
		out = append(out, f)
	}
	return out, nil
}
