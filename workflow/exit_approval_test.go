package workflow

import (
	"strings"
	"testing"

	"flrh.dev/flrh/mrp"
)

// An approval request outlives nothing: once a person's EXIT ended
// deliberation, the grant that would have let the resumed restart through
// is refused, saying why; before the EXIT the same grant is taken. Other
// steering in between (PAUSE, ESCALATE, REQUEST_TEST) leaves the request
// answerable, as before.
func TestGrantAfterExitIsRefused(t *testing.T) {
	w := compileExample(t, "ops-agent")
	st, _ := w.Init("run-exit-grant")
	r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-4", "api", "dest:ops-api", "reason", "unknown")})
	r = mustDecide(t, w, r.State, resumeBy(2, "oncall-lead"))
	need := *r.Effects[0].Approval
	g := grantFor(need, "oncall-lead", "human_approver")
	if _, err := w.AuthorizeApproved(r.State, need, g); err != nil {
		t.Fatalf("before any steering: %v", err)
	}
	for _, tr := range []mrp.Trigger{mrp.Pause, mrp.HumanEscalate, mrp.RequestTest, mrp.HumanExit} {
		capName, _ := mrp.RequiredCapability(tr)
		s := mustDecide(t, w, r.State, controlInput(3, trig(tr), "oncall-lead", "operator", capName))
		eff, err := w.AuthorizeApproved(s.State, need, g)
		if tr != mrp.HumanExit {
			if err != nil || eff.Intent.IntentID != need.IntentID {
				t.Fatalf("after %s: %v", tr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "deliberation ended (EXIT)") || !strings.Contains(err.Error(), need.RequestID) {
			t.Fatalf("a grant after EXIT: %v", err)
		}
	}
}
