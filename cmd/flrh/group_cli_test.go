package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bundle whose approval policy names a group: run start says who may
// approve, an approval by someone outside the group fails the command
// with the members named and changes nothing, and a member's pays the
// refund, which verifies.
func TestApprovalGroupOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "refund-agent")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "workflow.json" {
			s := strings.Replace(string(b), `"approver": "finance-lead",`, `"approver": "finance-leads", "members": ["alice", "bob"],`, 1)
			if s == string(b) {
				t.Fatal("the example's approval policy changed; update this test")
			}
			b = []byte(s)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wfs := "--workflows=" + dir

	out := c.ok("run", "start", "example:refund-agent", "--id", "one", "--input-json", largeRefund, c.dest)
	if !strings.Contains(out, "    who may approve: finance-lead\n") {
		t.Fatalf("a person's approval does not say who may approve:\n%s", out)
	}
	out = c.ok("run", "start", dir, "--id", "grp", "--input-json", largeRefund, c.dest)
	req := approvalRequest.FindString(out)
	if req == "" || !strings.Contains(out, "    who may approve: any one of alice, bob (members of finance-leads)\n") {
		t.Fatalf("run start:\n%s", out)
	}
	before := c.events("grp")
	out, code := c.run("approve", "grp", req, "--as", "mallory", wfs, c.dest)
	if code != 1 || !strings.Contains(out, `"mallory", who is not among the members of "finance-leads" the approval policy names (alice, bob)`) {
		t.Fatalf("approval by mallory: exit %d\n%s", code, out)
	}
	if n := c.events("grp"); n != before {
		t.Fatalf("a refused approval wrote %d events", n-before)
	}
	out = c.ok("approve", "grp", req, "--as", "bob", wfs, c.dest)
	if !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("after bob's approval:\n%s", out)
	}
	c.ok("verify", "grp")
}
