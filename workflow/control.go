package workflow

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
)

// KindControl is a person's transition of the deliberation machine:
// {"trigger": PAUSE | REJECT_ALL | REQUEST_TEST | ESCALATE | RESUME |
// LEAVE_SAFE_MODE | EXIT, "proposal_id"?: ..., "reason"?: ...}.
const KindControl = "mrp"

// Refusal codes of a control input. A refused control input changes
// nothing; the refusal text starts with the code.
const (
	ControlMalformed  = "CONTROL_MALFORMED"           // not {"trigger", "proposal_id"?, "reason"?}
	ControlTrigger    = "CONTROL_NOT_A_HUMAN_TRIGGER" // the trigger is not one a person issues this way
	ControlNotAPerson = "CONTROL_NOT_A_PERSON"        // the issuer's role is not a human role
	ControlCapability = "CONTROL_CAPABILITY_MISSING"  // the issuer did not exercise the trigger's capability
	ControlNotPending = "CONTROL_NOT_PENDING"         // REJECT_ALL or RESUME names a proposal nothing is pending for
	ControlMRPRefused = "CONTROL_MRP_REFUSED"         // the deliberation machine does not admit the trigger now
)

// ControlTriggers are the human-initiated triggers a control input may
// carry. CHOOSE_OPTION is not among them: a choice names an option and
// goes through the choice input, which decides the proposal again.
var ControlTriggers = []mrp.Trigger{mrp.Pause, mrp.RejectAll, mrp.RequestTest, mrp.HumanEscalate, mrp.Resume, mrp.LeaveSafeMode, mrp.HumanExit}

// MaxControlReason bounds, in bytes, the reason a person gives, which is
// recorded in the Journey Strip (the API allows 1000 characters).
const MaxControlReason = 4000

// Control is a control input's body.
type Control struct {
	Trigger    mrp.Trigger
	ProposalID string
	Reason     string
}

// ParseControl reads a control input's body strictly.
func ParseControl(body []byte) (Control, error) {
	v, err := cjson.Decode(body)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return Control{}, fmt.Errorf("%s: a control input is a JSON object {\"trigger\", \"proposal_id\"?, \"reason\"?}", ControlMalformed)
	}
	for _, k := range sortedKeys(m) {
		if k != "trigger" && k != "proposal_id" && k != "reason" {
			return Control{}, fmt.Errorf("%s: unknown member /%s", ControlMalformed, cjson.EscapePointer(k))
		}
	}
	tr, ok := m["trigger"].(string)
	if !ok {
		return Control{}, fmt.Errorf("%s: /trigger must be a string", ControlMalformed)
	}
	c := Control{Trigger: mrp.Trigger(tr)}
	if !slices.Contains(ControlTriggers, c.Trigger) {
		return Control{}, fmt.Errorf("%s: %q is not one of %v", ControlTrigger, tr, ControlTriggers)
	}
	if raw, present := m["proposal_id"]; present {
		p, ok := raw.(string)
		if !ok || !cjson.ValidID(p) {
			return Control{}, fmt.Errorf("%s: /proposal_id must be an id", ControlMalformed)
		}
		c.ProposalID = p
	}
	if raw, present := m["reason"]; present {
		r, ok := raw.(string)
		if !ok || len(r) > MaxControlReason {
			return Control{}, fmt.Errorf("%s: /reason must be a string of at most %d bytes", ControlMalformed, MaxControlReason)
		}
		c.Reason = r
	}
	return c, nil
}

// ControlActor is the actor the deliberation machine judges a control
// input by: a person, in the authenticated role, holding exactly the
// capability the issuer exercised.
func ControlActor(in Input) mrp.Actor {
	return mrp.Actor{ID: in.Actor, Kind: mrp.ActorHuman, Role: in.ActorRole, Capabilities: []string{in.Capability}}
}

// CheckControl says whether the deliberation machine m would take the
// control c from the issuer now, without changing anything: nil, or the
// refusal the workflow would record. A caller can answer a person at once;
// the run still judges the input itself when it accepts it.
//
// v is the run's view: its machine, the proposals waiting for a choice
// and those H held or escalated (which REJECT_ALL and RESUME may name).
func CheckControl(v View, c Control, issuer mrp.Actor) error {
	var offered, kept []string
	for _, o := range v.Offers {
		offered = append(offered, o.ProposalID)
	}
	for _, h := range v.Held {
		kept = append(kept, h.ProposalID)
	}
	_, err := stepControl(v.Machine, append(offered, kept...), kept, c, issuer)
	return err
}

