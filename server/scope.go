package server

import (
	"net/http"
	"strings"

	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/store"
)

// A principal may be scoped to some workflows (Principal.Workflows): a
// team's tokens on a server several teams share see and act on the runs
// of their workflows alone. Every route says how it keeps to a scope
// (route.scope); the zero value refuses a scoped principal, so that a
// route added without a thought for scopes leaks nothing. Runs, schedules
// and webhooks of other workflows are answered as if they did not exist:
// the same 404, word for word, as one that does not.

// scopeKind is how a route keeps a scoped principal to its workflows.
type scopeKind uint8

const (
	// scopeRefused refuses a scoped principal: the route spans every
	// workflow (the metrics).
	scopeRefused scopeKind = iota
	// scopeNone: the route shows nothing of any workflow (whoami).
	scopeNone
	// scopeFiltered: the handler lists or acts on the principal's
	// workflows alone (the runs, the approvals inbox, starting a run).
	scopeFiltered
	// scopeRun: the route is the run {id}'s, which must be of one of the
	// principal's workflows.
	scopeRun
	// scopeSchedule: the route is the schedule {name}'s, whose workflow
	// must be one of the principal's.
	scopeSchedule
	// scopeHook: the route is the webhook {name}'s, likewise.
	scopeHook
)

// checkScope holds a scoped principal to the route's scope; nil for one
// that is not scoped.
func (s *Server) checkScope(r *http.Request, kind scopeKind, p Principal) *Error {
	if !p.scoped() {
		return nil
	}
	switch kind {
	case scopeNone, scopeFiltered:
		return nil
	case scopeRun:
		id := r.PathValue("id")
		run, err := s.cfg.Store.Run(r.Context(), id)
		switch {
		case store.CodeOf(err) == store.CodeNotFound || (err == nil && !p.sees(run.WorkflowID)):
			return noRun(id)
		case err != nil:
			return classify(err)
		}
		return nil
	case scopeSchedule:
		name := r.PathValue("name")
		if sc := s.schedules.Load(); sc != nil {
			if wf, ok := sc.WorkflowOf(name); ok && !p.sees(wf) {
				return noSchedule(name)
			}
		}
		return nil
	case scopeHook:
		name := r.PathValue("name")
		if h, err := s.hook(name); err == nil && !p.sees(h.spec.Workflow) {
			return noHook(name)
		}
		return nil
	}
	return apiErr(http.StatusForbidden, TypeForbidden, "", "actor %s sees the runs of %s alone, and this spans every workflow", p.Actor, strings.Join(p.Workflows, ", "))
}

// noRun is the answer for a run a scoped principal may not see, the
// same whether it exists or not.
func noRun(id string) *Error {
	return apiErr(http.StatusNotFound, TypeNotFound, "", "no run %s", id)
}

// seesWorkflow refuses a workflow the principal may not see as the
// server refuses one it does not load.
func (s *Server) seesWorkflow(p Principal, id, version string) *Error {
	if p.sees(id) {
		return nil
	}
	return notLoaded(id, version)
}

// noSchedule is the answer for a schedule a scoped principal may not
// see: the scheduler's for one it does not run.
func noSchedule(name string) *Error {
	return apiErr(http.StatusNotFound, TypeNotFound, "", "%s", (&schedule.NotFoundError{Name: name}).Error())
}

// noHook is the answer for a webhook the server does not take, or a
// scoped principal may not see.
func noHook(name string) *Error {
	return apiErr(http.StatusNotFound, TypeNotFound, "", "no webhook %s", name)
}
