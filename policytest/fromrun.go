package policytest

import (
	"encoding/json"
	"fmt"
	"slices"

	"flrh.dev/flrh/workflow"
)

// Act is one act a recorded run took, in the order it took them: an input
// it accepted (a domain input, a receipt, a person's choice or control),
// or a person's approval or denial of a request it waited on.
type Act struct {
	// Kind is workflow.KindInput, KindReceipt, KindChoice or KindControl
	// for an accepted input; ActApprove or ActDeny for an approval or a
	// denial.
	Kind string
	// Actor is who handed the run the act (none for a receipt).
	Actor string
	// Body is an accepted input's body, as the run accepted it.
	Body []byte
	// Request names the request an approval or a denial answers, by its
	// id or its digest ("": the oldest waiting).
	Request string
}

// Kinds of an Act that is not an accepted input.
const (
	ActApprove = "approve"
	ActDeny    = "deny"
)

// Record is what a case is made of: a recorded run's acts, and what it
// did that the case must do too.
type Record struct {
	RunID string
	Acts  []Act
	// Committed are the intents the run committed, in order.
	Committed []string
	// Ended is how the run ended, where its acts tell: "complete" (its
	// completion verified), "fail" (its workflow's word, or a denial),
	// "running" (it has not ended); "" where the runner ended it beyond
	// what a case takes (a cancellation, a budget…), which is not
	// checked.
	Ended string
}

// Ends a Record may say.
const (
	EndedComplete = "complete"
	EndedFail     = "fail"
	EndedRunning  = "running"
)

// FromRun makes a case file (JSON) named name, with note, of the acts a
// recorded run took, each a step pinned to what w decides for it (Pin),
// under the run's id, so that the case's proposals and intents are the
// run's own. Run against another version of the bundle, the case says
// where it would decide otherwise.
//
// The case must do what the run did: authorize exactly the intents it
// committed, in that order, and end as it ended. Otherwise FromRun
// refuses, saying where the case parts from the run (w is not the
// definition the run ran, say, or the runner refused a grant for its
// expiry, which a case does not simulate).
func FromRun(w *workflow.Workflow, rec Record, name, note string) ([]byte, error) {
	runID, acts, committed := rec.RunID, rec.Acts, rec.Committed
	if len(acts) == 0 {
		return nil, fmt.Errorf("run %s took no act to make a case of", runID)
	}
	r, err := newRun(w, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	c := testCase{Name: name, Run: runID, Note: note}
	parted := func(i int, format string, args ...any) error {
		return fmt.Errorf("the case parts from run %s at act %d: %s", runID, i+1, fmt.Sprintf(format, args...))
	}
	for i, a := range acts {
		s, err := r.stepOf(a)
		if err != nil {
			return nil, parted(i, "%v", err)
		}
		d, why := r.step(int64(len(c.Steps)+1), s)
		if why != "" {
			return nil, parted(i, "%s", why)
		}
		s.Expect = pinned(w, s, d)
		c.Steps = append(c.Steps, s)
		for k, id := range r.authorized {
			if k >= len(committed) || committed[k] != id {
				return nil, parted(i, "the case authorizes %s, where the run committed %s", id, orNothing(committed, k))
			}
		}
	}
	if len(r.authorized) < len(committed) {
		return nil, fmt.Errorf("the case parts from run %s: the run committed %s, which the case never authorizes", runID, committed[len(r.authorized)])
	}
	ended := EndedRunning
	switch {
	case r.ended == "it completed":
		ended = EndedComplete
	case r.ended != "":
		ended = EndedFail
	}
	if rec.Ended != "" && rec.Ended != ended {
		return nil, fmt.Errorf("the case parts from run %s: the run ended %s, the case %s", runID, rec.Ended, ended)
	}
	f := &file{Cases: []testCase{c}}
	out, err := encode(f)
	if err != nil {
		return nil, err
	}
	// What comes out reads back as a case file.
	if _, err := parse("run "+runID, out); err != nil {
		return nil, err
	}
	return out, nil
}

func orNothing(ids []string, k int) string {
	if k < len(ids) {
		return ids[k]
	}
	return "nothing more"
}

// stepOf is the step that hands the case's run the act a.
func (r *run) stepOf(a Act) (step, error) {
	switch a.Kind {
	case ActApprove, ActDeny:
		s := step{Approve: a.Actor}
		if a.Kind == ActDeny {
			s = step{Deny: a.Actor}
		}
		if a.Request == "" {
			return s, nil
		}
		k := slices.IndexFunc(r.waiting, func(q *request) bool { return q.need.RequestID == a.Request || q.need.RequestDigest == a.Request })
		if k < 0 {
			return step{}, fmt.Errorf("an answer to request %s, which the case is not waiting on", a.Request)
		}
		s.Effect, s.Nth = named(r.waiting, k, func(q *request) string { return q.effectType })
		return s, nil
	case workflow.KindInput:
		return step{Input: json.RawMessage(a.Body), As: a.Actor}, nil
	case workflow.KindChoice:
		c, err := workflow.ParseChoice(a.Body)
		if err != nil {
			return step{}, err
		}
		return step{Choose: c.Option, Proposal: c.ProposalID, As: a.Actor}, nil
	case workflow.KindControl:
		c, err := workflow.ParseControl(a.Body)
		if err != nil {
			return step{}, err
		}
		return step{Control: string(c.Trigger), Proposal: c.ProposalID, Reason: c.Reason, As: a.Actor}, nil
	case workflow.KindReceipt:
		intentID, outcome, err := workflow.ParseReceipt(a.Body)
		if err != nil {
			return step{}, fmt.Errorf("a receipt that does not read: %v", err)
		}
		if !slices.Contains(receipts, outcome) {
			return step{}, fmt.Errorf("a receipt of %q, which a case does not take", outcome)
		}
		k := slices.IndexFunc(r.open, func(p planned) bool { return p.intentID == intentID })
		if k < 0 {
			return step{}, fmt.Errorf("a receipt for %s, which the case has not authorized or has settled", intentID)
		}
		s := step{Receipt: outcome}
		s.Effect, s.Nth = named(r.open, k, func(p planned) string { return p.effectType })
		return s, nil
	}
	return step{}, fmt.Errorf("an act of kind %q, which a case does not take", a.Kind)
}

// named is how a step names list's entry k (a step answers the nth
// oldest of the type it names, or of all when it names none): nothing
// when k is the oldest of all, else its type, and its rank among its
// type when it is not the oldest of it (0: the oldest, left out).
func named[T any](list []T, k int, typeOf func(T) string) (effectType string, nth int) {
	if k == 0 {
		return "", 0
	}
	effectType = typeOf(list[k])
	for _, e := range list[:k] {
		if typeOf(e) == effectType {
			nth++
		}
	}
	if nth == 0 {
		return effectType, 0
	}
	return effectType, nth + 1
}
