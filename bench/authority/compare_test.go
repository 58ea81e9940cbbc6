package authority

// The side-by-side: cedar-go and OPA evaluate a policy equivalent to
// policy100 for the same request, in the same process and the same run as
// flrh's gates alone (Policy.Evaluate) and flrh's whole decision
// (Authorize for a batch of one).
//
// "Equivalent" means the same 101 rules over the same request attributes:
// 70 allow rules keyed by action (69 with an amount bound, one for
// artifact.publish), 10 hard limits (amount above a bound for an action),
// 10 destination blocks, 10 tone rules and one risk assessment. Cedar has
// only permit and forbid, so the three non-allow gates are forbid policies
// carrying their gate and decision as annotations; OPA collects the
// decisions as a set of objects, as our gates do. Neither engine builds a
// ticket, digests anything, records provenance beyond the matching rule
// ids, or steps a deliberation machine: the fair comparison for them is
// Policy.Evaluate, and Authorize shows what the rest of a decision costs.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/open-policy-agent/opa/v1/rego"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/logic"
)

// cedarPolicy100 is policy100 in Cedar.
func cedarPolicy100() string {
	var b strings.Builder
	for i := 0; i < 69; i++ {
		fmt.Fprintf(&b, "@id(\"g2.r%d\") @gate(\"G2\") @decision(\"ALLOW\")\npermit (principal, action == Action::\"svc%d.call\", resource) when { context.capability && context.amount <= %d };\n", i, i, 100*(i+1))
	}
	b.WriteString("@id(\"g2.publish\") @gate(\"G2\") @decision(\"ALLOW\")\npermit (principal, action == Action::\"artifact.publish\", resource) when { context.capability };\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "@id(\"h1.r%d\") @gate(\"H1\") @decision(\"REFUSE\")\nforbid (principal, action == Action::\"svc%d.call\", resource) when { context.amount > %d };\n", i, i, 100000+i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "@id(\"g3.r%d\") @gate(\"G3\") @decision(\"ASK_FIRST\")\nforbid (principal, action, resource == Destination::\"dest:blocked%d\");\n", i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "@id(\"g4.r%d\") @gate(\"G4\") @decision(\"SHAPE\")\nforbid (principal, action, resource) when { context has tone && context.tone == \"t%d\" };\n", i, i)
	}
	b.WriteString("@id(\"g2.publish-reversible\") @assess(\"reversible\")\npermit (principal, action == Action::\"artifact.publish\", resource);\n")
	return b.String()
}

// regoPolicy100 is policy100 in Rego v1.
func regoPolicy100() string {
	var b strings.Builder
	b.WriteString("package gates\n\n")
	for i := 0; i < 69; i++ {
		fmt.Fprintf(&b, "decisions contains {\"gate\": \"G2\", \"decision\": \"ALLOW\", \"rule\": \"g2.r%d\"} if {\n\tinput.action == \"svc%d.call\"\n\tinput.capability\n\tinput.amount <= %d\n}\n", i, i, 100*(i+1))
	}
	b.WriteString("decisions contains {\"gate\": \"G2\", \"decision\": \"ALLOW\", \"rule\": \"g2.publish\"} if {\n\tinput.action == \"artifact.publish\"\n\tinput.capability\n}\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decisions contains {\"gate\": \"H1\", \"decision\": \"REFUSE\", \"rule\": \"h1.r%d\"} if {\n\tinput.amount > %d\n\tinput.action == \"svc%d.call\"\n}\n", i, 100000+i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decisions contains {\"gate\": \"G3\", \"decision\": \"ASK_FIRST\", \"rule\": \"g3.r%d\"} if {\n\tinput.destination == \"dest:blocked%d\"\n}\n", i, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "decisions contains {\"gate\": \"G4\", \"decision\": \"SHAPE\", \"rule\": \"g4.r%d\"} if {\n\tinput.tone == \"t%d\"\n}\n", i, i)
	}
	b.WriteString("decisions contains {\"assess\": \"reversible\", \"rule\": \"g2.publish-reversible\"} if {\n\tinput.action == \"artifact.publish\"\n}\n")
	return b.String()
}

// The request all three engines decide: the benchmark proposal's action.
const (
	reqAction      = "artifact.publish"
	reqDestination = "dest:registry"
	reqAmount      = 5
)

