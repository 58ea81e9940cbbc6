package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// An agent's input may carry what producing it cost; the run charges it
// when it accepts the input, and reports out of range are refused. (That a
// submitted input's report is charged is the runner's own test: a demo run
// takes no input after its first.)
func TestSubmitWithAUsageReport(t *testing.T) {
	f := newFixture(t, tokenFileText)
	// A first input the workflow refuses creates nothing, usage or not.
	a := f.post("/v1/runs", tokAgent, `{"workflow":"refund-agent","run_id":"refund-u","input":{"note":"hello"},"usage":{"tokens":5}}`)
	if typ, field := a.errorOf(t); a.status != 422 || typ != TypeInvalid || field != "/input" {
		t.Fatalf("start with a refused input: %d %s", a.status, a.body)
	}
	// A refund large enough to wait for a person keeps the run live while
	// inputs with reports are handed in.
	if a := f.post("/v1/runs", tokAgent, `{"workflow":"refund-agent","run_id":"refund-u","input":`+largeRefund+`,"usage":{"tokens":5}}`); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	need := f.waitFor("refund-u", tokViewer, "an approval wait", waiting).Waiting[0]
	for _, tc := range []struct {
		body, field string
	}{
		{`{"input":{"refunds":[]},"usage":{"tokens":-1}}`, "/usage/tokens"},
		{`{"input":{"refunds":[]},"usage":{"cost_micros":4503599627370497}}`, "/usage/cost_micros"},
		{`{"input":{"refunds":[]},"usage":{"tokens":1,"dollars":2}}`, "/usage"},
		{`{"input":{"format":"flrh-reported-input/1","input":{},"usage":{"cost_micros":0,"tokens":5}}}`, "/input/format"},
	} {
		if a := f.post("/v1/runs", tokAgent, strings.Replace(tc.body, `{"input"`, `{"workflow":"refund-agent","input"`, 1)); a.status != 422 {
			t.Fatalf("start %s: %d %s", tc.body, a.status, a.body)
		}
		a := f.post("/v1/runs/refund-u/inputs", tokAgent, tc.body)
		if typ, field := a.errorOf(t); a.status != 422 || typ != TypeInvalid || !strings.HasPrefix(field, tc.field) {
			t.Fatalf("%s: %d %s", tc.body, a.status, a.body)
		}
	}
	approve := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)
	if a := f.post("/v1/runs/refund-u/approve", tokApprover, approve); a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if p := f.waitFor("refund-u", tokViewer, "its end", ended); p.Run.State != "SUCCEEDED" {
		t.Fatalf("run ended %s", p.Run.State)
	}
	st, err := f.runner.Inspect(context.Background(), "refund-u")
	if err != nil {
		t.Fatal(err)
	}
	// The start's report is charged; the refused ones are not.
	if st.Budget.Used.Tokens != 5 || st.Budget.Used.CostMicros != 0 {
		t.Fatalf("budget %+v", st.Budget)
	}
}
