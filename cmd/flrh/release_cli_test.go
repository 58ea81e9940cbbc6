package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// A person releases a parked run from the command line: without --as it is
// a usage error; a run whose cause persists is parked again by the pass
// that follows (--json says so); a cancel queued while it is parked is
// taken once it is released, and the record verifies. A run that is not
// parked is refused.
func TestRunReleaseCLI(t *testing.T) {
	c := newCLIRig(t)
	input := strings.NewReplacer(`"amount":600`, `"amount":40`, `"reason":"damaged"`, `"reason":"`+strings.Repeat("x", 2<<20)+`"`).Replace(largeRefund)
	parked := "tripwire DEGRADED_SAFE_MODE: unsendable: "
	c.startUnchecked("example:refund-agent", "huge", input)
	if out, code := c.run("run", "resume", "huge", c.dest); code != 0 || !strings.Contains(out, parked) {
		t.Fatalf("resume: exit %d:\n%s", code, out)
	}
	if out, code := c.run("run", "release", "huge", c.dest); code != 2 || !strings.Contains(out, "--as") {
		t.Fatalf("release without --as: exit %d:\n%s", code, out)
	}

	out := c.ok("run", "release", "huge", "--as", "dana", "--reason", "limit checked", "--json", c.dest)
	var v releaseView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--json: %v:\n%s", err, out)
	}
	if v.RunID != "huge" || v.ReleasedBy != "dana" || v.Capability != "mrp.leave_safe_mode" || v.Reason != "limit checked" ||
		v.State != "INIT" || !strings.HasPrefix(v.Quarantine, parked) {
		t.Fatalf("release of a run whose cause persists: %+v", v)
	}
	if tr := c.ok("run", "trace", "huge", "--json"); strings.Count(tr, `"kind":"release","body"`) != 1 || strings.Count(tr, `"kind":"tripwire","body"`) != 2 {
		t.Fatalf("trace after the release: %d release and %d tripwire records", strings.Count(tr, `"kind":"release","body"`), strings.Count(tr, `"kind":"tripwire","body"`))
	}

	c.ok("cancel", "huge", "--as", "carol", c.dest)
	out = c.ok("run", "release", "huge", "--as", "dana", c.dest)
	if !strings.Contains(out, "run huge released by dana (mrp.leave_safe_mode): released by dana") || !strings.Contains(out, "CANCELED") {
		t.Fatalf("release after a cancel:\n%s", out)
	}
	c.ok("verify", "huge")

	if out, code := c.run("run", "release", "huge", "--as", "dana", c.dest); code != 1 || !strings.Contains(out, "has ended") {
		t.Fatalf("release of an ended run: exit %d:\n%s", code, out)
	}
}