func cedarSetup(tb testing.TB) (*cedar.PolicySet, cedar.EntityMap, cedar.Request) {
	src := cedarPolicy100()
	if n := strings.Count(src, "@id("); n != 101 {
		tb.Fatalf("cedar policy has %d rules", n)
	}
	ps, err := cedar.NewPolicySetFromBytes("bench.cedar", []byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	req := cedar.Request{
		Principal: cedar.NewEntityUID("Agent", "run:1"),
		Action:    cedar.NewEntityUID("Action", reqAction),
		Resource:  cedar.NewEntityUID("Destination", reqDestination),
		Context: cedar.NewRecord(cedar.RecordMap{
			"capability": cedar.True,
			"amount":     cedar.Long(reqAmount),
		}),
	}
	return ps, cedar.EntityMap{}, req
}

func regoSetup(tb testing.TB) (rego.PreparedEvalQuery, map[string]any) {
	src := regoPolicy100()
	if n := strings.Count(src, "decisions contains"); n != 101 {
		tb.Fatalf("rego policy has %d rules", n)
	}
	q, err := rego.New(rego.Query("data.gates.decisions"), rego.Module("bench.rego", src)).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	in := map[string]any{"action": reqAction, "destination": reqDestination, "capability": true, "amount": reqAmount}
	return q, in
}

func gatesSetup(tb testing.TB) (*authority.Policy, authority.Ticket, logic.Fact) {
	p, err := authority.CompilePolicy("policy/1", "bench.dl", []byte(policy100()), logic.Limits{MaxFirings: 10000})
	if err != nil {
		tb.Fatal(err)
	}
	tk, err := authority.DraftTicket(authority.TicketSpec{
		TicketID: "ticket:1", Action: reqAction, Destination: reqDestination, Scope: "scope:team",
		Parameters:   map[string]any{"amount": int64(reqAmount)},
		SideEffects:  []authority.SideEffect{authority.SideEffectWrite},
		AssessedRisk: authority.RiskHighRiskExternal,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p, tk, authority.CapabilityFact(tk.TicketID, "capability:publish")
}

// TestEnginesAgree checks that the three engines reach the same verdict on
// the benchmarked request (allowed by g2.publish, nothing forbidding, and
// assessed reversible), so the timings compare like with like.
func TestEnginesAgree(t *testing.T) {
	ps, ents, req := cedarSetup(t)
	dec, diag := cedar.Authorize(ps, ents, req)
	if dec != cedar.Allow || len(diag.Errors) != 0 {
		t.Fatalf("cedar: %v %+v", dec, diag)
	}
	var cedarRules []string
	for _, r := range diag.Reasons {
		// cedar-go names parsed policies by position; the rule's own
		// name is its @id annotation.
		cedarRules = append(cedarRules, string(ps.Get(r.PolicyID).Annotations()["id"]))
	}
	if strings.Join(cedarRules, ",") != "g2.publish,g2.publish-reversible" && strings.Join(cedarRules, ",") != "g2.publish-reversible,g2.publish" {
		t.Fatalf("cedar reasons %v", cedarRules)
	}

	q, in := regoSetup(t)
	rs, err := q.Eval(context.Background(), rego.EvalInput(in))
	if err != nil || len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("rego: %v %+v", err, rs)
	}
	set, _ := rs[0].Expressions[0].Value.([]any)
	var regoRules []string
	for _, d := range set {
		regoRules = append(regoRules, fmt.Sprint(d.(map[string]any)["rule"]))
	}
	if len(regoRules) != 2 || !strings.Contains(strings.Join(regoRules, ","), "g2.publish-reversible") || !strings.Contains(","+strings.Join(regoRules, ",")+",", ",g2.publish,") {
		t.Fatalf("rego decisions %v", regoRules)
	}

	p, tk, fact := gatesSetup(t)
	ev := p.Evaluate(tk, fact)
	var allow []string
	for _, s := range ev.Signals {
		if s.Decision == authority.Allow {
			allow = append(allow, s.Reason.Rule)
		} else {
			t.Errorf("flrh signal %+v is not ALLOW", s)
		}
	}
	if len(allow) != 1 || allow[0] != "g2.publish" || ev.AssessedRisk != authority.RiskReversible {
		t.Fatalf("flrh gates: %v risk %q", allow, ev.AssessedRisk)
	}
}

func BenchmarkCedarAuthorize100Rules(b *testing.B) {
	ps, ents, req := cedarSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := cedar.Authorize(ps, ents, req); d != cedar.Allow {
			b.Fatal("not allowed")
		}
	}
}

func BenchmarkOPAEval100Rules(b *testing.B) {
	q, in := regoSetup(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rs, err := q.Eval(ctx, rego.EvalInput(in))
		if err != nil || len(rs) != 1 {
			b.Fatal(err)
		}
	}
}

func BenchmarkGateEvaluate100Rules(b *testing.B) {
	p, tk, fact := gatesSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if ev := p.Evaluate(tk, fact); len(ev.Signals) != 1 {
			b.Fatal("unexpected signals")
		}
	}
}
