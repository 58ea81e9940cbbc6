package authority

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/logic"
	"pgregory.net/rapid"
)

// drawFlatPolicy draws a random flat gate policy over a small vocabulary.
func drawFlatPolicy(rt *rapid.T) string {
	var b strings.Builder
	b.WriteString(".decl trusted(d: symbol)\ntrusted(\"dest:d0\").\ntrusted(\"dest:d2\").\n")
	// Derived helper relations, each drawn with some of its rules or none:
	// big over the ticket's facts, calm over big's absence (a helper read
	// by another), eff with several rows a rule may join in any order,
	// vetted over a fact-only helper.
	b.WriteString(".decl big(t: symbol)\n.decl calm(t: symbol)\n.decl eff(e: symbol)\n.decl vetted(d: symbol)\n")
	for _, r := range []string{
		fmt.Sprintf("big(t) :- param_num(t, \"amount\", n), n > %d.", rapid.IntRange(0, 2000).Draw(rt, "bigAt")),
		"big(t) :- side_effect(t, \"IRREVERSIBLE\").",
		"calm(t) :- ticket(t), !big(t).",
		"calm(t) :- param_sym(t, \"tone\", \"warm\").",
		"eff(e) :- side_effect(_, e), e != \"READ\".",
		"eff(\"NONE\") :- ticket(t), !big(t).",
		"vetted(d) :- destination(t, d), trusted(d).",
		"vetted(d) :- eff(\"EXTERNAL\"), destination(_, d), calm(t).",
	} {
		if rapid.Bool().Draw(rt, "helperRule") {
			fmt.Fprintf(&b, "%s\n", r)
		}
	}
	n := rapid.IntRange(1, 12).Draw(rt, "rules")
	for i := 0; i < n; i++ {
		var body []string
		bindsN, bindsD := false, false
		for j := rapid.IntRange(1, 3).Draw(rt, "lits"); j > 0; j-- {
			switch rapid.IntRange(0, 14).Draw(rt, "lit") {
			case 13:
				// A variable repeated within one literal: only a row equal
				// at both positions matches (a parameter named as its value).
				body = append(body, "param_sym(t, k, k)")
			case 14:
				body = append(body, rapid.SampledFrom([]string{"param_sym(x, x, _)", "param_sym(x, x, x)", "param_sym(t, x, x), side_effect(t, x)"}).Draw(rt, "repeat"))
			case 10:
				body = append(body, rapid.SampledFrom([]string{"big(t)", "calm(t)"}).Draw(rt, "helperLit"))
			case 11:
				body = append(body, "eff(e)")
			case 12:
				body = append(body, "destination(t, d)", "vetted(d)")
				bindsD = true
			case 0:
				body = append(body, fmt.Sprintf("action(t, \"act.a%d\")", rapid.IntRange(0, 2).Draw(rt, "a")))
			case 1:
				body = append(body, "destination(t, d)")
				bindsD = true
			case 2:
				body = append(body, fmt.Sprintf("side_effect(t, %q)", rapid.SampledFrom([]string{"WRITE", "EXTERNAL", "NONE", "READ"}).Draw(rt, "se")))
			case 3:
				body = append(body, "param_num(t, \"amount\", n)")
				bindsN = true
			case 4:
				body = append(body, "capability(t, _)")
			case 5:
				body = append(body, "ticket(t)")
			case 6:
				body = append(body, "side_effect(t, e)")
			case 8:
				// A guard met (or not) by a helper relation's row.
				body = append(body, fmt.Sprintf("trusted(%q)", rapid.SampledFrom([]string{"dest:d0", "dest:d1"}).Draw(rt, "tc")))
			case 9:
				body = append(body, fmt.Sprintf("param_sym(t, \"tone\", %q)", rapid.SampledFrom([]string{"blunt", "warm"}).Draw(rt, "tone")))
			default:
				body = append(body, "action(t, _)")
			}
		}
		if !strings.Contains(strings.Join(body, ","), "(t") {
			body = append(body, "ticket(t)")
		}
		if bindsN && rapid.Bool().Draw(rt, "cmpN") {
			body = append(body, fmt.Sprintf("n %s %d", rapid.SampledFrom([]string{"<", "<=", ">", ">=", "=", "!="}).Draw(rt, "op"), rapid.IntRange(0, 2000).Draw(rt, "k")))
		}
		if bindsD && rapid.Bool().Draw(rt, "trust") {
			if rapid.Bool().Draw(rt, "negTrust") {
				body = append(body, "!trusted(d)")
			} else {
				body = append(body, "trusted(d)")
			}
		}
		if bindsD && rapid.Bool().Draw(rt, "cmpD") {
			body = append(body, "d != \"dest:d1\"")
		}
		if rapid.Bool().Draw(rt, "neg") {
			body = append(body, rapid.SampledFrom([]string{"!side_effect(t, \"IRREVERSIBLE\")", "!capability(t, _)", "!missing(t, _)", "!param_sym(t, \"tone\", \"blunt\")",
				"!big(t)", "!calm(t)", "!eff(\"WRITE\")", "!vetted(_)"}).Draw(rt, "negLit"))
		}
		var head string
		switch rapid.IntRange(0, 3).Draw(rt, "head") {
		case 0, 1:
			head = fmt.Sprintf("decision(%q, %q, \"r%d\")", rapid.SampledFrom(Gates).Draw(rt, "gate"), rapid.SampledFrom([]string{"ALLOW", "SHAPE", "ASK_FIRST", "REFUSE", "ESCALATE"}).Draw(rt, "verdict"), i)
		case 2:
			head = fmt.Sprintf("assess(%q, \"r%d\")", rapid.SampledFrom([]string{RiskReadOnly, RiskReversible, RiskHighRiskExternal}).Draw(rt, "risk"), i)
		default:
			if bindsN {
				head = fmt.Sprintf("shape_max(\"G2\", \"r%d\", \"amount\", n)", i)
			} else {
				head = fmt.Sprintf("option(\"G4\", \"r%d\", \"path%d\")", i, rapid.IntRange(0, 2).Draw(rt, "path"))
			}
		}
		fmt.Fprintf(&b, "%s :- %s.\n", head, strings.Join(body, ", "))
	}
	return b.String()
}

