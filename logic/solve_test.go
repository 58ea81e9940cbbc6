package logic

import (
	"errors"
	"fmt"
	"testing"
)

const gateProgram = `.decl request(id: symbol)
.decl approved(id: symbol)
.decl allow(id: symbol)
allow(x) :- request(x), approved(x).
-allow(x) :- request(x), -approved(x).
`

func req(id string) Fact { return Fact{Rel: "request", Args: []Value{Sym(id)}} }
func appr(id string, neg bool) Fact {
	return Fact{Rel: "approved", Neg: neg, Args: []Value{Sym(id)}}
}

func TestSolveNamedSupports(t *testing.T) {
	c, err := Load("gate.dl", []byte(gateProgram))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := Solve(nil, c, []FactChange{
		{ID: "ev-1", Fact: req("a"), Diff: 1},
		{ID: "ev-2", Fact: appr("a", false), Diff: 1},
		{ID: "ev-3", Fact: appr("a", false), Diff: 1}, // a second support for the same fact
		{ID: "ev-2", Fact: appr("a", false), Diff: 1}, // exact duplicate: idempotent
	}, 1, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r1.Changes); got != `[{allow("a") 1} {approved("a") 1} {request("a") 1}]` {
		t.Fatalf("changes = %s", got)
	}
	sup, _ := r1.Materialization.Supports(appr("a", false))
	if len(sup) != 1 || fmt.Sprint(sup[0].BaseIDs) != "[ev-2 ev-3]" {
		t.Fatalf("supports of approved(a) = %v, want base ev-2, ev-3", sup)
	}
	// Retracting one of two supports keeps the fact.
	r2, err := Solve(r1.Materialization, c, []FactChange{{ID: "ev-2", Fact: appr("a", false), Diff: -1}}, 2, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Changes) != 0 {
		t.Fatalf("changes = %v, want none", r2.Changes)
	}
	// Negative evidence makes allow(a) a conflict, reported with both sides.
	r3, err := Solve(r2.Materialization, c, []FactChange{{ID: "ev-4", Fact: appr("a", true), Diff: 1}}, 3, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r3.Conflicts) != 2 || r3.Conflicts[0].Atom.String() != `allow("a")` || r3.Conflicts[1].Atom.String() != `approved("a")` {
		t.Fatalf("conflicts = %v", r3.Conflicts)
	}
	// Retracting the last positive support removes the derived fact.
	r4, err := Solve(r3.Materialization, c, []FactChange{{ID: "ev-3", Fact: appr("a", false), Diff: -1}}, 3, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r4.Changes); got != `[{allow("a") -1} {approved("a") -1}]` {
		t.Fatalf("changes = %s", got)
	}
	if st, _ := r4.Materialization.State(Fact{Rel: "allow", Args: []Value{Sym("a")}}); st != FalseOnly {
		t.Fatalf("allow(a) is %v, want FALSE_ONLY", st)
	}
}

