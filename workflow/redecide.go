package workflow

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/mrp"
)

// redecider is the runtime actor that records, in the Journey Strip, a
// kept proposal decided again or withdrawn.
var redecider = mrp.Actor{ID: "workflow", Kind: mrp.ActorSystem, Role: "deliberation"}

// reopened returns the entry among entries (this tick's) after which the
// proposals H held or escalated may be decided again, if any: the last
// that reopens deliberation (mrp.Reopens).
func reopened(entries []mrp.Entry) (mrp.Entry, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if mrp.Reopens(entries[i]) {
			return entries[i], true
		}
	}
	return mrp.Entry{}, false
}

// redecide decides again, through H, every proposal the run kept because
// H held or escalated it, once each, in the order they were kept, now that
// e reopened deliberation (decision 0612). Each decision is recorded as a
// first one is (FHR, ticket, outcome), after a REDECIDE entry naming the
// proposal and e; it may plan an effect, ask for an approval, offer
// options, or hold the proposal again, which keeps it for the next
// reopening. One H refuses is withdrawn with a WITHDRAW entry. A RESUME
// is presented to the gates as the person's (resumed(t)) for the proposal
// it names, which is decided first, or for every one when it names none.
func (t *tick) redecide(e mrp.Entry) ([]Effect, error) {
	st := t.st
	kept := slices.Clone(st.Held)
	st.Held = nil
	named := ""
	var by *mrp.Actor
	if e.Trigger == mrp.Resume && t.in.Kind == KindControl {
		c, err := ParseControl(t.in.Body)
		if err == nil {
			a := ControlActor(t.in)
			by, named = &a, c.ProposalID
		}
	}
	// The proposals the person's RESUME names are decided first: another
	// escalated again must not hold them back.
	if by != nil && named != "" {
		slices.SortStableFunc(kept, func(a, b held) int {
			return cmpBool(b.ProposalID == named, a.ProposalID == named)
		})
	}
	var effects []Effect
	for _, h := range kept {
		if st.Machine.State.Terminal() {
			// Nothing decides after EXIT: what is left is withdrawn.
			t.note("held.withdrawn", map[string]any{"proposals": []any{h.ProposalID}, "trigger": string(st.Machine.State), "actor": redecider.ID})
			continue
		}
		cause := fmt.Sprintf("%s (%s at %d: %s) decided again after %s by %s", h.ProposalID, h.Outcome, h.Since, h.Why, e.Trigger, e.ActorID)
		if m, err := mrp.Step(st.Machine, mrp.Event{Trigger: mrp.Redecide, Actor: redecider, Cause: cause, Progress: true}); err == nil {
			st.Machine = m
		}
		var resumed []authority.Resumption
		if by != nil && (named == "" || named == h.ProposalID) {
			resumed = []authority.Resumption{{ProposalID: h.ProposalID, Actor: *by}}
		}
		t.note("held.redecide", map[string]any{"proposal_id": h.ProposalID, "ticket_id": h.TicketID, "held": h.Outcome, "since": h.Since,
			"trigger": string(e.Trigger), "row": e.Row, "actor": e.ActorID, "resumed": len(resumed) > 0})
		act, err1 := plain(h.Action)
		dest, err2 := plain(h.Dest)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("workflow state: held action of %s is not an object", h.ProposalID)
		}
		t.outcome = ""
		eff, err := t.authorize(h.Batch, action{Action: act, Destination: dest}, h.Choices, resumed, authority.CheckedBatch{})
		if err != nil {
			return nil, err
		}
		if t.outcome == authority.OutcomeRejected {
			t.withdraw(h.ProposalID, fmt.Sprintf("%s refused when decided again", h.ProposalID))
		}
		effects = append(effects, eff...)
	}
	return effects, nil
}

// withdraw records in the Journey Strip that a kept proposal is dropped
// undecided.
func (t *tick) withdraw(proposalID, cause string) {
	if m, err := mrp.Step(t.st.Machine, mrp.Event{Trigger: mrp.Withdraw, Actor: redecider, Cause: cause}); err == nil {
		t.st.Machine = m
	}
}

// cmpBool orders true before false when called as cmpBool(b, a).
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
