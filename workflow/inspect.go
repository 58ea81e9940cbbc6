package workflow

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/panel"
)

// View is what a person (or a UI) needs to see of a run's workflow state:
// where the deliberation stands and what the run waits for.
type View struct {
	RunID       string `json:"run_id"`
	LogicalTime int64  `json:"logical_time"`
	MRPState    string `json:"mrp_state"`
	// Strip is the Journey Strip: visible MRP states in order; Journey
	// every entry behind it (state changes and refused events, with their
	// causes, actors and roles).
	Strip        []string          `json:"strip"`
	Journey      []mrp.Entry       `json:"journey"`
	SafeMode     bool              `json:"safe_mode"`
	SafeModeWhy  string            `json:"safe_mode_cause,omitempty"`
	CareCooldown bool              `json:"care_cooldown"`
	Options      []string          `json:"options"` // the safe paths offered while in OPTIONS
	Offers       []Offer           `json:"offers"`  // proposals waiting for a choice among options
	Pending      []PendingApproval `json:"pending"`
	// Held are the proposals H held or escalated, kept to be decided
	// again once deliberation admits it (a test passes, a person resumes).
	Held     []HeldProposal `json:"held,omitempty"`
	Open     []string       `json:"open"`     // intents planned and not yet answered by a receipt
	Domain   map[string]any `json:"domain"`   // the declarative domain's own state
	Supports int            `json:"supports"` // live L base supports
	Turns    int64          `json:"turns"`    // turns H decided (one FHR each)
	// Machine is the deliberation machine itself, for checking a person's
	// transition before it is handed to the run (CheckControl).
	Machine mrp.Machine `json:"-"`
}

// Offer is a proposal H answered with OPTIONS, waiting for a choice: the
// options in H's order and, with an AIF controller, their scores best
// first and the digest of the scorecard.
type Offer struct {
	ProposalID string   `json:"proposal_id"`
	TicketID   string   `json:"ticket_id"`
	Options    []string `json:"options"`
	Ranking    []Ranked `json:"ranking"`
	Scorecard  string   `json:"scorecard_digest,omitempty"`
}

// HeldProposal is a proposal H held or escalated, waiting to be decided
// again: H's outcome (HELD or ESCALATED), why, and since when.
type HeldProposal struct {
	ProposalID string `json:"proposal_id"`
	TicketID   string `json:"ticket_id"`
	Outcome    string `json:"outcome"`
	Why        string `json:"why"`
	Since      int64  `json:"since"`
}

// PendingApproval is an approval request the run waits on.
type PendingApproval struct {
	RequestID     string `json:"request_id"`
	RequestDigest string `json:"request_digest"`
	IntentID      string `json:"intent_id"`
	ProposalID    string `json:"proposal_id"`
	Approver      string `json:"approver"`
	// Members are the people who may answer for Approver when the
	// approval policy names a group; absent when it names a person.
	Members []string `json:"members,omitempty"`
	// Panel, when Approver names a panel, lists its groups, each of which
	// a different person must answer for; Members are then everyone in
	// them.
	Panel []panel.Group `json:"panel,omitempty"`
	// Quorum is how many of the members must each approve, when more
	// than one.
	Quorum int `json:"quorum,omitempty"`
	// SeparateDuties says that no one who handed the run an input may
	// approve.
	SeparateDuties bool `json:"separate_duties,omitempty"`
	// Who is all of the above in a sentence (WhoMayApprove), for people.
	Who string `json:"who_may_approve"`
}

// WhoMayApprove says who may answer the pending approval (see
// Workflow.WhoMayApprove).
func (p PendingApproval) WhoMayApprove() string {
	return whoMayApprove(p.Approver, p.Members, p.Panel, p.Quorum, 0, p.SeparateDuties)
}

// WhoMayApprove says who may answer this workflow's approval requests: the
// person its approval policy names; or any one of the members of the group
// it names, or as many of them as its quorum asks, each approving; where
// the gate policy may ask more of them, up to how many; the groups the
// gate policy may name instead for some actions; and, where it separates
// duties, no one who handed the run an input.
func (w *Workflow) WhoMayApprove() string {
	p, most := w.approval, 0
	var named []string
	if w.policy.Policy != nil {
		most, named = w.policy.Policy.MaxQuorum(), w.policy.Policy.Approvers()
	}
	who := whoMayApprove(p.Approver, p.membersOf(p.Approver), p.panelOf(p.Approver), p.quorumOf(p.Approver), most, false)
	for _, g := range named {
		if g != p.Approver {
			who += "; or, where the gate policy names them, " + whoMayApprove(g, p.membersOf(g), p.panelOf(g), p.quorumOf(g), most, false)
		}
	}
	return who + separated(p.SeparateDuties)
}

// WhoMayApproveRequest says who may answer a request of this workflow that
// names approver ("": the approval policy's) and that the gate policy
// asked quorum people to approve (0: a request it asked nothing of): as
// WhoMayApprove, for that one request.
func (w *Workflow) WhoMayApproveRequest(approver string, quorum int) string {
	p := w.approval
	approver = cmp.Or(approver, p.Approver)
	return whoMayApprove(approver, p.membersOf(approver), p.panelOf(approver), max(p.quorumOf(approver), quorum), 0, p.SeparateDuties)
}

