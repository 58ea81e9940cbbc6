package mcp

import (
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// A run view tells an agent what a person must do, and for a quorum how
// many people and how many so far.
func TestViewOfApprovalsWaiting(t *testing.T) {
	st := runner.Status{Run: store.Run{ID: "r1", State: "WAIT_APPROVAL"}, Waiting: []runner.ApprovalNeed{
		{RequestID: "q1", RequestDigest: "sha256:1", IntentID: "i1", Preview: "pay 5"},
		{RequestID: "q2", RequestDigest: "sha256:2", IntentID: "i2", Preview: "pay 5000", Quorum: 2, ApprovedBy: []string{"alice"}},
		{RequestID: "q3", RequestDigest: "sha256:3", IntentID: "i3", Preview: "pay 50", WhoMayApprove: "any one of alice, bob (members of leads)"},
	}}
	v := view(st)
	if len(v.Approvals) != 3 || v.Approvals[2].WhoMayApprove != "any one of alice, bob (members of leads)" || v.Approvals[0].Quorum != 0 || v.Approvals[1].Quorum != 2 || !slices.Equal(v.Approvals[1].ApprovedBy, []string{"alice"}) {
		t.Fatalf("approvals %+v", v.Approvals)
	}
	if len(v.WaitsFor) != 3 || !strings.HasPrefix(v.WaitsFor[0], "a person's approval or denial of request q1 (pay 5); an agent") ||
		!strings.HasPrefix(v.WaitsFor[1], "2 people's approvals (1 so far) or denial of request q2") ||
		v.WaitsFor[2] != "a person's approval or denial of request q3 (pay 50); who may approve: any one of alice, bob (members of leads); an agent cannot give it" {
		t.Fatalf("waits for %q", v.WaitsFor)
	}
}
