package workflow

import (
	"testing"

	"flrh.dev/flrh/cjson"
)

func opsInput(typ, id, service, target, extraKey, extra string) []byte {
	idKey := "check_id"
	if typ == "restart.requested/1" {
		idKey = "restart_id"
	}
	b, _ := cjson.Marshal(map[string]any{"type": typ,
		"payload": map[string]any{idKey: id, "service": service, "target": target, extraKey: extra}})
	return b
}

func TestOpsAgentDecisions(t *testing.T) {
	w := compileExample(t, "ops-agent")
	cases := []struct {
		name, input     string
		effects         int
		approval        bool
		outcome, reason string
	}{
		{"diagnostic is verification-class and runs outright",
			string(opsInput("diagnostics.requested/1", "chk-1", "api", "dest:ops-api", "probe", "health")), 1, false, "INTENT", ""},
		{"restart waits for a person",
			string(opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak")), 1, true, "APPROVAL_REQUEST", ""},
		{"frozen service is ineligible",
			string(opsInput("restart.requested/1", "rst-2", "billing", "dest:ops-billing", "reason", "slow")), 0, false, "REJECTED", "PROPOSAL_INELIGIBLE"},
		{"unmonitored service is ineligible",
			string(opsInput("diagnostics.requested/1", "chk-2", "search", "dest:ops-search", "probe", "health")), 0, false, "REJECTED", "PROPOSAL_INELIGIBLE"},
		{"G1 refuses a restart outside the operations network",
			string(opsInput("restart.requested/1", "rst-3", "api", "dest:ops-elsewhere", "reason", "leak")), 0, false, "REJECTED", "AUTHORITY_DENIED"},
		{"no capability covers another destination: no gate allows, deny by default",
			string(opsInput("diagnostics.requested/1", "chk-3", "api", "dest:prod-api", "probe", "health")), 0, false, "REJECTED", "AUTHORITY_DENIED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := w.Init("run-ops")
			r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: []byte(c.input)})
			if err != nil || r.Refusal != "" {
				t.Fatal(err, r.Refusal)
			}
			o := outcomes(r)
			if len(r.Effects) != c.effects || len(o) != 1 || o[0]["outcome"] != c.outcome {
				t.Fatalf("effects %d outcomes %v", len(r.Effects), o)
			}
			if c.reason != "" {
				rej, _ := o[0]["rejection"].(map[string]any)
				if rej["code"] != c.reason {
					t.Fatalf("rejection %v, want %s", rej, c.reason)
				}
			}
			for _, e := range r.Effects {
				if (e.Approval != nil) != c.approval {
					t.Fatalf("approval %v", e.Approval)
				}
				if c.outcome == "INTENT" && e.Intent.AssessedRisk != "read_only" {
					t.Fatalf("diagnostic assessed %s", e.Intent.AssessedRisk)
				}
			}
		})
	}
}
