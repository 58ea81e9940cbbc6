package authority

import (
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/logic"
)

const quorumDecl = ".decl quorum(n: number, rule: symbol)\n"

// A quorum rule's head says how many people, as a number the workflow can
// check against its approvers before any run; anything else is refused
// when the policy compiles, with the position and what was wrong.
func TestQuorumHeads(t *testing.T) {
	for _, c := range []struct {
		name, rules string
		max         int
		err         string
	}{
		{"none", "", 0, ""},
		{"declared, no rules", quorumDecl, 0, ""},
		{"two rules", quorumDecl + `quorum(2, "q.a") :- ticket(t).` + "\n" + `quorum(3, "q.b") :- param_num(t, "amount", n), n > 10.`, 3, ""},
		{"at the bound", quorumDecl + `quorum(100, "q.a") :- ticket(t).`, 100, ""},
		{"a variable count", quorumDecl + `quorum(n, "q.a") :- param_num(t, "people", n).`, 0, "q.dl:2:1: quorum's count must be a number written in the rule's head, not n"},
		{"an arithmetic count", quorumDecl + `quorum(1+1, "q.a") :- ticket(t).`, 0, "quorum's count must be a number written in the rule's head"},
		{"one", quorumDecl + `quorum(1, "q.a") :- ticket(t).`, 0, "q.dl:2:8: quorum's count must be from 2 to 100"},
		{"zero", quorumDecl + `quorum(0, "q.a") :- ticket(t).`, 0, "not 0"},
		{"too many", quorumDecl + `quorum(101, "q.a") :- ticket(t).`, 0, "not 101"},
		{"a variable rule id", quorumDecl + `quorum(2, r) :- param_sym(t, "rule", r).`, 0, "quorum's rule id must be a string written in the rule's head, not r"},
		{"derived false", quorumDecl + `-quorum(2, "q.a") :- ticket(t).`, 0, "quorum cannot be derived false"},
		{"another schema", ".decl quorum(t: symbol)\nquorum(t) :- ticket(t).", 0, "relation quorum must be declared .decl quorum(n: number, rule: symbol)"},
		{"swapped schema", ".decl quorum(rule: symbol, n: number)\n", 0, "relation quorum must be declared"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := CompilePolicy("authority/1", "q.dl", []byte(c.rules+"\n"+fixturePolicy), logic.Limits{MaxFirings: 1000})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want one containing %q", err, c.err)
				}
				if _, typed := err.(*PolicyError); !typed {
					t.Fatalf("error %T is not a *PolicyError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.MaxQuorum(); got != c.max {
				t.Fatalf("MaxQuorum = %d, want %d", got, c.max)
			}
		})
	}
}

// An approval request carries the largest quorum the gates ask of its
// ticket, and the rule instance that asks for it; the gates' other
// conclusions, and every other outcome, are as they are without quorum
// rules.
func TestApprovalRequestCarriesTheGatesQuorum(t *testing.T) {
	rules := quorumDecl + `
quorum(2, "q.public") :- action(t, "artifact.publish"), param_sym(t, "audience", "public").
quorum(3, "q.big") :- param_sym(t, "artifact", "big.tgz"), param_sym(t, "audience", "public").
quorum(3, "q.also-big") :- param_sym(t, "artifact", "big.tgz").
quorum(2, "q.internal") :- param_sym(t, "audience", "internal").
`
	withQuorum, err := CompilePolicy("authority/1", "q.dl", []byte(fixturePolicy+rules), logic.Limits{MaxFirings: 1000})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := CompilePolicy("authority/1", "q.dl", []byte(fixturePolicy), logic.Limits{MaxFirings: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, audience, artifact string
		kind                     string
		quorum                   int
		rule, fact               string
	}{
		{"public", "public", "pkg-1.0.tgz", OutcomeApprovalRequest, 2, "q.public", `param_sym("`},
		{"public and big: the largest, then the first rule id", "public", "big.tgz", OutcomeApprovalRequest, 3, "q.also-big", `"big.tgz"`},
		{"internal: no approval, so no quorum", "internal", "pkg-1.0.tgz", OutcomeIntent, 0, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, _ := fixtureInput(t, c.audience)
			in.Actions[0].Parameters = map[string]any{"artifact": c.artifact, "audience": c.audience}
			in.Policy.Policy = plain
			before, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			in.Policy.Policy = withQuorum
			d, err := Authorize(in)
			if err != nil {
				t.Fatal(err)
			}
			o, b := d.Outcomes[0], before.Outcomes[0]
			if o.Kind != c.kind || b.Kind != c.kind {
				t.Fatalf("outcomes %s (with quorum rules) and %s (without), want %s", o.Kind, b.Kind, c.kind)
			}
			if b.Quorum != 0 || b.QuorumReason != nil {
				t.Fatalf("a policy without quorum rules asks for %d people (%v)", b.Quorum, b.QuorumReason)
			}
			if o.Quorum != c.quorum {
				t.Fatalf("quorum %d, want %d", o.Quorum, c.quorum)
			}
			if c.quorum == 0 {
				if o.QuorumReason != nil {
					t.Fatalf("a reason for no quorum: %+v", o.QuorumReason)
				}
				return
			}
			why := o.QuorumReason
			if why == nil || why.Rule != c.rule || !strings.Contains(why.Detail, "q.dl:") || !strings.Contains(strings.Join(why.Facts, " "), c.fact) {
				t.Fatalf("reason %+v, want rule %s at its position in q.dl, from a fact containing %s", why, c.rule, c.fact)
			}
			// The request itself is the one a policy without the rules
			// makes, but for the policy's digest, which binds the rules.
			if o.ApprovalRequest == nil || b.ApprovalRequest == nil || o.ApprovalRequest.ActionDigest != b.ApprovalRequest.ActionDigest {
				t.Fatalf("requests differ in their action: %+v and %+v", o.ApprovalRequest, b.ApprovalRequest)
			}
			if o.Evaluation.AssessedRisk != b.Evaluation.AssessedRisk || o.MRPState != b.MRPState {
				t.Fatalf("the quorum changed what the gates concluded: %s/%s against %s/%s", o.Evaluation.AssessedRisk, o.MRPState, b.Evaluation.AssessedRisk, b.MRPState)
			}
		})
	}
}

