package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
)

const (
	largeRefund = `{"refunds":[{"id":"r-2001","amount":900,"payee":"bob","reason":"cancelled order"}]}`
	smallRefund = `{"refunds":[{"id":"r-2002","amount":40,"payee":"alice","reason":"damaged item"}]}`
)

func startBody(runID, input string) string {
	return fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":%s}`, runID, input)
}

func waiting(p RunPage) bool { return len(p.Waiting) > 0 }
func ended(p RunPage) bool   { return p.Run.Outcome != "" }

// A large refund waits for a person; an agent cannot approve it; the
// approver approves exactly the digest shown; the stream shows it complete.
func TestLargeRefundApprovedAndStreamed(t *testing.T) {
	f := newFixture(t, tokenFileText)
	a := f.post("/v1/runs", tokOperator, startBody("refund-large", largeRefund))
	if a.status != 201 || a.header.Get("Location") != "/v1/runs/refund-large" {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	stream := f.openStream("refund-large", tokViewer)
	p := f.waitFor("refund-large", tokViewer, "an approval wait", waiting)
	if p.Run.State != "WAIT_APPROVAL" || len(p.Waiting) != 1 || !strings.Contains(p.Waiting[0].Preview, "900") {
		t.Fatalf("waiting page: %+v", p)
	}
	need := p.Waiting[0]
	approve := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)

	// An agent may read and propose, never approve: 403, and nothing moves.
	if a := f.post("/v1/runs/refund-large/approve", tokAgent, approve); a.status != 403 {
		t.Fatalf("agent approve: %d %s", a.status, a.body)
	} else if typ, _ := a.errorOf(t); typ != TypeForbidden {
		t.Fatalf("agent approve type %s", typ)
	}
	// An operator is not an approver either.
	if a := f.post("/v1/runs/refund-large/approve", tokOperator, approve); a.status != 403 {
		t.Fatalf("operator approve: %d", a.status)
	}
	// A digest other than the one shown is refused.
	wrong := fmt.Sprintf(`{"request_id":%q,"request_digest":"sha256:%s"}`, need.RequestID, strings.Repeat("0", 64))
	if a := f.post("/v1/runs/refund-large/approve", tokApprover, wrong); a.status != 409 {
		t.Fatalf("wrong digest: %d %s", a.status, a.body)
	} else if _, field := a.errorOf(t); field != "/request_digest" {
		t.Fatalf("wrong digest field %q", field)
	}
	if got := f.page("refund-large", tokViewer); got.Run.State != "WAIT_APPROVAL" || len(f.sb.Mutations()) != 0 {
		t.Fatalf("refused approvals changed the run: %s, %d mutations", got.Run.State, len(f.sb.Mutations()))
	}

	if a := f.post("/v1/runs/refund-large/approve", tokApprover, approve); a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	var msgs []sseMessage
	select {
	case msgs = <-stream:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end")
	}
	last := msgs[len(msgs)-1]
	if last.event != "end" || !strings.Contains(last.data, `"state":"SUCCEEDED"`) {
		t.Fatalf("stream ended with %+v", last)
	}
	// Every event of the run came through, in order, once.
	evs, err := f.store.Events(context.Background(), "refund-large", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	sawGrant := false
	for _, m := range msgs[:len(msgs)-1] {
		seqs = append(seqs, m.id)
		if m.event == runner.EventControl {
			var ev EventView
			if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
				t.Fatal(err)
			}
			var rec control.Record
			if err := json.Unmarshal(ev.Body, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Event == "APPROVAL_GRANTED" && rec.Accepted {
				sawGrant = true
				if rec.ActorRole != "human_approver" || rec.Capability != "approval.grant_exact_hash" {
					t.Fatalf("grant recorded as %s/%s", rec.ActorRole, rec.Capability)
				}
			}
		}
	}
	if len(seqs) != len(evs) {
		t.Fatalf("stream sent %d events, the store has %d", len(seqs), len(evs))
	}
	for i, e := range evs {
		if seqs[i] != fmt.Sprint(e.Seq) {
			t.Fatalf("stream event %d is seq %s, want %d", i, seqs[i], e.Seq)
		}
	}
	if !sawGrant {
		t.Fatal("no accepted APPROVAL_GRANTED in the stream")
	}
	// The grant names the authenticated approver, not anything the client sent.
	ins, _ := f.store.Intents(context.Background(), "refund-large")
	if len(ins) != 1 || ins[0].ApprovalID == "" {
		t.Fatalf("intents %+v", ins)
	}
	grant, err := f.store.Approval(context.Background(), ins[0].ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	var gb map[string]any
	json.Unmarshal(grant.Body, &gb)
	if gb["actor"] != "alice" || gb["role"] != "human_approver" || gb["request_digest"] != need.RequestDigest {
		t.Fatalf("grant %s", grant.Body)
	}
	if n := len(f.sb.Mutations()); n != 1 {
		t.Fatalf("%d mutations, want 1", n)
	}
	p = f.page("refund-large", tokViewer)
	if len(p.Effects) != 1 || p.Effects[0].Receipt == nil || p.Effects[0].Receipt.Outcome != "confirmed_success" || p.Effects[0].Outbox != "done" {
		t.Fatalf("effects %+v", p.Effects)
	}
	// A second approval of the same request is a conflict: nothing waits now.
	if a := f.post("/v1/runs/refund-large/approve", tokApprover, approve); a.status != 409 {
		t.Fatalf("second approve: %d", a.status)
	}
	for _, path := range []string{"/v1/runs/refund-large/verify", "/v1/runs/refund-large/replay"} {
		a := f.get(path, tokViewer)
		if a.status != 200 || a.json(t)["ok"] != true {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
	}
}

func TestDenyEndsTheRunWithoutEffect(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("refund-denied", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	p := f.waitFor("refund-denied", tokViewer, "an approval wait", waiting)
	deny := fmt.Sprintf(`{"request_id":%q,"reason":"not this one"}`, p.Waiting[0].RequestID)
	if a := f.post("/v1/runs/refund-denied/deny", tokAgent, deny); a.status != 403 {
		t.Fatalf("agent deny: %d", a.status)
	}
	if a := f.post("/v1/runs/refund-denied/deny", tokApprover, deny); a.status != 202 {
		t.Fatalf("deny: %d %s", a.status, a.body)
	}
	p = f.waitFor("refund-denied", tokViewer, "its end", ended)
	assertActor(t, f, "refund-denied", "deny", "alice", "human_approver", "approval.deny")
	if p.Run.State != "FAILED_PERMANENT" || len(f.sb.Mutations()) != 0 {
		t.Fatalf("denied run ended %s with %d mutations", p.Run.State, len(f.sb.Mutations()))
	}
	if a := f.get("/v1/runs/refund-denied/verify", tokViewer); a.status != 200 || a.json(t)["ok"] != true {
		t.Fatalf("verify: %s", a.body)
	}
}

func TestReconcileUnknownOutcome(t *testing.T) {
	f := newFixture(t, tokenFileText)
	f.dest.lose.Store(true)
	if a := f.post("/v1/runs", tokOperator, startBody("refund-lost", smallRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	p := f.waitFor("refund-lost", tokViewer, "a person's reconciliation", func(p RunPage) bool { return len(p.Unknown) > 0 })
	if p.Effects[0].Receipt != nil {
		t.Fatal("an unknown outcome has a receipt")
	}
	body := fmt.Sprintf(`{"intent_id":%q,"resolution":"confirmed_success"}`, p.Unknown[0])
	for _, tok := range []string{tokAgent, tokApprover, tokOperator, tokViewer} {
		if a := f.post("/v1/runs/refund-lost/reconcile", tok, body); a.status != 403 {
			t.Fatalf("reconcile without the role: %d", a.status)
		}
	}
	f.dest.lose.Store(false)
	if a := f.post("/v1/runs/refund-lost/reconcile", tokReconciler, body); a.status != 202 {
		t.Fatalf("reconcile: %d %s", a.status, a.body)
	}
	p = f.waitFor("refund-lost", tokViewer, "its end", ended)
	if p.Run.State != "SUCCEEDED" || len(f.sb.Mutations()) != 1 {
		t.Fatalf("reconciled run %s with %d mutations", p.Run.State, len(f.sb.Mutations()))
	}
	assertActor(t, f, "refund-lost", "reconcile", "rita", "human_reconciler", "receipt.confirm_external")
}

func TestCancelAndSubmit(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokAgent, startBody("refund-c", largeRefund)); a.status != 201 {
		t.Fatalf("agent start: %d %s", a.status, a.body)
	}
	f.waitFor("refund-c", tokViewer, "an approval wait", waiting)
	if a := f.post("/v1/runs/refund-c/inputs", tokAgent, `{"input":{"refunds":[{"id":"r-2003","amount":10,"payee":"dan","reason":"x"}]}}`); a.status != 202 {
		t.Fatalf("agent submit: %d %s", a.status, a.body)
	}
	in, err := f.store.Inbox(context.Background(), "refund-c", false)
	if err != nil {
		t.Fatal(err)
	}
	lastIn := in[len(in)-1]
	if lastIn.Actor != "bot" || lastIn.ActorRole != "agent" {
		t.Fatalf("agent input recorded as %s/%s", lastIn.Actor, lastIn.ActorRole)
	}
	// The run waits for an approval: the input waits in its inbox, and the
	// run page says so.
	if p := f.page("refund-c", tokViewer); p.Inbox != 1 {
		t.Fatalf("run page of a run holding one unread input: inbox_pending %d", p.Inbox)
	}
	if a := f.post("/v1/runs/refund-c/cancel", tokAgent, `{}`); a.status != 403 {
		t.Fatalf("agent cancel: %d", a.status)
	}
	if a := f.post("/v1/runs/refund-c/cancel", tokOperator, `{"reason":"customer withdrew"}`); a.status != 202 {
		t.Fatalf("cancel: %d %s", a.status, a.body)
	}
	p := f.waitFor("refund-c", tokViewer, "its end", ended)
	if p.Run.State != "CANCELED" || p.Inbox != 1 {
		t.Fatalf("cancelled run ended %s with %d unread inputs, want CANCELED and the one it never read", p.Run.State, p.Inbox)
	}
	assertActor(t, f, "refund-c", "cancel", "oscar", "authorized_requester", "run.cancel")
	// An ended run refuses more input: a conflict, not a server error.
	if a := f.post("/v1/runs/refund-c/inputs", tokOperator, `{"input":{"refunds":[]}}`); a.status != 409 {
		t.Fatalf("input to an ended run: %d %s", a.status, a.body)
	}
}

func TestListRunsFiltersAndPages(t *testing.T) {
	f := newFixture(t, tokenFileText)
	for i := range 7 {
		// Refund ids are the idempotency keys' stem: each run pays its own.
		amount := 40
		if i%2 == 0 {
			amount = 900
		}
		input := fmt.Sprintf(`{"refunds":[{"id":"r-30%02d","amount":%d,"payee":"erin","reason":"r"}]}`, i, amount)
		if a := f.post("/v1/runs", tokOperator, startBody(fmt.Sprintf("run-%02d", i), input)); a.status != 201 {
			t.Fatalf("start: %d %s", a.status, a.body)
		}
	}
	for i := range 7 {
		f.waitFor(fmt.Sprintf("run-%02d", i), tokViewer, "a wait or an end", func(p RunPage) bool { return waiting(p) || ended(p) })
	}
	var all []string
	after := ""
	for pages := 0; ; pages++ {
		a := f.get("/v1/runs?limit=3&after="+after, tokViewer)
		var l struct {
			Runs []RunView `json:"runs"`
			Next string    `json:"next_after"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &l) != nil {
			t.Fatalf("list: %d %s", a.status, a.body)
		}
		for _, r := range l.Runs {
			all = append(all, r.ID)
		}
		if l.Next == "" {
			break
		}
		after = l.Next
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(all, ",") != "run-00,run-01,run-02,run-03,run-04,run-05,run-06" {
		t.Fatalf("paged runs %v", all)
	}
	var l struct {
		Runs []RunView `json:"runs"`
	}
	a := f.get("/v1/runs?state=WAIT_APPROVAL&workflow=refund-agent@1", tokViewer)
	json.Unmarshal(a.body, &l)
	if len(l.Runs) != 4 {
		t.Fatalf("WAIT_APPROVAL runs: %s", a.body)
	}
	for _, r := range l.Runs {
		if r.State != "WAIT_APPROVAL" {
			t.Fatalf("filter let %s through", r.State)
		}
	}
	a = f.get("/v1/runs?workflow=other", tokViewer)
	json.Unmarshal(a.body, &l)
	if a.status != 200 || len(l.Runs) != 0 {
		t.Fatalf("other workflow: %s", a.body)
	}
	// Metrics see the runs and the approvals waiting.
	m := f.get("/metrics", tokViewer)
	for _, want := range []string{`flrh_runs{state="WAIT_APPROVAL"} 4`, `flrh_approvals_waiting 4`, `flrh_http_requests_total{method="POST",route="/v1/runs",status="201"} 7`, "flrh_http_request_duration_seconds_bucket"} {
		if !strings.Contains(string(m.body), want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
	if a := f.get("/metrics", ""); a.status != 401 {
		t.Fatalf("metrics without a token: %d", a.status)
	}
}

// assertActor checks that the run's one act of the kind was recorded as
// the token's actor with the role and capability of that act.
func assertActor(t *testing.T, f *fixture, runID, kind, actor, role, capability string) {
	t.Helper()
	in, err := f.store.Inbox(context.Background(), runID, false)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range in {
		if e.Kind != kind {
			continue
		}
		found++
		if e.Actor != actor || e.ActorRole != role || e.Capability != capability {
			t.Fatalf("%s recorded as %s/%s/%s, want %s/%s/%s", kind, e.Actor, e.ActorRole, e.Capability, actor, role, capability)
		}
	}
	if found != 1 {
		t.Fatalf("%d %s acts recorded, want 1", found, kind)
	}
}
