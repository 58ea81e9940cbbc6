package authority

import (
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/logic"
)

const approverDecl = ".decl approver(name: symbol, rule: symbol)\n"

// An approver rule's head names who approves as a string the workflow can
// check before any run; anything else is refused when the policy
// compiles, with the position.
func TestApproverHeads(t *testing.T) {
	for _, c := range []struct {
		name, rules string
		names       []string
		err         string
	}{
		{"none", "", nil, ""},
		{"declared, no rules", approverDecl, nil, ""},
		{"two names, one twice", approverDecl + `approver("sre-leads", "a") :- ticket(t).` + "\n" + `approver("finance", "b") :- ticket(t).` + "\n" + `approver("sre-leads", "c") :- mode(_).`, []string{"finance", "sre-leads"}, ""},
		{"a variable name", approverDecl + `approver(n, "a") :- param_sym(t, "who", n).`, nil, "q.dl:2:1: approver's name must be a string written in the rule's head, not n"},
		{"not an id", approverDecl + `approver("two words", "a") :- ticket(t).`, nil, `approver's name "two words" is not an id`},
		{"a variable rule id", approverDecl + `approver("x", r) :- param_sym(t, "r", r).`, nil, "approver's rule id must be a string written in the rule's head, not r"},
		{"derived false", approverDecl + `-approver("x", "a") :- ticket(t).`, nil, "approver cannot be derived false"},
		{"another schema", ".decl approver(n: symbol)\napprover(\"x\") :- ticket(t).", nil, "relation approver must be declared .decl approver(name: symbol, rule: symbol)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := CompilePolicy("authority/1", "q.dl", []byte(c.rules+"\n"+fixturePolicy), logic.Limits{MaxFirings: 1000})
			if c.err != "" {
				if _, typed := err.(*PolicyError); !typed || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want a *PolicyError containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Approvers(); !slices.Equal(got, c.names) {
				t.Fatalf("Approvers %v, want %v", got, c.names)
			}
		})
	}
}

// The gates name who approves each action: the request binds that
// approver (the approval policy's when no rule names one), a grant by
// them authorizes the intent, a request naming anyone else is audited and
// authorizes nothing, and rules naming two approvers hold the action.
func TestApprovalRequestNamesTheGatesApprover(t *testing.T) {
	p, err := CompilePolicy("authority/1", "q.dl", []byte(fixturePolicy+approverDecl+`
approver("actor:release-leads", "g2.release") :- action(t, "artifact.publish"), param_sym(t, "audience", "public").
approver("actor:release-leads", "g2.release-big") :- param_sym(t, "artifact", "big.tgz").
approver("actor:security", "g2.signed") :- param_sym(t, "artifact", "unsigned.tgz").
`), logic.Limits{MaxFirings: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Flat {
		t.Fatal("the policy is not evaluated by the direct evaluator")
	}
	for _, c := range []struct {
		name, artifact, audience string
		kind, approver, rule     string
	}{
		{"named by one rule", "pkg.tgz", "public", OutcomeApprovalRequest, "actor:release-leads", "g2.release"},
		{"named by two rules, the first rule's reason", "big.tgz", "public", OutcomeApprovalRequest, "actor:release-leads", "g2.release"},
		{"two approvers: held", "unsigned.tgz", "public", OutcomeHeld, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, _ := fixtureInput(t, c.audience)
			in.Actions[0].Parameters = map[string]any{"artifact": c.artifact, "audience": c.audience}
			in.Policy.Policy = p
			d, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			o := d.Outcomes[0]
			if o.Kind != c.kind {
				t.Fatalf("outcome %s (%s), want %s", o.Kind, o.Held, c.kind)
			}
			if c.kind == OutcomeHeld {
				if o.Held != "held: the gate policy names more than one approver for this action: actor:release-leads, actor:security" || o.ApprovalRequest != nil {
					t.Fatalf("held %q, request %+v", o.Held, o.ApprovalRequest)
				}
				return
			}
			q := *o.ApprovalRequest
			if q.Actor != c.approver || o.ApproverReason == nil || o.ApproverReason.Rule != c.rule || !strings.Contains(o.ApproverReason.Detail, "q.dl:") {
				t.Fatalf("request names %q, reason %+v; want %s by %s", q.Actor, o.ApproverReason, c.approver, c.rule)
			}
			// The named approver's grant authorizes the intent.
			in.Approvals = []PresentedApproval{{Request: q, Approval: Grant(q, 110), Approver: Approver{ID: c.approver, Kind: "human", Role: ApproverRole, Scopes: []string{q.ApproverScope}}}}
			in.Now = 120
			if d, err := Authorize(in); err != nil || d.Outcomes[0].Kind != OutcomeIntent || d.Outcomes[0].Approval == nil {
				t.Fatalf("granted: %v %s %v", err, d.Outcomes[0].Kind, d.Outcomes[0].Audit)
			}
			// A request naming the approval policy's approver answers
			// nothing now that the gates name another.
			in.Now = 100
			in.Approvals = nil
			plain, err := CompilePolicy("authority/1", "q.dl", []byte(fixturePolicy), logic.Limits{MaxFirings: 1000})
			if err != nil {
				t.Fatal(err)
			}
			in.Policy.Policy = plain
			d0, err := Authorize(in)
			if err != nil || d0.Outcomes[0].ApprovalRequest == nil || d0.Outcomes[0].ApprovalRequest.Actor != "actor:fixture-approver" || d0.Outcomes[0].ApproverReason != nil {
				t.Fatalf("without approver rules: %v %+v", err, d0.Outcomes[0])
			}
			old := *d0.Outcomes[0].ApprovalRequest
			in.Policy.Policy = p
			in.Approvals = []PresentedApproval{{Request: old, Approval: Grant(old, 110), Approver: Approver{ID: old.Actor, Kind: "human", Role: ApproverRole, Scopes: []string{old.ApproverScope}}}}
			in.Now = 120
			d, err = Authorize(in)
			if err != nil || d.Outcomes[0].Kind == OutcomeIntent || !slices.ContainsFunc(d.Outcomes[0].Audit, func(a string) bool { return strings.Contains(a, "APPROVER_CHANGED") }) {
				t.Fatalf("a request naming the old approver: %v %s %v", err, d.Outcomes[0].Kind, d.Outcomes[0].Audit)
			}
		})
	}
}
