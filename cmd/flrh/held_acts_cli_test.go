package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestActsOnHeldProposalsOverTheCLI tries a person's acts around a kept
// (escalated) restart through separate flrh processes, each refused act
// changing nothing (same events, same state): reject_all or resume naming
// a proposal that does not exist, exit naming one; a second RESUME while
// the first one's approval waits; an approval after the person exited
// (refused, never run; the denial then ends the run). On a second run a
// person declines the kept restart (reject_all, row H12: withdrawn, the run
// lives on in HOLD); on a third, a cancel while the restart is kept (the
// run ends, nothing is decided again, a later RESUME is refused). Every
// run verifies and replays byte for byte and the sandbox sees no restart.
func TestActsOnHeldProposalsOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	bin, base, storeFlag, dest, run := c.bin, c.base, c.store, c.dest, c.must
	wfs := "--workflows=example:ops-agent"
	type shown struct {
		Run struct {
			State  string `json:"state"`
			Events int    `json:"events"`
		} `json:"run"`
		MRP  string `json:"mrp_state"`
		Held []struct {
			ProposalID string `json:"proposal_id"`
		} `json:"held"`
	}
	show := func(id string) shown {
		t.Helper()
		var s shown
		out := run("run", "show", id, "--json", storeFlag, wfs)
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("run show --json: %v\n%s", err, out)
		}
		return s
	}
	refused := func(id, why string, args ...string) {
		t.Helper()
		before := show(id)
		out, err := flrh(bin, nil, args...)
		if err == nil || !strings.Contains(out, why) {
			t.Fatalf("flrh %s: want refused with %q, got %v\n%s", strings.Join(args, " "), why, err, out)
		}
		if after := show(id); after.Run.Events != before.Run.Events || after.Run.State != before.Run.State || after.MRP != before.MRP || len(after.Held) != len(before.Held) {
			t.Fatalf("a refused %s changed the run: %+v then %+v", args[0], before, after)
		}
	}
	input := `{"type":"restart.requested/1","payload":{"restart_id":"rst-9","service":"api","target":"dest:ops-api","reason":"unknown"}}`

	run("run", "start", "example:ops-agent", "--id", "esc", "--input-json", input, storeFlag, dest)
	s := show("esc")
	if len(s.Held) != 1 || s.MRP != "ESCALATE" {
		t.Fatalf("start: %+v", s)
	}
	pid := s.Held[0].ProposalID
	refused("esc", "CONTROL_NOT_PENDING", "mrp", "esc", "reject_all", "--proposal", "proposal:nope", "--as", "oncall-lead", storeFlag, dest, wfs)
	refused("esc", "CONTROL_NOT_PENDING", "mrp", "esc", "resume", "--proposal", "proposal:nope", "--as", "oncall-lead", storeFlag, dest, wfs)
	refused("esc", "--proposal goes with reject_all or resume only", "mrp", "esc", "exit", "--proposal", pid, "--as", "oncall-lead", storeFlag, dest, wfs)
	out := run("mrp", "esc", "resume", "--proposal", pid, "--as", "oncall-lead", storeFlag, dest, wfs)
	req := approvalRequest.FindString(out)
	if req == "" {
		t.Fatalf("resume:\n%s", out)
	}
	refused("esc", "CONTROL_MRP_REFUSED", "mrp", "esc", "resume", "--as", "oncall-lead", storeFlag, dest, wfs)
	run("mrp", "esc", "exit", "--reason", "false alarm", "--as", "dana", storeFlag, dest, wfs)
	refused("esc", "dana's EXIT", "approve", "esc", req, "--as", "oncall-lead", storeFlag, dest, wfs)
	if out := run("deny", "esc", req, "--as", "oncall-lead", storeFlag, dest, wfs); !strings.Contains(out, "FAILED_PERMANENT") {
		t.Fatalf("deny:\n%s", out)
	}

	// A person declines the escalated restart without ending the run
	// (row H12): withdrawn, deliberation back in HOLD, the run live; with
	// nothing kept any more, REJECT_ALL is refused there as before.
	run("run", "start", "example:ops-agent", "--id", "declined", "--input-json", input, storeFlag, dest)
	did := show("declined").Held[0].ProposalID
	out = run("mrp", "declined", "reject_all", "--proposal", did, "--reason", "not this time", "--as", "oncall-lead", storeFlag, dest, wfs)
	if d := show("declined"); len(d.Held) != 0 || d.MRP != "HOLD" || d.Run.State != "INGEST" || approvalRequest.MatchString(out) ||
		!strings.Contains(out, "withdrawn by oncall-lead (REJECT_ALL)") {
		t.Fatalf("reject_all of the kept restart: %+v\n%s", d, out)
	}
	refused("declined", "CONTROL_MRP_REFUSED", "mrp", "declined", "reject_all", "--as", "oncall-lead", storeFlag, dest, wfs)
	refused("declined", "CONTROL_MRP_REFUSED", "mrp", "declined", "resume", "--as", "oncall-lead", storeFlag, dest, wfs)

	run("run", "start", "example:ops-agent", "--id", "gone", "--input-json", input, storeFlag, dest)
	if out := run("cancel", "gone", "--as", "oncall-lead", storeFlag, dest, wfs); !strings.Contains(out, "CANCELED") {
		t.Fatalf("cancel:\n%s", out)
	}
	if out := run("run", "show", "gone", storeFlag, wfs); strings.Contains(out, "holds proposal:") || strings.Contains(out, "mrp gone resume") {
		t.Fatalf("a canceled run still offers to decide its kept restart:\n%s", out)
	}
	refused("gone", "has ended (canceled)", "mrp", "gone", "resume", "--as", "oncall-lead", storeFlag, dest, wfs)

	if n := len(mutations(t, base)); n != 0 {
		t.Fatalf("%d restarts at the sandbox", n)
	}
	for _, id := range []string{"esc", "declined", "gone"} {
		if out := run("verify", id, storeFlag); !strings.Contains(out, "verified") {
			t.Fatalf("verify %s:\n%s", id, out)
		}
		if out := run("replay", id, storeFlag, wfs); !strings.Contains(out, "identical") {
			t.Fatalf("replay %s:\n%s", id, out)
		}
	}
}
