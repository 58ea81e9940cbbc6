package workflow

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

func explainOne(t *testing.T, w *Workflow, in []byte) (Result, []Why) {
	t.Helper()
	st, err := w.Init("run-why")
	if err != nil {
		t.Fatal(err)
	}
	r, whys, err := w.Explain(st, Input{Seq: 1, Kind: KindInput, Body: in, Digest: cjson.Digest(in), Actor: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return r, whys
}

func findLiteral(y Why, prefix string) *EligibilityWhy {
	for i := range y.Eligibility {
		if strings.HasPrefix(y.Eligibility[i].Literal, prefix) {
			return &y.Eligibility[i]
		}
	}
	return nil
}

// A blocked payee's refund is rejected as ineligible, and the explanation
// proves why: blocked("mallory") holds by the rule over the block list.
func TestExplainIneligibleRefusal(t *testing.T) {
	w := compileExample(t, "refund-agent")
	_, whys := explainOne(t, w, refundInput("r-1", 40, "mallory", "damaged"))
	if len(whys) != 1 {
		t.Fatalf("whys %+v", whys)
	}
	y := whys[0]
	if y.Outcome != "REJECTED" || y.Rejection == nil || y.Rejection.Code != "PROPOSAL_INELIGIBLE" || y.Verdict != "ineligible" || y.Seq != 1 {
		t.Fatalf("why %+v", y)
	}
	lit := findLiteral(y, `-blocked("mallory")`)
	if lit == nil || lit.Explanation == nil || lit.Explanation.State != "TRUE_ONLY" || lit.Explanation.Positive == nil {
		t.Fatalf("eligibility %+v", y.Eligibility)
	}
	p := lit.Explanation.Positive
	if !strings.Contains(p.Rule, "blocked_payee(p)") || len(p.Premises) != 1 || p.Premises[0].Fact != `blocked_payee("mallory")` {
		t.Fatalf("proof %+v", p)
	}
}

// An allowed refund's explanation shows the gate rule that allowed it and
// the absence witness behind "the payee is not blocked".
func TestExplainAllowedAndHeld(t *testing.T) {
	w := compileExample(t, "refund-agent")
	_, whys := explainOne(t, w, refundInput("r-2", 900, "bob", "late"))
	if len(whys) != 1 || whys[0].Outcome != "APPROVAL_REQUEST" || whys[0].Verdict != "eligible" {
		t.Fatalf("whys %+v", whys)
	}
	y := whys[0]
	var g2 *GateWhy
	for i := range y.Gates {
		if y.Gates[i].Gate == "G2" {
			g2 = &y.Gates[i]
		}
	}
	if g2 == nil || g2.Decision != "ALLOW" || len(g2.Reasons) == 0 || g2.Reasons[0].Rule != "g2.refunds" || !strings.Contains(g2.Reasons[0].Detail, "gates.dl:") {
		t.Fatalf("G2 %+v", g2)
	}
	lit := findLiteral(y, `-blocked("bob")`)
	if lit == nil || lit.Explanation == nil || lit.Explanation.State != "FALSE_ONLY" || lit.Explanation.Negative == nil ||
		len(lit.Explanation.Negative.Absent) == 0 || !strings.Contains(lit.Explanation.Negative.Absent[0], "blocked_payee") {
		t.Fatalf("eligibility %+v", y.Eligibility)
	}
	if y.Resolution.Decision != "ALLOW" || y.TicketID == "" {
		t.Fatalf("resolution %+v", y.Resolution)
	}
}

// Explain decides exactly as Decide does: same state, effects, trace and
// refusal, for any refund input.
func TestExplainDecidesAsDecide(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, err := w.Init("run-why")
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		amount := rapid.Int64Range(1, 2000).Draw(rt, "amount")
		payee := rapid.SampledFrom([]string{"alice", "bob", "mallory"}).Draw(rt, "payee")
		reason := rapid.SampledFrom([]string{"damaged", "goodwill", "late"}).Draw(rt, "reason")
		in := refundInput("r-9", amount, payee, reason)
		input := Input{Seq: 1, Kind: KindInput, Body: in, Digest: cjson.Digest(in), Actor: "agent"}
		a, errA := w.Decide(st, input)
		b, whys, errB := w.Explain(st, input)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			rt.Fatalf("Decide %s (%v)\nExplain %s (%v)", ja, errA, jb, errB)
		}
		// One proposal, decided once, or twice when the controller chose
		// among the options offered the first time.
		if a.Refusal == "" && (len(whys) < 1 || len(whys) > 2) {
			rt.Fatalf("%d explanations for one proposal", len(whys))
		}
		for i, y := range whys {
			if y.ProposalID != whys[0].ProposalID || (i > 0 && (len(y.Choices) != 1 || whys[0].Outcome != "OPTIONS")) {
				rt.Fatalf("explanation %d: %+v", i, y)
			}
		}
	})
}

func TestWhyFact(t *testing.T) {
	w := compileExample(t, "refund-agent")
	r, _ := explainOne(t, w, refundInput("r-3", 40, "alice", "damaged"))
	e, err := w.WhyFact(r.State, `requested("r-3")`)
	if err != nil || e.State != "TRUE_ONLY" || e.Positive == nil || len(e.Positive.Premises) != 1 {
		t.Fatalf("why requested: %+v %v", e, err)
	}
	if _, err := w.WhyFact(r.State, `nosuch("x")`); err == nil {
		t.Fatal("an undeclared relation was explained")
	}
}

// A precondition decided by an aggregate is explained with the value the
// aggregate took and the facts it ranged over.
func TestExplainNamesAnAggregate(t *testing.T) {
	files := readBundle(t, filepath.Join("..", "examples", "refund-agent"))
	files["rules.dl"] = append(files["rules.dl"], []byte(`
.decl over_cap(payee: symbol)
over_cap(p) :- refund_requested(_, _, p), sum a : refund_requested(_, a, p) > 150.
-over_cap(p) :- refund_requested(_, _, p), sum a : refund_requested(_, a, p) <= 150.
`)...)
	replace := func(file, old, new string) {
		if !strings.Contains(string(files[file]), old) {
			t.Fatalf("%s no longer holds %q", file, old)
		}
		files[file] = []byte(strings.Replace(string(files[file]), old, new, 1))
	}
	replace("workflow.json", `"payee:not-blocked": {`, `"payee:under-cap": {"relation": "over_cap", "args": ["$action.payee"], "polarity": "negative"}, "payee:not-blocked": {`)
	replace("domain.json", `"payee:not-blocked"]`, `"payee:not-blocked", "payee:under-cap"]`)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	_, whys := explainOne(t, w, refundInput("r-1", 400, "bob", "damaged"))
	if len(whys) != 1 || whys[0].Outcome != "REJECTED" || whys[0].Verdict != "ineligible" {
		t.Fatalf("whys %+v", whys)
	}
	lit := findLiteral(whys[0], `-over_cap("bob")`)
	if lit == nil || lit.Explanation == nil || lit.Explanation.State != "TRUE_ONLY" || lit.Explanation.Positive == nil {
		t.Fatalf("eligibility %+v", whys[0].Eligibility)
	}
	p := lit.Explanation.Positive
	want := `sum a : { refund_requested(_, a, p) } = 400 over refund_requested("r-1", 400, "bob")`
	if len(p.Aggregates) != 1 || p.Aggregates[0] != want {
		t.Fatalf("proof's aggregates %q, want %q", p.Aggregates, want)
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"aggregates":[`) {
		t.Fatalf("proof JSON %s (%v)", b, err)
	}
}
