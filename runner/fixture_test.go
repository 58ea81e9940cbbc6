package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/store"
)

// refunds is a small pure workflow for exercising the runner: it pays each
// requested refund in turn; one above the limit needs a person's approval
// bound to its exact amount and payee.
type refunds struct{ limit int64 }

type refund struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	Payee  string `json:"payee"`
}

type refundState struct {
	Queue []refund `json:"queue"`
	Paid  []string `json:"paid"`
	Fails []string `json:"failed"`
}

func (refunds) ID() string      { return "refunds" }
func (refunds) Version() string { return "1" }
func (w refunds) Digest() string {
	return store.BodyDigest([]byte(fmt.Sprintf("refunds/1 limit=%d", w.limit)))
}
func (refunds) Init(string) ([]byte, error) { return []byte(`{"failed":[],"paid":[],"queue":[]}`), nil }

func (w refunds) Decide(state []byte, in Accepted) (Decision, error) {
	var st refundState
	if err := decodeInto(state, &st); err != nil {
		return Decision{}, err
	}
	switch in.Kind {
	case KindInput:
		var req struct {
			Refunds []refund `json:"refunds"`
		}
		if err := decodeInto(in.Body, &req); err != nil || len(req.Refunds) == 0 {
			return Decision{State: state, Refusal: "input is not a refund request", Completion: Continue}, nil
		}
		st.Queue = append(st.Queue, req.Refunds...)
	case "receipt":
		var rc protocol.ActionReceipt
		if err := decodeInto(in.Body, &rc); err != nil {
			return Decision{}, err
		}
		if rc.Outcome == protocol.OutcomeConfirmedSuccess {
			st.Paid = append(st.Paid, st.Queue[0].ID)
		} else {
			st.Fails = append(st.Fails, st.Queue[0].ID)
		}
		st.Queue = st.Queue[1:]
	}
	next, err := cjson.Marshal(st)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{State: next, Completion: Complete}
	if len(st.Fails) > 0 {
		d.Completion = Fail
		return d, nil
	}
	if len(st.Queue) > 0 {
		d.Completion = Continue
		d.Effects = []EffectPlan{w.plan(st.Queue[0], in)}
	}
	return d, nil
}

func (w refunds) plan(r refund, cause Accepted) EffectPlan {
	payload, _ := cjson.Marshal(map[string]any{"refund": r.ID, "amount": r.Amount, "payee": r.Payee})
	action := cjson.Digest(payload)
	high := r.Amount > w.limit
	risk := "reversible"
	if high {
		risk = "high_risk_external"
	}
	intent := protocol.EffectIntent{Kind: "EffectIntent", IntentID: "intent:" + r.ID, ProposalID: "proposal:" + r.ID, BatchID: fmt.Sprintf("batch:%d", cause.Seq),
		EffectType: "refund.pay", ActionDigest: action, Capability: "capability:refund", AuthorityDigest: store.BodyDigest([]byte("authority")),
		CauseID: fmt.Sprintf("input:%d", cause.Seq), CorrelationID: "run", IdempotencyKey: "idem:" + r.ID, DestinationDigest: store.BodyDigest([]byte("payments")),
		GoalID: "goal:refund", ObligationID: "obligation:" + r.ID, AdapterVersion: "fake/1", AssessedRisk: risk, ApprovalRequired: high,
		Preconditions: protocol.IDSet{}, Versions: versions()}
	p := EffectPlan{Intent: intent, Payload: payload, ContentDigest: action}
	if high {
		req, _ := cjson.Marshal(map[string]any{"action": action, "payee": r.Payee, "amount": r.Amount})
		p.Approval = &ApprovalNeed{RequestID: "approval:" + r.ID, RequestDigest: cjson.Digest(req), IntentID: intent.IntentID,
			Preview: fmt.Sprintf("Refund %d to %s", r.Amount, r.Payee)}
	}
	return p
}