// stepControl judges a control input and returns the machine after it.
// offered lists the proposals a control may name (offers and kept ones);
// kept are the held proposals, which an EXIT withdraws besides the offers
// and a REJECT_ALL may withdraw out of HOLD or ESCALATE (row H12).
func stepControl(m mrp.Machine, offered, kept []string, c Control, issuer mrp.Actor) (mrp.Machine, error) {
	capName, _ := mrp.RequiredCapability(c.Trigger)
	switch {
	case !slices.Contains(mrp.HumanRoles, issuer.Role):
		return m, fmt.Errorf("%s: %q issued %s in role %q; only a person in one of the roles %v may", ControlNotAPerson, issuer.ID, c.Trigger, issuer.Role, mrp.HumanRoles)
	case !slices.Contains(issuer.Capabilities, capName):
		return m, fmt.Errorf("%s: %q exercised %v; %s needs %s", ControlCapability, issuer.ID, issuer.Capabilities, c.Trigger, capName)
	case c.Trigger == mrp.RejectAll && c.ProposalID != "" && !slices.Contains(offered, c.ProposalID):
		return m, fmt.Errorf("%s: no options are pending for %s", ControlNotPending, c.ProposalID)
	case c.Trigger == mrp.Resume && c.ProposalID != "" && !slices.Contains(offered, c.ProposalID):
		// A RESUME names the kept proposal it answers (decision 0612).
		return m, fmt.Errorf("%s: nothing is held, escalated or offered for %s", ControlNotPending, c.ProposalID)
	}
	cause := fmt.Sprintf("%s by %s", c.Trigger, issuer.ID)
	if c.Reason != "" {
		cause += ": " + c.Reason
	}
	if c.ProposalID != "" {
		cause += " (" + c.ProposalID + ")"
	}
	// An EXIT closes deliberation with a summary (SPEC §7.3): who ended it,
	// where, what it leaves undecided and why.
	summary := ""
	if c.Trigger == mrp.HumanExit {
		summary = fmt.Sprintf("deliberation ended by %s in %s; offers withdrawn: %v", issuer.ID, m.State, nonNil(offered))
		if len(kept) > 0 {
			summary += fmt.Sprintf("; held proposals withdrawn: %v", kept)
		}
		if c.Reason != "" {
			summary += "; reason: " + c.Reason
		}
	}
	// A REJECT_ALL out of HOLD or ESCALATE withdraws what is kept (the
	// named proposal, or all of them) and leaves deliberation in HOLD: a
	// person declines an escalated or held action without ending the run.
	var target mrp.State
	if c.Trigger == mrp.RejectAll && (m.State == mrp.Hold || m.State == mrp.Escalate) &&
		(slices.Contains(kept, c.ProposalID) || c.ProposalID == "" && len(kept) > 0) {
		target = mrp.Hold
	}
	next, err := mrp.Step(m, mrp.Event{Trigger: c.Trigger, Actor: issuer, Cause: cause, Summary: summary, Target: target})
	if err != nil {
		return m, fmt.Errorf("%s: %v", ControlMRPRefused, err)
	}
	return next, nil
}

// control handles a person's control input: the deliberation machine
// steps with the human trigger (recorded in the Journey Strip under the
// issuer's name and role). REJECT_ALL also withdraws the options it
// rejects: the named proposal's, or every pending offer's; EXIT withdraws
// every pending offer, whatever proposal it names. Nothing reaches the
// world; any failure is a refusal that changes nothing.
func (t *tick) control(in Input) (string, error) {
	c, err := ParseControl(in.Body)
	if err != nil {
		return err.Error(), nil
	}
	st := t.st
	var offered, kept []string
	for _, o := range st.Offered {
		offered = append(offered, o.ProposalID)
	}
	for _, h := range st.Held {
		kept = append(kept, h.ProposalID)
	}
	from := st.Machine.State
	// REJECT_ALL may name a held proposal as well as an offered one.
	next, err := stepControl(st.Machine, append(slices.Clip(offered), kept...), kept, c, ControlActor(in))
	if err != nil {
		return err.Error(), nil
	}
	st.Machine = next
	// REJECT_ALL withdraws what it rejects; EXIT ends deliberation, so
	// nothing it leaves on offer can be chosen any more (decision 0611).
	// They withdraw the held proposals too (decision 0612): EXIT all of
	// them, in its summary; REJECT_ALL the one it names or every one, each
	// with a journey entry.
	var withdrawn, dropped []any
	if c.Trigger == mrp.RejectAll || next.State.Terminal() {
		all := next.State.Terminal() || c.ProposalID == ""
		st.Offered, withdrawn = withdrawNamed(st.Offered, func(o offer) string { return o.ProposalID }, all, c.ProposalID)
		st.Held, dropped = withdrawNamed(st.Held, func(h held) string { return h.ProposalID }, all, c.ProposalID)
	}
	last := next.Journey[len(next.Journey)-1]
	if !next.State.Terminal() {
		for _, p := range dropped {
			t.withdraw(p.(string), fmt.Sprintf("%s withdrawn by %s by %s", p, c.Trigger, in.Actor))
		}
	}
	if len(dropped) > 0 {
		t.note("held.withdrawn", map[string]any{"proposals": dropped, "trigger": string(c.Trigger), "actor": in.Actor})
	}
	t.note("mrp.control", map[string]any{"trigger": string(c.Trigger), "actor": in.Actor, "role": in.ActorRole, "capability": in.Capability,
		"from": string(from), "to": string(next.State), "row": last.Row, "cause": last.Cause, "safe_mode": next.SafeMode,
		"proposal_id": c.ProposalID, "withdrawn": nonNilAny(withdrawn)})
	return "", nil
}

// withdrawNamed removes every entry of list (when all) or the one whose
// proposal is proposal, and returns the rest with the proposals removed,
// in list order.
func withdrawNamed[T any](list []T, proposalOf func(T) string, all bool, proposal string) ([]T, []any) {
	var gone []any
	list = slices.DeleteFunc(list, func(e T) bool {
		drop := all || proposalOf(e) == proposal
		if drop {
			gone = append(gone, proposalOf(e))
		}
		return drop
	})
	return list, gone
}
