package workflow

import (
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

func grantFor(need ApprovalNeed, actor, role string) Grant {
	b, _ := cjson.Marshal(map[string]any{"kind": "flrh.approval.grant", "request_id": need.RequestID, "request_digest": need.RequestDigest,
		"actor": actor, "role": role, "nonce": "n1"})
	return Grant{LedgerRequestDigest: need.RequestDigest, Body: b}
}

func TestApprovalFlow(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, _ := w.Init("run-approve")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 700, "bob", "late")})
	if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
		t.Fatalf("%v %v", err, outcomes(r))
	}
	planned := r.Effects[0]
	need := *planned.Approval
	if need.IntentID != planned.Intent.IntentID || !strings.Contains(need.Preview, "amount = 700") || !strings.Contains(need.Preview, `payee = "bob"`) {
		t.Fatalf("need %+v", need)
	}
	if !planned.Intent.ApprovalRequired || planned.Intent.ApprovalDigest != nil {
		t.Fatalf("placeholder intent %+v", planned.Intent)
	}

	t.Run("the named approver's grant authorizes the planned intent", func(t *testing.T) {
		e, err := w.AuthorizeApproved(r.State, need, grantFor(need, "finance-lead", "human_approver"))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := cjson.Marshal(e.Intent)
		b, _ := cjson.Marshal(planned.Intent)
		if string(a) != string(b) || string(e.Payload) != string(planned.Payload) || e.Approval == nil {
			t.Fatalf("approved intent differs from the planned one\n%s\n%s", a, b)
		}
	})
	refusals := []struct {
		name  string
		need  ApprovalNeed
		grant Grant
		want  string
	}{
		{"another request", need, func() Grant {
			g := grantFor(need, "finance-lead", "human_approver")
			g.LedgerRequestDigest = "sha256:" + strings.Repeat("0", 64)
			return g
		}(), "another request"},
		{"body names another request", need, func() Grant {
			other := need
			other.RequestDigest = "sha256:" + strings.Repeat("1", 64)
			g := grantFor(other, "finance-lead", "human_approver")
			g.LedgerRequestDigest = need.RequestDigest
			return g
		}(), "another request"},
		{"wrong role", need, grantFor(need, "finance-lead", "authorized_requester"), "role"},
		{"wrong person", need, grantFor(need, "intern", "human_approver"), "approval policy names"},
		{"unreadable grant", need, Grant{LedgerRequestDigest: need.RequestDigest, Body: []byte("{")}, "grant body"},
		{"nothing pending", func() ApprovalNeed { n := need; n.RequestID = "approval-request:other"; return n }(), grantFor(need, "finance-lead", "human_approver"), "pending"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.AuthorizeApproved(r.State, c.need, c.grant)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	// After the receipt the request is no longer pending.
	r2, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(planned, protocol.OutcomeConfirmedSuccess)})
	if err != nil || r2.Completion != Complete {
		t.Fatal(err, r2.Completion)
	}
	if _, err := w.AuthorizeApproved(r2.State, need, grantFor(need, "finance-lead", "human_approver")); err == nil {
		t.Fatal("a settled request was authorized again")
	}
}

// An approval policy naming a group takes a grant from any of its members,
// and from no one else: not an outsider, not someone named like the group.
// H sees the group its request named, so a member's grant authorizes the
// very intent the named approver's would have.
func TestApprovalByAGroupMember(t *testing.T) {
	files := editBundle(t, func(m map[string]any) {
		m["approval"].(map[string]any)["members"] = []any{"alice", "bob"}
	}, nil)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	plain := compileExample(t, "refund-agent")
	if w.Digest() == plain.Digest() {
		t.Fatal("the members are not bound by the workflow's digest")
	}
	st, _ := w.Init("run-group")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 700, "bob", "late")})
	if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
		t.Fatalf("%v %v", err, outcomes(r))
	}
	planned := r.Effects[0]
	need := *planned.Approval
	for _, who := range []string{"alice", "bob"} {
		e, err := w.AuthorizeApproved(r.State, need, grantFor(need, who, "human_approver"))
		if err != nil {
			t.Fatalf("%s, a member: %v", who, err)
		}
		a, _ := cjson.Marshal(e.Intent)
		b, _ := cjson.Marshal(planned.Intent)
		if string(a) != string(b) {
			t.Fatalf("%s's grant authorized another intent\n%s\n%s", who, a, b)
		}
	}
	for _, c := range []struct{ who, role, want string }{
		{"mallory", "human_approver", `"mallory", who is not among the members of "finance-lead" the approval policy names (alice, bob)`},
		{"finance-lead", "human_approver", `"finance-lead", who is not among the members`},
		{"alice", "operator", `role "operator"`},
	} {
		if _, err := w.AuthorizeApproved(r.State, need, grantFor(need, c.who, c.role)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as %s: got %v, want %q", c.who, c.role, err, c.want)
		}
		if err := w.CheckGrant(need, grantFor(need, c.who, c.role)); err == nil {
			t.Errorf("CheckGrant took %s as %s", c.who, c.role)
		}
	}
	v, err := w.Inspect(r.State)
	if err != nil || len(v.Pending) != 1 || v.Pending[0].Approver != "finance-lead" || strings.Join(v.Pending[0].Members, ",") != "alice,bob" {
		t.Fatalf("the view of the pending approval: %v %+v", err, v.Pending)
	}
	// Without members the policy names a person, and the view lists none.
	ps, _ := plain.Init("run-plain")
	pr, err := plain.Decide(ps, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 700, "bob", "late")})
	if err != nil || len(pr.Effects) != 1 || pr.Effects[0].Approval == nil {
		t.Fatalf("%v %v", err, outcomes(pr))
	}
	pv, err := plain.Inspect(pr.State)
	if err != nil || len(pv.Pending) != 1 || pv.Pending[0].Members != nil {
		t.Fatalf("a person's approval lists members: %v %+v", err, pv.Pending)
	}
	pneed := *pr.Effects[0].Approval
	if _, err := plain.AuthorizeApproved(pr.State, pneed, grantFor(pneed, "alice", "human_approver")); err == nil || !strings.Contains(err.Error(), `the approval policy names "finance-lead"`) {
		t.Fatalf("a person's policy and someone else's grant: %v", err)
	}
}

