// Package policytest runs a workflow bundle's own test cases: sequences of
// inputs, people's approvals and receipts handed to the compiled
// workflow's pure Decide (and AuthorizeApproved), each followed by what the
// bundle's author expects H to decide. It is to a bundle what `opa test` is to a Rego
// policy: the gates, capabilities, eligibility rules and approval policy
// checked in CI before a run ever sees them, with no store, no runner and
// no effect sent.
//
// A case file is JSON (or YAML, read strictly as the JSON value it
// spells):
//
//	{"cases": [
//	  {"name": "a large refund waits for finance-lead",
//	   "steps": [
//	     {"input": {"type": "refund.requested/1", "payload": {…}},
//	      "expect": {"outcomes": ["APPROVAL_REQUEST"],
//	                 "effects": [{"effect_type": "refund.pay", "approver": "finance-lead"}]}},
//	     …]}]}
//
// A step is an input (an event, as flrh run start takes it, handed by
// "as", "policytest" when left out), a receipt ("confirmed_success" or
// "confirmed_failure") for the oldest effect authorized and not yet
// settled, an approval: a person's grant of the oldest approval request
// waiting, judged as a run judges it (who may answer, duties kept apart,
// a quorum, a panel), the grant that completes the request having H
// authorize its effect; a denial of that request (by one who may approve
// it), which fails the run; a person's choice of an option H offered; or
// a person's control of the deliberation machine (PAUSE, RESUME,
// REJECT_ALL…). A receipt, an approval or a denial may name the "effect"
// type it answers (the oldest of that type rather than the oldest of
// all). A person chooses and steers as an operator does over the API. What "expect" does not name is not checked, but for a refusal: a
// step the domain, the approval policy or the deliberation machine
// refuses fails unless "refused" expects it. A run that a runner would
// end there — complete or failed with no effect to settle and no request
// to answer, or denied — has ended, and a step after it fails.
//
// What a runner adds is not simulated: the loop contract's budgets and
// no-progress window, the time a grant expires, a receipt whose outcome
// is unknown (it is reconciled before the workflow sees it).
//
// The package is pure: Run takes the compiled workflow and the case
// file's bytes and returns the results.
package policytest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/panel"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/workflow"
)

// Named reports whether a file's name makes it a bundle's case file:
// *.test.json, *.test.yaml or *.test.yml, beside the bundle's other files
// (a bundle's digest binds only the files its manifest names, so its tests
// do not change it).
func Named(name string) bool {
	for _, ext := range []string{".test.json", ".test.yaml", ".test.yml"} {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return true
		}
	}
	return false
}

// file is a case file's layout.
type file struct {
	Cases []testCase `json:"cases"`
}

type testCase struct {
	Name string `json:"name"`
	// Run is the run id the case's run starts with ("policytest" when
	// left out): the ids of its events, proposals and intents derive from
	// it, so a case made from a recorded run names them as the run did.
	Run string `json:"run,omitempty"`
	// Note is free text for the reader (where a case came from); the
	// case does not read it.
	Note  string `json:"note,omitempty"`
	Steps []step `json:"steps"`
}

