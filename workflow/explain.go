package workflow

import (
	"errors"
	"fmt"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/seam"
)

// Why is the provenance of one decision H made about a proposal: the
// eligibility literals the seam checked, each with the logic engine's
// minimal proof tree (rules, premises, absence witnesses) of its atom over
// L's materialization at that moment; the seam's verdict; every gate's
// decision with the rule that made it, the facts it matched and the
// absences it relied on; the Meta-Priority Matrix's resolution; and H's
// outcome. It answers "why was this refused, held or allowed".
type Why struct {
	Seq         int64            `json:"seq"`        // the accepted input whose tick made the decision
	InputKind   string           `json:"input_kind"` // input, receipt, choice
	ProposalID  string           `json:"proposal_id"`
	TicketID    string           `json:"ticket_id,omitempty"`
	Outcome     string           `json:"outcome"` // INTENT, APPROVAL_REQUEST, OPTIONS, HELD, ESCALATED, REJECTED
	Rejection   *WhyRejection    `json:"rejection,omitempty"`
	Held        string           `json:"held,omitempty"`
	Audit       []string         `json:"audit"`
	Verdict     string           `json:"verdict"` // the seam's eligibility verdict
	Eligibility []EligibilityWhy `json:"eligibility"`
	Gates       []GateWhy        `json:"gates"`
	// RiskReasons are the rule instances that assessed the action's risk
	// (assess rows), when any did.
	RiskReasons []authority.Reason `json:"risk_reasons,omitempty"`
	Resolution  ResolutionWhy      `json:"resolution"`
	MRPState    string             `json:"mrp_state"`
	Choices     []string           `json:"choices,omitempty"` // options chosen and presented to the gates
	// Quorum is how many people the gate policy asks to approve the
	// request, when more than one, and QuorumReason the rule instance
	// that asks.
	Quorum       int               `json:"quorum,omitempty"`
	QuorumReason *authority.Reason `json:"quorum_reason,omitempty"`
	// Approver is who must approve the request, where the gate policy
	// named them, and ApproverReason the rule instance that names them.
	Approver       string            `json:"approver,omitempty"`
	ApproverReason *authority.Reason `json:"approver_reason,omitempty"`
}

// WhyRejection is H's outright rejection: a code and where.
type WhyRejection struct {
	Code string `json:"code"`
	Path string `json:"path"`
}

// EligibilityWhy is one precondition of the proposal bound to an L atom.
type EligibilityWhy struct {
	Precondition string `json:"precondition"`
	// Literal is the atom the precondition requires, prefixed "-" when it
	// requires the atom's negative evidence.
	Literal     string       `json:"literal"`
	Explanation *Explanation `json:"explanation"`
	Error       string       `json:"error,omitempty"`
}

// GateWhy is one gate's decision and the rules behind it.
type GateWhy struct {
	Gate     string             `json:"gate"`
	Decision string             `json:"decision"`
	Reasons  []authority.Reason `json:"reasons"`
	Error    string             `json:"error,omitempty"`
}

// ResolutionWhy is the Meta-Priority Matrix's verdict over the signals.
type ResolutionWhy struct {
	HighestTier int      `json:"highest_tier"`
	Decision    string   `json:"decision"`
	Move        string   `json:"move"`
	Contestable bool     `json:"contestable"`
	Options     []string `json:"options"`
}

// Explanation is an atom's four-valued state with a minimal proof of each
// side that holds (both for a conflict), as logic.Materialization.Why
// gives it.
type Explanation struct {
	Atom     string     `json:"atom"`
	State    string     `json:"state"`
	Positive *ProofNode `json:"positive,omitempty"`
	Negative *ProofNode `json:"negative,omitempty"`
}

// ProofNode is one step of a proof tree: a base fact (with the ids of the
// supports asserting it) or a rule instance with its premises and the
// absences it relied on.
type ProofNode struct {
	Fact     string       `json:"fact"`
	Base     bool         `json:"base,omitempty"`
	BaseIDs  []string     `json:"base_ids,omitempty"`
	Rule     string       `json:"rule,omitempty"`
	RulePos  string       `json:"rule_position,omitempty"`
	Premises []*ProofNode `json:"premises,omitempty"`
	Absent   []string     `json:"absent,omitempty"` // patterns with no support once their stratum is complete
	// Aggregates are the values the rule's aggregates took, each with the
	// facts it ranged over (`sum a : { paid(o, _, a) } = 1100 over …`).
	Aggregates []string `json:"aggregates,omitempty"`
}

func explanation(e *logic.Explanation) *Explanation {
	out := &Explanation{Atom: e.Atom.String(), State: e.State.String()}
	out.Positive, out.Negative = proofNode(e.Positive), proofNode(e.Negative)
	return out
}

