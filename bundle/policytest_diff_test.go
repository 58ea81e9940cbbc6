package bundle

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/policytest"
	"flrh.dev/flrh/runcase"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/workflow"
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
		if why := exported(h, wf, run); why != "" {
			return policies[k].name + ": " + why
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

// A bundle's policy tests take people's choices and controls as a run
// does: a goodwill refund (which opens options) of a small or a large
// amount, then acts drawn at random — a choice of an option offered or
// not, a control of the deliberation machine, an approval or a denial
// while a request waits — are taken by a real runner (Runner.Choose,
// Control, Approve, Deny, then the run's ticks, which also pay what is
// authorized) and written, as the runner took them, as the case's steps
// and expectations: refused or not, the effects planned, the
// deliberation machine's state, and the completion of a run that ended.
// The case must pass, and a step after the runner's run ended must find
// the policy test's run ended too.
func TestPolicyTestsJudgeChoicesAndControlsAsTheRunnerDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a runner per check")
	}
	wf, ads, err := Load(filepath.Join("..", "examples", "refund-agent"))
	if err != nil {
		t.Fatal(err)
	}
	person := func(trigger mrp.Trigger) runner.Actor {
		capName, _ := mrp.RequiredCapability(trigger)
		return runner.Actor{Name: "dana", Role: "operator", Capability: capName}
	}
	// agreed says where the case src, written from what the runner did,
	// fails; and, where ended tells whether the runner's run ended, whether
	// the policy test's run has ended the same.
	agreed := func(src string, ended bool) string {
		res, err := policytest.Run(wf.Workflow, "diff.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		if !res[0].Passed() {
			return fmt.Sprintf("the runner and the policy test disagree at step %d: %s\n%s", res[0].Step, res[0].Failure, src)
		}
		// One step more: the policy test's run has ended when the
		// runner's has, and not otherwise.
		probe := src + "      - control: PAUSE\n        expect: {refused: \"\"}\n"
		if res, err = policytest.Run(wf.Workflow, "diff.yaml", []byte(probe)); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(res[0].Failure, "the run has ended"); got != ended {
			return fmt.Sprintf("the runner's run ended: %v; the policy test's: %v (%s)\n%s", ended, got, res[0].Failure, probe)
		}
		return ""
	}
	src := func(steps []string) string {
		return "cases:\n  - name: diff\n    steps:\n" + strings.Join(steps, "\n") + "\n"
	}
	// agree takes one scenario through both and says where they differ.
	agree := func(amount int, acts []string) string {
		h := newHarnessWith(t, wf, ads)
		const run = "choice-diff"
		input := refund("r-1", amount, "alice", "goodwill")
		h.start(run, input)
		steps := []string{"      - input: " + input}
		refusals := len(h.trace(run, "refusal"))
		for _, act := range acts {
			before := h.status(run)
			if before.Run.Outcome != "" {
				break
			}
			intents := len(h.intents(run))
			kind, arg, _ := strings.Cut(act, ":")
			var err error
			switch {
			case kind == "choose" && len(before.Offered) > 0 && len(before.Waiting) == 0:
				err = h.r.Choose(h.ctx, run, before.Offered[0], arg, person(mrp.ChooseOption))
			case kind == "control" && len(before.Waiting) == 0:
				err = h.r.Control(h.ctx, run, arg, "", "", person(mrp.Trigger(arg)))
			case kind == "approve" && len(before.Waiting) > 0:
				err = h.r.Approve(h.ctx, run, before.Waiting[0].RequestID, runner.ApproverActor(arg), 10*time.Minute)
			case kind == "deny" && len(before.Waiting) > 0:
				err = h.r.Deny(h.ctx, run, before.Waiting[0].RequestID, "no", runner.Actor{Name: arg, Role: "human_approver", Capability: "approval.deny"})
			default:
				continue // not an act a person can take now
			}
			h.idle()
			after := h.status(run)
			step := fmt.Sprintf("      - %s: %s\n        expect: ", kind, arg)
			var refused *runner.ApproverRefusedError
			var notWaiting *runner.NotWaitingError
			if now := len(h.trace(run, "refusal")); errors.As(err, &refused) || errors.As(err, &notWaiting) || now > refusals {
				steps = append(steps, step+`{refused: ""}`)
				refusals = now
				if loopEnded(after) {
					if why := exported(h, wf, run); why != "" {
						return why
					}
					return agreed(src(steps), false)
				}
				continue
			} else if err != nil {
				t.Fatalf("%s: %v", act, err)
			}
			// The effects the act planned: intents the run authorized
			// (and paid at once) and approval requests it now waits on.
			paid := len(h.intents(run)) - intents
			requested := max(len(after.Waiting)-len(before.Waiting), 0)
			var expect []string
			if kind != "deny" {
				expect = append(expect, "effects: ["+strings.TrimSuffix(strings.Repeat("{}, ", paid+requested), ", ")+"]")
			}
			steps = append(steps, step)
			for range paid {
				steps = append(steps, "      - receipt: confirmed_success\n        expect: ")
			}
			// What the run is left with, on the act's last step.
			if v, ok := after.View.(workflow.View); ok && kind != "deny" {
				expect = append(expect, "mrp_state: "+v.MRPState)
			}
			switch after.State {
			case "SUCCEEDED":
				expect = append(expect, "completion: complete")
			case "FAILED_PERMANENT":
				expect = append(expect, "completion: fail")
			}
			if paid > 0 {
				steps[len(steps)-1-paid] += "{" + expect[0] + "}"
				expect = expect[1:]
			}
			steps[len(steps)-1] += "{" + strings.Join(expect, ", ") + "}"
		}
		after := h.status(run)
		if why := exported(h, wf, run); why != "" {
			return why
		}
		if loopEnded(after) {
			return agreed(src(steps), false)
		}
		return agreed(src(steps), after.Run.Outcome != "")
	}
	for _, c := range []struct {
		amount int
		acts   []string
	}{
		{40, []string{"choose:path:cash", "choose:path:store-credit"}},
		{900, []string{"control:PAUSE", "choose:path:store-credit", "control:RESUME", "choose:path:partial-refund", "approve:bob", "approve:finance-lead"}},
		{900, []string{"choose:path:store-credit", "deny:bob", "deny:finance-lead"}},
		{40, []string{"control:REJECT_ALL", "control:RESUME", "control:EXIT"}},
		{40, []string{"control:ESCALATE", "control:RESUME", "choose:path:partial-refund"}},
	} {
		if why := agree(c.amount, c.acts); why != "" {
			t.Fatal(why)
		}
	}
	acts := []string{"choose:path:store-credit", "choose:path:partial-refund", "choose:path:cash",
		"control:PAUSE", "control:RESUME", "control:REJECT_ALL", "control:ESCALATE", "control:REQUEST_TEST", "control:LEAVE_SAFE_MODE", "control:EXIT",
		"approve:finance-lead", "approve:bob", "deny:finance-lead", "deny:bob"}
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		amount := rapid.SampledFrom([]int{40, 900}).Draw(rt, "amount")
		if why := agree(amount, rapid.SliceOfN(rapid.SampledFrom(acts), 1, 6).Draw(rt, "acts")); why != "" {
			rt.Fatal(why)
		}
		checks++
	})
	if checks == 0 {
		t.Fatal("no check ran")
	}
}

// exported says how the runner's run, made into a case from its record
// (runcase.Make), fails to reproduce it: the case must authorize exactly
// the intents the run committed, and pass against the run's bundle.
func exported(h *harness, wf *Workflow, runID string) string {
	run, err := h.st.Run(h.ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	src, err := runcase.Make(h.ctx, h.st, wf.Workflow, run, "")
	if err != nil {
		return fmt.Sprintf("the run made into a case: %v", err)
	}
	res, err := policytest.Run(wf.Workflow, "run.test.json", src)
	if err != nil || !res[0].Passed() {
		return fmt.Sprintf("the run's case: %v %+v\n%s", err, res, src)
	}
	return ""
}

// loopEnded reports whether the loop contract ended the run (a budget,
// the no-progress window), which a policy test does not simulate, rather
// than its workflow or a person.
func loopEnded(s runner.Status) bool {
	return s.Run.Outcome != "" && s.State != "SUCCEEDED" && s.State != "FAILED_PERMANENT"
}
