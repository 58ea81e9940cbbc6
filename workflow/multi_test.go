package workflow

import (
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// Two proposals from one event each get their own R epoch and batch, and
// H decides each: both read-only probes are authorized with distinct
// intents and idempotency keys.
func TestTwoProposalsInOneTick(t *testing.T) {
	files := readBundle(t, "../examples/ops-agent")
	dom := string(files["domain.json"])
	dom = strings.Replace(dom, `"max_proposals": 1`, `"max_proposals": 2`, 1)
	second := `{"effect_type": "diag.read",
         "action": {"check_id": "$payload.check_id", "service": "$payload.service", "probe": "$$second-opinion"},
         "destination": {"id": "$payload.target", "scope": "scope:ops"},
         "goal_id": "goal:diagnose", "obligation_id": "obligation:diagnose",
         "risk_hint": "read_only", "preconditions": ["service:monitored"]},
        {"effect_type": "diag.read",`
	dom = strings.Replace(dom, `{"effect_type": "diag.read",`, second, 1)
	files["domain.json"] = []byte(dom)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := w.Init("run-two")
	in, _ := cjson.Marshal(map[string]any{"type": "diagnostics.requested/1",
		"payload": map[string]any{"check_id": "chk-1", "service": "api", "target": "dest:ops-api", "probe": "health"}})
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: in})
	if err != nil || r.Refusal != "" {
		t.Fatal(err, r.Refusal)
	}
	if len(r.Effects) != 2 {
		t.Fatalf("effects %d: %v", len(r.Effects), outcomes(r))
	}
	a, b := r.Effects[0].Intent, r.Effects[1].Intent
	if a.IntentID == b.IntentID || a.IdempotencyKey == b.IdempotencyKey || a.BatchID == b.BatchID {
		t.Fatalf("two effects share identity: %+v %+v", a, b)
	}
	probes := map[string]bool{}
	for _, e := range r.Effects {
		v, _ := cjson.Decode(e.Payload)
		probes[v.(map[string]any)["probe"].(string)] = true
	}
	if !probes["health"] || !probes["$second-opinion"] {
		t.Fatalf("probes %v", probes)
	}
	// An unmonitored service is ineligible for both.
	in, _ = cjson.Marshal(map[string]any{"type": "diagnostics.requested/1",
		"payload": map[string]any{"check_id": "chk-2", "service": "search", "target": "dest:ops-search", "probe": "health"}})
	r, err = w.Decide(r.State, Input{Seq: 2, Kind: KindInput, Body: in})
	if err != nil || len(r.Effects) != 0 || len(outcomes(r)) != 2 {
		t.Fatalf("%v %d %v", err, len(r.Effects), outcomes(r))
	}
	for _, o := range outcomes(r) {
		if o["outcome"] != "REJECTED" {
			t.Fatalf("outcome %v", o)
		}
	}
}
