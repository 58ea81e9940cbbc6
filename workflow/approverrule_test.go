package workflow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// gatesSendingTo are the refund example's gates with a rule that sends
// refunds above 1,000 to approver name (a group or a panel), by the rule
// g2.<name>.
func gatesSendingTo(t testing.TB, name string) string {
	t.Helper()
	return exampleGatesWith(t, fmt.Sprintf(`
.decl approver(name: symbol, rule: symbol)
approver(%q, "g2.%s") :- action(t, "refund.pay"), param_num(t, "amount", n), n > 1000.
`, name, name))
}

// treasuryGates send refunds above 1,000 to the treasury group.
func treasuryGates(t testing.TB) string { return gatesSendingTo(t, "treasury") }

// bundleSendingTo is the refund example whose gates send large refunds to
// name, with its approval policy edited by each of edits in turn (a nil
// one skipped).
func bundleSendingTo(t testing.TB, name string, edits ...func(a map[string]any)) (*Workflow, error) {
	t.Helper()
	return compileSendingTo(t, name, "", edits...)
}

// compileSendingTo is bundleSendingTo with more rules in the gates.
func compileSendingTo(t testing.TB, name, more string, edits ...func(a map[string]any)) (*Workflow, error) {
	t.Helper()
	return Compile(editBundle(t, func(m map[string]any) {
		a := m["approval"].(map[string]any)
		for _, edit := range edits {
			if edit != nil {
				edit(a)
			}
		}
	}, map[string]string{"gates.dl": gatesSendingTo(t, name) + more}))
}

// policyCase is an approval policy a bundle must refuse: edit changes the
// policy, gates adds rules to the gates, and the error is at ptr saying
// want; a case with no ptr must load.
type policyCase struct {
	name  string
	edit  func(a map[string]any)
	gates string
	ptr   string
	want  string
}

// checkPolicyCases compiles, for each case, the refund example whose
// gates send large refunds to name, with its approval policy set by base
// and then edited by the case, and holds the outcome to the case's.
func checkPolicyCases(t *testing.T, name string, base func(a map[string]any), cases []policyCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileSendingTo(t, name, c.gates, base, c.edit)
			if c.ptr == "" {
				if err != nil {
					t.Fatalf("a well-formed policy: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeMalformed || e.Pointer != c.ptr || !strings.Contains(e.Detail, c.want) {
				t.Fatalf("error %v, want %s at %s: %s", err, CodeMalformed, c.ptr, c.want)
			}
		})
	}
}

// treasuryBundle is the refund example whose approval policy knows the
// group treasury (carol, dave) besides finance-lead, and whose gates send
// large refunds to it; more edits the approval policy further.
func treasuryBundle(t testing.TB, more func(a map[string]any)) (*Workflow, error) {
	t.Helper()
	return bundleSendingTo(t, "treasury", func(a map[string]any) {
		a["groups"] = map[string]any{"treasury": []any{"carol", "dave"}}
	}, more)
}

