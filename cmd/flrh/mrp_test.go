package main

import (
	"strings"
	"testing"
)

// TestMRPOverTheCLI steers a support-agent run waiting in OPTIONS through
// separate flrh processes: pause, a resume the machine refuses (nothing is
// handed to the run), escalate, resume; bad triggers and a missing --as are
// usage errors. The run verifies and replays afterwards.
func TestMRPOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	bin, base, storeFlag, dest, run := c.bin, c.base, c.store, c.dest, c.must
	wfs := "--workflows=example:support-agent"
	input := `{"type":"refund.requested/1","payload":{"refund_id":"r-gw","amount":60,"payee":"carol","reason":"goodwill"}}`
	run("run", "start", "example:support-agent", "--id", "gw", "--input-json", input, storeFlag, dest)

	out := run("mrp", "gw", "pause", "--reason", "checking with the customer", "--as", "dana", storeFlag, dest, wfs)
	if !strings.Contains(out, "MRP HOLD, Journey Strip HOLD → OPTIONS → HOLD") {
		t.Fatalf("pause:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mrp", "gw", "leave_safe_mode", "--as", "dana"}, "CONTROL_MRP_REFUSED"},
		{[]string{"mrp", "gw", "tier1_allow", "--as", "dana"}, "TRIGGER must be one of"},
		{[]string{"mrp", "gw", "pause"}, "--as"},
		{[]string{"mrp", "gw", "pause", "--proposal", "proposal:x", "--as", "dana"}, "reject_all or resume only"},
		{[]string{"mrp", "gw", "reject_all", "--proposal", "proposal:x", "--as", "dana"}, "CONTROL_NOT_PENDING"},
	} {
		out, err := flrh(bin, nil, append(c.args, storeFlag, dest, wfs)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Fatalf("flrh %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
	}
	out = run("mrp", "gw", "escalate", "--as", "dana", storeFlag, dest, wfs)
	if !strings.Contains(out, "MRP ESCALATE") {
		t.Fatalf("escalate:\n%s", out)
	}
	// Resumed, the run is back in OPTIONS with the offer it paused on.
	out = run("mrp", "gw", "RESUME", "--as", "dana", storeFlag, dest, wfs)
	if !strings.Contains(out, "MRP OPTIONS") || !strings.Contains(out, "waits for a choice") {
		t.Fatalf("resume:\n%s", out)
	}
	// EXIT ends deliberation with a summary and the run with a typed outcome.
	out = run("mrp", "gw", "exit", "--reason", "customer withdrew", "--as", "dana", storeFlag, dest, wfs)
	if !strings.Contains(out, "FAILED_PERMANENT") {
		t.Fatalf("exit:\n%s", out)
	}
	if out, err := flrh(bin, nil, "mrp", "gw", "pause", "--as", "dana", storeFlag, dest, wfs); err == nil {
		t.Fatalf("pause after EXIT:\n%s", out)
	}
	if out := run("verify", "gw", storeFlag); !strings.Contains(out, "verified") {
		t.Fatalf("verify:\n%s", out)
	}
	if out := run("replay", "gw", storeFlag, wfs); !strings.Contains(out, "identical") {
		t.Fatalf("replay:\n%s", out)
	}
	if n := len(mutations(t, base)); n != 0 {
		t.Fatalf("%d payments from steering", n)
	}
}

// TestEscalatedRestartResumedOverTheCLI: H escalates an unexplained
// restart and the run keeps it (run show names it and the command that
// resumes); a person's RESUME decides it again, it asks for its approval,
// the approval runs it exactly once at the sandbox, and the run verifies
// and replays byte for byte.
func TestEscalatedRestartResumedOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	base, storeFlag, dest, run := c.base, c.store, c.dest, c.must
	wfs := "--workflows=example:ops-agent"
	input := `{"type":"restart.requested/1","payload":{"restart_id":"rst-4","service":"api","target":"dest:ops-api","reason":"unknown"}}`
	out := run("run", "start", "example:ops-agent", "--id", "esc", "--input-json", input, storeFlag, dest)
	if !strings.Contains(out, "ESCALATED since 1") || approvalRequest.MatchString(out) {
		t.Fatalf("start:\n%s", out)
	}
	if out := run("run", "show", "esc", "--json", storeFlag, wfs); !strings.Contains(out, `"held": [`) || !strings.Contains(out, `"outcome": "ESCALATED"`) {
		t.Fatalf("run show --json:\n%s", out)
	}
	out = run("mrp", "esc", "resume", "--reason", "the leak is known now", "--as", "oncall-lead", storeFlag, dest, wfs)
	req := approvalRequest.FindString(out)
	if req == "" || !strings.Contains(out, "WAIT_APPROVAL") || strings.Contains(out, "ESCALATED since") {
		t.Fatalf("resume:\n%s", out)
	}
	if n := len(mutations(t, base)); n != 0 {
		t.Fatalf("%d restarts before the approval", n)
	}
	out = run("approve", "esc", req, "--as", "oncall-lead", storeFlag, dest, wfs)
	if !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("approve:\n%s", out)
	}
	if m := mutations(t, base); len(m) != 1 {
		t.Fatalf("%d restarts, want exactly one: %v", len(m), m)
	}
	if out := run("verify", "esc", storeFlag); !strings.Contains(out, "verified") {
		t.Fatalf("verify:\n%s", out)
	}
	if out := run("replay", "esc", storeFlag, wfs); !strings.Contains(out, "identical") {
		t.Fatalf("replay:\n%s", out)
	}
}