// A flat policy's quorum and approver rows come from the direct evaluator, with the
// reasons the logic engine gives them: the two agree row for row.
func TestFlatQuorumAgreesWithTheEngine(t *testing.T) {
	p, err := CompilePolicy("authority/1", "q.dl", []byte(fixturePolicy+quorumDecl+`
quorum(2, "q.public") :- action(t, "artifact.publish"), param_sym(t, "audience", "public").
quorum(3, "q.big") :- param_sym(t, "artifact", "big.tgz"), !param_sym(t, "audience", "internal").
quorum(3, "q.also-big") :- param_sym(t, "artifact", "big.tgz").
`+approverDecl+`approver("release-leads", "a.public") :- param_sym(t, "audience", "public").
approver("security", "a.big") :- param_sym(t, "artifact", "big.tgz"), !param_sym(t, "audience", "internal").
`), logic.Limits{MaxFirings: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Flat {
		t.Fatal("the policy is not evaluated by the direct evaluator")
	}
	for _, params := range []map[string]any{
		{"artifact": "big.tgz", "audience": "public"},
		{"artifact": "pkg.tgz", "audience": "public"},
		{"artifact": "big.tgz", "audience": "internal"},
		{"artifact": "pkg.tgz", "audience": "internal"},
	} {
		tk, err := DraftTicket(TicketSpec{TicketID: "ticket:q", Action: "artifact.publish", Destination: "dest:registry", Scope: "scope:s",
			Parameters: params, SideEffects: []SideEffect{SideEffectWrite}, AssessedRisk: RiskReversible})
		if err != nil {
			t.Fatal(err)
		}
		facts := TicketFacts(tk, CapabilityFact(tk.TicketID, "c"))
		flat, e1 := p.engine.derive(facts)
		engine, e2 := p.oracle.derive(facts)
		if e1 != nil || e2 != nil || !reflect.DeepEqual(flat.quorums, engine.quorums) || !reflect.DeepEqual(flat.approvers, engine.approvers) {
			t.Fatalf("%v: flat %+v %+v (%v), engine %+v %+v (%v)", params, flat.quorums, flat.approvers, e1, engine.quorums, engine.approvers, e2)
		}
		// And Evaluate carries the best of them.
		ev := p.Evaluate(tk, CapabilityFact(tk.TicketID, "c"))
		n, why, err := p.Quorum(tk, CapabilityFact(tk.TicketID, "c"))
		got, gotWhy := 0, (*Reason)(nil)
		if ev.asked != nil {
			got, gotWhy = ev.asked.quorum, ev.asked.quorumWhy
		}
		if err != nil || got != n || (n > 0) != (gotWhy != nil) || (n > 0 && !reflect.DeepEqual(*gotWhy, why)) {
			t.Fatalf("%v: Evaluate says %d (%+v), Quorum %d (%+v, %v)", params, got, gotWhy, n, why, err)
		}
	}
}