// The direct evaluator for flat policies agrees with the logic engine on
// every output and every provenance, for random policies and tickets.
func TestFlatEngineAgreesWithLogic(t *testing.T) {
	flat := 0
	rapid.Check(t, func(rt *rapid.T) {
		src := drawFlatPolicy(rt)
		lim := rapid.SampledFrom([]logic.Limits{{}, {MaxFirings: 100_000, MaxDepth: 1000, MaxTuples: 100_000}}).Draw(rt, "limits")
		p, err := CompilePolicy("p/1", "rand.dl", []byte(src), lim)
		if err != nil {
			rt.Fatalf("%v\n%s", err, src)
		}
		if !p.Flat {
			rt.Fatalf("policy not recognised as flat:\n%s", src)
		}
		flat++
		effects := rapid.SliceOfNDistinct(rapid.SampledFrom([]SideEffect{SideEffectRead, SideEffectWrite, SideEffectExternal, SideEffectIrreversible}), 1, 3, rapid.ID[SideEffect]).Draw(rt, "effects")
		if rapid.Bool().Draw(rt, "none") {
			effects = []SideEffect{SideEffectNone}
		}
		params := map[string]any{"amount": rapid.Int64Range(0, 2000).Draw(rt, "amount")}
		if rapid.Bool().Draw(rt, "toned") {
			params["tone"] = rapid.SampledFrom([]string{"blunt", "warm"}).Draw(rt, "tone")
		}
		if rapid.Bool().Draw(rt, "echoed") {
			// A parameter whose value is its name, and one whose value is
			// a side effect's: rows a repeated variable can match.
			params["echo"] = rapid.SampledFrom([]string{"echo", "other"}).Draw(rt, "echo")
			params["WRITE"] = rapid.SampledFrom([]string{"WRITE", "READ"}).Draw(rt, "write")
		}
		spec := TicketSpec{TicketID: "ticket:r", Action: fmt.Sprintf("act.a%d", rapid.IntRange(0, 3).Draw(rt, "action")),
			Destination: fmt.Sprintf("dest:d%d", rapid.IntRange(0, 3).Draw(rt, "dest")), Scope: "scope:s",
			Parameters: params, SideEffects: effects, AssessedRisk: RiskReversible}
		if rapid.Bool().Draw(rt, "incomplete") {
			spec.RequiredParameters = []string{"memo"}
		}
		tk, err := DraftTicket(spec)
		if err != nil {
			rt.Fatal(err)
		}
		var extra []logic.Fact
		for i := rapid.IntRange(0, 2).Draw(rt, "caps"); i > 0; i-- {
			extra = append(extra, CapabilityFact(tk.TicketID, fmt.Sprintf("capability:c%d", i)))
		}
		facts := TicketFacts(tk, extra...)
		got, err1 := p.engine.derive(facts)
		want, err2 := p.oracle.derive(facts)
		if (err1 == nil) != (err2 == nil) {
			rt.Fatalf("errors differ: flat %v, engine %v\n%s", err1, err2, src)
		}
		if !reflect.DeepEqual(normalizeDerived(got), normalizeDerived(want)) {
			rt.Fatalf("flat and engine disagree\npolicy:\n%s\nflat:   %+v\nengine: %+v", src, got, want)
		}
	})
	if flat == 0 {
		t.Fatal("no flat policy was exercised")
	}
}

