package bundle

import (
	"errors"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
)

// A refund bundle whose approval policy names a group: any member's grant
// pays the large refund, once; anyone else is refused before a grant is
// stored; a member may deny; the record verifies and replays.
func TestRefundApprovedByAGroupMember(t *testing.T) {
	wf, ads := policyBundle(t, `"approver": "finance-leads", "members": ["alice", "bob"],`)
	h := newHarnessWith(t, wf, ads)

	h.start("refund-group", refund("r-3001", 5000, "dave", "damaged"))
	s := h.status("refund-group")
	if s.State != "WAIT_APPROVAL" || len(s.Waiting) != 1 {
		t.Fatalf("state %s, waiting %d", s.State, len(s.Waiting))
	}
	w := s.Waiting[0]
	var ar *runner.ApproverRefusedError
	for _, who := range []string{"mallory", "finance-leads", "finance-lead"} {
		if err := h.r.Approve(h.ctx, "refund-group", w.RequestID, runner.ApproverActor(who), time.Minute); !errors.As(err, &ar) ||
			!strings.Contains(ar.Reason, `not among the members of "finance-leads" the approval policy names (alice, bob)`) {
			t.Fatalf("approval by %s: %v", who, err)
		}
	}
	h.idle()
	if s := h.status("refund-group"); s.State != "WAIT_APPROVAL" || len(h.intents("refund-group")) != 0 || len(h.sb.Mutations()) != 0 {
		t.Fatalf("a refused approval moved the run: %s", s.State)
	}
	h.approveAll("refund-group", "bob")
	h.paid("refund-group")
	ins := h.intents("refund-group")
	if ins[0].ApprovalID == "" || ins[0].ID != w.IntentID {
		t.Fatalf("intents %+v (want %s with a grant)", ins, w.IntentID)
	}
	g, err := h.st.Approval(h.ctx, ins[0].ApprovalID)
	if err != nil || !strings.Contains(string(g.Body), `"actor":"bob"`) {
		t.Fatalf("the grant consumed does not name bob: %v %s", err, g.Body)
	}
	h.checkRecord("refund-group")

	// A member may deny; an outsider may not.
	h.start("refund-group-denied", refund("r-3002", 5000, "erin", "damaged"))
	s = h.status("refund-group-denied")
	if len(s.Waiting) != 1 {
		t.Fatalf("state %s", s.State)
	}
	if err := h.r.Deny(h.ctx, "refund-group-denied", s.Waiting[0].RequestID, "no", runner.Actor{Name: "mallory",
		Role: "human_approver", Capability: "approval.deny"}); !errors.As(err, &ar) {
		t.Fatalf("denial by an outsider: %v", err)
	}
	if err := h.r.Deny(h.ctx, "refund-group-denied", s.Waiting[0].RequestID, "not this one", runner.Actor{Name: "alice",
		Role: "human_approver", Capability: "approval.deny"}); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.status("refund-group-denied"); s.State != "FAILED_PERMANENT" {
		t.Fatalf("after alice's denial: %s", s.State)
	}
	h.checkRecord("refund-group-denied")
}
