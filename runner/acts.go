package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
)

// Acts refused up front. A person's act, or a new run's first input, that
// the run would refuse anyway is refused before anything is written: once
// written it was accepted (202, a nil error) and then refused silently in
// the trace, or sat unread in the inbox for good. Each check asks the
// workflow's own pure code the question the run will ask it, so it cannot
// drift from what the run does; nothing it does is recorded.

// InputRefusedError reports a new run's first input that its workflow
// refuses: the run is not created.
type InputRefusedError struct {
	WorkflowID, Version string
	Reason              string // the workflow's refusal
}

func (e *InputRefusedError) Error() string {
	return fmt.Sprintf("workflow %s@%s refuses the run's input: %s", e.WorkflowID, e.Version, e.Reason)
}

// ApproverRefusedError reports an approval or a denial by someone the
// request does not allow to answer it (the approval policy names another
// person, or the role is not an approver's). Nothing is recorded.
type ApproverRefusedError struct {
	RunID, RequestID, Actor string
	Reason                  string // the workflow's reason
}

func (e *ApproverRefusedError) Error() string {
	return fmt.Sprintf("%s may not answer approval %s of run %s: %s", e.Actor, e.RequestID, e.RunID, e.Reason)
}

// EndedError reports an act on a run that has ended: it takes none.
type EndedError struct {
	RunID, Outcome string
	Err            error // the store's refusal, when it was the store that refused
}

func (e *EndedError) Error() string {
	return fmt.Sprintf("run %s has ended (%s): it takes no more acts", e.RunID, e.Outcome)
}

func (e *EndedError) Unwrap() error { return e.Err }

// CheckFirstInput runs a workflow's pure step on a new run's first input,
// as the run's first pass will, and refuses (InputRefusedError) an input
// the workflow would refuse. input is canonical JSON; u is the usage
// reported beside it. StartWithUsage calls it before the run exists; a
// command that creates a store may call it before creating anything.
func CheckFirstInput(wf Workflow, runID string, input []byte, u Usage, by Actor) error {
	_, err := firstDecision(wf, runID, input, u, by)
	return err
}

// keptDecision is a new run's first input as StartWithUsage decided it:
// the state it was decided on, the input as the workflow saw it, and the
// decision. The run's first pass, deciding the same input on the same
// state, takes it instead of deciding again (Runner.decideStep): the
// workflow's step is pure, so it would decide the same.
type keptDecision struct {
	workflowID, version, digest string
	state                       []byte
	in                          Accepted
	d                           Decision
}

// firstDecision is CheckFirstInput's decision on the first input, with
// the state and input it was made on: nil when the run is to record a
// spent rule budget instead.
func firstDecision(wf Workflow, runID string, input []byte, u Usage, by Actor) (*keptDecision, error) {
	return firstDecisionDigested(wf, runID, input, store.BodyDigest(input), u, by)
}

// firstDecisionDigested is firstDecision for an input whose digest
// (store.BodyDigest) its caller has made already.
func firstDecisionDigested(wf Workflow, runID string, input []byte, digest string, u Usage, by Actor) (*keptDecision, error) {
	state, err := wf.Init(runID)
	if err != nil {
		return nil, fmt.Errorf("workflow %s@%s: %w", wf.ID(), wf.Version(), err)
	}
	in := Accepted{Seq: 1, Kind: KindInput, Body: input, Digest: digest,
		Actor: by.Name, ActorRole: by.Role, Capability: by.Capability}
	if !u.zero() {
		in.Usage = &u
	}
	d, err := wf.Decide(state, in)
	if errors.Is(err, ErrRuleBudget) {
		// The run records the spent rule budget as its outcome: that is
		// the run's to say, not a malformed input.
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("workflow %s@%s: %w", wf.ID(), wf.Version(), err)
	}
	if d.Refusal != "" {
		return nil, &InputRefusedError{WorkflowID: wf.ID(), Version: wf.Version(), Reason: d.Refusal}
	}
	return &keptDecision{workflowID: wf.ID(), version: wf.Version(), digest: wf.Digest(), state: state, in: in, d: d}, nil
}

// matches reports whether deciding in on state under wf is exactly the
// decision k holds: the same workflow definition, state bytes and input,
// field by field.
func (k *keptDecision) matches(wf Workflow, state []byte, in Accepted) bool {
	a := k.in
	if a.Seq != in.Seq || a.Kind != in.Kind || a.Digest != in.Digest || a.Actor != in.Actor ||
		a.ActorRole != in.ActorRole || a.Capability != in.Capability || !bytes.Equal(a.Body, in.Body) ||
		!bytes.Equal(k.state, state) || (a.Usage == nil) != (in.Usage == nil) || (a.Usage != nil && *a.Usage != *in.Usage) {
		return false
	}
	return k.workflowID == wf.ID() && k.version == wf.Version() && k.digest == wf.Digest()
}

