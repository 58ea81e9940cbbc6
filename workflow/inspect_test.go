package workflow

import (
	"slices"
	"testing"
)

func TestInspect(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, _ := w.Init("run-view")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 300, "bob", "late")})
	v, err := w.Inspect(r.State)
	if err != nil {
		t.Fatal(err)
	}
	if v.RunID != "run-view" || v.LogicalTime != 1 || v.MRPState != "HOLD" || len(v.Pending) != 1 || len(v.Open) != 1 ||
		v.Pending[0].Approver != "finance-lead" || v.Pending[0].IntentID != v.Open[0] || v.Domain["requests"] != int64(1) || v.Supports != 1 {
		t.Fatalf("%+v", v)
	}
	st2, _ := w.Init("run-view-2")
	r, _ = w.Decide(st2, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-2", 30, "carol", "goodwill")})
	v, _ = w.Inspect(r.State)
	if v.MRPState != "OPTIONS" || !slices.Equal(v.Options, []string{"path:partial-refund", "path:store-credit"}) || len(v.Open) != 0 {
		t.Fatalf("%+v", v)
	}
	if _, err := w.Inspect([]byte(`{"kind":"other"}`)); err == nil {
		t.Fatal("a foreign document was read as a workflow state")
	}
}
