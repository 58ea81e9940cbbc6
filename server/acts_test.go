package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// documented fails unless the OpenAPI document lists status among the
// answers of POST path (an OpenAPI path such as /v1/runs/{id}/approve).
func documented(t *testing.T, path string, status int) {
	t.Helper()
	raw, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Paths[path]["post"].Responses[strconv.Itoa(status)]; !ok {
		t.Fatalf("POST %s answers %d, which the OpenAPI document does not list", path, status)
	}
}

// A first input the workflow refuses is refused at POST /v1/runs (422 at
// /input) and creates no run; it used to answer 201 and record the input
// as accepted.
func TestStartRefusesAFirstInputTheWorkflowRefuses(t *testing.T) {
	f := newBundleFixture(t)
	bad := `{"type":"refund.requested/1","payload":{"refund_id":"r-9","amount":"lots","payee":"x","reason":""}}`
	for _, input := range []string{bad, `{"type":"nonsense/1","payload":{}}`, `[1]`} {
		a := f.post("/v1/runs", tokDana, fmt.Sprintf(`{"workflow":"refund-agent","run_id":"bad-1","input":%s}`, input))
		if typ, field := a.errorOf(t); a.status != 422 || typ != TypeInvalid || field != "/input" {
			t.Fatalf("%s: %d %s", input, a.status, a.body)
		}
		documented(t, "/v1/runs", a.status)
		if a := f.get("/v1/runs/bad-1", tokVic); a.status != 404 {
			t.Fatalf("%s: a refused input created the run: %d %s", input, a.status, a.body)
		}
	}
	f.startBundleRun("refund-agent", "bad-1", refundRequest("r-9", 20, "carol", "damaged"))
	if p := f.waitFor("bad-1", tokVic, "its end", ended); p.Run.State != "SUCCEEDED" {
		t.Fatalf("state %s", p.Run.State)
	}
}

// An approver the run's approval policy does not name can neither approve
// nor deny (403): nothing is recorded and the run keeps waiting. A denial
// by them used to fail the run for good.
func TestApproverThePolicyDoesNotNameIsRefused(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("refund-agent", "big-1", refundRequest("r-7001", 900, "bob", "cancelled order"))
	p := f.waitFor("big-1", tokVic, "an approval wait", waiting)
	need := p.Waiting[0]
	head := p.Run.Events
	approve := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)
	for _, act := range []struct{ path, body string }{
		{"/v1/runs/big-1/deny", fmt.Sprintf(`{"request_id":%q}`, need.RequestID)},
		{"/v1/runs/big-1/approve", approve},
	} {
		a := f.post(act.path, tokAlex, act.body)
		if typ, _ := a.errorOf(t); a.status != 403 || typ != TypeForbidden || !strings.Contains(string(a.body), `names \"finance-lead\"`) {
			t.Fatalf("%s by alex: %d %s", act.path, a.status, a.body)
		}
		documented(t, strings.Replace(act.path, "big-1", "{id}", 1), a.status)
	}
	if p := f.page("big-1", tokVic); p.Run.State != "WAIT_APPROVAL" || p.Run.Events != head || len(f.sb.Mutations()) != 0 {
		t.Fatalf("refused acts changed the run: %s, head %d (was %d)", p.Run.State, p.Run.Events, head)
	}
	if a := f.post("/v1/runs/big-1/approve", tokFinance, approve); a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if p := f.waitFor("big-1", tokVic, "its end", ended); p.Run.State != "SUCCEEDED" {
		t.Fatalf("state %s", p.Run.State)
	}
}

// Every act on a run that has ended is refused (409) saying that it has
// ended, and writes nothing.
func TestActsOnAnEndedRunSaySo(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("refund-agent", "done-1", refundRequest("r-7002", 20, "carol", "damaged"))
	p := f.waitFor("done-1", tokVic, "its end", ended)
	acts := []struct{ path, token, body string }{
		{"/v1/runs/done-1/approve", tokFinance, `{"request_id":"approval-request:x","request_digest":"sha256:` + strings.Repeat("0", 64) + `"}`},
		{"/v1/runs/done-1/deny", tokFinance, `{"request_id":"approval-request:x"}`},
		{"/v1/runs/done-1/cancel", tokDana, `{}`},
		{"/v1/runs/done-1/reconcile", tokRita, `{"intent_id":"intent:x","resolution":"abandon"}`},
		{"/v1/runs/done-1/inputs", tokBot, `{"input":` + refundRequest("r-7003", 20, "carol", "damaged") + `}`},
		{"/v1/runs/done-1/choose", tokDana, `{"proposal_id":"proposal:x","option":"path:x"}`},
		{"/v1/runs/done-1/mrp", tokDana, `{"trigger":"pause"}`},
	}
	for _, act := range acts {
		a := f.post(act.path, act.token, act.body)
		if typ, _ := a.errorOf(t); a.status != 409 || typ != TypeConflict || !strings.Contains(string(a.body), "has ended") {
			t.Errorf("%s: %d %s", act.path, a.status, a.body)
		}
		documented(t, strings.Replace(act.path, "done-1", "{id}", 1), 409)
	}
	if q := f.page("done-1", tokVic); q.Run.Events != p.Run.Events {
		t.Fatalf("acts on an ended run moved its head from %d to %d", p.Run.Events, q.Run.Events)
	}
}
