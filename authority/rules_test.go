package authority

import (
	"slices"
	"testing"

	"flrh.dev/flrh/logic"
)

// A policy lists the rules that write an output, by the rule id their
// head writes, in source order: not the rules of its own relations, nor
// explicit negative evidence; a rule id written from a variable is listed
// with no id.
func TestPolicyRules(t *testing.T) {
	src := []byte(`.decl big(t: symbol)
big(t) :- param_num(t, "amount", n), n > 100.
decision("G2", "ALLOW", "g2.pay") :- action(t, "pay"), capability(t, _).
assess("high_risk_external", "g2.big") :- big(t).
option("G3", "g3.ask", "path:wait") :- big(t).
decision("G3", "ASK_FIRST", "g3.ask") :- big(t).
shape_max("G2", "g2.pay", "amount", 500) :- action(t, "pay").
decision("G4", "ESCALATE", r) :- param_sym(t, "rule", r).
.decl approver(name: symbol, rule: symbol)
approver("finance-lead", "g2.approver") :- big(t).
`)
	p, err := CompilePolicy("policy/1", "gates.dl", src, logic.Limits{MaxFirings: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var got []RuleRef
	for _, r := range p.Rules() {
		got = append(got, RuleRef{ID: r.ID, Relation: r.Relation, Pos: logic.Pos{File: r.Pos.File, Line: r.Pos.Line}})
	}
	at := func(line int) logic.Pos { return logic.Pos{File: "gates.dl", Line: line} }
	want := []RuleRef{{"g2.pay", "decision", at(3)}, {"g2.big", "assess", at(4)}, {"g3.ask", "option", at(5)}, {"g3.ask", "decision", at(6)},
		{"g2.pay", "shape_max", at(7)}, {"", "decision", at(8)}, {"g2.approver", "approver", at(10)}}
	if !slices.Equal(got, want) {
		t.Fatalf("rules\n%v\nwant\n%v", got, want)
	}
	// The list is the caller's.
	p.Rules()[0].ID = "changed"
	if p.Rules()[0].ID != "g2.pay" {
		t.Fatal("Rules handed out the policy's own list")
	}
}