// separated is the clause that says makers may not approve, where duties
// are separated.
func separated(separate bool) string {
	if separate {
		return "; no one who handed the run an input"
	}
	return ""
}

func whoMayApprove(approver string, members []string, groups []panel.Group, quorum, most int, separate bool) string {
	var who string
	switch {
	case groups != nil:
		// Each group once, where it first appears, with how many of its
		// members the panel asks.
		var each []string
		count, of := map[string]int{}, map[string][]string{}
		for _, g := range groups {
			if count[g.Name] == 0 {
				each, of[g.Name] = append(each, g.Name), g.Members
			}
			count[g.Name]++
		}
		repeats := len(each) < len(groups)
		for i, g := range each {
			list := strings.Join(of[g], ", ")
			switch {
			case !repeats:
				each[i] = fmt.Sprintf("%s (%s)", g, list)
			case count[g] == 1:
				each[i] = fmt.Sprintf("one of %s (%s)", g, list)
			default:
				each[i] = fmt.Sprintf("%d of %s (%s)", count[g], g, list)
			}
		}
		list := each[0]
		if len(each) > 1 {
			list = strings.Join(each[:len(each)-1], ", ") + " and " + each[len(each)-1]
		}
		if repeats {
			who = fmt.Sprintf("%s, each a different person (panel %s)", list, approver)
		} else {
			who = fmt.Sprintf("one member of each of %s, each a different person (panel %s)", list, approver)
		}
		if quorum > len(groups) {
			who += fmt.Sprintf(", %d people in all", quorum)
		}
	case len(members) == 0:
		who = approver
	case quorum > 1:
		who = fmt.Sprintf("%d of %s (members of %s), each approving", quorum, strings.Join(members, ", "), approver)
	default:
		who = fmt.Sprintf("any one of %s (members of %s)", strings.Join(members, ", "), approver)
	}
	if most > max(quorum, 1) {
		who += fmt.Sprintf("; up to %d of them where the gate policy asks", most)
	}
	return who + separated(separate)
}

// Inspect reads a state produced by this workflow.
func (w *Workflow) Inspect(stateJSON []byte) (View, error) {
	st, err := decodeState(stateJSON)
	if err != nil {
		return View{}, err
	}
	v := View{RunID: st.RunID, LogicalTime: st.Time, MRPState: string(st.Machine.State), SafeMode: st.Machine.SafeMode,
		SafeModeWhy: st.Machine.SafeWhy, CareCooldown: st.Machine.Cooldown, Options: append([]string{}, st.Machine.Options...),
		Journey: append([]mrp.Entry{}, st.Machine.Journey...), Supports: len(st.Supports), Turns: st.Turn, Machine: st.Machine,
		Offers: []Offer{}, Pending: []PendingApproval{}, Open: []string{}}
	for _, s := range st.Machine.Strip() {
		v.Strip = append(v.Strip, string(s))
	}
	for _, p := range st.Pending {
		v.Pending = append(v.Pending, PendingApproval{RequestID: p.RequestID, RequestDigest: p.Request.RequestDigest,
			IntentID: p.IntentID, ProposalID: p.Request.ProposalID, Approver: p.Request.Actor, Members: w.approval.membersOf(p.Request.Actor), Panel: w.approval.panelOf(p.Request.Actor), Quorum: max(w.approval.quorumOf(p.Request.Actor), p.Quorum), SeparateDuties: w.approval.SeparateDuties})
		v.Pending[len(v.Pending)-1].Who = v.Pending[len(v.Pending)-1].WhoMayApprove()
	}
	for _, o := range st.Offered {
		v.Offers = append(v.Offers, Offer{ProposalID: o.ProposalID, TicketID: o.TicketID, Options: append([]string{}, o.Options...),
			Ranking: append([]Ranked{}, o.Ranking...), Scorecard: o.Scorecard})
	}
	for _, h := range st.Held {
		v.Held = append(v.Held, HeldProposal{ProposalID: h.ProposalID, TicketID: h.TicketID, Outcome: h.Outcome, Why: h.Why, Since: h.Since})
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

// Offered lists the proposals a run's state keeps waiting for a person to
// choose among the options offered (the view's Offers), in the order
// offered.
func (w *Workflow) Offered(stateJSON []byte) ([]string, error) {
	st, err := decodeState(stateJSON)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(st.Offered))
	for i, o := range st.Offered {
		ids[i] = o.ProposalID
	}
	return ids, nil
}

// Kept reports how many proposals a run's state keeps, held or escalated,
// for a person to decide again (decision 0612): the run waits on a person
// for them, as it does for an approval.
func (w *Workflow) Kept(stateJSON []byte) (int, error) {
	st, err := decodeState(stateJSON)
	if err != nil {
		return 0, err
	}
	return len(st.Held), nil
}
