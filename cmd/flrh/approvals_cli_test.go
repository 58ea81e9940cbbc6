package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// flrh approvals lists what runs wait for, oldest run first; with --as, only what that
// person may give now (by Approve's own checks), each with its command,
// and --all the rest with why not. It writes nothing.
func TestApprovalsInboxOverTheCLI(t *testing.T) { onBothStores(t, approvalsInboxOverTheCLI) }

func approvalsInboxOverTheCLI(t *testing.T, c *cliRig) {
	dir := groupBundleDir(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2,`)
	wfs := []string{"--workflows=" + dir, "--workflows=example:refund-agent"}
	one := approvalRequest.FindString(c.ok("run", "start", "example:refund-agent", "--id", "one", "--input-json", largeRefund, c.dest))
	grp := approvalRequest.FindString(c.ok("run", "start", dir, "--id", "grp", "--input-json", largeRefund, c.dest))
	c.ok("run", "start", "example:refund-agent", "--id", "small", "--input-json", strings.Replace(largeRefund, `"amount":600`, `"amount":40`, 1), c.dest)
	events := c.events("one") + c.events("grp")
	inbox := func(args ...string) string {
		return c.ok(append(append([]string{"approvals"}, wfs...), args...)...)
	}

	out := inbox()
	for _, want := range []string{
		"run grp (refund-agent@1) waits for approval " + grp,
		"    who may approve: 2 of alice, bob, carol (members of finance-leads), each approving\n    approved so far: no one yet (0 of 2)\n",
		"run one (refund-agent@1) waits for approval " + one,
		"    who may approve: finance-lead\n    approve with: flrh approve one " + one + " --as NAME\n",
		"    | Action: refund.pay\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("approvals lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "run small") || strings.Index(out, "run grp") < strings.Index(out, "run one") {
		t.Fatalf("approvals lists a run that waits for none, or out of order:\n%s", out)
	}

	out = inbox("--as", "alice")
	if !strings.Contains(out, "    alice may approve: flrh approve grp "+grp+" --as alice\n") || strings.Contains(out, "run one") ||
		!strings.Contains(out, "1 more waiting that alice may not approve now (--all lists them, with why)\n") {
		t.Fatalf("alice's inbox:\n%s", out)
	}
	out = inbox("--as", "alice", "--all")
	if !strings.Contains(out, "run one (refund-agent@1)") || !strings.Contains(out, `    alice may not approve it: `) || !strings.Contains(out, `finance-lead`) {
		t.Fatalf("alice's inbox, all:\n%s", out)
	}
	if out = inbox("--as", "finance-lead"); !strings.Contains(out, "    finance-lead may approve: flrh approve one "+one+" --as finance-lead\n") || strings.Contains(out, "run grp") {
		t.Fatalf("finance-lead's inbox:\n%s", out)
	}
	if n := c.events("one") + c.events("grp"); n != events {
		t.Fatalf("asking wrote %d events", n-events)
	}

	// Once alice has approved, a quorum's second approval is not hers.
	c.ok(append([]string{"approve", "grp", grp, "--as", "alice", c.dest}, wfs...)...)
	if out = inbox("--as", "alice"); !strings.Contains(out, "nothing waits for alice's approval\n") || !strings.Contains(out, "2 more waiting") {
		t.Fatalf("alice's inbox after her approval:\n%s", out)
	}
	var lines []waitingApproval
	for _, l := range strings.Split(strings.TrimSpace(inbox("--as", "bob", "--all", "--json")), "\n") {
		var w waitingApproval
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, w)
	}
	if len(lines) != 2 || lines[1].RunID != "grp" || lines[1].MayApprove == nil || !*lines[1].MayApprove || strings.Join(lines[1].ApprovedBy, ",") != "alice" ||
		lines[0].RunID != "one" || lines[0].MayApprove == nil || *lines[0].MayApprove || lines[0].WhyNot == "" {
		t.Fatalf("bob's inbox as JSON: %+v", lines)
	}

	// A run whose workflow is not loaded is named, not skipped.
	if out = c.ok("approvals", "--workflows=example:refund-agent"); !strings.Contains(out, "run grp (refund-agent@1) waits for an approval that cannot be read here: ") {
		t.Fatalf("without the group's bundle:\n%s", out)
	}
	if _, code := c.run("approvals", "--all"); code != 2 {
		t.Fatalf("--all without --as: exit %d, want 2", code)
	}
}
