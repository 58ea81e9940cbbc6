package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// A person resumes an escalated restart, which now waits for the on-call
// lead's approval, then exits deliberation before anyone approves. The
// run reads a person's act only when it takes input, so the EXIT waits in
// its inbox; the approval that follows must not carry the restart out.
// Over HTTP it is refused at once (409, saying why); a grant that reaches
// the run anyway (handed in straight to the store, as a submission racing
// the EXIT would) is refused by the run and audited. Nothing reaches the
// sandbox; the approver's denial then ends the run, which verifies.
func TestApprovalAfterAnExitIsRefused(t *testing.T) {
	f := newBundleFixture(t)
	input := `{"type":"restart.requested/1","payload":{"restart_id":"rst-9","service":"api","target":"dest:ops-api","reason":"unknown"}}`
	if a := f.post("/v1/runs", tokDana, `{"workflow":"ops-agent","run_id":"esc","input":`+input+`}`); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("esc", tokVic, "the restart kept", func(p RunPage) bool { return len(heldOf(t, p)) == 1 })
	if a := f.post("/v1/runs/esc/mrp", tokDana, `{"trigger":"resume"}`); a.status != 202 {
		t.Fatalf("resume: %d %s", a.status, a.body)
	}
	p := f.waitFor("esc", tokVic, "an approval wait", waiting)
	need := p.Waiting[0]
	if a := f.post("/v1/runs/esc/mrp", tokDana, `{"trigger":"exit","reason":"the leak was a false alarm"}`); a.status != 202 {
		t.Fatalf("exit: %d %s", a.status, a.body)
	}
	body := `{"request_id":"` + need.RequestID + `","request_digest":"` + need.RequestDigest + `"}`
	a := f.post("/v1/runs/esc/approve", tokOncall, body)
	if a.status != 409 || !strings.Contains(string(a.body), "EXIT") || !strings.Contains(string(a.body), "dana") {
		t.Fatalf("approval after an EXIT: %d %s", a.status, a.body)
	}

	// A grant that reaches the run anyway.
	ctx := context.Background()
	now := time.Now().UTC()
	nonce := strings.Repeat("7", 32)
	gb, err := cjson.Marshal(map[string]any{"kind": "flrh.approval.grant", "run_id": "esc", "request_id": need.RequestID, "request_digest": need.RequestDigest,
		"actor": "oncall-lead", "role": "human_approver", "nonce": nonce, "expires_at": now.Add(time.Hour).Format(time.RFC3339Nano)})
	if err != nil {
		t.Fatal(err)
	}
	grant := store.Approval{ID: "grant:" + nonce, RunID: "esc", RequestDigest: need.RequestDigest, Nonce: nonce, Body: gb, Digest: store.BodyDigest(gb), ExpiresAt: now.Add(time.Hour)}
	if err := f.store.GrantApproval(ctx, grant); err != nil {
		t.Fatal(err)
	}
	ab, _ := cjson.Marshal(map[string]any{"approval_id": grant.ID})
	if err := f.store.Submit(ctx, store.Inbound{ID: "approve-raced", RunID: "esc", Kind: runner.KindApprove, ActorRole: "human_approver", Actor: "oncall-lead",
		Capability: "approval.grant_exact_hash", Body: ab, Digest: store.BodyDigest(ab)}); err != nil {
		t.Fatal(err)
	}
	f.runner.Wake()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending, err := f.store.Inbox(ctx, "esc", true)
		if err != nil {
			t.Fatal(err)
		}
		taken := true
		for _, in := range pending {
			taken = taken && in.ID != "approve-raced"
		}
		if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never took the grant")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p = f.waitFor("esc", tokVic, "the run at rest", func(p RunPage) bool { return p.Run.State == "WAIT_APPROVAL" })
	if n := len(f.sb.Mutations()); n != 0 {
		t.Fatalf("%d restarts after an EXIT", n)
	}
	tr, err := f.store.Trace(ctx, "esc")
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, rec := range tr {
		refused = refused || rec.Kind == "approval_refused" && strings.Contains(string(rec.Body), "EXIT")
	}
	if !refused {
		t.Fatal("the run did not record why it refused the grant")
	}

	if a := f.post("/v1/runs/esc/deny", tokOncall, `{"request_id":"`+need.RequestID+`","reason":"exited"}`); a.status != 202 {
		t.Fatalf("deny: %d %s", a.status, a.body)
	}
	p = f.waitFor("esc", tokVic, "its end", ended)
	if p.Run.State != "FAILED_PERMANENT" || len(f.sb.Mutations()) != 0 {
		t.Fatalf("ended %s with %d restarts", p.Run.State, len(f.sb.Mutations()))
	}
	if a := f.get("/v1/runs/esc/verify", tokVic); a.status != 200 || a.json(t)["ok"] != true {
		t.Fatalf("verify: %d %s", a.status, a.body)
	}
}
