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
	// A small refund alone leaves the large refund's assessment and the
	// goodwill rules unexercised: --coverage names them and passes as the
	// case does; --require-coverage fails on them, though every case
	// passes; the example's own cases exercise every rule.
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("cases:\n  - name: a small one\n    steps:\n      - input: {type: refund.requested/1, payload: {refund_id: r-2, amount: 9, payee: bob, reason: late}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gates := filepath.Join(examples, "refund-agent", "gates.dl")
	for _, c := range []struct {
		flag   string
		status int
	}{{"--coverage", 0}, {"--require-coverage", 1}} {
		out, err := flrh(bin, nil, "bundle", "test", filepath.Join(examples, "refund-agent"), small, c.flag)
		if exitStatus(t, err) != c.status || !strings.Contains(out, "1 cases, 0 failed\ncoverage: 2 of 7 gate rules exercised\n") ||
			!strings.Contains(out, "  never   g2.large-refund (assess, "+gates+":6)\n") || !strings.Contains(out, "  never   g3.goodwill (decision, ") {
			t.Fatalf("%s: %v\n%s", c.flag, err, out)
		}
	}
	out, err = flrh(bin, nil, "bundle", "test", filepath.Join(examples, "refund-agent"), "--require-coverage", "--json")
	var covered coveredReport
	if exitStatus(t, err) != 0 || json.Unmarshal([]byte(out), &covered) != nil || len(covered.Cases) < 3 ||
		covered.Coverage.Rules != 7 || covered.Coverage.Exercised != 7 || len(covered.Coverage.Never) != 0 {
		t.Fatalf("the example's coverage: %v\n%s", err, out)
	}
	// --pin: steps written without expectations come back with them, as
	// JSON that passes against the bundle; a step that cannot be taken is
	// a case file error; --pin takes one file and no other flag.
	unpinned := filepath.Join(dir, "unpinned.yaml")
	if err := os.WriteFile(unpinned, []byte("cases:\n  - name: large\n    steps:\n      - input: {type: refund.requested/1, payload: {refund_id: r-3, amount: 900, payee: bob, reason: late}}\n      - approve: finance-lead\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = flrh(bin, nil, "bundle", "test", filepath.Join(examples, "refund-agent"), unpinned, "--pin")
	if exitStatus(t, err) != 0 || !strings.Contains(out, `"outcomes": [`+"\n"+`              "APPROVAL_REQUEST"`) || !strings.Contains(out, `"approval": "approved"`) {
		t.Fatalf("--pin: %v\n%s", err, out)
	}
	pinnedFile := filepath.Join(dir, "pinned.test.json")
	if err := os.WriteFile(pinnedFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := flrh(bin, nil, "bundle", "test", filepath.Join(examples, "refund-agent"), pinnedFile); exitStatus(t, err) != 0 || !strings.Contains(out, "1 cases, 0 failed") {
		t.Fatalf("the pinned file: %v\n%s", err, out)
	}
	lone := filepath.Join(dir, "lone.yaml")
	if err := os.WriteFile(lone, []byte("cases:\n  - name: lone\n    steps:\n      - receipt: confirmed_success\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{lone, "--pin"}, "lone: step 1: a receipt, but no authorized effect is waiting for one"},
		{[]string{unpinned, lone, "--pin"}, "--pin takes exactly one CASEFILE"},
		{[]string{unpinned, "--pin", "--json"}, "--pin takes exactly one CASEFILE, and no other flag"},
	} {
		out, err := flrh(bin, nil, append([]string{"bundle", "test", filepath.Join(examples, "refund-agent")}, c.args...)...)
		if exitStatus(t, err) != 2 || !strings.Contains(out, c.want) {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
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
