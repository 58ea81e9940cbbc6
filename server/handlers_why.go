package server

import (
	"context"
	"encoding/json"
	"net/http"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/workflow"
)

// provenance is what a workflow must offer to answer "why": its pure
// decision re-run with explanations, and an L fact explained over a state.
// Compiled bundles (package workflow) offer both.
type provenance interface {
	Init(runID string) ([]byte, error)
	Explain(state []byte, in workflow.Input) (workflow.Result, []workflow.Why, error)
	WhyFact(state []byte, fact string) (*workflow.Explanation, error)
}

// maxFactText bounds the ?fact= parameter.
const maxFactText = 1000

// why answers GET /v1/runs/{id}/why?proposal=P with the provenance of
// every decision H made about the proposal, and ?fact=F with the proof of
// an L fact over the run's latest state. Nothing is stored for it: the
// run's accepted inputs are decided again, purely, with explanations on.
func (s *Server) why(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r, "proposal", "fact")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	proposal, fact := q.Get("proposal"), q.Get("fact")
	switch {
	case (proposal == "") == (fact == ""):
		return apiErr(http.StatusBadRequest, TypeMalformed, "?proposal", "give exactly one of ?proposal=ID and ?fact=ATOM")
	case proposal != "" && !cjson.ValidID(proposal):
		return apiErr(http.StatusBadRequest, TypeMalformed, "?proposal", "proposal must be a proposal id")
	case len(fact) > maxFactText:
		return apiErr(http.StatusBadRequest, TypeMalformed, "?fact", "fact is longer than %d bytes", maxFactText)
	}
	_, wf, err := s.runWorkflow(r.Context(), id)
	if err != nil {
		return err
	}
	pv, ok := wf.(provenance)
	if !ok {
		field := "?proposal"
		if fact != "" {
			field = "?fact"
		}
		return apiErr(http.StatusNotFound, TypeNotFound, field, "run %s's workflow keeps no proofs to explain", id)
	}
	if fact != "" {
		state, err := s.latestState(r.Context(), pv, id)
		if err != nil {
			return err
		}
		e, err := pv.WhyFact(state, fact)
		if err != nil {
			return apiErr(http.StatusBadRequest, TypeMalformed, "?fact", "%v", err)
		}
		writeJSON(w, http.StatusOK, map[string]any{"run_id": id, "fact": fact, "explanation": e})
		return nil
	}
	whys, err := s.explainProposal(r.Context(), pv, id, proposal)
	if err != nil {
		return err
	}
	if len(whys) == 0 {
		return apiErr(http.StatusNotFound, TypeNotFound, "?proposal", "run %s has no decision about %s", id, proposal)
	}
	writeJSON(w, http.StatusOK, map[string]any{"run_id": id, "proposal_id": proposal, "decisions": whys})
	return nil
}

// explainProposal decides the run's accepted inputs again from the initial
// state and keeps the explanations of the proposal's decisions.
func (s *Server) explainProposal(ctx context.Context, pv provenance, id, proposal string) ([]workflow.Why, error) {
	state, err := pv.Init(id)
	if err != nil {
		return nil, err
	}
	evs, err := s.cfg.Store.Events(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	out := []workflow.Why{}
	for _, e := range evs {
		if e.Kind != runner.EventAccepted {
			continue
		}
		rec, err := runner.DecodeAccepted(e.Body)
		if err != nil {
			return nil, err
		}
		res, whys, err := pv.Explain(state, workflow.Input{Seq: rec.Seq, Kind: rec.Kind, Body: rec.Body, Digest: rec.Digest, Actor: rec.Actor,
			ActorRole: rec.ActorRole, Capability: rec.Capability})
		if err != nil {
			return nil, err
		}
		if res.Refusal != "" {
			continue
		}
		state = res.State
		for _, y := range whys {
			if y.ProposalID == proposal {
				out = append(out, y)
			}
		}
	}
	return out, nil
}

// latestState is the workflow state of the run's latest checkpoint, or the
// initial state before the first.
func (s *Server) latestState(ctx context.Context, pv provenance, id string) ([]byte, error) {
	cp, err := s.cfg.Store.Checkpoint(ctx, id)
	if store.CodeOf(err) == store.CodeNotFound {
		return pv.Init(id)
	} else if err != nil {
		return nil, err
	}
	var body struct {
		State json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(cp.Body, &body); err != nil {
		return nil, err
	}
	return cjson.Canonicalize(body.State)
}
