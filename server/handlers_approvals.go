package server

import (
	"net/http"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// WaitingApproval is an approval a live run waits for, as GET /v1/approvals
// lists it for the caller: the request, what the approver is shown, who
// may give it, and whether the caller may, now.
type WaitingApproval struct {
	RunID         string   `json:"run_id"`
	Workflow      string   `json:"workflow"`
	Version       string   `json:"version"`
	RequestID     string   `json:"request_id,omitempty"`
	RequestDigest string   `json:"request_digest,omitempty"`
	IntentID      string   `json:"intent_id,omitempty"`
	Preview       string   `json:"preview,omitempty"`
	Quorum        int      `json:"quorum,omitempty"`
	ApprovedBy    []string `json:"approved_by,omitempty"`
	WhoMayApprove string   `json:"who_may_approve,omitempty"`
	Awaiting      string   `json:"awaiting,omitempty"`
	// Labels are the run's, omitted when none.
	Labels map[string]string `json:"labels,omitempty"`
	// YouMayApprove is whether the caller may approve it now, by the
	// checks an approval makes (runner.Runner.MayApprove); WhyNot, when
	// not, is the refusal an approval would get.
	YouMayApprove bool   `json:"you_may_approve"`
	WhyNot        string `json:"why_not,omitempty"`
	// Unread says why a run waiting for approval could not be read; the
	// request's fields are then empty.
	Unread string `json:"unread,omitempty"`
}

// listApprovals answers GET /v1/approvals: the approvals live runs wait
// for, oldest run first, each with whether the caller may give it now;
// mine=true keeps only those. A page reads at most limit runs (and scans
// at most maxRunScan) and hands back a cursor, as GET /v1/runs does.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	labels, err := labelParams(q)
	if err != nil {
		return err
	}
	if err := checkQuery(q, "after", "limit", "mine"); err != nil {
		return err
	}
	after := q.Get("after")
	if after != "" && !cjson.ValidID(after) {
		return apiErr(http.StatusBadRequest, TypeMalformed, "?after", "after must be a run id")
	}
	limit, err := intParam(q, "limit", defaultRunPage, 1, maxRunPage)
	if err != nil {
		return err
	}
	mine := false
	switch q.Get("mine") {
	case "", "false":
	case "true":
		mine = true
	default:
		return apiErr(http.StatusBadRequest, TypeMalformed, "?mine", "mine must be true or false")
	}
	runs, next, err := store.MatchingRuns(r.Context(), s.cfg.Store, after, int(limit), maxRunScan,
		store.RunFilter{State: "WAIT_APPROVAL", WorkflowIDs: p.Workflows, Labels: labels})
	if err != nil {
		return err
	}
	out := []WaitingApproval{}
	for _, run := range runs {
		if run.Outcome != "" {
			continue
		}
		// A caller whose token approves nothing is not asked about.
		var by *runner.Actor
		if p.may(permApprove) {
			actor := approverActor(p)
			by = &actor
		}
		waits, err := s.cfg.Runner.Awaiting(r.Context(), run.ID, by)
		if err != nil {
			if !mine {
				out = append(out, WaitingApproval{RunID: run.ID, Workflow: run.WorkflowID, Version: run.WorkflowVersion, Unread: err.Error()})
			}
			continue
		}
		for _, w := range waits {
			a := WaitingApproval{RunID: run.ID, Workflow: run.WorkflowID, Version: run.WorkflowVersion, RequestID: w.RequestID,
				RequestDigest: w.RequestDigest, IntentID: w.IntentID, Preview: w.Preview, Quorum: w.Quorum,
				ApprovedBy: w.ApprovedBy, WhoMayApprove: w.WhoMayApprove, Awaiting: w.Awaiting, Labels: run.Labels, YouMayApprove: by != nil && w.MayNot == nil}
			switch {
			case by == nil:
				a.WhyNot = "the caller's token holds no role that approves (" + RoleApprover + ")"
			case w.MayNot != nil:
				a.WhyNot = w.MayNot.Error()
			}
			if mine && !a.YouMayApprove {
				continue
			}
			out = append(out, a)
		}
	}
	body := map[string]any{"approvals": out}
	if next != "" {
		body["next_after"] = next
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
