package workflow

import (
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// A domain that withdraws a fact (diff -1) retracts its live support in L:
// a withdrawn refund is no longer "requested", so a later proposal that
// needs it is ineligible.
func TestRetraction(t *testing.T) {
	files := readBundle(t, "../examples/refund-agent")
	dom := string(files["domain.json"])
	withdraw := `"refund.withdrawn/1": {
      "payload": {"refund_id": "id", "amount": "nonneg_int", "payee": "id"},
      "facts": [
        {"tuple": {"predicate": "refund_requested", "refund": "$payload.refund_id", "amount": "$payload.amount", "payee": "$payload.payee"},
         "provenance": {"source_event_id": "$event_id"}, "diff": -1}
      ]
    },
    "flrh.receipt/1": {`
	dom = strings.Replace(dom, `"flrh.receipt/1": {`, withdraw, 1)
	files["domain.json"] = []byte(dom)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := w.Init("run-retract")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 500, "bob", "late")})
	if err != nil || len(r.Effects) != 1 {
		t.Fatal(err, outcomes(r))
	}
	in, _ := cjson.Marshal(map[string]any{"type": "refund.withdrawn/1", "payload": map[string]any{"refund_id": "r-1", "amount": int64(500), "payee": "bob"}})
	r2, err := w.Decide(r.State, Input{Seq: 2, Kind: KindInput, Body: in})
	if err != nil || r2.Refusal != "" {
		t.Fatal(err, r2.Refusal)
	}
	v, _ := w.Inspect(r2.State)
	if v.Supports != 0 {
		t.Fatalf("%d supports left after the withdrawal", v.Supports)
	}
	// Withdrawing it again: no live support, refused, nothing changes.
	r3, err := w.Decide(r2.State, Input{Seq: 3, Kind: KindInput, Body: in})
	if err != nil || !strings.Contains(r3.Refusal, "no live support") || string(r3.State) != string(r2.State) {
		t.Fatalf("%v %q", err, r3.Refusal)
	}
}
