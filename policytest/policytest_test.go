package policytest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/workflow"
)

func example(t testing.TB, name string) *workflow.Workflow {
	t.Helper()
	w, _, err := bundle.Load(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return w.Workflow
}

// Every example ships policy tests, and they pass.
func TestNamed(t *testing.T) {
	for name, want := range map[string]bool{"policy.test.yaml": true, "a.test.json": true, "b.test.yml": true,
		".test.yaml": false, "policy.yaml": false, "test.yaml": false, "workflow.json": false, "policy.test.yaml.bak": false} {
		if Named(name) != want {
			t.Errorf("%s: %v", name, !want)
		}
	}
}

// Every example ships policy tests, and they pass.
func TestExamplesPassTheirPolicyTests(t *testing.T) {
	for _, name := range []string{"refund-agent", "ops-agent", "support-agent"} {
		w := example(t, name)
		files, _ := filepath.Glob(filepath.Join("..", "examples", name, "*.test.yaml"))
		if len(files) == 0 {
			t.Fatalf("%s has no policy tests", name)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(w, f, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) < 3 {
				t.Fatalf("%s: %d cases", f, len(res))
			}
			for _, r := range res {
				if !r.Passed() {
					t.Errorf("%s: %s: step %d: %s", f, r.Name, r.Step, r.Failure)
				}
			}
		}
	}
}

const small = `{type: refund.requested/1, payload: {refund_id: r-1, amount: 40, payee: alice, reason: damaged}}`
const large = `{type: refund.requested/1, payload: {refund_id: r-2, amount: 900, payee: bob, reason: late}}`

// A case that does not go as expected fails at its step, saying what was
// expected and what H decided instead.
func TestFailuresSayWhat(t *testing.T) {
	w := example(t, "refund-agent")
	for _, c := range []struct {
		name, steps string
		step        int
		want        string // in the failure; "" when the case passes
	}{
		{"passes", `[{input: ` + small + `, expect: {outcomes: [INTENT]}}]`, 0, ""},
		{"no expectations pass", `[{input: ` + small + `}, {receipt: confirmed_success}]`, 0, ""},
		{"outcomes", `[{input: ` + large + `, expect: {outcomes: [INTENT]}}]`, 1, "outcomes [APPROVAL_REQUEST], want [INTENT] (H decided [APPROVAL_REQUEST])"},
		{"outcomes, none expected", `[{input: ` + small + `, expect: {outcomes: []}}]`, 1, "outcomes [INTENT], want []"},
		{"refused unexpectedly", `[{input: {type: refund.requested/1, payload: {refund_id: r, amount: 0, payee: a, reason: x}}}]`, 1, "refused (refused: "},
		{"not refused", `[{input: ` + small + `, expect: {refused: ""}}]`, 1, "not refused"},
		{"refused for another reason", `[{input: {type: refund.requested/1, payload: {refund_id: r, amount: 0, payee: a, reason: x}}, expect: {refused: too late}}]`, 1, `refused, but not for "too late"`},
		{"an unknown event", `[{input: {type: nope/1, payload: {}}, expect: {refused: F rejected the input}}]`, 0, ""},
		{"completion", `[{input: ` + small + `}, {receipt: confirmed_success, expect: {completion: fail}}]`, 2, "completion complete, want fail"},
		{"audit", `[{input: ` + large + `, expect: {audit: [NOT_COVERED]}}]`, 1, `no outcome's audit holds "NOT_COVERED"`},
		{"effect count", `[{input: ` + small + `, expect: {effects: []}}]`, 1, "1 effects planned, want 0"},
		{"effect type", `[{input: ` + small + `, expect: {effects: [{effect_type: refund.void}]}}]`, 1, "effect 1 is refund.pay, want refund.void"},
		{"approver", `[{input: ` + large + `, expect: {effects: [{approver: ""}]}}]`, 1, `effect 1 is for "finance-lead" to approve, want ""`},
		{"no approver", `[{input: ` + small + `, expect: {effects: [{approver: finance-lead}]}}]`, 1, `effect 1 is for "" to approve, want "finance-lead"`},
		{"a param's value", `[{input: ` + small + `, expect: {effects: [{params: {amount: 41}}]}}]`, 1, "effect 1: amount = 40, want 41"},
		{"a param missing", `[{input: ` + small + `, expect: {effects: [{params: {iban: "DE00"}}]}}]`, 1, `effect 1: iban = (none), want "DE00"`},
		{"a param of another type", `[{input: ` + small + `, expect: {effects: [{params: {amount: "40"}}]}}]`, 1, `effect 1: amount = 40, want "40"`},
		{"params that hold", `[{input: ` + large + `, expect: {effects: [{effect_type: refund.pay, approver: finance-lead, params: {amount: 900, payee: bob}}]}}]`, 0, ""},
		{"a receipt with nothing open", `[{receipt: confirmed_success}]`, 1, "no authorized effect is waiting for one"},
		{"a receipt for an effect waiting for approval", `[{input: ` + large + `}, {receipt: confirmed_success}]`, 2, "no authorized effect is waiting for one"},
		{"a second receipt", `[{input: ` + small + `}, {receipt: confirmed_success}, {receipt: confirmed_success}]`, 3, "the run has ended: it completed"},
		{"a refused input plans nothing", `[{input: {type: refund.requested/1, payload: {refund_id: r, amount: 0, payee: a, reason: x}}, expect: {refused: ""}}, {receipt: confirmed_success}]`, 2, "no authorized effect is waiting for one"},
	} {
		t.Run(c.name, func(t *testing.T) { goesAsSaid(t, w, " "+c.steps, c.step, c.want) })
	}
}

// goesAsSaid runs one case of steps (YAML, after "steps:") against w: it
// must pass when want is "", and otherwise fail at step with want in its
// failure.
func goesAsSaid(t *testing.T, w *workflow.Workflow, steps string, step int, want string) {
	t.Helper()
	res, err := Run(w, "case.yaml", []byte("cases:\n  - name: c\n    steps:"+steps+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if want == "" {
		if !r.Passed() {
			t.Fatalf("failed at step %d: %s", r.Step, r.Failure)
		}
		return
	}
	if r.Passed() || r.Step != step || !strings.Contains(r.Failure, want) {
		t.Fatalf("step %d: %q; want step %d: %q", r.Step, r.Failure, step, want)
	}
}

// Each case starts from a fresh run: what one case planned is not open in
// the next.
func TestCasesAreIndependent(t *testing.T) {
	w := example(t, "refund-agent")
	src := `{"cases": [
  {"name": "one", "steps": [{"input": {"type": "refund.requested/1", "payload": {"refund_id": "r-1", "amount": 40, "payee": "alice", "reason": "x"}}}]},
  {"name": "two", "steps": [{"receipt": "confirmed_success"}]}]}`
	res, err := Run(w, "cases.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Passed() || res[1].Passed() {
		t.Fatalf("%+v", res)
	}
}

// A case file that cannot be read says where, and runs nothing.
func TestCaseFileRefused(t *testing.T) {
	w := example(t, "refund-agent")
	for _, c := range []struct {
		name, file, src string
		pointer         string
		line            int
		want            string
	}{
		{"not JSON", "c.json", `{"cases": [`, "", 0, "not flrh-cjson JSON"},
		{"not YAML", "c.yaml", "cases: [\n", "", 0, "not YAML"},
		{"an unknown member", "c.json", `{"cases": [{"name": "a", "steps": [{"receipt": "confirmed_success", "expect": {"colour": 1}}]}]}`, "", 0, "colour"},
		{"no cases", "c.json", `{"cases": []}`, "/cases", 0, "no cases"},
		{"no name", "c.yaml", "cases:\n  - steps: [{receipt: confirmed_success}]\n", "/cases/0/name", 0, "a case has a name"},
		{"two names alike", "c.yaml", "cases:\n  - name: a\n    steps: [{receipt: confirmed_success}]\n  - name: a\n    steps: [{receipt: confirmed_success}]\n", "/cases/1/name", 4, `two cases are named "a"`},
		{"no steps", "c.yaml", "cases:\n  - name: a\n    steps: []\n", "/cases/0/steps", 3, "at least one step"},
		{"input and receipt", "c.yaml", "cases:\n  - name: a\n    steps:\n      - {receipt: confirmed_success, input: {type: t}}\n", "/cases/0/steps/0", 4, "one of them"},
		{"neither", "c.yaml", "cases:\n  - name: a\n    steps:\n      - expect: {}\n", "/cases/0/steps/0", 4, "one of them"},
		{"an unknown outcome", "c.yaml", "cases:\n  - name: a\n    steps:\n      - receipt: confirmed_success\n        expect: {outcomes: [ALLOWED]}\n", "/cases/0/steps/0/expect/outcomes/0", 5, `"ALLOWED" is not one of`},
		{"as on a receipt", "c.yaml", "cases:\n  - name: a\n    steps:\n      - receipt: confirmed_success\n        as: alice\n", "/cases/0/steps/0/as", 5, "only an input"},
		{"approval expected of an input", "c.yaml", "cases:\n  - name: a\n    steps:\n      - input: {type: t}\n        expect: {approval: approved}\n", "/cases/0/steps/0/expect/approval", 5, "an approval step's grant"},
		{"an unknown approval outcome", "c.yaml", "cases:\n  - name: a\n    steps:\n      - approve: alice\n        expect: {approval: granted}\n", "/cases/0/steps/0/expect/approval", 5, "counted, approved, ignored"},
		{"an input and an approval", "c.yaml", "cases:\n  - name: a\n    steps:\n      - {approve: alice, input: {type: t}}\n", "/cases/0/steps/0", 4, "one of them"},
		{"an unknown receipt", "c.yaml", "cases:\n  - name: a\n    steps:\n      - receipt: confirmed_sucess\n", "/cases/0/steps/0/receipt", 4, `"confirmed_sucess" is not one of confirmed_success, confirmed_failure`},
		{"a denial by someone", "c.yaml", "cases:\n  - name: a\n    steps:\n      - deny: alice\n        as: bob\n", "/cases/0/steps/0/as", 5, "only an input, a choice or a control"},
		{"a choice and a control", "c.yaml", "cases:\n  - name: a\n    steps:\n      - {choose: x, control: PAUSE}\n", "/cases/0/steps/0", 4, "one of them"},
		{"a proposal named by an input", "c.yaml", "cases:\n  - name: a\n    steps:\n      - input: {type: t}\n        proposal: p\n", "/cases/0/steps/0/proposal", 5, "only a choice or a control names a proposal"},
		{"a reason given for a choice", "c.yaml", "cases:\n  - name: a\n    steps:\n      - choose: x\n        reason: r\n", "/cases/0/steps/0/reason", 5, "only a control gives a reason"},
		{"the nth of an input", "c.yaml", "cases:\n  - name: a\n    steps:\n      - input: {type: t}\n        nth: 2\n", "/cases/0/steps/0/nth", 5, "only a receipt, an approval or a denial answers the nth effect waiting"},
		{"a negative nth", "c.yaml", "cases:\n  - name: a\n    steps:\n      - receipt: confirmed_success\n        nth: -1\n", "/cases/0/steps/0/nth", 5, "-1 is not from 1 to 1000"},
		{"an effect answered by an input", "c.yaml", "cases:\n  - name: a\n    steps:\n      - input: {type: t}\n        effect: refund.pay\n", "/cases/0/steps/0/effect", 5, "only a receipt, an approval or a denial answers an effect"},
		{"an unknown trigger", "c.yaml", "cases:\n  - name: a\n    steps:\n      - control: CHOOSE_OPTION\n", "/cases/0/steps/0/control", 4, `"CHOOSE_OPTION" is not one of [PAUSE`},
		{"an unknown machine state", "c.yaml", "cases:\n  - name: a\n    steps:\n      - control: PAUSE\n        expect: {mrp_state: PAUSED}\n", "/cases/0/steps/0/expect/mrp_state", 5, `"PAUSED" is not one of HOLD, OPTIONS`},
		{"an unknown completion", "c.yaml", "cases:\n  - name: a\n    steps:\n      - receipt: confirmed_success\n        expect: {completion: done}\n", "/cases/0/steps/0/expect/completion", 5, `"done" is not one of`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(w, c.file, []byte(c.src))
			var pe *workflow.Error
			if !errors.As(err, &pe) || res != nil || pe.Code != workflow.CodeBadTest {
				t.Fatalf("%v, %+v", err, res)
			}
			if pe.File != c.file || pe.Pointer != c.pointer || !strings.Contains(pe.Detail, c.want) || (c.line > 0 && pe.Line != c.line) {
				t.Fatalf("%+v; want %s at %q line %d: %q", pe, c.file, c.pointer, c.line, c.want)
			}
		})
	}
}

func FuzzRun(f *testing.F) {
	w := example(f, "refund-agent")
	src, err := os.ReadFile(filepath.Join("..", "examples", "refund-agent", "policy.test.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src, true)
	f.Add([]byte(`{"cases": [{"name": "a", "steps": [{"input": {"type": "refund.requested/1", "payload": {}}, "expect": {"refused": ""}}]}]}`), false)
	f.Add([]byte("cases:\n  - name: a\n    steps:\n      - input: {type: refund.requested/1, payload: {refund_id: r, amount: 900, payee: b, reason: x}}\n        as: bob\n      - approve: bob\n        expect: {approval: approved}\n      - receipt: confirmed_success\n"), true)
	f.Add([]byte("cases:\n  - name: a\n    steps:\n      - input: {type: refund.requested/1, payload: {refund_id: r, amount: 900, payee: b, reason: goodwill}}\n        expect: {options: [path:store-credit], mrp_state: OPTIONS}\n      - control: PAUSE\n        reason: r\n      - choose: path:store-credit\n        proposal: p\n      - deny: finance-lead\n"), true)
	f.Fuzz(func(t *testing.T, src []byte, yaml bool) {
		name := "c.json"
		if yaml {
			name = "c.yaml"
		}
		res, err := Run(w, name, src)
		if err != nil {
			var pe *workflow.Error
			if !errors.As(err, &pe) || res != nil || pe.Code != workflow.CodeBadTest {
				t.Fatalf("not a BAD_TEST *workflow.Error: %v", err)
			}
			return
		}
		for _, r := range res {
			if r.Passed() != (r.Step == 0) || r.Step > r.Steps {
				t.Fatalf("%+v", r)
			}
		}
	})
}

// BenchmarkRunRefundCases runs the refund agent's policy tests: what a
// bundle author waits for on each change.
func BenchmarkRunRefundCases(b *testing.B) {
	w := example(b, "refund-agent")
	src, err := os.ReadFile(filepath.Join("..", "examples", "refund-agent", "policy.test.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(w, "policy.test.yaml", src); err != nil {
			b.Fatal(err)
		}
	}
}

// refundWith is the refund agent with its approval policy's approver line
// replaced by policy and gates added to its gate policy.
func refundWith(t testing.TB, policy, gates string) *workflow.Workflow {
	t.Helper()
	return refundEdited(t, func(files map[string][]byte) {
		m := strings.Replace(string(files["workflow.json"]), `"approver": "finance-lead",`, policy, 1)
		if m == string(files["workflow.json"]) {
			t.Fatal("the example's approval policy changed; update this test")
		}
		files["workflow.json"] = []byte(m)
		files["gates.dl"] = append(files["gates.dl"], gates...)
	})
}

// refundEdited is the refund agent with its files as edit leaves them.
func refundEdited(t testing.TB, edit func(files map[string][]byte)) *workflow.Workflow {
	t.Helper()
	dir := filepath.Join("..", "examples", "refund-agent")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			files[e.Name()] = b
		}
	}
	edit(files)
	w, err := workflow.Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Approval steps are judged as a run judges grants: who may answer the
// request, duties kept apart, a quorum of distinct people, a panel's
// groups each answered for by a different person; the grant that
// completes the request has its effect authorized, and its receipt
// settles it.
func TestApprovalSteps(t *testing.T) {
	const big = `{type: refund.requested/1, payload: {refund_id: r-1, amount: 1500, payee: bob, reason: late}}`
	board := "\n.decl approver(name: symbol, rule: symbol)\napprover(\"board\", \"g.board\") :- param_num(t, \"amount\", n), n > 1000.\n"
	for _, c := range []struct {
		name  string
		w     *workflow.Workflow
		steps string
		step  int
		want  string
	}{
		{"one approver", example(t, "refund-agent"), `
      - input: ` + big + `
        expect: {outcomes: [APPROVAL_REQUEST], effects: [{approver: finance-lead}]}
      - approve: bob
        expect: {refused: ""}
      - approve: finance-lead
        expect: {approval: approved, effects: [{effect_type: refund.pay, params: {amount: 1500}}]}
      - receipt: confirmed_success
        expect: {completion: complete}`, 0, ""},
		{"someone else's approval fails the step unless expected", example(t, "refund-agent"), `
      - input: ` + big + `
      - approve: bob`, 2, "refused (refused: "},
		{"no request waiting", example(t, "refund-agent"), `
      - approve: finance-lead`, 1, "no request is waiting"},
		{"a quorum, duties apart", refundWith(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2, "separate_duties": true,`, ""), `
      - input: ` + big + `
        as: alice
        expect: {outcomes: [APPROVAL_REQUEST]}
      - approve: alice
        expect: {refused: handed the run an input}
      - approve: bob
        expect: {approval: counted, effects: []}
      - approve: bob
        expect: {approval: ignored}
      - approve: mallory
        expect: {refused: ""}
      - receipt: confirmed_success
        expect: {refused: ""}`, 6, "no authorized effect is waiting"},
		{"a quorum completed", refundWith(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2, "separate_duties": true,`, ""), `
      - input: ` + big + `
        as: alice
      - approve: bob
        expect: {approval: counted}
      - approve: carol
        expect: {approval: approved, effects: [{effect_type: refund.pay}]}
      - receipt: confirmed_success
        expect: {completion: complete}`, 0, ""},
		{"a counted grant is not approved", refundWith(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2,`, ""), `
      - input: ` + big + `
      - approve: bob
        expect: {approval: approved}`, 2, "the grant was counted, want approved"},
		{"a panel", refundWith(t, `"approver": "finance-lead", "groups": {"treasury": ["carol", "frank"], "legal": ["dave", "erin"]}, "panels": {"board": ["treasury", "legal"]},`, board), `
      - input: ` + big + `
        expect: {outcomes: [APPROVAL_REQUEST], effects: [{approver: board}]}
      - approve: carol
        expect: {approval: counted}
      - approve: frank
        expect: {approval: ignored}
      - approve: erin
        expect: {approval: approved, effects: [{effect_type: refund.pay}]}`, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) { goesAsSaid(t, c.w, c.steps, c.step, c.want) })
	}
}

// Choice, control and denial steps are taken as a run takes a person's
// acts: a choice answers the oldest proposal offered (or the one named),
// a control steps the deliberation machine, a denial by one who may
// approve ends the run failed; and a run that ended takes no more steps.
func TestChoiceControlAndDenialSteps(t *testing.T) {
	w := example(t, "refund-agent")
	const goodwill = `{type: refund.requested/1, payload: {refund_id: r-6, amount: 40, payee: alice, reason: goodwill}}`
	const largeGoodwill = `{type: refund.requested/1, payload: {refund_id: r-7, amount: 900, payee: alice, reason: goodwill}}`
	for _, c := range []struct {
		name, steps string
		step        int
		want        string
	}{
		{"a choice decides the proposal again", `
      - input: ` + goodwill + `
        expect: {outcomes: [OPTIONS], options: [path:partial-refund, path:store-credit], mrp_state: OPTIONS}
      - choose: path:store-credit
        as: carol
        expect: {outcomes: [INTENT], effects: [{effect_type: refund.pay, params: {amount: 40}}], mrp_state: DECIDE}
      - receipt: confirmed_success
        expect: {completion: complete}`, 0, ""},
		{"options differ", `
      - input: ` + goodwill + `
        expect: {options: [path:store-credit]}`, 1, "options [path:partial-refund path:store-credit], want [path:store-credit]"},
		{"the machine's state differs", `
      - input: ` + goodwill + `
        expect: {mrp_state: DECIDE}`, 1, "the deliberation machine is in OPTIONS, want DECIDE"},
		{"an option not offered", `
      - input: ` + goodwill + `
      - choose: path:cash
        expect: {refused: CHOICE_OPTION_NOT_OFFERED}`, 0, ""},
		{"a proposal named that is not offered", `
      - input: ` + goodwill + `
      - choose: path:store-credit
        proposal: proposal-nothing
        expect: {refused: CHOICE_NOT_PENDING}`, 0, ""},
		{"a choice with nothing offered", `
      - input: ` + small + `
      - choose: path:store-credit`, 2, "a choice, but no proposal is waiting for one"},
		{"a refused choice fails unless expected", `
      - input: ` + goodwill + `
      - choose: path:cash`, 2, "refused (refused: CHOICE_OPTION_NOT_OFFERED"},
		{"paused, a choice is refused until resumed", `
      - input: ` + largeGoodwill + `
      - control: PAUSE
        reason: looking into it
        expect: {mrp_state: HOLD, effects: []}
      - choose: path:partial-refund
        expect: {refused: ""}
      - control: RESUME
        expect: {mrp_state: OPTIONS}
      - choose: path:partial-refund
        expect: {outcomes: [APPROVAL_REQUEST], effects: [{approver: finance-lead}]}
      - approve: finance-lead
        expect: {approval: approved}
      - receipt: confirmed_success
        expect: {completion: complete}`, 0, ""},
		{"a control the machine refuses", `
      - input: ` + goodwill + `
      - control: LEAVE_SAFE_MODE
        expect: {refused: CONTROL_MRP_REFUSED}`, 0, ""},
		{"an exit withdraws the options and fails the run", `
      - input: ` + goodwill + `
      - control: EXIT
        expect: {mrp_state: EXIT, completion: fail}
      - choose: path:store-credit`, 3, "the run has ended: it failed"},
		{"a rejection of every option keeps the run", `
      - input: ` + goodwill + `
      - control: REJECT_ALL
        expect: {completion: continue}
      - choose: path:store-credit`, 3, "no proposal is waiting"},
		{"a denial by one who may not approve", `
      - input: ` + large + `
      - deny: bob
        expect: {refused: "bob"}
      - deny: finance-lead
        expect: {completion: fail}`, 0, ""},
		{"a denied run takes no more steps", `
      - input: ` + large + `
      - deny: finance-lead
      - approve: finance-lead`, 3, "the run has ended: finance-lead denied an approval request"},
		{"a denial with nothing waiting", `
      - input: ` + small + `
      - deny: finance-lead`, 2, "a denial, but no request is waiting for one"},
		{"a completed run takes no more steps", `
      - input: ` + small + `
      - receipt: confirmed_success
      - input: ` + small, 3, "the run has ended: it completed"},
		{"a run waiting for a receipt has not ended", `
      - input: ` + large + `
      - approve: finance-lead
      - control: PAUSE
        expect: {mrp_state: HOLD}`, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) { goesAsSaid(t, w, c.steps, c.step, c.want) })
	}
}

// Coverage: each case's result names the rule ids its decisions came
// from (gates' decisions, assessments, approvers), and Cover says which
// of the gate policy's rules no case exercised, and which it cannot
// track (a rule id written from a variable).
func TestCover(t *testing.T) {
	const board = "\n.decl approver(name: symbol, rule: symbol)\napprover(\"board\", \"g.board\") :- param_num(t, \"amount\", n), n > 1000.\n" +
		"decision(\"G1\", \"REFUSE\", \"g1.voids\") :- action(t, \"refund.void\").\n" +
		"decision(\"G4\", \"ESCALATE\", r) :- param_sym(t, \"escalate\", r).\n"
	w := refundWith(t, `"approver": "finance-lead", "groups": {"treasury": ["carol", "frank"], "legal": ["dave", "erin"]}, "panels": {"board": ["treasury", "legal"]},`, board)
	src := []byte(`cases:
  - name: small
    steps:
      - input: {type: refund.requested/1, payload: {refund_id: r-1, amount: 40, payee: alice, reason: x}}
  - name: board
    steps:
      - input: {type: refund.requested/1, payload: {refund_id: r-2, amount: 1500, payee: alice, reason: x}}
        expect: {outcomes: [APPROVAL_REQUEST]}
  - name: refused by the domain
    steps:
      - input: {type: refund.requested/1, payload: {refund_id: r-3, amount: 0, payee: alice, reason: x}}
`)
	res, err := Run(w, "c.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"g2.refunds", "g2.small-refund"}, {"g.board", "g2.large-refund", "g2.refunds"}, nil}
	for i, r := range res {
		if !slices.Equal(r.Rules, want[i]) || (i < 2) != r.Passed() {
			t.Fatalf("%s: rules %v, want %v (%+v)", r.Name, r.Rules, want[i], r)
		}
	}
	c := Cover(w, res)
	var never []string
	for _, r := range c.Never {
		never = append(never, r.ID)
	}
	if c.Rules != 9 || c.Exercised != 4 || !slices.Equal(never, []string{"g3.goodwill", "g3.goodwill", "g4.goodwill", "g4.goodwill", "g1.voids"}) {
		t.Fatalf("coverage %+v", c)
	}
	if len(c.Untracked) != 1 || c.Untracked[0].Relation != "decision" || c.Untracked[0].ID != "" {
		t.Fatalf("untracked %+v", c.Untracked)
	}
}

// A receipt, an approval or a denial may name the effect type it
// answers: the oldest effect or request of that type, not the oldest of
// all.
func TestStepsAnswerAnEffectType(t *testing.T) {
	w := example(t, "ops-agent")
	const restart = `{type: restart.requested/1, payload: {restart_id: rst-1, service: api, target: dest:ops-api, reason: memory leak}}`
	const diag = `{type: diagnostics.requested/1, payload: {check_id: chk-1, service: api, target: dest:ops-api, probe: health}}`
	const diag2 = `{type: diagnostics.requested/1, payload: {check_id: chk-2, service: api, target: dest:ops-api, probe: health}}`
	const restart2 = `{type: restart.requested/1, payload: {restart_id: rst-2, service: api, target: dest:ops-api, reason: memory leak}}`
	for _, c := range []struct {
		name, steps string
		step        int
		want        string
	}{
		{"the restart settled before the older diagnostic", `
      - input: ` + restart + `
      - input: ` + diag + `
      - approve: oncall-lead
        effect: service.restart
        expect: {approval: approved, effects: [{effect_type: service.restart}]}
      - receipt: confirmed_success
        effect: service.restart
        expect: {completion: complete}
      - receipt: confirmed_success
        expect: {completion: complete}
      - input: ` + diag, 6, "the run has ended: it completed"},
		{"by default the oldest: the diagnostic", `
      - input: ` + restart + `
      - input: ` + diag + `
      - approve: oncall-lead
      - receipt: confirmed_success
      - receipt: confirmed_success
        effect: diag.read`, 5, "a receipt, but no authorized effect for diag.read is waiting for one"},
		{"nothing of that type to settle", `
      - input: ` + restart + `
      - input: ` + diag + `
      - receipt: confirmed_success
        effect: service.restart`, 3, "a receipt, but no authorized effect for service.restart is waiting for one"},
		{"no request of that type", `
      - input: ` + restart + `
      - approve: oncall-lead
        effect: diag.read`, 2, "an approval, but no request for diag.read is waiting for one"},
		{"a denial of the restart", `
      - input: ` + restart + `
      - deny: oncall-lead
        effect: service.restart
        expect: {completion: fail}
      - input: ` + diag, 3, "the run has ended: oncall-lead denied"},
		{"the second oldest of all: the restart", `
      - input: ` + diag + `
      - input: ` + restart + `
      - approve: oncall-lead
      - receipt: confirmed_success
        nth: 2
      - receipt: confirmed_success
        effect: service.restart`, 5, "a receipt, but no authorized effect for service.restart is waiting for one"},
		{"the second diagnostic settled first", `
      - input: ` + diag + `
      - input: ` + diag2 + `
      - receipt: confirmed_failure
        effect: diag.read
        nth: 2
      - receipt: confirmed_success
        effect: diag.read
        nth: 2`, 4, "a receipt for the 2nd oldest authorized effect for diag.read waiting, but fewer than 2 are"},
		{"a third request, of two", `
      - input: ` + restart + `
      - input: ` + restart2 + `
      - deny: oncall-lead
        nth: 3`, 3, "a denial for the 3rd oldest request waiting, but fewer than 3 are"},
		{"the second request approved", `
      - input: ` + restart + `
      - input: ` + restart2 + `
      - approve: oncall-lead
        nth: 2
        expect: {approval: approved, effects: [{effect_type: service.restart, params: {restart_id: rst-2}}]}`, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) { goesAsSaid(t, w, c.steps, c.step, c.want) })
	}
}

// Pin writes into every step what the bundle decides for it: the pinned
// file passes against that bundle, pinning it again changes no byte, and
// it holds more than the author wrote (every parameter, the machine's
// state). Against a bundle that decides otherwise, the pinned cases fail
// at the step that differs.
func TestPin(t *testing.T) {
	for _, name := range []string{"refund-agent", "ops-agent", "support-agent"} {
		w := example(t, name)
		src, err := os.ReadFile(filepath.Join("..", "examples", name, "policy.test.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		pinnedFile, err := Pin(w, "policy.test.yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(w, "pinned.json", pinnedFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if !r.Passed() {
				t.Fatalf("%s: %s: step %d: %s", name, r.Name, r.Step, r.Failure)
			}
		}
		again, err := Pin(w, "pinned.json", pinnedFile)
		if err != nil || !bytes.Equal(again, pinnedFile) {
			t.Fatalf("%s: pinning again changed the file (%v)", name, err)
		}
		if !strings.Contains(string(pinnedFile), `"mrp_state": "DECIDE"`) || !strings.Contains(string(pinnedFile), `"params": {`) {
			t.Fatalf("%s: pinned no machine state or parameters:\n%s", name, pinnedFile)
		}
	}
	// The refund agent's cases pinned, run against a bundle whose large
	// refunds start at 50: the refund of exactly 100 now waits for
	// finance-lead.
	w := example(t, "refund-agent")
	src, _ := os.ReadFile(filepath.Join("..", "examples", "refund-agent", "policy.test.yaml"))
	pinnedFile, err := Pin(w, "policy.test.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	lower := refundEdited(t, func(files map[string][]byte) {
		files["gates.dl"] = []byte(strings.NewReplacer("n <= 100.", "n <= 50.", "n > 100.", "n > 50.").Replace(string(files["gates.dl"])))
	})
	res, err := Run(lower, "pinned.json", pinnedFile)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, r := range res {
		if !r.Passed() {
			failed[r.Name] = fmt.Sprintf("step %d: %s", r.Step, r.Failure)
		}
	}
	if got := failed["a refund of exactly 100 is still paid outright"]; !strings.HasPrefix(got, "step 1: outcomes [APPROVAL_REQUEST], want [INTENT]") || len(failed) != 1 {
		t.Fatalf("failures against the changed bundle: %v", failed)
	}
	// A step that cannot be taken is an error naming it.
	if _, err := Pin(w, "c.yaml", []byte("cases:\n  - name: lone\n    steps:\n      - receipt: confirmed_success\n")); err == nil ||
		!strings.Contains(err.Error(), "lone: step 1: a receipt, but no authorized effect is waiting") {
		t.Fatalf("a step that cannot be taken: %v", err)
	}
}
