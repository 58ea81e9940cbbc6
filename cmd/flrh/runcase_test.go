package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flrh run case: runs recorded by real processes (a refund paid outright,
// one approved by finance-lead, a goodwill refund a person chose a path
// for) become cases that pass against the bundle they ran, and fail,
// at the step that differs, against a version that decides otherwise; a
// run of a built-in workflow, or of a bundle not loaded, is refused.
func TestRunCaseOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	dir := t.TempDir()
	wfs := "--workflows=example:refund-agent"
	input := func(id string, amount int, reason string) string {
		return fmt.Sprintf(`{"type":"refund.requested/1","payload":{"refund_id":%q,"amount":%d,"payee":"alice","reason":%q}}`, id, amount, reason)
	}
	if out, code := c.run("run", "start", "example:refund-agent", "--id", "small", "--input-json", input("r-1", 40, "damaged"), c.dest); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("small: %d\n%s", code, out)
	}
	if out, code := c.run("run", "start", "example:refund-agent", "--id", "large", "--input-json", input("r-2", 900, "late"), c.dest); code != 0 {
		t.Fatalf("large: %d\n%s", code, out)
	}
	out, _ := c.run("approvals", wfs, "--json")
	var waiting struct {
		RunID     string `json:"run_id"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(out), &waiting); err != nil || waiting.RunID != "large" {
		t.Fatalf("approvals: %v\n%s", err, out)
	}
	if out, code := c.run("approve", "large", waiting.RequestID, "--as", "finance-lead", wfs, c.dest); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("approve: %d\n%s", code, out)
	}
	if out, code := c.run("run", "start", "example:refund-agent", "--id", "goodwill", "--input-json", input("r-3", 40, "goodwill"), c.dest); code != 0 {
		t.Fatalf("goodwill: %d\n%s", code, out)
	}
	out, _ = c.run("run", "show", "goodwill", wfs, "--json")
	var shown struct {
		Offers []struct {
			ProposalID string `json:"proposal_id"`
		} `json:"offers"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || len(shown.Offers) != 1 {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if out, code := c.run("choose", "goodwill", shown.Offers[0].ProposalID, "path:store-credit", "--as", "dana", wfs, c.dest); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("choose: %d\n%s", code, out)
	}

	lower := filepath.Join(dir, "lower")
	if err := os.CopyFS(lower, os.DirFS(filepath.Join("..", "..", "examples", "refund-agent"))); err != nil {
		t.Fatal(err)
	}
	gates := filepath.Join(lower, "gates.dl")
	g, _ := os.ReadFile(gates)
	if err := os.WriteFile(gates, []byte(strings.NewReplacer("n <= 100.", "n <= 30.", "n > 100.", "n > 30.").Replace(string(g))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		run, steps, fails string // fails: the failure against the lower bundle
	}{
		{"small", "2 steps", "step 1: outcomes [APPROVAL_REQUEST], want [INTENT]"},
		{"large", "3 steps", ""},
		{"goodwill", "3 steps", "step 2: outcomes [APPROVAL_REQUEST], want [INTENT]"},
	} {
		out, code := c.run("run", "case", k.run, wfs)
		if code != 0 || !strings.Contains(out, `"run": "`+k.run+`"`) {
			t.Fatalf("case %s: %d\n%s", k.run, code, out)
		}
		file := filepath.Join(dir, k.run+".test.json")
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, code := c.status("bundle", "test", filepath.Join("..", "..", "examples", "refund-agent"), file); code != 0 || !strings.Contains(out, "ok   "+file+": run "+k.run+" ("+k.steps+")") {
			t.Fatalf("%s against its own bundle: %d\n%s", k.run, code, out)
		}
		out, code = c.status("bundle", "test", lower, file)
		if k.fails == "" {
			if code != 0 {
				t.Fatalf("%s against the lower bundle: %d\n%s", k.run, code, out)
			}
			continue
		}
		if code != 1 || !strings.Contains(out, "FAIL "+file+": run "+k.run+": "+k.fails) {
			t.Fatalf("%s against the lower bundle: %d\n%s", k.run, code, out)
		}
	}

	if out, code := c.run("run", "start", "builtin:refund-agent", "--id", "builtin", "--input-json", `{"refunds":[{"id":"b-1","amount":40,"payee":"bob","reason":"late"}]}`, c.dest); code != 0 {
		t.Fatalf("builtin: %d\n%s", code, out)
	}
	if out, code := c.run("run", "case", "builtin"); code != 1 || !strings.Contains(out, "built into flrh, not a bundle") {
		t.Fatalf("a built-in workflow's run: %d\n%s", code, out)
	}
	if out, code := c.run("run", "case", "nobody"); code == 0 || !strings.Contains(out, "nobody") {
		t.Fatalf("no such run: %d\n%s", code, out)
	}
}
