package mcp

import (
	"context"
	"strings"
	"testing"
)

// An agent reports what its input cost; the run charges it on acceptance.
func TestSubmitInputWithUsage(t *testing.T) {
	f := newFixture(t, fixtureOpts{background: true})
	cs := connect(t, f.deps, nil)
	// A first input the workflow refuses creates no run.
	if res := callRaw(t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "u-1", "input": map[string]any{"note": "hello"},
		"usage": map[string]any{"tokens": 100}}); !res.IsError || !strings.Contains(text(res), "refuses the run's input") {
		t.Fatalf("a refused first input started a run: %s", text(res))
	}
	if res := callRaw(t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "u-1", "input": obj(t, smallRefund), "usage": map[string]any{"tokens": -3}}); !res.IsError || !strings.Contains(text(res), "negative") {
		t.Fatalf("a negative report was accepted: %s", text(res))
	}
	p := call[Progress](t, cs, "start_run", map[string]any{"workflow": "refund-agent", "run_id": "u-1", "input": obj(t, smallRefund),
		"usage": map[string]any{"tokens": 900, "cost_micros": 1200}})
	if p.Run.State != "SUCCEEDED" {
		t.Fatalf("run %+v", p.Run)
	}
	st, err := f.r.Inspect(context.Background(), "u-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Budget.Used.Tokens != 900 || st.Budget.Used.CostMicros != 1200 {
		t.Fatalf("budget %+v", st.Budget)
	}
}
