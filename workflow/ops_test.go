package workflow

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
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
		{"an unexplained restart is escalated to a person",
			string(opsInput("restart.requested/1", "rst-4", "api", "dest:ops-api", "reason", "unknown")), 0, false, "ESCALATED", ""},
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
			if c.outcome == "ESCALATED" && o[0]["mrp_state"] != "ESCALATE" {
				t.Fatalf("escalated, but the MRP machine is in %v", o[0]["mrp_state"])
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

// For any diagnostics or restart request: a restart never runs without an
// approval, a diagnostic never asks for one, nothing reaches a service
// that is unmonitored, a frozen service is never restarted, and no effect
// goes to a destination outside the operator's capability.
func TestOpsAgentProperty(t *testing.T) {
	w := compileExample(t, "ops-agent")
	rapid.Check(t, func(rt *rapid.T) {
		st, _ := w.Init("run-ops-prop")
		seq := int64(0)
		for i := 0; i < rapid.IntRange(1, 4).Draw(rt, "inputs"); i++ {
			restart := rapid.Bool().Draw(rt, "restart")
			service := rapid.SampledFrom([]string{"api", "billing", "search"}).Draw(rt, "service")
			target := rapid.SampledFrom([]string{"dest:ops-" + service, "dest:ops-elsewhere", "dest:prod-" + service}).Draw(rt, "target")
			typ, key := "diagnostics.requested/1", "probe"
			if restart {
				typ, key = "restart.requested/1", "reason"
			}
			seq++
			r, err := w.Decide(st, Input{Seq: seq, Kind: KindInput, Body: opsInput(typ, fmt.Sprintf("op-%d", i), service, target, key, "x")})
			if err != nil || r.Refusal != "" {
				rt.Fatal(err, r.Refusal)
			}
			st = r.State
			for _, e := range r.Effects {
				switch {
				case service == "search":
					rt.Fatalf("an unmonitored service got %s", e.Intent.EffectType)
				case restart && service == "billing":
					rt.Fatal("a frozen service was restarted")
				case !strings.HasPrefix(target, "dest:ops-"):
					rt.Fatalf("an effect to %s", target)
				case restart && (e.Approval == nil || target == "dest:ops-elsewhere"):
					rt.Fatalf("restart via %s, approval %v", target, e.Approval)
				case !restart && e.Approval != nil:
					rt.Fatal("a diagnostic asked for approval")
				}
				seq++
				rr, err := w.Decide(st, Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(e, protocol.OutcomeConfirmedSuccess)})
				if err != nil || rr.Refusal != "" {
					rt.Fatal(err, rr.Refusal)
				}
				st = rr.State
			}
		}
	})
}