// A quorum is the policy's: each request asks that many of the group, the
// view says so, and a quorum of one (or none) is the plain rule.
func TestApprovalQuorum(t *testing.T) {
	for _, c := range []struct {
		quorum any
		want   int
	}{{nil, 1}, {int64(1), 1}, {int64(2), 2}, {int64(3), 3}} {
		files := editBundle(t, func(m map[string]any) {
			a := m["approval"].(map[string]any)
			a["members"] = []any{"alice", "bob", "carol"}
			if c.quorum != nil {
				a["quorum"] = c.quorum
			}
		}, nil)
		w, err := Compile(files)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.ApprovalQuorum(); got != c.want {
			t.Errorf("quorum %v: ApprovalQuorum %d, want %d", c.quorum, got, c.want)
		}
		st, _ := w.Init("run-q")
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 700, "bob", "late")})
		if err != nil {
			t.Fatal(err)
		}
		v, err := w.Inspect(r.State)
		shown := c.want
		if shown == 1 {
			shown = 0 // a view says nothing of a quorum of one
		}
		if err != nil || len(v.Pending) != 1 || v.Pending[0].Quorum != shown {
			t.Errorf("quorum %v: view %v %+v", c.quorum, err, v.Pending)
		}
	}
	if q := compileExample(t, "refund-agent").ApprovalQuorum(); q != 1 {
		t.Errorf("the example asks %d people", q)
	}
}

// The rule that keeps makers from approving is the policy's, and the view
// of a pending approval says so.
func TestSeparatesDuties(t *testing.T) {
	for _, on := range []bool{false, true} {
		files := editBundle(t, func(m map[string]any) {
			if on {
				m["approval"].(map[string]any)["separate_duties"] = true
			}
		}, nil)
		w, err := Compile(files)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := w.Init("run-sd")
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 700, "bob", "late")})
		if err != nil {
			t.Fatal(err)
		}
		v, err := w.Inspect(r.State)
		if err != nil || w.SeparatesDuties() != on || len(v.Pending) != 1 || v.Pending[0].SeparateDuties != on {
			t.Errorf("separate_duties %v: SeparatesDuties %v, view %v %+v", on, w.SeparatesDuties(), err, v.Pending)
		}
	}
}

// Who may approve, as people read it, for every shape of policy.
func TestWhoMayApprove(t *testing.T) {
	for _, c := range []struct {
		p    PendingApproval
		want string
	}{
		{PendingApproval{Approver: "finance-lead"}, "finance-lead"},
		{PendingApproval{Approver: "finance-lead", SeparateDuties: true}, "finance-lead; no one who handed the run an input"},
		{PendingApproval{Approver: "leads", Members: []string{"alice", "bob"}}, "any one of alice, bob (members of leads)"},
		{PendingApproval{Approver: "leads", Members: []string{"alice", "bob"}, Quorum: 2}, "2 of alice, bob (members of leads), each approving"},
		{PendingApproval{Approver: "leads", Members: []string{"alice", "bob", "carol"}, Quorum: 2, SeparateDuties: true},
			"2 of alice, bob, carol (members of leads), each approving; no one who handed the run an input"},
	} {
		if got := c.p.WhoMayApprove(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
	if got := compileExample(t, "refund-agent").WhoMayApprove(); got != "finance-lead" {
		t.Errorf("the refund example: %q", got)
	}
}
