package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// flrh why explains a fact an aggregate decided: the tree names the
// aggregate, its value and the facts it ranged over, in text and JSON.
func TestWhyNamesAnAggregate(t *testing.T) {
	const program = `.decl edge(x: symbol, y: symbol)
.input edge
.decl fanout(x: symbol, n: number)
fanout(x, n) :- edge(x, _), n = count : edge(x, _).
`
	prog, facts, _ := datalogFixture(t, program, "a\tb\na\tc\nb\tc\n")
	stdout, _, err := runDatalog(t, "why", prog, "-F", facts, `fanout("a", 2)`, "--json=false", "--max-tuples=1000", "--max-firings=0")
	if err != nil {
		t.Fatal(err)
	}
	want := `└─ count : { edge(x, _) } = 2 over edge("a", "b"); edge("a", "c")  [aggregate over a complete lower stratum]`
	if !strings.Contains(stdout, "fanout(\"a\", 2) is TRUE_ONLY") || !strings.Contains(stdout, want) {
		t.Fatalf("why output:\n%s\nwant a line %q", stdout, want)
	}
	stdout, _, err = runDatalog(t, "why", prog, "-F", facts, `fanout("a", 2)`, "--json=true", "--max-tuples=1000", "--max-firings=0")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Positive struct {
			Aggregates []struct {
				Aggregate string   `json:"aggregate"`
				Value     int64    `json:"value"`
				Over      []string `json:"over"`
			} `json:"aggregates"`
		} `json:"positive"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	ag := out.Positive.Aggregates
	if len(ag) != 1 || ag[0].Aggregate != "count : { edge(x, _) }" || ag[0].Value != 2 || strings.Join(ag[0].Over, " ") != `edge("a", "b") edge("a", "c")` {
		t.Fatalf("JSON aggregates %+v", ag)
	}
	// fanout("a", 3) does not hold: no aggregate reached 3.
	stdout, _, err = runDatalog(t, "why", prog, "-F", facts, `fanout("a", 3)`, "--json=false", "--max-tuples=1000", "--max-firings=0")
	if err != nil || !strings.Contains(stdout, "NEITHER") {
		t.Fatalf("fanout(a, 3): %v\n%s", err, stdout)
	}
}
