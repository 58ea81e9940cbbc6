package bundle

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/policytest"
	"flrh.dev/flrh/runner"
)

// A bundle's policy tests judge approvals as a run does: for approval
// policies of one approver, a quorum with duties apart, and a panel with
// and without them, a
// person who hands the run its input and people approving in turn are
// taken by a real runner (Runner.Approve, then the run's tick) and by
// policytest; what the runner did to each grant (refused it, ignored it
// as adding nothing, counted it, or approved the request and paid) is
// written as the case's expectations, and the case must pass.
func TestPolicyTestsJudgeApprovalsAsTheRunnerDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a runner per check")
	}
	policies := []struct{ name, policy, gates string }{
		{"one approver", `"approver": "finance-lead",`, ""},
		{"a quorum, duties apart", `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2, "separate_duties": true,`, ""},
		{"a panel", boardPolicy, boardRule},
		{"a panel, duties apart", boardPolicy + ` "separate_duties": true,`, boardRule},
	}
	loaded := make([]struct {
		wf  *Workflow
		ads *Adapters
	}, len(policies))
	for i, p := range policies {
		loaded[i].wf, loaded[i].ads = policyBundleWithGates(t, p.policy, p.gates)
	}
	// agree takes one scenario through both, and says where they differ.
	agree := func(k int, maker string, people []string) string {
		wf, ads := loaded[k].wf, loaded[k].ads
		h := newHarnessWith(t, wf, ads)
		const run = "refund-diff"
		input := refund("r-1", 5000, "gina", "damaged")
		if err := h.r.StartAs(h.ctx, run, wf.ID(), wf.Version(), []byte(input), runner.Actor{Name: maker, Role: "operator", Capability: "run.start"}); err != nil {
			t.Fatal(err)
		}
		h.idle()
		waiting := h.status(run).Waiting
		if len(waiting) != 1 {
			t.Fatalf("%s: %d approvals waiting", policies[k].name, len(waiting))
		}
		steps := []string{fmt.Sprintf("      - input: %s\n        as: %s\n        expect: {outcomes: [APPROVAL_REQUEST]}", input, maker)}
		for _, p := range people {
			err := h.r.Approve(h.ctx, run, waiting[0].RequestID, runner.ApproverActor(p), 10*time.Minute)
			h.idle()
			var refused *runner.ApproverRefusedError
			var notWaiting *runner.NotWaitingError
			expect := ""
			switch {
			case errors.As(err, &refused):
				expect = `{refused: ""}`
			case errors.As(err, &notWaiting):
				expect = `{approval: ignored}`
			case err != nil:
				t.Fatalf("%s approving: %v", p, err)
			case len(h.intents(run)) > 0:
				expect = `{approval: approved, effects: [{effect_type: refund.pay}]}`
			default:
				expect = `{approval: counted, effects: []}`
			}
			steps = append(steps, fmt.Sprintf("      - approve: %s\n        expect: %s", p, expect))
			if len(h.intents(run)) > 0 {
				break // the request is answered: no more grants for it
			}
		}
		src := "cases:\n  - name: diff\n    steps:\n" + strings.Join(steps, "\n") + "\n"
		res, err := policytest.Run(wf.Workflow, "diff.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		if !res[0].Passed() {
			return fmt.Sprintf("%s: the runner and the policy test disagree at step %d: %s\n%s", policies[k].name, res[0].Step, res[0].Failure, src)
		}
		return ""
	}
	// Each of the runner's judgements, at least once.
	for _, c := range []struct {
		policy int
		maker  string
		people []string
	}{
		{0, "alice", []string{"bob", "finance-lead"}},                     // refused, approved
		{1, "alice", []string{"alice", "bob", "bob", "mallory", "carol"}}, // duties, counted, ignored, refused, approved
		{2, "gina", []string{"carol", "frank", "dave"}},                   // counted, ignored (treasury answered), approved
		{3, "carol", []string{"frank", "carol", "erin"}},                  // counted, ignored before duties, approved
		{3, "erin", []string{"frank", "erin", "dave"}},                    // counted, duties, approved
	} {
		if why := agree(c.policy, c.maker, c.people); why != "" {
			t.Fatal(why)
		}
	}
	pool := []string{"alice", "bob", "carol", "dave", "erin", "frank", "finance-lead", "mallory"}
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(0, len(policies)-1).Draw(rt, "policy")
		maker := rapid.SampledFrom(pool).Draw(rt, "maker")
		people := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 5).Draw(rt, "people")
		if why := agree(k, maker, people); why != "" {
			rt.Fatal(why)
		}
		checks++
	})
	if checks == 0 {
		t.Fatal("no check ran")
	}
}