// checkSendable refuses a first input whose decision plans an effect its
// adapter cannot encode (a payload over the wire's size limit, say). The
// run would plan it on its first pass and trip (wireUnsendable); refused
// here, nothing is created. Encoding is pure and needs no destination. An
// effect with no adapter registered here is left to the run, which parks
// it when it comes to send it.
func (r *Runner) checkSendable(wf Workflow, d Decision) error {
	if r.cfg.Adapters == nil {
		return nil
	}
	for _, e := range d.Effects {
		a, err := r.cfg.Adapters.For(e.Intent)
		if err != nil {
			continue
		}
		cd, ok := a.(effect.ContentDigester)
		if !ok {
			continue
		}
		if _, err := cd.ContentDigest(effect.Intent{Effect: e.Intent, Payload: e.Payload}); err != nil {
			return &InputRefusedError{WorkflowID: wf.ID(), Version: wf.Version(),
				Reason: fmt.Sprintf("the %s effect it plans cannot be sent: %v", e.Intent.EffectType, err)}
		}
	}
	return nil
}

// checkApprover asks the workflow whether it would take grant from by as
// the answer to need (CheckApproval, the check the run makes when the
// grant arrives), and refuses the act when it would not.
func checkApprover(wf Workflow, runID string, need ApprovalNeed, grant store.Approval, by Actor, now time.Time) error {
	if err := wf.CheckApproval(need, grant, now); err != nil {
		return &ApproverRefusedError{RunID: runID, RequestID: need.RequestID, Actor: by.Name, Reason: err.Error()}
	}
	return nil
}

// grantFor is the grant by would issue for need, and its ledger id.
func grantFor(runID string, need ApprovalNeed, by Actor, now time.Time, ttl time.Duration) (store.Approval, error) {
	// The nonce is 16 random bytes: one made of who, what and when alone
	// repeats when the same person answers the same request twice within
	// one tick of the clock (a coarse clock, a test's fixed one), and the
	// second grant would be refused as a duplicate of the first.
	var salt [16]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return store.Approval{}, fmt.Errorf("runner: a grant's nonce: %w", err)
	}
	nonce := hex.EncodeToString(salt[:])
	grant := Grant{Kind: GrantKind, RunID: runID, RequestID: need.RequestID, RequestDigest: need.RequestDigest,
		Actor: by.Name, Role: by.Role, Nonce: nonce, ExpiresAt: now.Add(ttl).Format(time.RFC3339Nano)}
	body, err := cjson.Marshal(grant)
	if err != nil {
		return store.Approval{}, err
	}
	return store.Approval{ID: grantID(nonce), RunID: runID, RequestDigest: need.RequestDigest, Nonce: nonce,
		Body: body, Digest: store.BodyDigest(body), ExpiresAt: now.Add(ttl)}, nil
}

// waitingApproval reads what a live run waits on for approval requestID:
// an ended run is refused (EndedError), a request it does not wait on too
// (NotWaitingError).
func (r *Runner) waitingApproval(ctx context.Context, runID, requestID string) (Workflow, ApprovalNeed, error) {
	st, err := r.Inspect(ctx, runID)
	if err != nil {
		return nil, ApprovalNeed{}, err
	}
	if st.Run.Outcome != "" {
		return nil, ApprovalNeed{}, &EndedError{RunID: runID, Outcome: st.Run.Outcome}
	}
	for _, w := range st.Waiting {
		if w.RequestID == requestID {
			wf, err := r.workflow(st.Run)
			return wf, w, err
		}
	}
	return nil, ApprovalNeed{}, &NotWaitingError{RunID: runID, What: "approval " + requestID}
}

// checkChoice asks the workflow whether the run, as it stands, takes this
// choice: its pure step decides the choice on the run's latest state, as
// the run's next pass would, and a refusal (no options pending for the
// proposal, an option not offered, a chooser who may not choose, a
// workflow that offers no options) refuses the act. An error of the step
// itself is left for the run to record, and so is a choice handed to a run
// that has not taken its first pass yet (there is no state to judge it on).
func (r *Runner) checkChoice(ctx context.Context, runID string, body []byte, by Actor) error {
	run, stored, found, err := r.readRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.Outcome != "" {
		return &EndedError{RunID: runID, Outcome: run.Outcome}
	}
	if !found {
		// The run has not taken its first pass: a choice handed in now is
		// judged after the inputs before it, by the run itself.
		return nil
	}
	wf, err := r.workflow(run)
	if err != nil {
		return err
	}
	cp, err := decodeCheckpoint(stored, wf)
	if err != nil {
		return err
	}
	state, err := cp.stateBytes()
	if err != nil {
		return err
	}
	d, err := wf.Decide(state, Accepted{Seq: cp.Accepted + 1, Kind: KindChoice, Body: body, Digest: store.BodyDigest(body),
		Actor: by.Name, ActorRole: by.Role, Capability: by.Capability})
	if err == nil && d.Refusal != "" {
		return &NotWaitingError{RunID: runID, What: "a choice " + string(body) + ": " + d.Refusal}
	}
	return nil
}

// ended turns the store's refusal of an act on a run that has ended into
// an EndedError; any other error is returned as it is.
func (r *Runner) ended(ctx context.Context, runID string, err error) error {
	if store.CodeOf(err) != store.CodeInvalidTransition {
		return err
	}
	if run, rerr := r.cfg.Store.Run(ctx, runID); rerr == nil && run.Outcome != "" {
		return &EndedError{RunID: runID, Outcome: run.Outcome, Err: err}
	}
	return err
}
