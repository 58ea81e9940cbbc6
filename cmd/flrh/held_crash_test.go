package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// killedOrFine reports whether a command run under fault injection was
// killed at its cut point; any other failure fails the test.
func killedOrFine(t *testing.T, err error, out string) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("failed without being killed: %v\n%s", err, out)
	}
	return true
}

// TestCrashWhileAResumedRestartIsDecidedAgain kills the runner with SIGKILL
// at each cut point while an escalated restart a person resumed is decided
// again, its approval taken, and its effect dispatched (the same fault
// plan is armed for the RESUME, the approval and nothing after), then
// recovers with a plain resume. Whatever the cut, the run keeps nothing
// held, the sandbox sees exactly one restart, the run succeeds, and the
// record verifies and replays byte for byte.
func TestCrashWhileAResumedRestartIsDecidedAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	cases := []struct{ cut, fault string }{
		{cut: "before-intent-commit"},
		{cut: "after-intent-commit"},
		{cut: "after-apply-before-receipt"},
		{cut: "during-reconcile", fault: `{"times":1,"drop":true}`},
	}
	for _, c := range cases {
		t.Run(c.cut, func(t *testing.T) {
			base, storeFlag, dest := crashRig(t, bin, c.fault)
			wfs := "--workflows=example:ops-agent"
			crash := []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + c.cut}
			input := `{"type":"restart.requested/1","payload":{"restart_id":"rst-9","service":"api","target":"dest:ops-api","reason":"unknown"}}`
			if out, err := flrh(bin, nil, "run", "start", "example:ops-agent", "--id", "esc", "--input-json", input, storeFlag, dest); err != nil || !strings.Contains(out, "ESCALATED since 1") {
				t.Fatalf("start: %v\n%s", err, out)
			}
			killed := 0
			out, err := flrh(bin, crash, "mrp", "esc", "resume", "--as", "oncall-lead", storeFlag, dest, wfs, "--lease-ttl", crashLeaseTTL)
			if killedOrFine(t, err, out) {
				killed++
				if out, err = flrh(bin, nil, "run", "resume", "esc", storeFlag, dest, wfs, "--wait", resumeWait); err != nil {
					t.Fatalf("recover after the RESUME: %v\n%s", err, out)
				}
			}
			req := approvalRequest.FindString(out)
			if req == "" || !strings.Contains(out, "WAIT_APPROVAL") {
				t.Fatalf("after the RESUME (killed %d):\n%s", killed, out)
			}
			if n := len(mutations(t, base)); n != 0 {
				t.Fatalf("%d restarts before the approval", n)
			}
			out, err = flrh(bin, crash, "approve", "esc", req, "--as", "oncall-lead", storeFlag, dest, wfs, "--lease-ttl", crashLeaseTTL)
			if killedOrFine(t, err, out) {
				killed++
				if out, err = flrh(bin, nil, "run", "resume", "esc", storeFlag, dest, wfs, "--wait", resumeWait); err != nil {
					t.Fatalf("recover after the approval: %v\n%s", err, out)
				}
			}
			if killed == 0 {
				t.Fatalf("the run never reached %s", c.cut)
			}
			if !strings.Contains(out, "run esc: SUCCEEDED") {
				t.Fatalf("after recovery (killed %d):\n%s", killed, out)
			}
			if m := mutations(t, base); len(m) != 1 {
				t.Fatalf("%d restarts at the sandbox, want exactly one: %v", len(m), m)
			}
			out, err = flrh(bin, nil, "run", "show", "esc", "--json", storeFlag, wfs)
			var doc map[string]any
			if err != nil || json.Unmarshal([]byte(out), &doc) != nil {
				t.Fatalf("run show --json: %v\n%s", err, out)
			}
			if strings.Contains(out, `"ESCALATED"`) || strings.Contains(out, `"held": [`) {
				t.Fatalf("the restart is still kept:\n%s", out)
			}
			if out, err := flrh(bin, nil, "verify", "esc", storeFlag); err != nil || !strings.Contains(out, "verified") {
				t.Fatalf("verify: %v\n%s", err, out)
			}
			if out, err := flrh(bin, nil, "replay", "esc", storeFlag, wfs); err != nil || !strings.Contains(out, "identical") {
				t.Fatalf("replay: %v\n%s", err, out)
			}
		})
	}
}

