package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// GET /v1/approvals lists what runs wait for, each with whether the caller
// may approve it now: an approver may, a viewer may not (and is told why),
// mine=true keeps only the caller's; an approved run leaves the list.
func TestListApprovals(t *testing.T) {
	f := newFixture(t, tokenFileText)
	for _, run := range []struct{ id, input string }{{"refund-large", largeRefund}, {"refund-small", smallRefund}} {
		if a := f.post("/v1/runs", tokOperator, startBody(run.id, run.input)); a.status != 201 {
			t.Fatalf("start %s: %d %s", run.id, a.status, a.body)
		}
	}
	p := f.waitFor("refund-large", tokViewer, "an approval wait", waiting)
	f.waitFor("refund-small", tokViewer, "the small refund's end", ended)
	list := func(token, query string) []WaitingApproval {
		t.Helper()
		a := f.get("/v1/approvals"+query, token)
		if a.status != 200 {
			t.Fatalf("GET /v1/approvals%s: %d %s", query, a.status, a.body)
		}
		var body struct {
			Approvals []WaitingApproval `json:"approvals"`
		}
		if err := json.Unmarshal(a.body, &body); err != nil || body.Approvals == nil {
			t.Fatalf("%v: %s", err, a.body)
		}
		return body.Approvals
	}
	need := p.Waiting[0]
	got := list(tokApprover, "")
	if len(got) != 1 || got[0].RunID != "refund-large" || got[0].RequestID != need.RequestID || got[0].RequestDigest != need.RequestDigest ||
		!strings.Contains(got[0].Preview, "900") || !got[0].YouMayApprove || got[0].WhyNot != "" {
		t.Fatalf("alice's list: %+v", got)
	}
	if got := list(tokApprover, "?mine=true"); len(got) != 1 || !got[0].YouMayApprove {
		t.Fatalf("alice's own: %+v", got)
	}
	got = list(tokViewer, "")
	if len(got) != 1 || got[0].YouMayApprove || !strings.Contains(got[0].WhyNot, "no role that approves (approver)") {
		t.Fatalf("vera's list: %+v", got)
	}
	if got := list(tokViewer, "?mine=true"); len(got) != 0 {
		t.Fatalf("vera's own: %+v", got)
	}
	for _, q := range []string{"?mine=yes", "?after=not%20an%20id", "?limit=0", "?state=WAIT_APPROVAL"} {
		if a := f.get("/v1/approvals"+q, tokViewer); a.status != 400 {
			t.Fatalf("GET /v1/approvals%s: %d %s", q, a.status, a.body)
		}
	}
	if a := f.get("/v1/approvals", ""); a.status != 401 {
		t.Fatalf("without a token: %d", a.status)
	}
	// Pages: a second waiting run, one run a page, the cursor between.
	if a := f.post("/v1/runs", tokOperator, startBody("refund-large-2", strings.Replace(largeRefund, "r-2001", "r-2003", 1))); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("refund-large-2", tokViewer, "an approval wait", waiting)
	var runs []string
	for after, pages := "", 0; ; pages++ {
		q := "?limit=1"
		if after != "" {
			q += "&after=" + after
		}
		a := f.get("/v1/approvals"+q, tokApprover)
		var body struct {
			Approvals []WaitingApproval `json:"approvals"`
			Next      string            `json:"next_after"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &body) != nil || len(body.Approvals) > 1 || pages > 3 {
			t.Fatalf("page %d: %d %s", pages, a.status, a.body)
		}
		for _, w := range body.Approvals {
			runs = append(runs, w.RunID)
		}
		if body.Next == "" {
			break
		}
		after = body.Next
	}
	if strings.Join(runs, ",") != "refund-large,refund-large-2" {
		t.Fatalf("paged through %v", runs)
	}

	approve := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)
	if a := f.post("/v1/runs/refund-large/approve", tokApprover, approve); a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	f.waitFor("refund-large", tokViewer, "the large refund's end", ended)
	if got := list(tokApprover, ""); len(got) != 1 || got[0].RunID != "refund-large-2" {
		t.Fatalf("an ended run still listed: %+v", got)
	}
}

// Under a bundle whose approval policy names one person, the list says who
// may approve, answers the person named yes and another approver no, with
// the refusal an approval would get; both answers are what the OpenAPI
// document says.
func TestListApprovalsUnderAPolicy(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("refund-agent", "big-1", refundRequest("r-7101", 900, "bob", "cancelled order"))
	f.waitFor("big-1", tokVic, "an approval wait", waiting)
	schema := answerSchema(t, "/v1/approvals")
	ask := func(token, query string) []WaitingApproval {
		t.Helper()
		a := f.get("/v1/approvals"+query, token)
		if a.status != 200 {
			t.Fatalf("GET /v1/approvals%s: %d %s", query, a.status, a.body)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Fatalf("the answer does not match the document: %v\n%s", err, a.body)
		}
		var body struct {
			Approvals []WaitingApproval `json:"approvals"`
		}
		if err := json.Unmarshal(a.body, &body); err != nil {
			t.Fatal(err)
		}
		return body.Approvals
	}
	if got := ask(tokFinance, ""); len(got) != 1 || !got[0].YouMayApprove || got[0].WhoMayApprove != "finance-lead" {
		t.Fatalf("finance-lead's list: %+v", got)
	}
	got := ask(tokAlex, "")
	if len(got) != 1 || got[0].YouMayApprove || !strings.Contains(got[0].WhyNot, `names "finance-lead"`) || got[0].WhoMayApprove != "finance-lead" {
		t.Fatalf("alex's list: %+v", got)
	}
	if got := ask(tokAlex, "?mine=true"); len(got) != 0 {
		t.Fatalf("alex's own: %+v", got)
	}
	// And the check has teeth: an approval without whether the caller may
	// give it fails.
	if err := schema.Validate(map[string]any{"approvals": []any{map[string]any{"run_id": "r", "workflow": "w", "version": "1"}}}); err == nil {
		t.Fatal("the schema accepted an approval without you_may_approve")
	}
}
