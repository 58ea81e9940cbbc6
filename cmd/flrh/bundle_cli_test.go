package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var approvalRequest = regexp.MustCompile(`approval-request:[0-9a-f]{64}`)

// TestBundleRunOverTheCLI drives a bundle through separate flrh processes
// against a real sandbox: start a large refund (it waits for approval),
// approve it as the approver the bundle names, then verify and replay. The
// bundle is addressed both as an embedded example and as a directory; the
// embedded refund-agent shares its id and version with the built-in Go
// workflow, so later commands must find it by the definition digest the
// run's checkpoint records.
func TestBundleRunOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	input := `{"type":"refund.requested/1","payload":{"refund_id":"r-big","amount":400,"payee":"alice","reason":"damaged item"}}`
	for _, c := range []struct {
		name, ref string
		extra     []string // what later commands are given to find the workflow
	}{
		{name: "example", ref: "example:refund-agent"},
		{name: "directory", ref: filepath.Join("..", "..", "examples", "refund-agent"), extra: []string{"--workflows", filepath.Join("..", "..", "examples", "refund-agent")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
			storeFlag := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
			dest := "--destination=" + base + "/v1/effects"
			run := func(args ...string) string {
				t.Helper()
				out, err := flrh(bin, nil, args...)
				if err != nil {
					t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}

			out := run("run", "start", c.ref, "--id", "big", "--input-json", input, storeFlag, dest)
			if !strings.Contains(out, "WAIT_APPROVAL") {
				t.Fatalf("a 400 refund should wait for approval:\n%s", out)
			}
			req := approvalRequest.FindString(out)
			if req == "" {
				t.Fatalf("no approval request in:\n%s", out)
			}
			if n := len(mutations(t, base)); n != 0 {
				t.Fatalf("%d mutations before approval", n)
			}

			// Someone other than the named approver is refused and nothing moves.
			if out, err := flrh(bin, nil, append([]string{"approve", "big", req, "--as", "mallory", storeFlag, dest}, c.extra...)...); err == nil && !strings.Contains(out, "WAIT_APPROVAL") {
				t.Fatalf("an approval by mallory moved the run:\n%s", out)
			}
			if n := len(mutations(t, base)); n != 0 {
				t.Fatalf("%d mutations after a wrong approver", n)
			}

			out = run(append([]string{"approve", "big", req, "--as", "finance-lead", storeFlag, dest}, c.extra...)...)
			if !strings.Contains(out, "SUCCEEDED (outcome success)") {
				t.Fatalf("approved refund did not succeed:\n%s", out)
			}
			muts := mutations(t, base)
			if len(muts) != 1 {
				t.Fatalf("%d mutations, want exactly 1", len(muts))
			}
			out = run("verify", "big", storeFlag)
			if !strings.Contains(out, "verified") || !strings.Contains(out, "1 approvals consumed") {
				t.Fatalf("verify:\n%s", out)
			}
			out = run(append([]string{"replay", "big", storeFlag}, c.extra...)...)
			if !strings.Contains(out, "identical") || !strings.Contains(out, "1 effects") {
				t.Fatalf("replay:\n%s", out)
			}
			out = run(append([]string{"run", "show", "big", storeFlag}, c.extra...)...)
			if !strings.Contains(out, "receipt") || !strings.Contains(out, "confirmed_success") {
				t.Fatalf("show:\n%s", out)
			}
		})
	}

	t.Run("unknown references are usage errors", func(t *testing.T) {
		dir := t.TempDir()
		for _, ref := range []string{"example:nope", "no-such-workflow"} {
			out, err := flrh(bin, nil, "run", "start", ref, "--input-json", "{}", "--store=sqlite:"+filepath.Join(dir, "s.db"))
			if err == nil || !strings.Contains(out, "nope") && !strings.Contains(out, "no-such-workflow") {
				t.Fatalf("start %s: %v\n%s", ref, err, out)
			}
		}
	})
}
