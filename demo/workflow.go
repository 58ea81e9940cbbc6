package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Refunds is the refund agent as a Go workflow: each requested refund is
// paid in turn through the "refund.pay" effect. A refund up to AutoLimit
// is authorized outright; a larger one waits for a person's approval bound
// to its exact amount and payee; a payee on the Blocked list is refused
// and never reaches the world. It is pure: Decide reads only its arguments.
type Refunds struct {
	AutoLimit   int64
	Blocked     []string
	Destination string // the payments destination's name, bound into every intent
}

type refundRequest struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	Payee  string `json:"payee"`
	Reason string `json:"reason"`
}

type refundState struct {
	Queue   []refundRequest `json:"queue"`
	Paid    []string        `json:"paid"`
	Failed  []string        `json:"failed"`
	Refused []string        `json:"refused"`
}

// ID implements runner.Workflow.
func (Refunds) ID() string { return "refund-agent" }

// Version implements runner.Workflow.
func (Refunds) Version() string { return "1" }

// Digest implements runner.Workflow: it binds the policy values.
func (w Refunds) Digest() string {
	d, _ := cjson.DigestOf(map[string]any{"workflow": "refund-agent/1", "auto_limit": w.AutoLimit, "blocked": w.Blocked, "destination": w.Destination})
	return d
}

// Init implements runner.Workflow.
func (Refunds) Init(string) ([]byte, error) {
	return cjson.Marshal(refundState{Queue: []refundRequest{}, Paid: []string{}, Failed: []string{}, Refused: []string{}})
}

// Decide implements runner.Workflow.
func (w Refunds) Decide(state []byte, in runner.Accepted) (runner.Decision, error) {
	var st refundState
	if err := json.Unmarshal(state, &st); err != nil {
		return runner.Decision{}, fmt.Errorf("refund state: %w", err)
	}
	var notes []store.TraceRecord
	switch in.Kind {
	case runner.KindInput:
		var req struct {
			Refunds []refundRequest `json:"refunds"`
		}
		if err := json.Unmarshal(in.Body, &req); err != nil || len(req.Refunds) == 0 {
			return runner.Decision{State: state, Completion: runner.Continue, Refusal: "input is not a refund request"}, nil
		}
		for _, r := range req.Refunds {
			if !cjson.ValidID(r.ID) || r.Amount <= 0 || r.Payee == "" {
				return runner.Decision{State: state, Completion: runner.Continue, Refusal: fmt.Sprintf("refund %q is malformed", r.ID)}, nil
			}
			if slices.Contains(w.Blocked, r.Payee) {
				st.Refused = append(st.Refused, r.ID)
				notes = append(notes, note("refused", map[string]any{"refund": r.ID, "why": "payee " + r.Payee + " is blocked by policy"}))
				continue
			}
			st.Queue = append(st.Queue, r)
		}
	case "receipt":
		var rc protocol.ActionReceipt
		if err := json.Unmarshal(in.Body, &rc); err != nil {
			return runner.Decision{}, fmt.Errorf("receipt: %w", err)
		}
		if len(st.Queue) == 0 || "intent:"+st.Queue[0].ID != rc.IntentID {
			return runner.Decision{}, fmt.Errorf("receipt for %s does not match the refund in flight", rc.IntentID)
		}
		if rc.Outcome == protocol.OutcomeConfirmedSuccess {
			st.Paid = append(st.Paid, st.Queue[0].ID)
		} else {
			st.Failed = append(st.Failed, st.Queue[0].ID)
		}
		st.Queue = st.Queue[1:]
	default:
		return runner.Decision{State: state, Completion: runner.Continue, Refusal: "unknown input kind " + in.Kind}, nil
	}
	next, err := cjson.Marshal(st)
	if err != nil {
		return runner.Decision{}, err
	}
	d := runner.Decision{State: next, Completion: runner.Complete, Trace: notes}
	switch {
	case len(st.Failed) > 0:
		d.Completion = runner.Fail
	case len(st.Queue) > 0:
		d.Completion = runner.Continue
		d.Effects = []runner.EffectPlan{w.plan(st.Queue[0], in.Seq)}
	}
	return d, nil
}

