package workflow

import (
	"encoding/json"
	"fmt"
)

// View is what a person (or a UI) needs to see of a run's workflow state:
// where the deliberation stands and what the run waits for.
type View struct {
	RunID       string
	LogicalTime int64
	MRPState    string
	Strip       []string // the Journey Strip: visible MRP states in order
	SafeMode    bool
	Options     []string // the safe paths offered while in OPTIONS
	Offers      []Offer  // proposals waiting for a choice among options
	Pending     []PendingApproval
	Open        []string       // intents planned and not yet answered by a receipt
	Domain      map[string]any // the declarative domain's own state
	Supports    int            // live L base supports
}

// Offer is a proposal H answered with OPTIONS, waiting for a choice: the
// options in H's order and, with an AIF controller, their scores best
// first and the digest of the scorecard.
type Offer struct {
	ProposalID, TicketID string
	Options              []string
	Ranking              []Ranked
	Scorecard            string
}

// PendingApproval is an approval request the run waits on.
type PendingApproval struct {
	RequestID, RequestDigest, IntentID, ProposalID, Approver string
}

// Inspect reads a state produced by this workflow.
func (w *Workflow) Inspect(stateJSON []byte) (View, error) {
	st, err := decodeState(stateJSON)
	if err != nil {
		return View{}, err
	}
	v := View{RunID: st.RunID, LogicalTime: st.Time, MRPState: string(st.Machine.State), SafeMode: st.Machine.SafeMode,
		Options: append([]string{}, st.Machine.Options...), Supports: len(st.Supports)}
	for _, s := range st.Machine.Strip() {
		v.Strip = append(v.Strip, string(s))
	}
	for _, p := range st.Pending {
		v.Pending = append(v.Pending, PendingApproval{RequestID: p.RequestID, RequestDigest: p.Request.RequestDigest,
			IntentID: p.IntentID, ProposalID: p.Request.ProposalID, Approver: p.Request.Actor})
	}
	for _, o := range st.Offered {
		v.Offers = append(v.Offers, Offer{ProposalID: o.ProposalID, TicketID: o.TicketID, Options: append([]string{}, o.Options...),
			Ranking: append([]Ranked{}, o.Ranking...), Scorecard: o.Scorecard})
	}
	for _, o := range st.Open {
		v.Open = append(v.Open, o.IntentID)
	}
	snap, err := plain(json.RawMessage(st.Snapshot))
	if err != nil {
		return View{}, fmt.Errorf("workflow state: snapshot: %w", err)
	}
	v.Domain, _ = snap["state"].(map[string]any)
	return v, nil
}
