package server

import (
	"net/http"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/runcase"
)

// maxCaseName bounds the ?name= parameter.
const maxCaseName = 1000

// runCase answers GET /v1/runs/{id}/case with the run as a bundle policy
// test case pinned to what its bundle decides (runcase.Make): a file for
// flrh bundle test, to check another version of the bundle against what
// the run did. A case that would part from the record is refused (409),
// saying where.
func (s *Server) runCase(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r, "name")
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("name")
	if len(name) > maxCaseName {
		return apiErr(http.StatusBadRequest, TypeMalformed, "?name", "name is longer than %d bytes", maxCaseName)
	}
	run, wf, err := s.runWorkflow(r.Context(), id)
	if err != nil {
		return err
	}
	b, ok := wf.(*bundle.Workflow)
	if !ok {
		return apiErr(http.StatusNotFound, TypeNotFound, "", "run %s's workflow is built into flrh, not a bundle: a case is a bundle's", id)
	}
	out, err := runcase.Make(r.Context(), s.cfg.Store, b.Workflow, run, name)
	if err != nil {
		return apiErr(http.StatusConflict, TypeConflict, "", "%v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(out)
	return err
}