func TestSolveRejections(t *testing.T) {
	c, err := Load("gate.dl", []byte(gateProgram))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Load("other.dl", []byte(gateProgram))
	base := func() *Materialization {
		r, err := Solve(nil, c, []FactChange{{ID: "ev-1", Fact: req("a"), Diff: 1}}, 5, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Materialization
	}
	cases := []struct {
		name  string
		prog  *Compiled
		delta []FactChange
		time  int64
		code  Code
	}{
		{"mixed signs", c, []FactChange{{ID: "ev-9", Fact: req("b"), Diff: 1}, {ID: "ev-9", Fact: req("b"), Diff: -1}}, 5, AmbiguousBatchDelta},
		{"double retract", c, []FactChange{{ID: "ev-1", Fact: req("a"), Diff: -1}, {ID: "ev-1", Fact: req("a"), Diff: -1}}, 5, AmbiguousBatchDelta},
		{"identity reuse in batch", c, []FactChange{{ID: "ev-9", Fact: req("b"), Diff: 1}, {ID: "ev-9", Fact: req("c"), Diff: 1}}, 5, IdentityConflict},
		{"identity reuse across", c, []FactChange{{ID: "ev-1", Fact: req("z"), Diff: 1}}, 5, IdentityConflict},
		{"provenance differs", c, []FactChange{{ID: "ev-1", Fact: req("a"), Diff: 1, Provenance: "x"}}, 5, IdentityConflict},
		{"retract other content", c, []FactChange{{ID: "ev-1", Fact: req("q"), Diff: -1}}, 5, IdentityConflict},
		{"unknown", c, []FactChange{{ID: "ev-7", Fact: req("a"), Diff: -1}}, 5, UnknownDerivation},
		{"derived target", c, []FactChange{{ID: "derivation:18cb2e5a834a0ba8feac7a31c7f591237c24c1fb5af0244e234de736da0eb316", Fact: req("a"), Diff: -1}}, 5, DerivedSupportTarget},
		{"derived id inserted", c, []FactChange{{ID: "derivation:18cb2e5a834a0ba8feac7a31c7f591237c24c1fb5af0244e234de736da0eb316", Fact: req("a"), Diff: 1}}, 5, DerivedSupportTarget},
		{"unknown base id", c, []FactChange{{ID: "derivation:missing", Fact: req("a"), Diff: -1}}, 5, UnknownDerivation},
		{"time regression", c, nil, 4, LogicalTimeRegress},
		{"other program", other, nil, 5, ProgramMismatch},
		{"bad diff", c, []FactChange{{ID: "ev-8", Fact: req("a"), Diff: 2}}, 5, MalformedDelta},
		{"bad relation", c, []FactChange{{ID: "ev-8", Fact: Fact{Rel: "nope"}, Diff: 1}}, 5, MalformedDelta},
		{"bad id", c, []FactChange{{ID: "-x", Fact: req("a"), Diff: 1}}, 5, MalformedDelta},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prior := base()
			before := prior.Clone()
			// Reversing the batch must not change which error wins.
			for _, d := range [][]FactChange{tc.delta, reversed(tc.delta)} {
				_, err := Solve(prior, tc.prog, d, tc.time, Limits{})
				var e *Error
				if !errors.As(err, &e) || e.Code != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
			}
			g, _ := prior.Tuples("request", false)
			w, _ := before.Tuples("request", false)
			if fmt.Sprint(g) != fmt.Sprint(w) || len(prior.ledger) != len(before.ledger) {
				t.Fatal("a rejected batch changed the prior")
			}
		})
	}
}

func TestSolveInputCeiling(t *testing.T) {
	c, _ := Load("gate.dl", []byte(gateProgram))
	mk := func(n int) []FactChange {
		d := make([]FactChange, n)
		for i := range d {
			d[i] = FactChange{ID: fmt.Sprintf("ev-%d", i), Fact: req(fmt.Sprint(i)), Diff: 1}
		}
		return d
	}
	if _, err := Solve(nil, c, mk(ReferenceMaxInputs), 0, Limits{}); err != nil {
		t.Fatalf("exactly %d inputs: %v", ReferenceMaxInputs, err)
	}
	_, err := Solve(nil, c, mk(ReferenceMaxInputs+1), 0, Limits{})
	var e *Error
	if !errors.As(err, &e) || e.Code != InputBudgetExceeded {
		t.Fatalf("got %v, want INPUT_BUDGET_EXHAUSTED", err)
	}
}

func reversed(d []FactChange) []FactChange {
	out := make([]FactChange, len(d))
	for i, x := range d {
		out[len(d)-1-i] = x
	}
	return out
}

// The first tick reports everything present, inline facts included.
func TestSolveFirstTickReportsEverything(t *testing.T) {
	c, err := Load("g.dl", []byte(gateProgram+"request(\"standing\").\napproved(\"standing\").\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Solve(nil, c, []FactChange{{ID: "ev-1", Fact: req("a"), Diff: 1}}, 0, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{allow("standing") 1} {approved("standing") 1} {request("a") 1} {request("standing") 1}]`
	if got := fmt.Sprint(r.Changes); got != want {
		t.Fatalf("changes = %s\nwant %s", got, want)
	}
}
