package workflow

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
)

// Refusal codes of a choice. A refused choice changes nothing: the run
// still waits in OPTIONS for a choice it can accept. The refusal text
// starts with the code.
const (
	ChoiceMalformed   = "CHOICE_MALFORMED"          // the body is not {"proposal_id", "option"}
	ChoiceNotPending  = "CHOICE_NOT_PENDING"        // no options are pending for that proposal
	ChoiceNotOffered  = "CHOICE_OPTION_NOT_OFFERED" // H did not offer that option
	ChoiceNotAPerson  = "CHOICE_NOT_A_PERSON"       // the chooser's role is not a human role
	ChoiceCapability  = "CHOICE_CAPABILITY_MISSING" // the chooser did not exercise mrp.choose_option
	ChoiceMRPRefused  = "CHOICE_MRP_REFUSED"        // the deliberation machine does not admit the choice now
	ControllerActorID = "aif_controller"            // the chooser of record of an autonomous choice
)

// ControllerRole is the role the AIF controller chooses in.
const ControllerRole = "aif_controller"

// Choice is a person's choice input: an option H offered for a
// proposal.
type Choice struct {
	ProposalID string
	Option     string
}

// ParseChoice reads a choice input ({"proposal_id", "option"}, both ids)
// as Decide does; an error says what is wrong, under ChoiceMalformed.
func ParseChoice(body []byte) (Choice, error) {
	v, err := cjson.Decode(body)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return Choice{}, fmt.Errorf("%s: a choice is a JSON object {\"proposal_id\", \"option\"}", ChoiceMalformed)
	}
	for _, k := range sortedKeys(m) {
		if k != "proposal_id" && k != "option" {
			return Choice{}, fmt.Errorf("%s: unknown member /%s", ChoiceMalformed, cjson.EscapePointer(k))
		}
	}
	p, ok1 := m["proposal_id"].(string)
	o, ok2 := m["option"].(string)
	switch {
	case !ok1 || !cjson.ValidID(p):
		return Choice{}, fmt.Errorf("%s: /proposal_id must be an id", ChoiceMalformed)
	case !ok2 || !cjson.ValidID(o):
		return Choice{}, fmt.Errorf("%s: /option must be an id", ChoiceMalformed)
	}
	return Choice{ProposalID: p, Option: o}, nil
}

// choose handles a person's choice: it must answer options pending for the
// proposal, name one H offered, and come from a human role exercising the
// capability CHOOSE_OPTION requires. Any failure is a refusal that
// changes nothing.
func (t *tick) choose(in Input) ([]Effect, string, error) {
	c, err := ParseChoice(in.Body)
	if err != nil {
		return nil, err.Error(), nil
	}
	capName, _ := mrp.RequiredCapability(mrp.ChooseOption)
	switch {
	case !slices.Contains(mrp.HumanRoles, in.ActorRole):
		return nil, fmt.Sprintf("%s: %q chose in role %q; only a person in one of the roles %v may choose", ChoiceNotAPerson, in.Actor, in.ActorRole, mrp.HumanRoles), nil
	case in.Capability != capName:
		return nil, fmt.Sprintf("%s: %q exercised %q; a choice needs %s", ChoiceCapability, in.Actor, in.Capability, capName), nil
	}
	actor := mrp.Actor{ID: in.Actor, Kind: mrp.ActorHuman, Role: in.ActorRole, Capabilities: []string{capName}}
	return t.decideChoice(c, actor, mrp.ChooseOption)
}

// decideChoice decides the offered proposal again with the choice
// presented to the gates as chosen(t, option), after the deliberation
// machine took the choice (CHOOSE_OPTION for a person, OPTION_SELECTED for
// the controller), and maps H's outcome to effects exactly as a first
// decision.
func (t *tick) decideChoice(c Choice, actor mrp.Actor, trigger mrp.Trigger) ([]Effect, string, error) {
	st := t.st
	k := slices.IndexFunc(st.Offered, func(o offer) bool { return o.ProposalID == c.ProposalID })
	if k < 0 {
		return nil, fmt.Sprintf("%s: no options are pending for %s", ChoiceNotPending, c.ProposalID), nil
	}
	of := st.Offered[k]
	if !slices.Contains(of.Options, c.Option) {
		return nil, fmt.Sprintf("%s: %s was offered %v, not %q", ChoiceNotOffered, c.ProposalID, of.Options, c.Option), nil
	}
	m, err := mrp.Step(st.Machine, mrp.Event{Trigger: trigger, Actor: actor, Target: mrp.Decide, Option: c.Option,
		Cause: fmt.Sprintf("%s: %s chose %s", of.TicketID, actor.ID, c.Option)})
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", ChoiceMRPRefused, err), nil
	}
	act, err1 := plain(of.Action)
	dest, err2 := plain(of.Dest)
	if err1 != nil || err2 != nil {
		return nil, "", fmt.Errorf("workflow state: offered action of %s is not an object", of.ProposalID)
	}
	st.Machine = m
	st.Offered = slices.Delete(st.Offered, k, k+1)
	t.note("choice", map[string]any{"proposal_id": of.ProposalID, "ticket_id": of.TicketID, "option": c.Option,
		"chooser": actor.ID, "role": actor.Role, "kind": actor.Kind, "trigger": string(trigger), "mrp_state": string(m.State)})
	choices := []authority.Choice{{ProposalID: of.ProposalID, Option: c.Option, Actor: actor}}
	eff, err := t.authorize(of.Batch, action{Action: act, Destination: dest}, choices, nil, authority.CheckedBatch{})
	if err == nil && len(eff) > 0 {
		err = t.acted(c.Option)
	}
	return eff, "", err
}
