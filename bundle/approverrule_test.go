package bundle

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// largeRefundsTo is a gate rule that sends refunds above 1,000 to
// approver name (a group or a panel), by the rule g2.<name>.
func largeRefundsTo(name string) string {
	return fmt.Sprintf(`
.decl approver(name: symbol, rule: symbol)
approver(%q, "g2.%s") :- action(t, "refund.pay"), param_num(t, "amount", n), n > 1000.
`, name, name)
}

// treasuryRule sends refunds above 1,000 to the treasury group.
var treasuryRule = largeRefundsTo("treasury")

// The gates choose who approves: a refund of 600 waits for finance-lead,
// one of 3,000 for the treasury group, whose members alone may give it
// (before anything is stored, others are refused with the members named);
// the approver a request names is in the run's checkpoint, so a new
// runner keeps to it. Each pays once; the records verify and replay; the
// approval's notice names the group.
func TestGatesChooseTheApprover(t *testing.T) {
	wf, ads := policyBundleWithGates(t, `"approver": "finance-lead", "groups": {"treasury": ["carol", "dave"]},`, treasuryRule)
	h := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Notices = true })
	var ar *runner.ApproverRefusedError

	h.start("refund-small", refund("r-8001", 600, "dave", "damaged"))
	small := h.status("refund-small").Waiting[0]
	if small.WhoMayApprove != "finance-lead" || small.Approver != "" {
		t.Fatalf("the small refund's approval: %+v", small)
	}
	if err := h.r.Approve(h.ctx, "refund-small", small.RequestID, runner.ApproverActor("carol"), 10*time.Minute); !errors.As(err, &ar) {
		t.Fatalf("carol approving a refund of 600: %v", err)
	}
	h.approveAll("refund-small", "finance-lead")
	h.paid("refund-small")
	h.checkRecord("refund-small")

	h.claimNotices()
	h.start("refund-large", refund("r-8002", 3000, "erin", "damaged"))
	large := h.status("refund-large").Waiting[0]
	if large.WhoMayApprove != "any one of carol, dave (members of treasury)" || large.Approver != "treasury" {
		t.Fatalf("the large refund's approval: %+v", large)
	}
	var told store.NoticeBody
	if ns := h.claimNotices(); len(ns) != 1 || json.Unmarshal(ns[0].Body, &told) != nil || told.Approvers != large.WhoMayApprove {
		t.Fatalf("the large refund's notice: %+v", ns)
	}
	before := len(h.grants("refund-large"))
	err := h.r.Approve(h.ctx, "refund-large", large.RequestID, runner.ApproverActor("finance-lead"), 10*time.Minute)
	if !errors.As(err, &ar) || !strings.Contains(ar.Reason, `"finance-lead", who is not among the members of "treasury" the approval policy names (carol, dave)`) {
		t.Fatalf("finance-lead approving a refund of 3,000: %v", err)
	}
	if n := len(h.grants("refund-large")); n != before {
		t.Fatalf("a refused approval stored %d grants", n-before)
	}
	if err := h.r.MayApprove(h.ctx, "refund-large", large.RequestID, runner.ApproverActor("dave")); err != nil {
		t.Fatalf("may dave approve? %v", err)
	}
	h.restart(wf, ads)
	if s := h.status("refund-large"); s.State != "WAIT_APPROVAL" || s.Waiting[0].Approver != "treasury" {
		t.Fatalf("the new runner reads %s %+v", s.State, s.Waiting)
	}
	h.approveAll("refund-large", "dave")
	h.paid("refund-large")
	g := h.consumedFrom("refund-large", "dave")[0]
	h.checkRecord("refund-large")

	// The grant rewritten as finance-lead's: replay, which has the
	// bundle, finds a giver the request's approver does not include.
	h.regive(g, "finance-lead")
	h.replayFinds(h.wf, "refund-large", "consumed grant "+g.ID+`: the grant was issued by "finance-lead", who is not among the members of "treasury"`,
		"a grant by someone outside the group")
}

// regive rewrites grant g in the store as given by actor, its digest made
// to match: a record forged behind the runner's back.
func (h *harness) regive(g store.Approval, actor string) {
	h.t.Helper()
	var body map[string]any
	if err := json.Unmarshal(g.Body, &body); err != nil {
		h.t.Fatal(err)
	}
	body["actor"] = actor
	forged, err := cjson.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+h.db)
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE approvals SET body = ?, digest = ? WHERE approval_id = ?`, forged, store.BodyDigest(forged), g.ID); err != nil {
		h.t.Fatal(err)
	}
}

// grants are the grants of run's record.
func (h *harness) grants(run string) []store.Approval {
	h.t.Helper()
	gs, err := h.st.(store.RecordParts).RunApprovals(h.ctx, run)
	if err != nil {
		h.t.Fatal(err)
	}
	return gs
}
