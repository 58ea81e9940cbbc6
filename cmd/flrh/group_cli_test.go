package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// groupBundleDir copies the refund example into a directory of its own
// with its approver replaced by policy (members of the approval object).
func groupBundleDir(t *testing.T, policy string) string {
	t.Helper()
	return refundExampleWith(t, "refund-group", func(b []byte) []byte {
		s := strings.Replace(string(b), `"approver": "finance-lead",`, policy, 1)
		if s == string(b) {
			t.Fatal("the example's approval policy changed; update this test")
		}
		return []byte(s)
	})
}

// firstOfTwo starts run under the bundle dir with input, which must wait
// for two people's approvals, who (run start says) to be given; approves
// it as alice, checks that the run waits for one more, and that a second
// approval by alice is refused. It returns the request's id.
func (c *cliRig) firstOfTwo(dir, run, input, who string) string {
	c.t.Helper()
	wfs := "--workflows=" + dir
	out := c.ok("run", "start", dir, "--id", run, "--input-json", input, c.dest)
	req := approvalRequest.FindString(out)
	for _, want := range []string{"    who may approve: " + who + "\n", "    approved so far: no one yet (0 of 2)\n"} {
		if !strings.Contains(out, want) {
			c.t.Fatalf("run start lacks %q:\n%s", want, out)
		}
	}
	out = c.ok("approve", run, req, "--as", "alice", wfs, c.dest)
	if !strings.Contains(out, "WAIT_APPROVAL") || !strings.Contains(out, "    approved so far: alice (1 of 2)\n") {
		c.t.Fatalf("after alice's approval:\n%s", out)
	}
	c.refusedApproval(run, req, "alice", wfs, "a quorum of 2 needs other people")
	return req
}

// refusedApproval approves request req of run as the person named, under
// the workflows flag wfs, and fails the test unless the command fails
// (exit 1) saying want and writes nothing to the run's log.
func (c *cliRig) refusedApproval(run, req, as, wfs, want string) {
	c.t.Helper()
	before := c.events(run)
	out, code := c.run("approve", run, req, "--as", as, wfs, c.dest)
	if code != 1 || !strings.Contains(out, want) {
		c.t.Fatalf("approval by %s: exit %d, want 1 saying %q\n%s", as, code, want, out)
	}
	if n := c.events(run); n != before {
		c.t.Fatalf("a refused approval wrote %d events", n-before)
	}
}

// A bundle whose approval policy names a group: run start says who may
// approve, an approval by someone outside the group fails the command
// with the members named and changes nothing, and a member's pays the
// refund, which verifies.
func TestApprovalGroupOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	dir := groupBundleDir(t, `"approver": "finance-leads", "members": ["alice", "bob"],`)
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
	c.refusedApproval("grp", req, "mallory", wfs, `"mallory", who is not among the members of "finance-leads" the approval policy names (alice, bob)`)
	out = c.ok("approve", "grp", req, "--as", "bob", wfs, c.dest)
	if !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("after bob's approval:\n%s", out)
	}
	c.ok("verify", "grp")
}

// Two people's approvals over the CLI: run start and each approval say who
// has approved so far, a second approval by one person fails the command,
// the second person's pays the refund, and the run verifies and replays.
func TestApprovalQuorumOverTheCLI(t *testing.T) { onBothStores(t, approvalQuorumOverTheCLI) }

// onBothStores runs test with a rig on the embedded store and with one on
// PostgreSQL (skipped, saying so, where FLRH_TEST_POSTGRES is unset).
func onBothStores(t *testing.T, test func(t *testing.T, c *cliRig)) {
	t.Run("sqlite", func(t *testing.T) { test(t, newCLIRig(t)) })
	t.Run("postgres", func(t *testing.T) {
		c := newCLIRig(t)
		spec, _ := pgStoreURL(t)
		c.store = "--store=" + spec
		test(t, c)
	})
}

func approvalQuorumOverTheCLI(t *testing.T, c *cliRig) {
	dir := groupBundleDir(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2, "separate_duties": true,`)
	wfs := "--workflows=" + dir
	req := c.firstOfTwo(dir, "q", largeRefund, "2 of alice, bob, carol (members of finance-leads), each approving; no one who handed the run an input")
	out := c.ok("approve", "q", req, "--as", "carol", wfs, c.dest)
	if !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("after carol's approval:\n%s", out)
	}
	if out := c.ok("verify", "q"); !strings.Contains(out, "1 approvals consumed and 1 more for a quorum") {
		t.Fatalf("verify:\n%s", out)
	}
	c.ok("replay", "q", wfs)
	var x struct {
		Approvals []struct {
			ConsumedBy string         `json:"consumed_by"`
			Body       map[string]any `json:"body"`
		} `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(c.ok("run", "export", "q")), &x); err != nil {
		t.Fatal(err)
	}
	var people []string
	for _, a := range x.Approvals {
		if a.ConsumedBy == "" {
			t.Fatalf("an exported grant not consumed: %+v", a)
		}
		people = append(people, a.Body["actor"].(string))
	}
	if slices.Sort(people); strings.Join(people, ",") != "alice,carol" {
		t.Fatalf("the export holds grants by %v", people)
	}
}

