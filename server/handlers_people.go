package server

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/workflow"
)

// A person's steering of a run's deliberation: a choice among the options
// H offered, and the human-initiated MRP transitions. Both reach the run as
// inputs carrying the authenticated actor, in the MRP role its token
// grants and with the capability the trigger needs; the workflow judges
// them with the pure MRP machine. The server checks the same machine first
// so a person learns at once (409) that the run is not waiting for the act.

// mrpRole is the deliberation machine's role (mrp.HumanRoles) for a
// principal allowed to steer: an operator steers as "operator", an
// approver as "human_approver".
func mrpRole(p Principal) string {
	if slices.Contains(p.Roles, RoleOperator) {
		return "operator"
	}
	return "human_approver"
}

func chooserActor(p Principal) runner.Actor {
	capName, _ := mrp.RequiredCapability(mrp.ChooseOption)
	return runner.Actor{Name: p.Actor, Role: mrpRole(p), Capability: capName}
}

func steererActor(p Principal, t mrp.Trigger) runner.Actor {
	capName, _ := mrp.RequiredCapability(t)
	return runner.Actor{Name: p.Actor, Role: mrpRole(p), Capability: capName}
}

// Choose is the body of POST /v1/runs/{id}/choose.
type Choose struct {
	ProposalID string `json:"proposal_id"`
	Option     string `json:"option"`
}

// MRPTransition is the body of POST /v1/runs/{id}/mrp.
type MRPTransition struct {
	Trigger    string `json:"trigger"`
	ProposalID string `json:"proposal_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// deliberation reads the workflow's view of a live run: the run must
// exist (404), not have ended (409) and have a workflow that deliberates
// (409 otherwise: nothing could accept the act).
func (s *Server) deliberation(ctx context.Context, id string) (workflow.View, error) {
	st, err := s.cfg.Runner.Inspect(ctx, id)
	if err != nil && st.Run.ID != "" {
		// The run exists but its state cannot be read here (its workflow
		// is not loaded, for one): nothing here could judge the act.
		return workflow.View{}, apiErr(http.StatusConflict, TypeConflict, "", "run %s cannot be steered here: %v", id, err)
	} else if err != nil {
		return workflow.View{}, err
	}
	if st.Run.Outcome != "" {
		return workflow.View{}, apiErr(http.StatusConflict, TypeConflict, "", "run %s has ended (%s)", id, st.Run.Outcome)
	}
	v, ok := st.View.(workflow.View)
	if !ok {
		return workflow.View{}, apiErr(http.StatusConflict, TypeConflict, "", "run %s has no deliberation machine to steer: its workflow keeps none", id)
	}
	return v, nil
}

// notPending answers 404 when the run never decided the proposal and
// conflict otherwise.
func (s *Server) notPending(ctx context.Context, id, proposal, field, format string, args ...any) error {
	tickets, err := s.tickets(ctx, id)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(tickets, func(t TicketRecord) bool { return t.ProposalID == proposal }) {
		return apiErr(http.StatusNotFound, TypeNotFound, field, "run %s has no proposal %s", id, proposal)
	}
	return apiErr(http.StatusConflict, TypeConflict, field, format, args...)
}

func (s *Server) choose(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[Choose](s, w, r, "choose")
	if err != nil {
		return err
	}
	v, err := s.deliberation(r.Context(), id)
	if err != nil {
		return err
	}
	k := slices.IndexFunc(v.Offers, func(o workflow.Offer) bool { return o.ProposalID == req.ProposalID })
	if k < 0 {
		return s.notPending(r.Context(), id, req.ProposalID, "/proposal_id", "run %s has no options pending for %s", id, req.ProposalID)
	}
	if of := v.Offers[k]; !slices.Contains(of.Options, req.Option) {
		return apiErr(http.StatusConflict, TypeConflict, "/option", "%s was offered %s, not %s", req.ProposalID, strings.Join(of.Options, ", "), req.Option)
	}
	by := chooserActor(p)
	if _, err := mrp.Step(v.Machine, mrp.Event{Trigger: mrp.ChooseOption, Target: mrp.Decide, Option: req.Option,
		Actor: mrp.Actor{ID: by.Name, Kind: mrp.ActorHuman, Role: by.Role, Capabilities: []string{by.Capability}}}); err != nil {
		return apiErr(http.StatusConflict, TypeConflict, "", "the deliberation machine does not take a choice now: %v", err)
	}
	if err := s.cfg.Runner.Choose(r.Context(), id, req.ProposalID, req.Option, by); err != nil {
		return err
	}
	s.log.Info("option chosen", "request_id", requestID(r), "run_id", id, "proposal", req.ProposalID, "option", req.Option, "actor", p.Actor)
	return accepted(w, id, "choose")
}

func (s *Server) steer(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[MRPTransition](s, w, r, "mrp")
	if err != nil {
		return err
	}
	// The schema admits exactly the lower-case names of the control
	// triggers (workflow.ControlTriggers).
	trigger := mrp.Trigger(strings.ToUpper(req.Trigger))
	if !slices.Contains(workflow.ControlTriggers, trigger) {
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/trigger", "%q is not a person's MRP trigger", req.Trigger)
	}
	if req.ProposalID != "" && trigger != mrp.RejectAll && trigger != mrp.Resume {
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/proposal_id", "only reject_all and resume name a proposal")
	}
	v, err := s.deliberation(r.Context(), id)
	if err != nil {
		return err
	}
	by := steererActor(p, trigger)
	c := workflow.Control{Trigger: trigger, ProposalID: req.ProposalID, Reason: req.Reason}
	issuer := mrp.Actor{ID: by.Name, Kind: mrp.ActorHuman, Role: by.Role, Capabilities: []string{by.Capability}}
	if err := workflow.CheckControl(v, c, issuer); err != nil {
		if strings.HasPrefix(err.Error(), workflow.ControlNotPending) {
			return s.notPending(r.Context(), id, req.ProposalID, "/proposal_id", "%v", err)
		}
		return apiErr(http.StatusConflict, TypeConflict, "/trigger", "%v", err)
	}
	if err := s.cfg.Runner.Control(r.Context(), id, string(trigger), req.ProposalID, req.Reason, by); err != nil {
		return err
	}
	s.log.Info("mrp transition", "request_id", requestID(r), "run_id", id, "trigger", string(trigger), "from", v.MRPState, "actor", p.Actor)
	return accepted(w, id, "mrp")
}
