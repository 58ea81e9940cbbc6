package logic

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSortedRowsRadixMatchesComparison checks the radix sort used for
// large tables against the comparison order on random tables of mixed
// columns: negative and huge numbers, symbols with shared prefixes, and
// narrow domains so that leading columns tie often.
func TestSortedRowsRadixMatchesComparison(t *testing.T) {
	c, err := Load("order.dl", []byte(`
.decl r(a: number, s: symbol, b: number)
.output r
`))
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(radixMin, radixMin+1500).Draw(rt, "n")
		wide := rapid.Bool().Draw(rt, "wide")
		num := rapid.Int64Range(-40, 40)
		if wide {
			num = rapid.Int64()
		}
		sym := rapid.SampledFrom([]string{"", "a", "ab", "b", "\xff", "a\tb", "zz", "é"})
		facts := make([]Fact, n)
		for i := range facts {
			facts[i] = Fact{Rel: "r", Args: []Value{
				Num(num.Draw(rt, "a")),
				Sym(sym.Draw(rt, "s") + strings.Repeat("x", rapid.IntRange(0, 2).Draw(rt, "k"))),
				Num(rapid.Int64Range(-3, 3).Draw(rt, "b")),
			}}
		}
		m, err := Evaluate(c, facts, Limits{})
		if err != nil {
			rt.Fatal(err)
		}
		tb := m.tables[0]
		got := m.sortedRows(0)
		if len(got) != tb.liveRows() {
			rt.Fatalf("%d rows sorted, %d live", len(got), tb.liveRows())
		}
		if len(got) < radixMin {
			return // duplicates left too few rows to take the radix path
		}
		want := slices.Clone(got)
		slices.SortFunc(want, func(a, b int32) int {
			return compareFacts(m.decode(0, tb.tuple(a)), m.decode(0, tb.tuple(b)))
		})
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					rt.Fatalf("position %d: got %v, want %v", i, m.decode(0, tb.tuple(got[i])), m.decode(0, tb.tuple(want[i])))
				}
			}
		}
	})
}

// TestWriteFactsToStreamsWhatWriteFactsReturns writes a table larger than
// the stream buffer through a writer that accepts a few bytes at a time.
func TestWriteFactsToStreamsWhatWriteFactsReturns(t *testing.T) {
	c, err := Load("stream.dl", []byte(`
.decl e(x: number, y: number)
.decl tc(x: number, y: number)
.output tc
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
`))
	if err != nil {
		t.Fatal(err)
	}
	var facts []Fact
	for i := range int64(300) {
		facts = append(facts, Fact{Rel: "e", Args: []Value{Num(i * 7919 % 301), Num(i*7919%301 + 1)}})
	}
	m, err := Evaluate(c, facts, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := m.WriteFacts("tc", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) < 2*factsBuffer {
		t.Fatalf("only %d bytes: the test must cross the stream buffer", len(whole))
	}
	var w chunkWriter
	n, err := m.WriteFactsTo(&w, "tc", false)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(whole)) || w.String() != string(whole) {
		t.Fatalf("streamed %d bytes (%d returned), WriteFacts %d", w.Len(), n, len(whole))
	}
	lines := strings.Split(strings.TrimSuffix(string(whole), "\n"), "\n")
	if len(lines) != m.tables[2].liveRows() {
		t.Fatalf("%d lines for %d tuples", len(lines), m.tables[2].liveRows())
	}
	if _, err := m.WriteFactsTo(&failWriter{after: 1}, "tc", false); err != errShortDisk {
		t.Fatalf("write error: got %v, want it returned as is", err)
	}
}

// chunkWriter records what it is given.
type chunkWriter struct{ strings.Builder }

type failWriter struct{ after int }

var errShortDisk = &Error{Code: "TEST_WRITE_FAILED"}

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after == 0 {
		return 0, errShortDisk
	}
	f.after--
	return len(p), nil
}

// TestResultsRenderLikeTheMaterialization checks that the output-only
// results of a materialization render every relation and sign exactly as
// the materialization did, and that taking them consumes it.
func TestResultsRenderLikeTheMaterialization(t *testing.T) {
	c, err := Load("results.dl", []byte(`
.decl e(x: symbol, y: symbol)
.decl tc(x: symbol, y: symbol)
.decl blocked(x: symbol)
.decl open(x: symbol)
.output tc
.output open
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
open(x) :- tc(x, _), !blocked(x).
-open(x) :- blocked(x).
`))
	if err != nil {
		t.Fatal(err)
	}
	var facts []Fact
	for i := range 120 {
		a, b := "n"+strconv.Itoa(i*37%121), "n"+strconv.Itoa((i*37+5)%121)
		facts = append(facts, Fact{Rel: "e", Args: []Value{Sym(a), Sym(b)}})
	}
	facts = append(facts, Fact{Rel: "blocked", Args: []Value{Sym("n5")}})
	m, err := Evaluate(c, facts, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, rel := range []string{"tc", "open", "e", "blocked"} {
		for _, neg := range []bool{false, true} {
			b, err := m.WriteFacts(rel, neg)
			if err != nil {
				t.Fatal(err)
			}
			want[rel+strconv.FormatBool(neg)] = string(b)
		}
	}
	if len(want["tcfalse"]) < 1000 || want["openfalse"] == "" || want["opentrue"] == "" {
		t.Fatalf("the program should derive both sides: %d bytes of tc, open %q / %q", len(want["tcfalse"]), want["openfalse"], want["opentrue"])
	}
	stats := m.Stats()
	res, err := m.Results()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"tc", "open", "e", "blocked"} {
		for _, neg := range []bool{false, true} {
			var b strings.Builder
			if _, err := res.WriteFactsTo(&b, rel, neg); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != want[rel+strconv.FormatBool(neg)] {
				t.Fatalf("%s neg=%v: results render %q, the materialization %q", rel, neg, got, want[rel+strconv.FormatBool(neg)])
			}
		}
	}
	if m.Stats().Tuples != stats.Tuples {
		t.Fatalf("stats after Results: %+v, before %+v", m.Stats(), stats)
	}
	if _, err := m.Tuples("tc", false); !hasCode(err, Consumed) {
		t.Fatalf("Tuples after Results: %v, want %s", err, Consumed)
	}
	if _, err := m.Results(); !hasCode(err, Consumed) {
		t.Fatalf("second Results: %v, want %s", err, Consumed)
	}
	if _, err := res.WriteFacts("nope", false); !hasCode(err, UndeclaredRelation) {
		t.Fatalf("undeclared relation: %v", err)
	}
}

func hasCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}
