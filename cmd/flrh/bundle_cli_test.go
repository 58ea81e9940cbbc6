package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/yamlbundle"
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
			if !strings.Contains(out, "receipt") || !strings.Contains(out, "confirmed_success") ||
				!strings.Contains(out, "budget: steps 2/64, tool calls 1/24") {
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

// TestEditedBundleDoesNotAdvanceARun: a run started from a bundle
// directory is not advanced by an edited definition of the same id and
// version; the command is refused and the run stays as it was.
func TestEditedBundleDoesNotAdvanceARun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	bundleDir := filepath.Join(dir, "refund")
	if err := os.CopyFS(bundleDir, os.DirFS(filepath.Join("..", "..", "examples", "refund-agent"))); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(bundleDir, "workflow.json")
	setTTL := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		edited := bytes.Replace(b, []byte(`"ttl": `+from), []byte(`"ttl": `+to), 1)
		if bytes.Equal(edited, b) {
			t.Fatalf("the manifest has no ttl %s to edit", from)
		}
		if err := os.WriteFile(manifest, edited, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Our own definition, not the embedded example's.
	setTTL("1000000", "1500000")
	storeFlag := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
	input := `{"type":"refund.requested/1","payload":{"refund_id":"r-e","amount":400,"payee":"alice","reason":"damaged item"}}`
	out, err := flrh(bin, nil, "run", "start", bundleDir, "--id", "e", "--input-json", input, storeFlag)
	if err != nil || !strings.Contains(out, "WAIT_APPROVAL") {
		t.Fatalf("start: %v\n%s", err, out)
	}
	req := approvalRequest.FindString(out)
	setTTL("1500000", "2000000")
	out, err = flrh(bin, nil, "approve", "e", req, "--as", "finance-lead", storeFlag, "--workflows", bundleDir)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "not loaded") {
		t.Fatalf("approve under an edited definition: %v\n%s", err, out)
	}
	out, err = flrh(bin, nil, "run", "show", "e", storeFlag)
	if err != nil || !strings.Contains(out, "state WAIT_APPROVAL") || strings.Contains(out, "QUARANTINED") {
		t.Fatalf("the run moved or was quarantined: %v\n%s", err, out)
	}
}

// TestWorkflowsDirectoryOverTheCLI: bundles in a --workflows directory are
// started by id (ahead of the embedded examples), and deny, cancel and
// resume find them again from the same flag.
func TestWorkflowsDirectoryOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	wfDir := filepath.Join(dir, "workflows")
	opsDir := filepath.Join(wfDir, "ops")
	if err := os.CopyFS(opsDir, os.DirFS(filepath.Join("..", "..", "examples", "ops-agent"))); err != nil {
		t.Fatal(err)
	}
	// A definition of our own, so that only --workflows can supply it.
	manifest := filepath.Join(opsDir, "workflow.json")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(b, []byte(`"ttl": 1000000`), []byte(`"ttl": 1234567`), 1)
	if bytes.Equal(edited, b) {
		t.Fatal("the ops manifest has no ttl to edit")
	}
	if err := os.WriteFile(manifest, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	storeFlag := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
	dest := "--destination=" + base + "/v1/effects"
	wfs := "--workflows=" + wfDir
	run := func(args ...string) string {
		t.Helper()
		out, err := flrh(bin, nil, args...)
		if err != nil {
			t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	restart := `{"type":"restart.requested/1","payload":{"restart_id":"%s","service":"api","target":"dest:ops-api","reason":"memory leak"}}`

	out := run("run", "start", "ops-agent", "--id", "d", "--input-json", fmt.Sprintf(restart, "rst-d"), storeFlag, dest, wfs)
	req := approvalRequest.FindString(out)
	if !strings.Contains(out, "WAIT_APPROVAL") || req == "" {
		t.Fatalf("a restart should wait for approval:\n%s", out)
	}
	// Without the directory the run's definition is not loaded.
	if out, err := flrh(bin, nil, "deny", "d", req, "--as", "oncall-lead", storeFlag, dest); err == nil || !strings.Contains(out, "not loaded") {
		t.Fatalf("deny without --workflows: %v\n%s", err, out)
	}
	out = run("deny", "d", req, "--as", "oncall-lead", storeFlag, dest, wfs)
	if !strings.Contains(out, "FAILED_PERMANENT") {
		t.Fatalf("deny:\n%s", out)
	}

	out = run("run", "start", "ops-agent", "--id", "c", "--input-json", fmt.Sprintf(restart, "rst-c"), storeFlag, dest, wfs)
	if !strings.Contains(out, "WAIT_APPROVAL") {
		t.Fatalf("start:\n%s", out)
	}
	out = run("cancel", "c", "--as", "oncall-lead", storeFlag, dest, wfs)
	if !strings.Contains(out, "CANCELED (outcome canceled)") || strings.Contains(out, "waits for") {
		t.Fatalf("cancel:\n%s", out)
	}
	run("run", "resume", storeFlag, dest, wfs)
	if n := len(mutations(t, base)); n != 0 {
		t.Fatalf("%d mutations after a denial and a cancellation", n)
	}
	for _, id := range []string{"d", "c"} {
		if out := run("verify", id, storeFlag); !strings.Contains(out, "verified") {
			t.Fatalf("verify %s:\n%s", id, out)
		}
		if out := run("replay", id, storeFlag, wfs); !strings.Contains(out, "identical") {
			t.Fatalf("replay %s:\n%s", id, out)
		}
	}
}

// A bundle written in YAML runs from the command line as its JSON twin
// does: named directly, or as one of a directory of bundles, and a run it
// started replays against it.
func TestRunAYAMLBundle(t *testing.T) {
	c := newCLIRig(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "refund")
	if err := os.Rename(yamlbundle.FromJSON(t, filepath.Join("..", "..", "examples", "refund-agent")), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "workflow.json")); err == nil {
		t.Fatal("the YAML bundle has a workflow.json")
	}
	small := `{"type":"refund.requested/1","payload":{"refund_id":"r-9","amount":40,"payee":"alice","reason":"damaged"}}`
	out := c.ok("run", "start", dir, "--id", "y1", "--input-json", small, c.dest)
	if !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("run start with a YAML bundle:\n%s", out)
	}
	out = c.ok("run", "start", parent, "--id", "y2", "--input-json", largeRefund, c.dest)
	if !strings.Contains(out, "WAIT_APPROVAL") {
		t.Fatalf("run start with a directory holding a YAML bundle:\n%s", out)
	}
	if out := c.ok("replay", "y1", "--workflows", parent); !strings.Contains(out, "run y1: identical") {
		t.Fatalf("replay against the YAML bundle:\n%s", out)
	}
	// An input file written in YAML is the JSON value it spells; one
	// YAML refuses changes nothing.
	in := filepath.Join(t.TempDir(), "refund.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# a small refund\ntype: refund.requested/1\npayload:\n  refund_id: r-10\n  amount: 30\n  payee: bob\n  reason: late\n")
	if out := c.ok("run", "start", dir, "--id", "y3", "--input", in, c.dest); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("run start with a YAML input:\n%s", out)
	}
	write("type: refund.requested/1\npayload:\n  refund_id: r-11\n  amount: 30.5\n")
	if out, code := c.run("run", "start", dir, "--id", "y4", "--input", in, c.dest); code != exitUsage || !strings.Contains(out, "line 4") {
		t.Fatalf("run start with a float in a YAML input: exit %d\n%s", code, out)
	}
	if out, code := c.run("run", "show", "y4"); code == 0 {
		t.Fatalf("a refused input started run y4:\n%s", out)
	}
}
