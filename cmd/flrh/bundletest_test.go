package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flrh bundle test runs a bundle's own cases: the examples' pass; a case
// that fails is named with its step (exit 1); a case file that cannot be
// read is a usage error (exit 2), as is a bundle with no cases.
func TestBundleTestOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	examples := filepath.Join("..", "..", "examples")
	for _, name := range []string{"refund-agent", "ops-agent", "support-agent"} {
		out, err := flrh(bin, nil, "bundle", "test", filepath.Join(examples, name), "--json")
		var rep policyReport
		if exitStatus(t, err) != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep) < 3 {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	dir := t.TempDir()
	failing := filepath.Join(dir, "failing.yaml")
	if err := os.WriteFile(failing, []byte(`cases:
  - name: a large refund paid outright
    steps:
      - input: {type: refund.requested/1, payload: {refund_id: r-1, amount: 900, payee: bob, reason: late}}
        expect: {outcomes: [INTENT]}
  - name: a small one
    steps:
      - input: {type: refund.requested/1, payload: {refund_id: r-2, amount: 9, payee: bob, reason: late}}
        expect: {outcomes: [INTENT]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := flrh(bin, nil, "bundle", "test", filepath.Join(examples, "refund-agent"), failing)
	if exitStatus(t, err) != 1 || !strings.Contains(out, "FAIL "+failing+": a large refund paid outright: step 1: outcomes [APPROVAL_REQUEST], want [INTENT]") ||
		!strings.Contains(out, "ok   "+failing+": a small one (1 steps)") || !strings.Contains(out, "2 cases, 1 failed") {
		t.Fatalf("a failing case: %v\n%s", err, out)
	}
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("cases:\n  - name: a\n    steps: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := flrh(bin, nil, "bundle", "test", filepath.Join(examples, "refund-agent"), broken); exitStatus(t, err) != 2 || !strings.Contains(out, broken+":3:") || !strings.Contains(out, "/cases/0/steps") {
		t.Fatalf("a broken case file: %v\n%s", err, out)
	}
	bare := filepath.Join(dir, "bare")
	if err := os.CopyFS(bare, os.DirFS(filepath.Join(examples, "refund-agent"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bare, "policy.test.yaml")); err != nil {
		t.Fatal(err)
	}
	if out, err := flrh(bin, nil, "bundle", "test", bare); exitStatus(t, err) != 2 || !strings.Contains(out, "has no test cases") {
		t.Fatalf("a bundle without cases: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "bundle", "test", dir); exitStatus(t, err) != 2 || !strings.Contains(out, "is not a bundle directory") {
		t.Fatalf("not a bundle: %v\n%s", err, out)
	}
}