// A quorum the gates ask of a larger refund, over the CLI: bundle check
// says up to how many people may be asked, run start says how many this
// refund needs, and two approvals pay it; a smaller refund needs one.
func TestGatesQuorumOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	dir := groupBundleDir(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"],`)
	appendGates(t, dir, "\n.decl quorum(n: number, rule: symbol)\nquorum(2, \"g2.four-eyes\") :- param_num(t, \"amount\", n), n > 1000.\n")
	wfs := "--workflows=" + dir
	if out := c.must("bundle", "check", dir); !strings.Contains(out, "approved by: any one of alice, bob, carol (members of finance-leads); up to 2 of them where the gate policy asks\n") {
		t.Fatalf("bundle check:\n%s", out)
	}
	out := c.ok("run", "start", dir, "--id", "small", "--input-json", largeRefund, c.dest)
	if !strings.Contains(out, "    who may approve: any one of alice, bob, carol (members of finance-leads)\n") || strings.Contains(out, "approved so far") {
		t.Fatalf("run start, 600:\n%s", out)
	}
	c.ok("approve", "small", approvalRequest.FindString(out), "--as", "carol", wfs, c.dest)
	req := c.firstOfTwo(dir, "large", strings.Replace(largeRefund, `"amount":600`, `"amount":3000`, 1), "2 of alice, bob, carol (members of finance-leads), each approving")
	if out = c.ok("approve", "large", req, "--as", "bob", wfs, c.dest); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("after bob's approval:\n%s", out)
	}
	for _, run := range []string{"small", "large"} {
		c.ok("verify", run)
		c.ok("replay", run, wfs)
	}
}

// appendGates adds rules to the gate policy of the bundle in dir.
func appendGates(t *testing.T, dir, rules string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "gates.dl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(rules)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The gates choose who approves, over the CLI: bundle check names the
// group they may choose, run start says who may approve this refund, the
// inbox lists it for the group's members, anyone else's approval fails
// and a member's pays; the run verifies and replays.
func TestGatesChooseTheApproverOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	dir := groupBundleDir(t, `"approver": "finance-lead", "groups": {"treasury": ["carol", "dave"]},`)
	appendGates(t, dir, "\n.decl approver(name: symbol, rule: symbol)\napprover(\"treasury\", \"g2.treasury\") :- param_num(t, \"amount\", n), n > 1000.\n")
	wfs := "--workflows=" + dir
	if out := c.must("bundle", "check", dir); !strings.Contains(out, "approved by: finance-lead; or, where the gate policy names them, any one of carol, dave (members of treasury)\n") {
		t.Fatalf("bundle check:\n%s", out)
	}
	out := c.ok("run", "start", dir, "--id", "large", "--input-json", strings.Replace(largeRefund, `"amount":600`, `"amount":3000`, 1), c.dest)
	req := approvalRequest.FindString(out)
	if !strings.Contains(out, "    who may approve: any one of carol, dave (members of treasury)\n") {
		t.Fatalf("run start:\n%s", out)
	}
	if out := c.ok("approvals", wfs, "--as", "dave"); !strings.Contains(out, "    dave may approve: flrh approve large "+req+" --as dave\n") {
		t.Fatalf("dave's inbox:\n%s", out)
	}
	c.refusedApproval("large", req, "finance-lead", wfs, `"finance-lead", who is not among the members of "treasury" the approval policy names (carol, dave)`)
	if out := c.ok("approve", "large", req, "--as", "dave", wfs, c.dest); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("after dave's approval:\n%s", out)
	}
	c.ok("verify", "large")
	c.ok("replay", "large", wfs)
}

// A panel over the CLI: bundle check and run start say who may approve,
// the run shows whom it holds, a second member of a group already answered
// for is refused with the group it waits for named and nothing written,
// the inbox of a member of that group says why not, and a member of the
// other group pays; the run verifies and replays.
func TestPanelOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	dir := groupBundleDir(t, `"approver": "finance-lead", "groups": {"treasury": ["carol", "dave"], "legal": ["erin"]}, "panels": {"board": ["treasury", "legal"]},`)
	appendGates(t, dir, "\n.decl approver(name: symbol, rule: symbol)\napprover(\"board\", \"g2.board\") :- param_num(t, \"amount\", n), n > 1000.\n")
	wfs := "--workflows=" + dir
	const who = "one member of each of treasury (carol, dave) and legal (erin), each a different person (panel board)"
	if out := c.must("bundle", "check", dir); !strings.Contains(out, "approved by: finance-lead; or, where the gate policy names them, "+who+"\n") {
		t.Fatalf("bundle check:\n%s", out)
	}
	out := c.ok("run", "start", dir, "--id", "board", "--input-json", strings.Replace(largeRefund, `"amount":600`, `"amount":3000`, 1), c.dest)
	req := approvalRequest.FindString(out)
	if !strings.Contains(out, "    who may approve: "+who+"\n") || !strings.Contains(out, "    approved so far: no one yet (0 of 2)\n") {
		t.Fatalf("run start:\n%s", out)
	}
	if out := c.ok("approve", "board", req, "--as", "carol", wfs, c.dest); !strings.Contains(out, "    approved so far: carol (1 of 2)\n    still to approve: a member of legal\n") {
		t.Fatalf("after carol's approval:\n%s", out)
	}
	c.refusedApproval("board", req, "dave", wfs, "the run holds carol's; it waits for a member of legal")
	if out := c.ok("approvals", wfs, "--as", "dave", "--all"); !strings.Contains(out, "it waits for a member of legal") {
		t.Fatalf("dave's inbox:\n%s", out)
	}
	if out := c.ok("approvals", wfs, "--json"); !strings.Contains(out, `"awaiting":"a member of legal"`) {
		t.Fatalf("the approvals as JSON:\n%s", out)
	}
	if out := c.ok("approve", "board", req, "--as", "erin", wfs, c.dest); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("after erin's approval:\n%s", out)
	}
	c.ok("verify", "board")
	c.ok("replay", "board", wfs)
}
