package server

import (
	"context"
	"strings"
	"testing"
)

// An agent's input may carry what producing it cost; the run charges it
// when it accepts the input, and reports out of range are refused.
func TestSubmitWithAUsageReport(t *testing.T) {
	f := newFixture(t, tokenFileText)
	// A first input the workflow refuses leaves the run waiting for more.
	if a := f.post("/v1/runs", tokAgent, `{"workflow":"refund-agent","run_id":"refund-u","input":{"note":"hello"},"usage":{"tokens":5}}`); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("refund-u", tokViewer, "a refused first input", func(p RunPage) bool { return p.Run.State == "INGEST" })
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
	body := `{"input":{"refunds":[{"id":"r-2009","amount":10,"payee":"dan","reason":"x"}]},"usage":{"tokens":1500,"cost_micros":4200}}`
	if a := f.post("/v1/runs/refund-u/inputs", tokAgent, body); a.status != 202 {
		t.Fatalf("submit: %d %s", a.status, a.body)
	}
	if p := f.waitFor("refund-u", tokViewer, "its end", ended); p.Run.State != "SUCCEEDED" {
		t.Fatalf("run ended %s", p.Run.State)
	}
	st, err := f.runner.Inspect(context.Background(), "refund-u")
	if err != nil {
		t.Fatal(err)
	}
	if st.Budget.Used.Tokens != 1505 || st.Budget.Used.CostMicros != 4200 {
		t.Fatalf("budget %+v", st.Budget)
	}
}
