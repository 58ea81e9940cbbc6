package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// Random sequences of API calls by random callers: whatever the order, a
// caller without the role is refused with 403 and changes nothing, no call
// is a server error, every payment that reached the destination was either
// within the automatic limit or approved by the approver's token, and every
// run's record verifies.
func TestPropertyOnlyApproversReleaseLargeRefunds(t *testing.T) {
	f := newFixture(t, tokenFileText)
	tokens := []string{tokOperator, tokApprover, tokReconciler, tokViewer, tokAgent}
	roleOf := map[string]string{tokOperator: RoleOperator, tokApprover: RoleApprover, tokReconciler: RoleReconciler, tokViewer: RoleViewer, tokAgent: RoleAgent}
	type runInfo struct{ amount int }
	runs := map[string]runInfo{}
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		var ids []string
		steps := rapid.IntRange(1, 8).Draw(rt, "steps")
		for range steps {
			tok := rapid.SampledFrom(tokens).Draw(rt, "token")
			role := roleOf[tok]
			act := rapid.SampledFrom([]string{"start", "approve", "deny", "cancel", "input"}).Draw(rt, "act")
			if act != "start" && len(ids) == 0 {
				act = "start"
			}
			var a answer
			var perm permission
			switch act {
			case "start":
				n++
				id := fmt.Sprintf("prop-%04d", n)
				amount := rapid.SampledFrom([]int{40, 900}).Draw(rt, "amount")
				a, perm = f.post("/v1/runs", tok, startBody(id, fmt.Sprintf(`{"refunds":[{"id":"r-p%04d","amount":%d,"payee":"p","reason":"x"}]}`, n, amount))), permStart
				if a.status == 201 {
					ids = append(ids, id)
					runs[id] = runInfo{amount}
				}
			default:
				id := rapid.SampledFrom(ids).Draw(rt, "run")
				page := f.page(id, tokViewer)
				req, digest := "approval:none", "sha256:"+strings.Repeat("0", 64)
				if len(page.Waiting) > 0 {
					req, digest = page.Waiting[0].RequestID, page.Waiting[0].RequestDigest
				}
				switch act {
				case "approve":
					a, perm = f.post("/v1/runs/"+id+"/approve", tok, fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, req, digest)), permApprove
				case "deny":
					a, perm = f.post("/v1/runs/"+id+"/deny", tok, fmt.Sprintf(`{"request_id":%q}`, req)), permApprove
				case "cancel":
					a, perm = f.post("/v1/runs/"+id+"/cancel", tok, `{}`), permCancel
				case "input":
					a, perm = f.post("/v1/runs/"+id+"/inputs", tok, `{"input":{"note":"more"}}`), permSubmit
				}
			}
			allowed := slices.Contains(grants[role], perm)
			switch {
			case a.status >= 500:
				rt.Fatalf("%s by %s: %d %s", act, role, a.status, a.body)
			case !allowed && a.status != 403:
				rt.Fatalf("%s by %s without permission: %d", act, role, a.status)
			case allowed && a.status == 403:
				rt.Fatalf("%s by %s refused: %s", act, role, a.body)
			}
		}
	})
	// Let every run settle, then check the world against the record.
	deadline := time.Now().Add(30 * time.Second)
	for id := range runs {
		for {
			// Settled: ended, waiting for a person with no act pending, or
			// nothing pending at all and no effect open.
			p := f.page(id, tokViewer)
			pending, err := f.store.Inbox(context.Background(), id, true)
			if err != nil {
				t.Fatal(err)
			}
			// An input waits in the inbox while the run waits for a person.
			acts := slices.DeleteFunc(slices.Clone(pending), func(in store.Inbound) bool { return in.Kind == "input" })
			if ended(p) || waiting(p) && len(acts) == 0 || len(pending) == 0 && p.Open == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not settle: %+v", id, p.Run)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx := context.Background()
	paid := 0
	for id, info := range runs {
		ins, err := f.store.Intents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			if in.Outbox != "done" {
				continue
			}
			paid++
			if info.amount > 100 {
				if in.ApprovalID == "" {
					t.Fatalf("run %s paid %d without an approval", id, info.amount)
				}
				g, err := f.store.Approval(ctx, in.ApprovalID)
				if err != nil {
					t.Fatal(err)
				}
				var body map[string]any
				json.Unmarshal(g.Body, &body)
				if body["actor"] != "alice" || body["role"] != "human_approver" {
					t.Fatalf("run %s released by %v/%v", id, body["actor"], body["role"])
				}
			}
		}
		if a := f.get("/v1/runs/"+id+"/verify", tokViewer); a.status != 200 || a.json(t)["ok"] != true {
			t.Fatalf("run %s does not verify: %s", id, a.body)
		}
	}
	if got := len(f.sb.Mutations()); got != paid {
		closed := map[string]bool{}
		for id := range runs {
			ins, _ := f.store.Intents(ctx, id)
			for _, in := range ins {
				closed[in.IdempotencyKey] = in.Outbox == "done"
				if in.Outbox != "done" {
					p := f.page(id, tokViewer)
					t.Logf("run %s: intent %s outbox %s route %q; run %s %q open %d unknown %v", id, in.ID, in.Outbox, in.Route, p.Run.State, p.Run.Outcome, p.Open, p.Unknown)
				}
			}
		}
		for _, m := range f.sb.Mutations() {
			if !closed[m.IdempotencyKey] {
				t.Logf("mutation %d key %s has no closed intent", m.Sequence, m.IdempotencyKey)
			}
		}
		t.Fatalf("the destination applied %d mutations, the runs closed %d effects", got, paid)
	}
	t.Logf("%d runs, %d paid", len(runs), paid)
}
