package bundle

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// CheckApproval adds the wall clock to the workflow's binding checks: a
// grant is dead at its expiry instant.
func TestCheckApprovalExpiry(t *testing.T) {
	wf, _, err := Load(filepath.Join("..", "examples", "refund-agent"))
	if err != nil {
		t.Fatal(err)
	}
	need := runner.ApprovalNeed{RequestID: "approval-request:x", RequestDigest: "sha256:" + strings.Repeat("a", 64), IntentID: "intent:x"}
	body, _ := cjson.Marshal(map[string]any{"request_digest": need.RequestDigest, "actor": "finance-lead", "role": "human_approver"})
	exp := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	g := store.Approval{ID: "grant:1", RequestDigest: need.RequestDigest, Body: body, ExpiresAt: exp}
	if err := wf.CheckApproval(need, g, exp.Add(-time.Second)); err != nil {
		t.Fatalf("a live grant was refused: %v", err)
	}
	if err := wf.CheckApproval(need, g, exp); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a grant at its expiry instant: %v", err)
	}
	other := need
	other.RequestDigest = "sha256:" + strings.Repeat("b", 64)
	if err := wf.CheckApproval(other, g, exp.Add(-time.Second)); err == nil {
		t.Fatal("a grant for another request was accepted")
	}
}