func note(kind string, body map[string]any) store.TraceRecord {
	b, _ := cjson.Marshal(body)
	return store.TraceRecord{Kind: kind, Body: b}
}

func (w Refunds) plan(r refundRequest, cause int64) runner.EffectPlan {
	payload, _ := cjson.Marshal(map[string]any{"refund_id": r.ID, "amount": r.Amount, "payee": r.Payee, "reason": r.Reason})
	action := cjson.Digest(payload)
	dest, _ := cjson.DigestOf(map[string]any{"destination": w.Destination})
	authority, _ := cjson.DigestOf(map[string]any{"workflow": w.Digest(), "auto_limit": w.AutoLimit})
	needsApproval := r.Amount > w.AutoLimit
	risk := "reversible"
	if needsApproval {
		risk = "high_risk_external"
	}
	intent := protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "intent:" + r.ID, ProposalID: "proposal:" + r.ID,
		BatchID: fmt.Sprintf("batch:%d", cause), EffectType: "refund.pay", ActionDigest: action, Capability: "capability:refund.pay",
		AuthorityDigest: authority, CauseID: fmt.Sprintf("accepted:%d", cause), CorrelationID: "refund-agent",
		IdempotencyKey: "refund:" + r.ID, DestinationDigest: dest, GoalID: "goal:refund", ObligationID: "obligation:refund:" + r.ID,
		AdapterVersion: "http/1", AssessedRisk: risk, ApprovalRequired: needsApproval, Preconditions: protocol.IDSet{}, Versions: Versions()}
	p := runner.EffectPlan{Intent: intent, Payload: payload, ContentDigest: action}
	if needsApproval {
		req, _ := cjson.DigestOf(map[string]any{"kind": "refund-approval-request", "action_digest": action, "amount": r.Amount, "payee": r.Payee, "destination": dest})
		p.Approval = &runner.ApprovalNeed{RequestID: "approval:" + r.ID, RequestDigest: req, IntentID: intent.IntentID,
			Preview: fmt.Sprintf("Pay refund %s: %d to %s (%s) via %s", r.ID, r.Amount, r.Payee, r.Reason, w.Destination)}
	}
	return p
}

// Versions is the version envelope of the refund agent.
func Versions() protocol.VersionEnvelope {
	return protocol.VersionEnvelope{Workflow: "refund-agent/1", StateSchema: "refund-state/1", EventSchema: "refund-event/1",
		GraphSchema: "none/0", RuleSet: "refund-policy/1", Dataflow: "single/1", Canonicalization: "flrh-cjson/1", Tool: "http/1",
		Model: "none/0", Oracle: "sandbox/1", Gate: "refund-gate/1", Resolver: "none/0", CompositionProfile: "none/0"}
}

// CheckApproval implements runner.Workflow: the grant must answer this
// exact request, come from a human approver and be unexpired.
func (Refunds) CheckApproval(need runner.ApprovalNeed, g store.Approval, now time.Time) error {
	var body struct {
		RequestDigest string `json:"request_digest"`
		Role          string `json:"role"`
	}
	if err := json.Unmarshal(g.Body, &body); err != nil {
		return fmt.Errorf("grant body: %w", err)
	}
	switch {
	case g.RequestDigest != need.RequestDigest || body.RequestDigest != need.RequestDigest:
		return errors.New("the grant answers another request: amount, payee or destination changed")
	case body.Role != "human_approver":
		return fmt.Errorf("the grant was issued by role %q, not a human approver", body.Role)
	case !now.Before(g.ExpiresAt):
		return fmt.Errorf("the grant expired at %s", g.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}
