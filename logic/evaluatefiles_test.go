package logic

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// writeAll renders every relation of m, both sides, as WriteFacts does.
func writeAll(t interface{ Fatal(...any) }, m *Materialization) string {
	var b strings.Builder
	for _, rel := range m.Program().Relations() {
		for _, neg := range []bool{false, true} {
			out, err := m.WriteFacts(rel, neg)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v:\n%s", rel, neg, out)
		}
	}
	return b.String()
}

// filesProgram reads an edge relation, a relation of labels and one of no
// columns, with explicit negative facts of edges, and derives from them.
const filesProgram = `
.decl edge(x: number, y: number)
.decl label(x: number, name: symbol)
.decl on()
.decl reach(x: number, y: number)
reach(x, y) :- edge(x, y), on().
reach(x, z) :- reach(x, y), edge(y, z).
-reach(x, y) :- -edge(x, y).
.decl named(name: symbol, n: number)
named(s, n) :- label(x, s), n = count : reach(x, _).
`

// EvaluateFiles agrees with Evaluate over ReadFacts of each file in turn:
// the same facts, or the same error (the first malformed line of the
// first file that has one), over random files with repeated facts, shared
// symbols, negative facts and malformed lines.
func TestEvaluateFilesMatchesReadFacts(t *testing.T) {
	c, err := Load("files.dl", []byte(filesProgram))
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		line := func(label string, cols ...*rapid.Generator[string]) *rapid.Generator[string] {
			return rapid.Custom(func(t *rapid.T) string {
				if rapid.IntRange(0, 40).Draw(t, label+" bad") == 0 {
					return rapid.SampledFrom([]string{"x\t1", "1", "1\t2\t3", "", "\xff", "9223372036854775808\t1"}).Draw(t, label+" malformed")
				}
				parts := make([]string, len(cols))
				for i, g := range cols {
					parts[i] = g.Draw(t, label)
				}
				return strings.Join(parts, "\t")
			})
		}
		num := rapid.Custom(func(t *rapid.T) string { return fmt.Sprint(rapid.IntRange(-3, 12).Draw(t, "n")) })
		sym := rapid.SampledFrom([]string{"a", "b", "", "ü", " c ", "a\r"})
		file := func(label string, g *rapid.Generator[string]) []byte {
			lines := rapid.SliceOfN(g, 0, 30).Draw(t, label)
			s := strings.Join(lines, "\n")
			if len(lines) > 0 && rapid.Bool().Draw(t, label+" newline") {
				s += "\n"
			}
			return []byte(s)
		}
		files := []FactFile{
			{Rel: "edge", Name: "edge.facts", Data: file("edge", line("edge", num, num))},
			{Rel: "label", Name: "label.facts", Data: file("label", line("label", num, sym))},
			{Rel: "on", Name: "on.facts", Data: []byte(rapid.SampledFrom([]string{"", "\n", "\n\n", "x"}).Draw(t, "on"))},
			{Rel: "edge", Neg: true, Name: "notedge.facts", Data: file("notedge", line("notedge", num, num))},
		}
		for i := len(files) - 1; i > 0; i-- {
			j := rapid.IntRange(0, i).Draw(t, "swap")
			files[i], files[j] = files[j], files[i]
		}
		var facts []Fact
		var want error
		for _, f := range files {
			fs, err := ReadFacts(c, f.Rel, f.Neg, f.Name, f.Data)
			if err != nil {
				want = err
				break
			}
			facts = append(facts, fs...)
		}
		lim := Limits{MaxInputs: rapid.IntRange(0, 100).Draw(t, "inputs")}
		var m *Materialization
		if want == nil {
			m, want = Evaluate(c, facts, lim)
		}
		got, err := EvaluateFiles(c, files, lim)
		if fmt.Sprint(err) != fmt.Sprint(want) || (err == nil) != (got != nil) {
			t.Fatalf("EvaluateFiles: %v (%v), Evaluate over ReadFacts: %v", err, got != nil, want)
		}
		if err == nil {
			if a, b := writeAll(t, m), writeAll(t, got); a != b {
				t.Fatalf("EvaluateFiles:\n%s\nEvaluate:\n%s", b, a)
			}
			if a, b := m.Stats(), got.Stats(); fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("stats %+v, want %+v", b, a)
			}
		}
	})
}

// An undeclared relation is said in its turn: after a malformed line of
// a file before it, before anything of a file after it.
func TestEvaluateFilesUndeclared(t *testing.T) {
	c, err := Load("files.dl", []byte(filesProgram))
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		files []FactFile
		code  Code
		file  string
	}{
		{[]FactFile{{Rel: "edge", Name: "e", Data: []byte("x\n")}, {Rel: "nope", Name: "nope.facts"}}, MalformedFact, "e"},
		{[]FactFile{{Rel: "edge", Name: "e", Data: []byte("1\t2\n")}, {Rel: "nope", Name: "nope.facts"}, {Rel: "edge", Name: "f", Data: []byte("x")}}, UndeclaredRelation, "nope.facts"},
	} {
		_, err = EvaluateFiles(c, c2.files, Limits{})
		var e *Error
		if !errors.As(err, &e) || e.Code != c2.code || e.Pos.File != c2.file {
			t.Fatalf("%v, want %s in %s", err, c2.code, c2.file)
		}
	}
}