// The gates choose who approves each action: a refund of 600 goes to
// finance-lead as before (its need names no other approver, so runs and
// checkpoints are as they were), one of 3,000 to treasury, whose members'
// grants answer it and no one else's; who may approve says so, for the
// workflow and for each request.
func TestGatesNameTheApprover(t *testing.T) {
	w, err := treasuryBundle(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.WhoMayApprove(), "finance-lead; or, where the gate policy names them, any one of carol, dave (members of treasury)"; got != want {
		t.Fatalf("who may approve: %q, want %q", got, want)
	}
	for _, c := range []struct {
		name      string
		amount    int64
		approver  string // the request's
		needNames string // the need's Approver
		may, not  string // a grant that answers it, one that does not
		who       string
	}{
		{"600: finance-lead", 600, "finance-lead", "", "finance-lead", "carol", "finance-lead"},
		{"3,000: treasury", 3000, "treasury", "treasury", "dave", "finance-lead", "any one of carol, dave (members of treasury)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := w.Init("run-a")
			r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", c.amount, "bob", "late")})
			if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
				t.Fatalf("%v %v", err, outcomes(r))
			}
			need := *r.Effects[0].Approval
			if need.Approver != c.needNames {
				t.Fatalf("the need names %q, want %q", need.Approver, c.needNames)
			}
			v, err := w.Inspect(r.State)
			if err != nil || len(v.Pending) != 1 || v.Pending[0].Approver != c.approver || v.Pending[0].Who != c.who {
				t.Fatalf("view %v %+v", err, v.Pending)
			}
			// The provenance of the decision names the approver and the
			// rule, where the gates named one.
			_, whys, err := w.Explain(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", c.amount, "bob", "late")})
			if err != nil || len(whys) != 1 || whys[0].Approver != c.needNames ||
				(c.needNames != "") != (whys[0].ApproverReason != nil) || (c.needNames != "" && whys[0].ApproverReason.Rule != "g2.treasury") {
				t.Fatalf("why: %v %+v", err, whys)
			}
			if got := w.WhoMayApproveRequest(need.Approver, need.Quorum); got != c.who {
				t.Fatalf("who may approve the request: %q, want %q", got, c.who)
			}
			if err := w.CheckGrant(need, grantFor(need, c.not, "human_approver")); err == nil {
				t.Fatalf("%s's grant answers a request naming %s", c.not, c.approver)
			}
			e, err := w.AuthorizeApproved(r.State, need, grantFor(need, c.may, "human_approver"))
			if err != nil || e.Intent.IntentID != need.IntentID || e.Approval == nil || e.Approval.Approver != c.needNames {
				t.Fatalf("%s's grant: %v %+v", c.may, err, e.Approval)
			}
			// A need that names another approver than its pending request
			// (a checkpoint edited behind the run's back) is refused.
			forged := need
			forged.Approver = map[string]string{"": "treasury", "treasury": ""}[need.Approver]
			by := map[string]string{"": "finance-lead", "treasury": "carol"}[forged.Approver]
			if _, err := w.AuthorizeApproved(r.State, forged, grantFor(forged, by, "human_approver")); err == nil || !strings.Contains(err.Error(), "the pending request names approver") {
				t.Fatalf("a forged need: %v", err)
			}
		})
	}
}

// A bundle whose gates may name someone its approval policy does not know,
// or whose groups are malformed, does not compile: the place and what is
// wrong are said.
func TestApproverGroupsAreChecked(t *testing.T) {
	checkPolicyCases(t, "treasury", func(a map[string]any) { a["groups"] = map[string]any{"treasury": []any{"carol", "dave"}} }, []policyCase{
		{"the gates name an unknown group", func(a map[string]any) { delete(a, "groups") }, "", "/approval/groups",
			`the gate policy (gates.dl) names approver "treasury", whom the approval policy does not name (it names finance-lead)`},
		{"a group without members", func(a map[string]any) { a["groups"] = map[string]any{"treasury": []any{}} }, "", "/approval/groups/treasury", "must list from 1 to 100 people"},
		{"a member twice", func(a map[string]any) { a["groups"] = map[string]any{"treasury": []any{"carol", "carol"}} }, "", "/approval/groups/treasury/1", `"carol" is listed twice`},
		{"a group named as the approver", func(a map[string]any) {
			a["groups"] = map[string]any{"treasury": []any{"carol"}, "finance-lead": []any{"erin"}}
		}, "", "/approval/groups/finance-lead", "the approver's own name"},
		{"a group's name not an id", func(a map[string]any) {
			a["groups"] = map[string]any{"tre asury": []any{"carol"}, "treasury": []any{"carol"}}
		}, "", "/approval/groups/tre asury", "is not an id"},
		{"a group smaller than the policy's quorum", func(a map[string]any) {
			a["members"], a["quorum"] = []any{"alice", "bob"}, int64(2)
			a["groups"] = map[string]any{"treasury": []any{"carol"}}
		}, "", "/approval/groups/treasury", `the approval policy's quorum is 2, but "treasury" has 1 members`},
		{"a group smaller than the gates' quorum", func(a map[string]any) { a["members"] = []any{"alice", "bob", "erin"} },
			".decl quorum(n: number, rule: symbol)\nquorum(3, \"q\") :- param_num(t, \"amount\", n), n > 5000.\n", "/approval/groups/treasury", `asks up to 3 people to approve (quorum), but "treasury" has 2 members`},
	})
}