func versions() protocol.VersionEnvelope {
	return protocol.VersionEnvelope{Workflow: "refunds/1", StateSchema: "state/1", EventSchema: "event/1", GraphSchema: "graph/0",
		RuleSet: "rules/1", Dataflow: "dataflow/1", Canonicalization: "flrh-cjson/1", Tool: "fake/1", Model: "none/0",
		Oracle: "oracle/1", Gate: "gate/1", Resolver: "resolver/0", CompositionProfile: "composition/0"}
}

// CheckApproval accepts a grant whose body binds exactly the request.
func (refunds) CheckApproval(need ApprovalNeed, g store.Approval, now time.Time) error {
	var body struct {
		RequestDigest string `json:"request_digest"`
		Role          string `json:"role"`
	}
	if err := json.Unmarshal(g.Body, &body); err != nil {
		return err
	}
	if body.RequestDigest != need.RequestDigest || g.RequestDigest != need.RequestDigest {
		return errors.New("grant answers another request")
	}
	if body.Role != "human_approver" {
		return fmt.Errorf("grant minted by role %q, not a human approver", body.Role)
	}
	if !now.Before(g.ExpiresAt) {
		return errors.New("grant expired")
	}
	return nil
}

// destination is an in-process payments service with idempotency keys and
// switchable misbehaviour.
type destination struct {
	mu        sync.Mutex
	applied   map[string]string // key -> content digest
	mutations int
	script    []effect.Outcome // outcomes to force on the next Execute calls
	lookupErr bool             // lookups answer "still unknown"
	// retryAfter is the wait a transient failure asks for (Retry-After).
	retryAfter time.Duration
}

func newDestination() *destination { return &destination{applied: map[string]string{}} }

func (d *destination) Execute(_ context.Context, in effect.Intent) (effect.Receipt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	digest := cjson.Digest(in.Payload)
	var forced effect.Outcome
	if len(d.script) > 0 {
		forced, d.script = d.script[0], d.script[1:]
	}
	if forced == effect.FailedTransient {
		return effect.Receipt{Outcome: effect.FailedTransient, Code: "HTTP_503", RetryAfter: d.retryAfter}, nil
	}
	if prev, ok := d.applied[in.Effect.IdempotencyKey]; ok && prev != digest {
		return effect.Receipt{Outcome: effect.FailedPermanent, Code: "IDEMPOTENCY_KEY_CONFLICT"}, nil
	} else if !ok {
		d.applied[in.Effect.IdempotencyKey] = digest
		d.mutations++
	}
	if forced == effect.Unknown { // applied, then the answer was lost
		return effect.Receipt{Outcome: effect.Unknown, Code: "TRANSPORT_AFTER_SEND"}, nil
	}
	ev := []byte(fmt.Sprintf(`{"applied":%q}`, in.Effect.IdempotencyKey))
	return effect.Receipt{Outcome: effect.Succeeded, Code: "HTTP_201", ContentDigest: digest, Evidence: ev, EvidenceDigest: cjson.Digest(ev)}, nil
}

func (d *destination) Lookup(_ context.Context, key, contentDigest string) (effect.LookupResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lookupErr {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "UNREACHABLE"}, nil
	}
	prev, ok := d.applied[key]
	switch {
	case !ok:
		ev := []byte(fmt.Sprintf(`{"not_applied":%q}`, key))
		return effect.LookupResult{Status: effect.ConfirmedFailure, Code: "NOT_APPLIED", Evidence: ev, EvidenceDigest: cjson.Digest(ev)}, nil
	case prev != contentDigest:
		return effect.LookupResult{Status: effect.HumanRequired, Code: "CONTENT_MISMATCH"}, nil
	}
	ev := []byte(fmt.Sprintf(`{"applied":%q}`, key))
	return effect.LookupResult{Status: effect.ConfirmedSuccess, Code: "APPLIED", Evidence: ev, EvidenceDigest: cjson.Digest(ev)}, nil
}

func (d *destination) count() int { d.mu.Lock(); defer d.mu.Unlock(); return d.mutations }
