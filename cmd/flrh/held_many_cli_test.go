package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestManyHeldProposalsOverTheCLI keeps three proposals across inputs: an
// unexplained restart H escalates, then a diagnostic and an explained
// restart H holds while the escalation stands. A person's RESUME decides
// all three again, once each, in the order they were kept (run show lists
// them in that order): the diagnostic runs outright, each restart asks for
// its own approval. Both grants run each restart exactly once; the run
// succeeds, keeps nothing, and verifies and replays byte for byte.
func TestManyHeldProposalsOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	base, storeFlag, dest, run := c.base, c.store, c.dest, c.must
	wfs := "--workflows=example:ops-agent"
	restart := func(id, reason string) string {
		return `{"type":"restart.requested/1","payload":{"restart_id":"` + id + `","service":"api","target":"dest:ops-api","reason":"` + reason + `"}}`
	}
	run("run", "start", "example:ops-agent", "--id", "many", "--input-json", restart("rst-1", "unknown"), storeFlag, dest)
	run("run", "submit", "many", "--as", "agent-7", "--input-json", `{"type":"diagnostics.requested/1","payload":{"check_id":"chk-1","service":"api","target":"dest:ops-api","probe":"health"}}`, storeFlag, dest, wfs)
	out := run("run", "submit", "many", "--as", "agent-7", "--input-json", restart("rst-2", "leak"), storeFlag, dest, wfs)
	if strings.Count(out, "  holds proposal:") != 3 || !strings.Contains(out, "ESCALATED since 1") || !strings.Contains(out, "HELD since 2") || !strings.Contains(out, "HELD since 3") {
		t.Fatalf("three kept:\n%s", out)
	}
	if n := len(mutations(t, base)); n != 0 {
		t.Fatalf("%d calls at the sandbox while everything is kept", n)
	}
	// run show --json lists the same three, in the order kept.
	var view struct {
		Held []struct {
			ProposalID string `json:"proposal_id"`
			Outcome    string `json:"outcome"`
			Since      int64  `json:"since"`
		} `json:"held"`
	}
	js := run("run", "show", "many", "--json", storeFlag, wfs)
	if err := json.Unmarshal([]byte(js), &view); err != nil {
		t.Fatalf("run show --json: %v\n%s", err, js)
	}
	h := view.Held
	if len(h) != 3 || h[0].Outcome != "ESCALATED" || h[0].Since != 1 || h[1].Since != 2 || h[2].Since != 3 || h[1].Outcome != "HELD" {
		t.Fatalf("held %+v\n%s", h, js)
	}
	for i, p := range h {
		if !strings.Contains(out, "holds "+p.ProposalID) || i > 0 && strings.Index(out, p.ProposalID) < strings.Index(out, h[i-1].ProposalID) {
			t.Fatalf("run show and view.held disagree on %s:\n%s", p.ProposalID, out)
		}
	}

	out = run("mrp", "many", "resume", "--as", "oncall-lead", storeFlag, dest, wfs)
	reqs := approvalRequest.FindAllString(out, -1)
	uniq := map[string]bool{}
	for _, r := range reqs {
		uniq[r] = true
	}
	if len(uniq) != 2 || strings.Contains(out, "holds proposal:") || !strings.Contains(out, "WAIT_APPROVAL") {
		t.Fatalf("after the RESUME, want two approval requests and nothing kept:\n%s", out)
	}
	for r := range uniq {
		out = run("approve", "many", r, "--as", "oncall-lead", storeFlag, dest, wfs)
	}
	if !strings.Contains(out, "run many: SUCCEEDED") {
		t.Fatalf("after both approvals:\n%s", out)
	}
	restarts, diags := 0, 0
	for _, m := range mutations(t, base) {
		b, _ := json.Marshal(m)
		switch {
		case strings.Contains(string(b), "rst-1"), strings.Contains(string(b), "rst-2"):
			restarts++
		case strings.Contains(string(b), "chk-1"):
			diags++
		}
	}
	if restarts != 2 || diags != 1 {
		t.Fatalf("%d restarts and %d diagnostics at the sandbox, want 2 and 1: %v", restarts, diags, mutations(t, base))
	}
	js = run("run", "show", "many", "--json", storeFlag, wfs)
	view.Held = nil
	if err := json.Unmarshal([]byte(js), &view); err != nil || len(view.Held) != 0 {
		t.Fatalf("still kept after the run: %v %+v", err, view.Held)
	}
	if out := run("verify", "many", storeFlag); !strings.Contains(out, "verified") {
		t.Fatalf("verify:\n%s", out)
	}
	if out := run("replay", "many", storeFlag, wfs); !strings.Contains(out, "identical") {
		t.Fatalf("replay:\n%s", out)
	}
}