func proofNode(p *logic.Proof) *ProofNode {
	if p == nil {
		return nil
	}
	n := &ProofNode{Fact: p.Fact.String(), Base: p.Base, BaseIDs: p.BaseIDs}
	if !p.Base {
		n.Rule, n.RulePos = p.RuleText, p.RulePos.String()
	}
	for _, q := range p.Premises {
		n.Premises = append(n.Premises, proofNode(q))
	}
	for _, a := range p.Absent {
		n.Absent = append(n.Absent, a.String())
	}
	for _, a := range p.Aggregates {
		n.Aggregates = append(n.Aggregates, a.String())
	}
	return n
}

// explainer collects a tick's explanations while Explain runs; Decide
// leaves it nil and pays nothing for it.
type explainer struct {
	eligibility map[string][]EligibilityWhy // by proposal, from the seam
	verdicts    map[string]string
	whys        []Why
}

// Explain decides in again exactly as Decide does, from the state the run
// held before it, and returns with the result why H decided as it did for
// each proposal the tick decided (none for a refused input or one that
// decided nothing). It is pure; replaying a run's accepted inputs through
// it explains every decision of the run.
func (w *Workflow) Explain(stateJSON []byte, in Input) (Result, []Why, error) {
	ex := &explainer{eligibility: map[string][]EligibilityWhy{}, verdicts: map[string]string{}}
	r, err := w.decide(stateJSON, in, ex)
	if err != nil || r.Refusal != "" {
		return r, nil, err
	}
	return r, ex.whys, nil
}

// explainEligibility records the proof of each bound precondition's atom.
func (t *tick) explainEligibility(mat *logic.Materialization, proposalID string, pre string, e eligibility, args []any) {
	if t.why == nil {
		return
	}
	lit := EligibilityWhy{Precondition: pre}
	f, err := t.w.fact(support{Predicate: e.relation, Args: args})
	if err != nil {
		lit.Literal, lit.Error = fmt.Sprintf("%s%v", e.relation, args), err.Error()
	} else {
		lit.Literal = f.String()
		if e.polarity == seam.Negative {
			lit.Literal = "-" + lit.Literal
		}
		if mat == nil {
			lit.Error = "no materialization"
		} else if ex, err := mat.Why(f); err != nil {
			lit.Error = err.Error()
		} else {
			lit.Explanation = explanation(ex)
		}
	}
	t.why.eligibility[proposalID] = append(t.why.eligibility[proposalID], lit)
}

// explainOutcome records why H decided o for the proposal.
func (t *tick) explainOutcome(o authority.Outcome, choices []authority.Choice) {
	if t.why == nil {
		return
	}
	y := Why{Seq: t.in.Seq, InputKind: t.in.Kind, ProposalID: o.ProposalID, TicketID: o.Ticket.TicketID, Outcome: o.Kind, Held: o.Held,
		Audit: nonNil(o.Audit), Verdict: t.why.verdicts[o.ProposalID], Eligibility: t.why.eligibility[o.ProposalID], Gates: []GateWhy{},
		MRPState: string(o.MRPState), Quorum: o.Quorum, QuorumReason: o.QuorumReason, ApproverReason: o.ApproverReason,
		RiskReasons: o.Evaluation.RiskReasons}
	if o.ApproverReason != nil && o.ApprovalRequest != nil {
		y.Approver = o.ApprovalRequest.Actor
	}
	if y.Eligibility == nil {
		y.Eligibility = []EligibilityWhy{}
	}
	if o.Rejection != nil {
		y.Rejection = &WhyRejection{Code: o.Rejection.Code, Path: o.Rejection.Path}
	}
	for _, g := range o.Evaluation.Gates {
		reasons := g.Reasons
		if reasons == nil {
			reasons = []authority.Reason{}
		}
		y.Gates = append(y.Gates, GateWhy{Gate: g.Gate, Decision: g.Decision.String(), Reasons: reasons, Error: g.Error})
	}
	r := o.Resolution
	y.Resolution = ResolutionWhy{HighestTier: r.HighestTier, Decision: r.Decision.String(), Move: r.Move.String(), Contestable: r.Contestable,
		Options: nonNil(r.Options)}
	for _, c := range choices {
		if c.ProposalID == o.ProposalID {
			y.Choices = append(y.Choices, c.Option)
		}
	}
	t.why.whys = append(t.why.whys, y)
}

// WhyFact explains one L fact (written as in the rules, e.g.
// blocked("mallory")) over the materialization of a state's live
// supports.
func (w *Workflow) WhyFact(stateJSON []byte, text string) (*Explanation, error) {
	st, err := decodeState(stateJSON)
	if err != nil {
		return nil, err
	}
	mat, err := w.materialize(cjson.Digest(stateJSON), st, nil)
	if err != nil {
		return nil, err
	}
	if mat == nil {
		return nil, errors.New("workflow: the state has no materialization")
	}
	f, err := logic.ParseFact(mat.Program(), text)
	if err != nil {
		return nil, err
	}
	e, err := mat.Why(f)
	if err != nil {
		return nil, err
	}
	return explanation(e), nil
}
