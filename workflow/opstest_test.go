package workflow

import (
	"testing"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// The operations example's diagnostics are verification-class (manifest
// side_effects [NONE]). A person who asks for a test before a restart
// gets one: in TEST the diagnostic runs (and a restart does not), and the
// diagnostic's receipt closes the test — a confirmed success passes it
// (TESTS_PASS → DECIDE, R16), a confirmed failure contradicts it
// (TESTS_CONTRADICT → HOLD, R17) — so the run is never left in TEST.
func TestOpsDiagnosticsPassThroughTest(t *testing.T) {
	w := compileExample(t, "ops-agent")
	for _, c := range []struct {
		outcome string
		want    mrp.State
		trigger mrp.Trigger
		row     string
	}{
		{protocol.OutcomeConfirmedSuccess, mrp.Decide, mrp.TestsPass, "R16"},
		{protocol.OutcomeConfirmedFailure, mrp.Hold, mrp.TestsContradict, "R17"},
	} {
		st, _ := w.Init("run-ops-test")
		r, err := w.Decide(st, controlInput(1, map[string]any{"trigger": "REQUEST_TEST", "reason": "probe before restarting"}, "oncall-lead", "operator", "mrp.request_test"))
		if err != nil || r.Refusal != "" {
			t.Fatalf("request_test: %v %q", err, r.Refusal)
		}
		v, _ := w.Inspect(r.State)
		if v.MRPState != "TEST" {
			t.Fatalf("after REQUEST_TEST: %s", v.MRPState)
		}
		// In TEST a restart is not admitted.
		rs, err := w.Decide(r.State, Input{Seq: 2, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak")})
		if err != nil || rs.Refusal != "" {
			t.Fatal(err, rs.Refusal)
		}
		for _, e := range rs.Effects {
			if e.Approval == nil {
				t.Fatalf("a restart ran in TEST without an approval: %+v", e.Intent)
			}
		}
		d, err := w.Decide(r.State, Input{Seq: 2, Kind: KindInput, Body: opsInput("diagnostics.requested/1", "chk-1", "api", "dest:ops-api", "probe", "health")})
		if err != nil || d.Refusal != "" || len(d.Effects) != 1 || d.Effects[0].Approval != nil {
			t.Fatalf("diagnostic in TEST: %v %q effects %d", err, d.Refusal, len(d.Effects))
		}
		v, _ = w.Inspect(d.State)
		if v.MRPState != "TEST" {
			t.Fatalf("the diagnostic left TEST before its receipt: %s", v.MRPState)
		}
		rc, err := w.Decide(d.State, Input{Seq: 3, Kind: KindReceipt, Body: receiptFor(d.Effects[0], c.outcome)})
		if err != nil || rc.Refusal != "" {
			t.Fatalf("receipt: %v %q", err, rc.Refusal)
		}
		v, _ = w.Inspect(rc.State)
		e := v.Journey[len(v.Journey)-1]
		if v.MRPState != string(c.want) || e.Trigger != c.trigger || e.Row != c.row {
			t.Fatalf("%s receipt in TEST: %s, last entry %+v", c.outcome, v.MRPState, e)
		}
	}
}
