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