// TestCrashWhileManyKeptProposalsAreCarriedOut keeps three proposals (an
// escalated restart, a diagnostic and a restart held behind it), resumes
// them, and kills the runner at a cut point while the approvals carry the
// three effects out (the diagnostic and both restarts are dispatched in
// the same pass); recovery by a plain resume runs each exactly once.
func TestCrashWhileManyKeptProposalsAreCarriedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	for _, c := range []struct{ cut, fault string }{
		{cut: "after-intent-commit"},
		{cut: "after-apply-before-receipt"},
		{cut: "during-reconcile", fault: `{"times":1,"drop":true}`},
	} {
		t.Run(c.cut, func(t *testing.T) {
			base, storeFlag, dest := crashRig(t, bin, c.fault)
			wfs := "--workflows=example:ops-agent"
			crash := []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + c.cut}
			must := func(args ...string) string {
				t.Helper()
				out, err := flrh(bin, nil, args...)
				if err != nil {
					t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}
			restart := func(id, reason string) string {
				return `{"type":"restart.requested/1","payload":{"restart_id":"` + id + `","service":"api","target":"dest:ops-api","reason":"` + reason + `"}}`
			}
			must("run", "start", "example:ops-agent", "--id", "many", "--input-json", restart("rst-1", "unknown"), storeFlag, dest)
			must("run", "submit", "many", "--as", "agent-7", "--input-json", `{"type":"diagnostics.requested/1","payload":{"check_id":"chk-1","service":"api","target":"dest:ops-api","probe":"health"}}`, storeFlag, dest, wfs)
			must("run", "submit", "many", "--as", "agent-7", "--input-json", restart("rst-2", "leak"), storeFlag, dest, wfs)
			out := must("mrp", "many", "resume", "--as", "oncall-lead", storeFlag, dest, wfs)
			reqs := map[string]bool{}
			for _, r := range approvalRequest.FindAllString(out, -1) {
				reqs[r] = true
			}
			if len(reqs) != 2 {
				t.Fatalf("after the RESUME:\n%s", out)
			}
			killed := 0
			for r := range reqs {
				out, err := flrh(bin, crash, "approve", "many", r, "--as", "oncall-lead", storeFlag, dest, wfs, "--lease-ttl", crashLeaseTTL)
				if killedOrFine(t, err, out) {
					killed++
					out = must("run", "resume", "many", storeFlag, dest, wfs, "--wait", resumeWait)
				}
				if !strings.Contains(out, "WAIT_APPROVAL") && !strings.Contains(out, "run many: SUCCEEDED") {
					t.Fatalf("after approving %s (killed %d):\n%s", r, killed, out)
				}
			}
			if killed == 0 {
				t.Fatalf("the run never reached %s", c.cut)
			}
			if out := must("run", "show", "many", storeFlag, wfs); !strings.Contains(out, "SUCCEEDED") {
				t.Fatalf("after recovery:\n%s", out)
			}
			count := map[string]int{}
			for _, m := range mutations(t, base) {
				b, _ := json.Marshal(m)
				for _, id := range []string{"rst-1", "rst-2", "chk-1"} {
					if strings.Contains(string(b), `\"`+id+`\"`) || strings.Contains(string(b), `"`+id+`"`) {
						count[id]++
					}
				}
			}
			if count["rst-1"] != 1 || count["rst-2"] != 1 || count["chk-1"] != 1 {
				t.Fatalf("calls at the sandbox %v, want each exactly once: %v", count, mutations(t, base))
			}
			if out := must("verify", "many", storeFlag); !strings.Contains(out, "verified") {
				t.Fatalf("verify:\n%s", out)
			}
			if out := must("replay", "many", storeFlag, wfs); !strings.Contains(out, "identical") {
				t.Fatalf("replay:\n%s", out)
			}
		})
	}
}
