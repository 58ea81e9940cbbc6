package server

import (
	"encoding/json"
	"testing"
)

// heldOf is the proposals the workflow's view of a run keeps, held or
// escalated, to be decided again.
func heldOf(t *testing.T, p RunPage) []map[string]any {
	t.Helper()
	b, err := json.Marshal(p.View)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Held []map[string]any `json:"held"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Held
}

// Over HTTP, the operations example's unexplained restart is escalated and
// kept; an agent cannot resume deliberation; an operator's RESUME decides
// it again (decision 0612), now asking the on-call lead first; the grant
// runs it exactly once, and the record verifies.
func TestEscalatedRestartResumedOverHTTP(t *testing.T) {
	f := newBundleFixture(t)
	input := `{"type":"restart.requested/1","payload":{"restart_id":"rst-9","service":"api","target":"dest:ops-api","reason":"unknown"}}`
	if a := f.post("/v1/runs", tokDana, `{"workflow":"ops-agent","run_id":"esc","input":`+input+`}`); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	p := f.waitFor("esc", tokVic, "the restart kept", func(p RunPage) bool { return len(heldOf(t, p)) == 1 })
	if h := heldOf(t, p)[0]; h["outcome"] != "ESCALATED" || len(p.Waiting) != 0 {
		t.Fatalf("kept %v, %d approvals waiting: want the restart escalated and nothing to approve", h, len(p.Waiting))
	}
	if a := f.post("/v1/runs/esc/mrp", tokBot, `{"trigger":"resume"}`); a.status != 403 {
		t.Fatalf("an agent's resume: %d %s", a.status, a.body)
	}
	// A resumption names the kept proposal it answers, or none; only
	// reject_all and resume name one.
	if a := f.post("/v1/runs/esc/mrp", tokDana, `{"trigger":"resume","proposal_id":"proposal:nope"}`); a.status != 404 {
		t.Fatalf("resume naming a proposal the run never had: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/runs/esc/mrp", tokDana, `{"trigger":"exit","proposal_id":"proposal:nope"}`); a.status != 422 {
		t.Fatalf("exit naming a proposal: %d %s", a.status, a.body)
	}
	kept, _ := heldOf(t, p)[0]["proposal_id"].(string)
	if a := f.post("/v1/runs/esc/mrp", tokDana, `{"trigger":"resume","proposal_id":"`+kept+`","reason":"the leak is known now"}`); a.status != 202 {
		t.Fatalf("resume: %d %s", a.status, a.body)
	}
	p = f.waitFor("esc", tokVic, "an approval wait", waiting)
	if len(heldOf(t, p)) != 0 || len(f.sb.Mutations()) != 0 {
		t.Fatalf("after the resume: %d kept, %d restarts; want none kept and nothing run before the approval", len(heldOf(t, p)), len(f.sb.Mutations()))
	}
	need := p.Waiting[0]
	body := `{"request_id":"` + need.RequestID + `","request_digest":"` + need.RequestDigest + `"}`
	if a := f.post("/v1/runs/esc/approve", tokFinance, body); a.status != 403 {
		t.Fatalf("approval by an approver the policy does not name: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/runs/esc/approve", tokOncall, body); a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	p = f.waitFor("esc", tokVic, "its end", ended)
	if p.Run.State != "SUCCEEDED" || len(f.sb.Mutations()) != 1 {
		t.Fatalf("ended %s with %d restarts, want SUCCEEDED and one", p.Run.State, len(f.sb.Mutations()))
	}
	if a := f.get("/v1/runs/esc/verify", tokVic); a.status != 200 || a.json(t)["ok"] != true {
		t.Fatalf("verify: %d %s", a.status, a.body)
	}
}
