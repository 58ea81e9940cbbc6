// Package runcase makes a recorded run into a bundle policy test case
// (package policytest): the acts the run took, read from its record (its
// event log, its inbox, its approvals ledger), each a step pinned to what
// the run's own bundle decides for it. Run against another version of the
// bundle, the case says where that version would have decided otherwise.
package runcase

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/policytest"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/workflow"
)

// Make reads run's record from s and returns it as a case file (JSON)
// named name ("run ID" when empty), pinned to what w decides: w must be
// the bundle the run ran (policytest.FromRun checks the case authorizes
// exactly the intents the run committed). The case's note names the run,
// its definition, and what ended what a case can take, if anything did.
func Make(ctx context.Context, s store.Store, w *workflow.Workflow, run store.Run, name string) ([]byte, error) {
	acts, then, err := Acts(ctx, s, run.ID)
	if err != nil {
		return nil, err
	}
	intents, err := s.Intents(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	committed := make([]string, len(intents)) // in commit order, as the store returns them
	for i, in := range intents {
		committed[i] = in.ID
	}
	note := fmt.Sprintf("run %s of %s@%s (%s), its %d acts pinned to what that definition decides", run.ID, run.WorkflowID, run.WorkflowVersion, w.Digest(), len(acts))
	if then != "" {
		note += "; then " + then + ", which a case does not take"
	}
	rec := policytest.Record{RunID: run.ID, Acts: acts, Committed: committed}
	switch {
	case then != "":
	case run.State == "SUCCEEDED":
		rec.Ended = policytest.EndedComplete
	case run.State == "FAILED_PERMANENT":
		rec.Ended = policytest.EndedFail
	case run.Outcome == "":
		rec.Ended = policytest.EndedRunning
	}
	return policytest.FromRun(w, rec, cmp.Or(name, "run "+run.ID), note)
}

// Acts reads the acts a run took, in the order it took them: its
// accepted inputs (domain inputs, receipts, choices, controls) from its
// event log; the approvals that answered a request, each person's, where
// the log records the request granted (the grants counted toward a
// quorum or a panel come first), those still counting toward one at the
// end; a denial where the log records it. then is the control event that
// ended what a case can take, "" when none did.
func Acts(ctx context.Context, s store.Store, runID string) (acts []policytest.Act, then string, err error) {
	evs, err := s.Events(ctx, runID, 0)
	if err != nil {
		return nil, "", err
	}
	inbox, err := s.Inbox(ctx, runID, false)
	if err != nil {
		return nil, "", err
	}
	var approvals, denials []store.Inbound
	for _, in := range inbox {
		switch in.Kind {
		case runner.KindApprove:
			approvals = append(approvals, in)
		case runner.KindDeny:
			denials = append(denials, in)
		}
	}
	// approve is the act of an approve entry: who gave its grant, and
	// the request it answers.
	approve := func(in store.Inbound) (policytest.Act, error) {
		var body struct {
			ApprovalID string `json:"approval_id"`
		}
		if err := json.Unmarshal(in.Body, &body); err != nil {
			return policytest.Act{}, fmt.Errorf("run %s: an approval that does not read: %v", runID, err)
		}
		g, err := s.Approval(ctx, body.ApprovalID)
		if err != nil {
			return policytest.Act{}, err
		}
		return policytest.Act{Kind: policytest.ActApprove, Actor: runner.GrantActor(g), Request: g.RequestDigest}, nil
	}
	for _, e := range evs {
		switch e.Kind {
		case runner.EventAccepted:
			a, err := runner.DecodeAccepted(e.Body)
			if err != nil {
				return nil, "", fmt.Errorf("run %s, event %d: %v", runID, e.Seq, err)
			}
			acts = append(acts, policytest.Act{Kind: a.Kind, Actor: a.Actor, Body: a.Body})
		case runner.EventControl, runner.EventRejected:
			var rec control.Record
			if err := json.Unmarshal(e.Body, &rec); err != nil {
				return nil, "", fmt.Errorf("run %s, event %d: %v", runID, e.Seq, err)
			}
			switch {
			case rec.Event == "APPROVAL_GRANTED" && rec.Accepted:
				for _, in := range approvals {
					a, err := approve(in)
					if err != nil {
						return nil, "", err
					}
					acts = append(acts, a)
				}
				approvals = nil
			case rec.Event == "APPROVAL_DENIED" && len(denials) > 0:
				in := denials[0]
				denials = denials[1:]
				if !rec.Accepted {
					continue // refused by the FSM: it changed nothing
				}
				var body struct {
					RequestID string `json:"request_id"`
				}
				_ = json.Unmarshal(in.Body, &body)
				acts = append(acts, policytest.Act{Kind: policytest.ActDeny, Actor: in.Actor, Request: body.RequestID})
			case rec.Accepted && endsWhatACaseTakes(rec.Event):
				return acts, rec.Event, nil
			}
		}
	}
	for _, in := range approvals {
		a, err := approve(in)
		if err != nil {
			return nil, "", err
		}
		acts = append(acts, a)
	}
	return acts, "", nil
}

// endsWhatACaseTakes reports whether a control event is one of the
// runner's own that a case does not take: a cancellation, a budget, a
// deadline, the no-progress window, retries run out, an effect's outcome
// abandoned, a request expired.
func endsWhatACaseTakes(event string) bool {
	switch event {
	case "CANCEL", "PENDING_CANCEL", "TIMEOUT", "PENDING_TIMEOUT", "BUDGET_EXHAUSTED", "PENDING_BUDGET_EXHAUSTED",
		"RULE_BUDGET_EXHAUSTED", "NO_PROGRESS", "RETRIES_EXHAUSTED", "ABANDON", "APPROVAL_EXPIRED":
		return true
	}
	return false
}