func normalizeDerived(d derived) derived {
	if d.caps == nil {
		d.caps = map[[2]string][]capSpec{}
	}
	if d.options == nil {
		d.options = map[[2]string][]string{}
	}
	for k, v := range d.caps {
		if len(v) == 0 {
			delete(d.caps, k)
		}
	}
	return d
}

func TestNonFlatPoliciesUseTheEngine(t *testing.T) {
	for name, src := range map[string]string{
		"arithmetic":         `decision("G2", "ALLOW", "r") :- param_num(t, "amount", n), n * 2 > 10.`,
		"recursive helper":   ".decl near(d: symbol)\nnear(d) :- destination(_, d).\nnear(e) :- near(d), param_sym(_, d, e).\ndecision(\"G2\", \"ALLOW\", \"r\") :- near(_).",
		"stated and derived": ".decl big(t: symbol)\nbig(\"ticket:x\").\nbig(t) :- param_num(t, \"amount\", n), n > 10.\ndecision(\"G2\", \"ALLOW\", \"r\") :- big(t).",
		"explicit negation":  ".decl bad(t: symbol)\n-bad(t) :- ticket(t).\ndecision(\"G2\", \"ALLOW\", \"r\") :- -bad(t).",
	} {
		p, err := CompilePolicy("p/1", name+".dl", []byte(src), logic.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Flat {
			t.Errorf("%s: treated as flat", name)
		}
	}
	if _, err := CompilePolicy("p/1", "x.dl", []byte(`capability(t, "forged") :- ticket(t).`), logic.Limits{}); err == nil {
		t.Error("a policy asserted a capability fact")
	}
}

// More tuples of one relation than flatScanMax, some derived by several
// rules, so the evaluator's duplicate check switches from comparing tuples
// to indexing them by key; outputs and each tuple's first derivation must
// still be the engine's.
func TestFlatEngineManyTuplesAgreeWithLogic(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3*flatScanMax; i++ {
		// Rule i derives tuple i/2: every tuple twice, from two rules at
		// different positions; the first in source order is its provenance.
		fmt.Fprintf(&b, "decision(\"G2\", \"ALLOW\", \"r%d\") :- action(t, \"act.a0\"), side_effect(t, e).\n", i/2)
		fmt.Fprintf(&b, "option(\"G4\", \"o%d\", \"path\") :- ticket(t).\n", i/3)
	}
	p, err := CompilePolicy("p/1", "many.dl", []byte(b.String()), logic.Limits{MaxFirings: 10_000, MaxTuples: 10_000})
	if err != nil || !p.Flat {
		t.Fatalf("policy: %v, flat %v", err, p != nil && p.Flat)
	}
	tk, err := DraftTicket(TicketSpec{TicketID: "ticket:m", Action: "act.a0", Destination: "dest:d0", Scope: "scope:s",
		SideEffects: []SideEffect{SideEffectWrite, SideEffectExternal}, AssessedRisk: RiskReversible})
	if err != nil {
		t.Fatal(err)
	}
	facts := TicketFacts(tk)
	got, err1 := p.engine.derive(facts)
	want, err2 := p.oracle.derive(facts)
	if err1 != nil || err2 != nil {
		t.Fatalf("flat %v, engine %v", err1, err2)
	}
	if len(got.decisions) != 3*flatScanMax/2 {
		t.Fatalf("%d decisions, want %d", len(got.decisions), 3*flatScanMax/2)
	}
	if !reflect.DeepEqual(normalizeDerived(got), normalizeDerived(want)) {
		t.Fatalf("flat and engine disagree\nflat:   %+v\nengine: %+v", got, want)
	}
}

// TestFlatFactStringsReuseRows holds a run that renders each premise row
// once (flatRun.factStrings) to the engine: rules sharing literals over
// one ticket, rules reading different rows of one relation (two
// capabilities) and the same row again, a derived
// helper row read by two rules, and more distinct premise rows than the
// run remembers, so that remembered rows are also evicted. Every reason's
// fact strings must be the engine's.
func TestFlatFactStringsReuseRows(t *testing.T) {
	src := `.decl ok(t: symbol)
ok(t) :- action(t, "act.a1").
decision("G2", "ALLOW", "r1") :- action(t, "act.a1"), capability(t, c).
decision("G2", "ALLOW", "r2") :- action(t, "act.a1").
assess("reversible", "r3") :- action(t, "act.a1"), destination(t, d).
decision("G3", "ASK_FIRST", "r4") :- destination(t, d), capability(t, c).
decision("G4", "SHAPE", "r5") :- param_num(t, "amount", n), capability(t, c), action(t, a).
decision("G2", "ALLOW", "r6") :- ok(t), capability(t, c), param_num(t, "amount", n).
decision("H1", "REFUSE", "r7") :- ok(t), destination(t, "dest:d2"), param_num(t, "amount", n), n > 5.
decision("G3", "ASK_FIRST", "r8") :- capability(t, "capability:c1").
decision("G3", "ASK_FIRST", "r9") :- capability(t, "capability:c2"), action(t, "act.a1").
decision("G4", "SHAPE", "r10") :- capability(t, "capability:c1"), param_num(t, "amount", 7).
`
	p, err := CompilePolicy("p/1", "rows.dl", []byte(src), logic.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Flat {
		t.Fatal("policy not recognised as flat")
	}
	tk, err := DraftTicket(TicketSpec{TicketID: "ticket:r", Action: "act.a1", Destination: "dest:d2", Scope: "scope:s",
		Parameters: map[string]any{"amount": int64(7)}, SideEffects: []SideEffect{SideEffectWrite}, AssessedRisk: RiskReversible})
	if err != nil {
		t.Fatal(err)
	}
	facts := TicketFacts(tk, CapabilityFact(tk.TicketID, "capability:c1"), CapabilityFact(tk.TicketID, "capability:c2"))
	got, err1 := p.engine.derive(facts)
	want, err2 := p.oracle.derive(facts)
	if err1 != nil || err2 != nil {
		t.Fatalf("flat %v, engine %v", err1, err2)
	}
	if !reflect.DeepEqual(normalizeDerived(got), normalizeDerived(want)) {
		t.Fatalf("flat and engine disagree\nflat:   %+v\nengine: %+v", got, want)
	}
	n := 0
	for _, d := range got.decisions {
		n += len(d.why.Facts)
	}
	if n < 10 {
		t.Fatalf("only %d premises rendered; the test no longer reuses rows", n)
	}
}

// TestRelOfIsRelID holds relOf to the relID map it stands in for, with
// few relations (compared one by one) and many (looked up in the map),
// for names the engine has and names it has not.
func TestRelOfIsRelID(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.StringMatching(`[a-e_]{0,4}`)
		var e flatEngine
		for _, n := range rapid.SliceOfN(name, 0, 20).Draw(rt, "rels") {
			e.rel(n)
		}
		for _, n := range rapid.SliceOfN(name, 1, 20).Draw(rt, "asked") {
			id, ok := e.relOf(n)
			wantID, wantOK := e.relID[n]
			if ok != wantOK || (ok && id != wantID) {
				rt.Fatalf("relOf(%q) = %d, %v; relID has %d, %v (%d relations)", n, id, ok, wantID, wantOK, len(e.relNames))
			}
		}
	})
}

// TestFlatOutputSlots holds the output slot constants to flatOutputs.
func TestFlatOutputSlots(t *testing.T) {
	for slot, name := range map[int]string{outDecision: "decision", outShapeMax: "shape_max", outShapeScope: "shape_scope", outOption: "option", outAssess: "assess"} {
		if flatOutputs[slot] != name {
			t.Errorf("slot %d is %q in flatOutputs, %q by its constant", slot, flatOutputs[slot], name)
		}
	}
}