type step struct {
	Input json.RawMessage `json:"input,omitempty"`
	// As is who hands the run the input, the choice or the control
	// ("policytest" when left out): where the approval policy separates
	// duties, no one who handed the run an input may approve.
	As      string `json:"as,omitempty"`
	Receipt string `json:"receipt,omitempty"`
	Approve string `json:"approve,omitempty"`
	// Deny is who denies the oldest approval request waiting: one who
	// may approve it, or the step is refused. The run then fails, and a
	// step after it has no run to take it.
	Deny string `json:"deny,omitempty"`
	// Choose is the option a person chooses among those H offered for
	// Proposal (the oldest proposal offered when left out).
	Choose string `json:"choose,omitempty"`
	// Control is a person's trigger of the deliberation machine (PAUSE,
	// RESUME, REJECT_ALL, REQUEST_TEST, ESCALATE, LEAVE_SAFE_MODE, EXIT),
	// about Proposal when given, for Reason.
	Control  string `json:"control,omitempty"`
	Proposal string `json:"proposal,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Effect, on a receipt, an approval or a denial, is the effect type
	// it answers: the oldest effect (or request) of that type rather than
	// the oldest of all.
	Effect string `json:"effect,omitempty"`
	// Nth, on a receipt, an approval or a denial, answers the nth oldest
	// waiting (of Effect's type when it is given) rather than the oldest:
	// effects are settled in the order their destinations answer, not the
	// order they were sent. 1, the default, is the oldest.
	Nth    int     `json:"nth,omitempty"`
	Expect *expect `json:"expect,omitempty"`
}

// expect is what a step must have decided; a member left out is not
// checked (but refusals: see Refused).
type expect struct {
	// Refused, when given, expects the input refused with a reason that
	// holds it ("" for any reason); when left out, a refusal fails the
	// step.
	Refused *string `json:"refused,omitempty"`
	// Outcomes are H's outcomes in the order the step decided them
	// (INTENT, APPROVAL_REQUEST, OPTIONS, HELD, ESCALATED, REJECTED): one
	// a proposal, and one more for a proposal decided again in the same
	// turn (options a controller chose among).
	Outcomes *[]string `json:"outcomes,omitempty"`
	// Effects are the effects the step planned, in order.
	Effects *[]effectExpect `json:"effects,omitempty"`
	// Completion is whether the run is then done once its effects are
	// closed: continue, complete or fail.
	Completion string `json:"completion,omitempty"`
	// Audit holds text each of which some outcome's audit lines or
	// rejection must hold (a gate's rule id, NOT_COVERED…).
	Audit []string `json:"audit,omitempty"`
	// Approval is what an approval step's grant did: counted (toward a
	// quorum or a panel, which wait for more), approved (the request is
	// answered and its effect authorized), ignored (it adds nothing to the
	// grants taken). A grant refused is a refusal (Refused).
	Approval string `json:"approval,omitempty"`
	// Options are the options H offered in the step, each OPTIONS
	// outcome's in turn.
	Options *[]string `json:"options,omitempty"`
	// MRPState is the deliberation machine's state after the step (HOLD,
	// OPTIONS, TEST, DECIDE, ESCALATE, FAILSAFE, EXIT).
	MRPState string `json:"mrp_state,omitempty"`
}

type effectExpect struct {
	EffectType string `json:"effect_type,omitempty"`
	// Approver, when given, is who must approve the effect ("" for an
	// effect that needs no approval).
	Approver *string `json:"approver,omitempty"`
	// Params are parameters the action must hold, with these values.
	Params map[string]json.RawMessage `json:"params,omitempty"`
}

// Result is how one case went.
type Result struct {
	Name  string `json:"name"`
	Steps int    `json:"steps"`
	// Failure says what the first step that did not go as expected did
	// instead ("" when every step did), and Step which it was (1-based).
	Failure string `json:"failure,omitempty"`
	Step    int    `json:"step,omitempty"`
	// Rules are the gate policy's rule ids the case's decisions came
	// from (a gate's decision, an assessment, a quorum, an approver),
	// sorted: what Cover reads.
	Rules []string `json:"rules,omitempty"`
}

// Passed reports whether every step went as expected.
func (r Result) Passed() bool { return r.Failure == "" }

// Outcomes of H a step may expect.
var outcomes = []string{authority.OutcomeIntent, authority.OutcomeApprovalRequest, authority.OutcomeOptions,
	authority.OutcomeHeld, authority.OutcomeEscalated, authority.OutcomeRejected}

// Outcomes a receipt step may give.
var receipts = []string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure}

// States of the deliberation machine a step may expect.
var mrpStates = []string{string(mrp.Hold), string(mrp.Options), string(mrp.Test), string(mrp.Decide),
	string(mrp.Escalate), string(mrp.Failsafe), string(mrp.Exit)}

// Completions a step may expect.
var completions = []string{string(workflow.Continue), string(workflow.Complete), string(workflow.Fail)}

// What an approval step's grant may have done.
const (
	grantCounted  = "counted"
	grantApproved = "approved"
	grantIgnored  = "ignored"
)

var grantOutcomes = []string{grantCounted, grantApproved, grantIgnored}

// maxNth bounds a step's nth: a run with more effects of one type
// waiting at once than this is not a case one reads.
const maxNth = 1000

// Run runs the cases of the case file name, whose bytes are src (YAML when
// name says so), against w, each from a fresh run, and returns how each
// went. A file that cannot be read is a *workflow.Error (CodeBadTest, with
// where) and runs nothing.
func Run(w *workflow.Workflow, name string, src []byte) ([]Result, error) {
	f, err := parse(name, src)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(f.Cases))
	for i, c := range f.Cases {
		out[i] = runCase(w, c)
	}
	return out, nil
}

func parse(name string, src []byte) (*file, error) {
	doc, pos, err := workflow.ReadDocument(name, src)
	if err != nil {
		if we, ok := err.(*workflow.Error); ok {
			we.Code = workflow.CodeBadTest
		}
		return nil, err
	}
	// fail is what is wrong at ptr, with where it was written in YAML.
	fail := func(ptr, format string, args ...any) *workflow.Error {
		e := &workflow.Error{Code: workflow.CodeBadTest, File: name, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
		if p, ok := pos.At(ptr); ok && ptr != "" {
			e.Line, e.Column = p.Line, p.Column
		}
		return e
	}
	if _, err := cjson.Decode(doc); err != nil {
		return nil, fail("", "not flrh-cjson JSON: %v", err)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fail("", "not a case file ({\"cases\": [{\"name\", \"steps\": [{\"input\"|\"receipt\"|\"approve\"|\"deny\"|\"choose\"|\"control\", \"expect\"}]}]}): %v", err)
	}
	if len(f.Cases) == 0 {
		return nil, fail("/cases", "no cases")
	}
	names := map[string]bool{}
	for i, c := range f.Cases {
		ptr := fmt.Sprintf("/cases/%d", i)
		switch {
		case strings.TrimSpace(c.Name) == "":
			return nil, fail(ptr+"/name", "a case has a name")
		case names[c.Name]:
			return nil, fail(ptr+"/name", "two cases are named %q", c.Name)
		case len(c.Steps) == 0:
			return nil, fail(ptr+"/steps", "a case has at least one step")
		}
		names[c.Name] = true
		for j, s := range c.Steps {
			sp := fmt.Sprintf("%s/steps/%d", ptr, j)
			kinds := 0
			for _, given := range []bool{len(s.Input) > 0, s.Receipt != "", s.Approve != "", s.Deny != "", s.Choose != "", s.Control != ""} {
				if given {
					kinds++
				}
			}
			switch {
			case kinds != 1:
				return nil, fail(sp, "a step is an input, a receipt, an approval, a denial, a choice or a control, one of them")
			case s.As != "" && len(s.Input) == 0 && s.Choose == "" && s.Control == "":
				return nil, fail(sp+"/as", "only an input, a choice or a control is handed to the run by someone")
			case s.Proposal != "" && s.Choose == "" && s.Control == "":
				return nil, fail(sp+"/proposal", "only a choice or a control names a proposal")
			case s.Reason != "" && s.Control == "":
				return nil, fail(sp+"/reason", "only a control gives a reason")
			case s.Effect != "" && s.Receipt == "" && s.Approve == "" && s.Deny == "":
				return nil, fail(sp+"/effect", "only a receipt, an approval or a denial answers an effect")
			case s.Nth != 0 && s.Receipt == "" && s.Approve == "" && s.Deny == "":
				return nil, fail(sp+"/nth", "only a receipt, an approval or a denial answers the nth effect waiting")
			case s.Nth < 0 || s.Nth > maxNth:
				return nil, fail(sp+"/nth", "%d is not from 1 to %d", s.Nth, maxNth)
			case s.Receipt != "" && !slices.Contains(receipts, s.Receipt):
				return nil, fail(sp+"/receipt", "%q is not one of %s (a run hands its workflow a receipt once an effect's outcome is known)", s.Receipt, strings.Join(receipts, ", "))
			case s.Control != "" && !slices.Contains(workflow.ControlTriggers, mrp.Trigger(s.Control)):
				return nil, fail(sp+"/control", "%q is not one of %v", s.Control, workflow.ControlTriggers)
			}
			if s.Expect == nil {
				continue
			}
			if o := s.Expect.Outcomes; o != nil {
				for k, x := range *o {
					if !slices.Contains(outcomes, x) {
						return nil, fail(fmt.Sprintf("%s/expect/outcomes/%d", sp, k), "%q is not one of %s", x, strings.Join(outcomes, ", "))
					}
				}
			}
			if x := s.Expect.Completion; x != "" && !slices.Contains(completions, x) {
				return nil, fail(sp+"/expect/completion", "%q is not one of %s", x, strings.Join(completions, ", "))
			}
			if x := s.Expect.Approval; x != "" && (s.Approve == "" || !slices.Contains(grantOutcomes, x)) {
				return nil, fail(sp+"/expect/approval", "an approval step's grant is one of %s", strings.Join(grantOutcomes, ", "))
			}
			if x := s.Expect.MRPState; x != "" && !slices.Contains(mrpStates, x) {
				return nil, fail(sp+"/expect/mrp_state", "%q is not one of %s", x, strings.Join(mrpStates, ", "))
			}
		}
	}
	return &f, nil
}

// decided is what one step decided, as the expectations read it.
type decided struct {
	refusal    string
	outcomes   []string
	audit      []string // every outcome's audit lines and rejection
	effects    []workflow.Effect
	completion string
	approval   string   // an approval step's grant: counted, approved or ignored
	options    []string // the options every OPTIONS outcome offered
	mrpState   string   // the deliberation machine's state after the step
}

// summary is what a failing step decided, for the person reading why.
func (d decided) summary() string {
	if d.refusal != "" {
		return "refused: " + d.refusal
	}
	if d.approval != "" {
		return "the grant was " + d.approval
	}
	s := fmt.Sprintf("H decided %v", d.outcomes)
	if len(d.audit) > 0 {
		s += "; " + strings.Join(d.audit, "; ")
	}
	return s
}

func runCase(w *workflow.Workflow, c testCase) Result {
	res := Result{Name: c.Name, Steps: len(c.Steps)}
	r, err := newRun(w, c.Run)
	if err != nil {
		res.Failure, res.Step = err.Error(), 1
		return res
	}
	for i, s := range c.Steps {
		d, why := r.step(int64(i+1), s)
		if why == "" {
			why = check(w, s.Expect, d)
			if why != "" {
				why += " (" + d.summary() + ")"
			}
		}
		if why != "" {
			res.Failure, res.Step = why, i+1
			break
		}
	}
	res.Rules = slices.Sorted(maps.Keys(r.rules))
	return res
}

// run is one case's run as its steps leave it.
type run struct {
	w       *workflow.Workflow
	state   []byte
	open    []planned  // intents authorized and not yet settled, oldest first
	waiting []*request // approval requests not yet answered, oldest first
	makers  []string   // who handed the run its inputs
	ended   string     // why the run ended ("" while it runs)
	// authorized are the intents it authorized, in order.
	authorized []string
	rules      map[string]bool // the rule ids its decisions came from
}

// newRun is a fresh run of w under runID ("policytest" when empty).
func newRun(w *workflow.Workflow, runID string) (*run, error) {
	state, err := w.Init(cmp.Or(runID, "policytest"))
	if err != nil {
		return nil, fmt.Errorf("the run does not start: %w", err)
	}
	return &run{w: w, state: state, rules: map[string]bool{}}, nil
}

// planned is an intent authorized and not yet settled.
type planned struct {
	intentID, effectType string
}

// request is an approval request, the type of its effect, and whose
// grants it took.
type request struct {
	need       workflow.ApprovalNeed
	effectType string
	people     []string
}

// answered is the index in list of the oldest entry of effectType (of
// any type when it is ""), or -1.
func answered[T any](list []T, effectType string, nth int, typeOf func(T) string) int {
	seen := 0
	for k, e := range list {
		if effectType == "" || typeOf(e) == effectType {
			if seen++; seen == max(nth, 1) {
				return k
			}
		}
	}
	return -1
}

// waitingFor says what a step answering the nth of effectType found
// nothing to answer: "an approval, but no request is waiting for one",
// with the type named, or "… but fewer than 2 are waiting".
func waitingFor(step, what, effectType string, nth int) string {
	if effectType != "" {
		what += " for " + effectType
	}
	if nth > 1 {
		return fmt.Sprintf("%s for the %d%s oldest %s waiting, but fewer than %d are", step, nth, ordinal(nth), what, nth)
	}
	return fmt.Sprintf("%s, but no %s is waiting for one", step, what)
}

// ordinal is the suffix of n's ordinal in English: 2nd, 3rd, 11th.
func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

// personRole is the role a person chooses and steers in, as the server
// gives an operator.
const personRole = "operator"

// step takes one step: what it decided, or why it could not be taken.
func (r *run) step(seq int64, s step) (decided, string) {
	if r.ended != "" {
		return decided{}, "the run has ended: " + r.ended
	}
	switch {
	case s.Approve != "":
		return r.approve(s.Approve, s.Effect, s.Nth)
	case s.Deny != "":
		return r.deny(s.Deny, s.Effect, s.Nth)
	}
	in := workflow.Input{Seq: seq, Actor: cmp.Or(s.As, "policytest")}
	var err error
	switch {
	case len(s.Input) > 0:
		if in.Body, err = cjson.Canonicalize(s.Input); err != nil {
			return decided{}, "the input is not canonical JSON: " + err.Error()
		}
		in.Kind = workflow.KindInput
	case s.Receipt != "":
		k := answered(r.open, s.Effect, s.Nth, func(p planned) string { return p.effectType })
		if k < 0 {
			return decided{}, waitingFor("a receipt", "authorized effect", s.Effect, s.Nth)
		}
		in.Kind = workflow.KindReceipt
		in.Body, err = cjson.Marshal(map[string]any{"intent_id": r.open[k].intentID, "outcome": s.Receipt})
		r.open = slices.Delete(r.open, k, k+1)
	case s.Choose != "":
		proposal := s.Proposal
		if proposal == "" {
			offered, err := r.w.Offered(r.state)
			if err != nil {
				return decided{}, "the run's state: " + err.Error()
			}
			if len(offered) == 0 {
				return decided{}, "a choice, but no proposal is waiting for one"
			}
			proposal = offered[0]
		}
		in.Kind, in.ActorRole = workflow.KindChoice, personRole
		in.Body, err = cjson.Marshal(map[string]any{"proposal_id": proposal, "option": s.Choose})
		in.Capability, _ = mrp.RequiredCapability(mrp.ChooseOption)
	default:
		body := map[string]any{"trigger": s.Control}
		if s.Proposal != "" {
			body["proposal_id"] = s.Proposal
		}
		if s.Reason != "" {
			body["reason"] = s.Reason
		}
		in.Kind, in.ActorRole = workflow.KindControl, personRole
		in.Body, err = cjson.Marshal(body)
		in.Capability, _ = mrp.RequiredCapability(mrp.Trigger(s.Control))
	}
	if err != nil {
		return decided{}, "the step cannot be written as JSON: " + err.Error()
	}
	in.Digest = cjson.Digest(in.Body)
	// Explain is Decide with why H decided as it did: the rule ids the
	// coverage counts.
	res, whys, err := r.w.Explain(r.state, in)
	if err != nil {
		return decided{}, "Decide failed: " + err.Error()
	}
	for _, y := range whys {
		r.exercised(y)
	}
	if res.Refusal == "" {
		r.state = res.State
		if in.Kind == workflow.KindInput && !slices.Contains(r.makers, in.Actor) {
			r.makers = append(r.makers, in.Actor)
		}
		for _, e := range res.Effects {
			if e.Approval != nil {
				r.waiting = append(r.waiting, &request{need: *e.Approval, effectType: e.Intent.EffectType})
			} else {
				r.authorize(e)
			}
		}
		if why := r.over(res.Completion); why != "" {
			r.ended = why
		}
	}
	return observe(res), ""
}

// approverOf is who must approve the effect: "" for one that needs no
// approval, else the request's approver or the approval policy's.
func approverOf(w *workflow.Workflow, e workflow.Effect) string {
	if e.Approval == nil {
		return ""
	}
	return cmp.Or(e.Approval.Approver, w.Approval().Approver)
}

// over says why the run is over after a step that left it with
// completion c ("" when it is not): as a runner verifies a run once it
// has no effect to settle or request to answer, a run complete or failed
// with none ends there and takes no further step.
func (r *run) over(c workflow.Completion) string {
	switch {
	case c == workflow.Continue || len(r.open) > 0 || len(r.waiting) > 0:
		return ""
	case c == workflow.Complete:
		return "it completed"
	}
	return "it failed"
}

// approve is who's grant of the oldest approval request waiting (for
// effectType, when it is given), judged by the rules a run judges it by:
// the approval policy's (CheckGrant: who may answer the request), duties
// kept apart from those who handed the run an input, a quorum of
// distinct people, a panel's groups each answered for by a different
// person; the grant that completes the request has H authorize its
// effect (AuthorizeApproved).
func (r *run) approve(who, effectType string, nth int) (decided, string) {
	k := r.request(effectType, nth)
	if k < 0 {
		return decided{}, waitingFor("an approval", "request", effectType, nth)
	}
	q := r.waiting[k]
	// In the order a run's checks come (runner.Runner.Approve): a second
	// grant by one person adds nothing; then who may answer; then a
	// grant that brings a panel no closer adds nothing; then duties.
	if slices.Contains(q.people, who) {
		return decided{approval: grantIgnored}, ""
	}
	grant, err := q.grant(who)
	if err == nil {
		err = r.w.CheckGrant(q.need, grant)
	}
	if err != nil {
		return decided{refusal: err.Error()}, ""
	}
	groups := r.w.ApprovalPanel(q.need.Approver)
	quorum := max(q.need.Quorum, 1, len(groups), r.w.ApprovalQuorum())
	short, after := panel.Short(groups, quorum, q.people), panel.Short(groups, quorum, append(slices.Clone(q.people), who))
	switch {
	case after >= short:
		return decided{approval: grantIgnored}, ""
	case r.w.SeparatesDuties() && slices.Contains(r.makers, who):
		return decided{refusal: who + " handed the run an input, and the approval policy keeps duties apart"}, ""
	case after > 0:
		q.people = append(q.people, who)
		return decided{approval: grantCounted}, ""
	}
	e, err := r.w.AuthorizeApproved(r.state, q.need, grant)
	if err != nil {
		return decided{refusal: err.Error()}, ""
	}
	r.waiting = slices.Delete(r.waiting, k, k+1)
	r.authorize(e)
	return decided{approval: grantApproved, effects: []workflow.Effect{e}}, ""
}

// authorize opens the intent of an effect H authorized.
func (r *run) authorize(e workflow.Effect) {
	r.open = append(r.open, planned{e.Intent.IntentID, e.Intent.EffectType})
	r.authorized = append(r.authorized, e.Intent.IntentID)
}

// request is the index of the oldest request waiting for effectType (of
// any type when it is ""), or -1.
func (r *run) request(effectType string, nth int) int {
	return answered(r.waiting, effectType, nth, func(q *request) string { return q.effectType })
}

// grant is the grant who gives the request, as the approval policy reads
// it.
func (q *request) grant(who string) (workflow.Grant, error) {
	body, err := cjson.Marshal(map[string]any{"request_digest": q.need.RequestDigest, "actor": who, "role": authority.ApproverRole})
	return workflow.Grant{LedgerRequestDigest: q.need.RequestDigest, Body: body}, err
}

// deny is who's denial of the oldest approval request waiting (for
// effectType, when it is given). Who may
// deny is who may approve (runner.Runner.Deny): the grant this person
// would have given is put to the approval policy's check. A denial ends
// the run, failed.
func (r *run) deny(who, effectType string, nth int) (decided, string) {
	k := r.request(effectType, nth)
	if k < 0 {
		return decided{}, waitingFor("a denial", "request", effectType, nth)
	}
	grant, err := r.waiting[k].grant(who)
	if err == nil {
		err = r.w.CheckGrant(r.waiting[k].need, grant)
	}
	if err != nil {
		return decided{refusal: err.Error()}, ""
	}
	r.waiting = slices.Delete(r.waiting, k, k+1)
	r.ended = who + " denied an approval request"
	return decided{completion: string(workflow.Fail)}, ""
}

// observe reads what a step decided from its result and H's outcome notes.
func observe(r workflow.Result) decided {
	d := decided{refusal: r.Refusal, effects: r.Effects, completion: string(r.Completion)}
	for _, n := range r.Trace {
		if n.Kind == "mrp.journey" {
			var j struct {
				State string `json:"state"`
			}
			if json.Unmarshal(n.Body, &j) == nil {
				d.mrpState = j.State
			}
		}
		if n.Kind != "h.outcome" {
			continue
		}
		var o struct {
			Outcome   string   `json:"outcome"`
			Options   []string `json:"options"`
			Audit     []string `json:"audit"`
			Rejection *struct {
				Code string `json:"code"`
				Path string `json:"path"`
			} `json:"rejection"`
		}
		if json.Unmarshal(n.Body, &o) != nil {
			continue
		}
		d.outcomes = append(d.outcomes, o.Outcome)
		if o.Outcome == authority.OutcomeOptions {
			d.options = append(d.options, o.Options...)
		}
		d.audit = append(d.audit, o.Audit...)
		if o.Rejection != nil {
			d.audit = append(d.audit, o.Rejection.Code+" "+o.Rejection.Path)
		}
	}
	return d
}

// check says how d falls short of e, or "" when it does not.
func check(w *workflow.Workflow, e *expect, d decided) string {
	if e == nil {
		e = &expect{}
	}
	switch {
	case e.Refused == nil && d.refusal != "":
		return "refused"
	case e.Refused != nil && d.refusal == "":
		return "not refused"
	case e.Refused != nil && !strings.Contains(d.refusal, *e.Refused):
		return fmt.Sprintf("refused, but not for %q", *e.Refused)
	}
	if e.Outcomes != nil && !slices.Equal(*e.Outcomes, d.outcomes) {
		return fmt.Sprintf("outcomes %v, want %v", d.outcomes, *e.Outcomes)
	}
	if e.Approval != "" && e.Approval != d.approval {
		return fmt.Sprintf("the grant was %s, want %s", cmp.Or(d.approval, "not judged"), e.Approval)
	}
	if e.Options != nil && !slices.Equal(*e.Options, d.options) {
		return fmt.Sprintf("options %v, want %v", d.options, *e.Options)
	}
	if e.MRPState != "" && e.MRPState != d.mrpState {
		return fmt.Sprintf("the deliberation machine is in %s, want %s", cmp.Or(d.mrpState, "no state"), e.MRPState)
	}
	if e.Completion != "" && e.Completion != d.completion {
		return fmt.Sprintf("completion %s, want %s", d.completion, e.Completion)
	}
	for _, a := range e.Audit {
		if !slices.ContainsFunc(d.audit, func(line string) bool { return strings.Contains(line, a) }) {
			return fmt.Sprintf("no outcome's audit holds %q", a)
		}
	}
	if e.Effects == nil {
		return ""
	}
	if len(*e.Effects) != len(d.effects) {
		return fmt.Sprintf("%d effects planned, want %d", len(d.effects), len(*e.Effects))
	}
	for k, x := range *e.Effects {
		got := d.effects[k]
		if x.EffectType != "" && x.EffectType != got.Intent.EffectType {
			return fmt.Sprintf("effect %d is %s, want %s", k+1, got.Intent.EffectType, x.EffectType)
		}
		if x.Approver != nil {
			if approver := approverOf(w, got); approver != *x.Approver {
				return fmt.Sprintf("effect %d is for %q to approve, want %q", k+1, approver, *x.Approver)
			}
		}
		if len(x.Params) > 0 {
			var params map[string]json.RawMessage
			if err := json.Unmarshal(got.Payload, &params); err != nil {
				return fmt.Sprintf("effect %d: its action is not an object", k+1)
			}
			for _, p := range slices.Sorted(maps.Keys(x.Params)) {
				want, _ := cjson.Canonicalize(x.Params[p])
				have, _ := cjson.Canonicalize(params[p])
				if params[p] == nil || !bytes.Equal(want, have) {
					return fmt.Sprintf("effect %d: %s = %s, want %s", k+1, p, orNone(params[p]), x.Params[p])
				}
			}
		}
	}
	return ""
}

func orNone(b json.RawMessage) string {
	if b == nil {
		return "(none)"
	}
	return string(b)
}
