package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"flrh.dev/flrh/schedule"
)

// The schedules that start runs on a calendar (flrh serve --schedules):
// listed with their next times due, triggered at once, and backfilled
// over a range an outage left without runs. Each time is one run however
// often it is filled (package schedule).

// SetSchedules puts sc in place of the schedules the server lists and
// acts on (nil: none).
func (s *Server) SetSchedules(sc *schedule.Scheduler) { s.schedules.Store(sc) }

// scheduler is the server's scheduler, or a 404 when it has none.
func (s *Server) scheduler() (*schedule.Scheduler, error) {
	sc := s.schedules.Load()
	if sc == nil {
		return nil, apiErr(http.StatusNotFound, TypeNotFound, "", "this server runs no schedules (flrh serve --schedules)")
	}
	return sc, nil
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	list := []schedule.Info{}
	if sc := s.schedules.Load(); sc != nil {
		all, err := sc.List(r.Context())
		if err != nil {
			return err
		}
		for _, in := range all {
			if p.sees(in.Workflow) {
				list = append(list, in)
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": list})
	return nil
}

func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request, p Principal) error {
	sc, err := s.scheduler()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := checkQuery(q, "force"); err != nil {
		return err
	}
	force := q.Get("force") == "true"
	if v := q.Get("force"); v != "" && v != "true" && v != "false" {
		return apiErr(http.StatusBadRequest, TypeMalformed, "?force", "force is true or false, not %q", v)
	}
	f, err := sc.Trigger(r.Context(), r.PathValue("name"), force)
	if err != nil {
		return scheduleErr(err)
	}
	s.log.Info("schedule triggered", "request_id", requestID(r), "schedule", r.PathValue("name"), "started", f.Started, "actor", p.Actor)
	status := http.StatusOK
	if len(f.Started) > 0 {
		status = http.StatusCreated
	}
	writeJSON(w, status, f)
	return nil
}

// Backfill is the body of POST /v1/schedules/{name}/backfill.
type Backfill struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

func (s *Server) backfillSchedule(w http.ResponseWriter, r *http.Request, p Principal) error {
	sc, err := s.scheduler()
	if err != nil {
		return err
	}
	var req Backfill
	if err := s.decode(w, r, "backfill", &req); err != nil {
		return err
	}
	f, err := sc.Backfill(r.Context(), r.PathValue("name"), req.From, req.To)
	if err != nil {
		return scheduleErr(err)
	}
	s.log.Info("schedule backfilled", "request_id", requestID(r), "schedule", r.PathValue("name"), "started", len(f.Started), "existed", len(f.Existed), "actor", p.Actor)
	writeJSON(w, http.StatusOK, f)
	return nil
}

// Pause is the body of POST /v1/schedules/{name}/pause.
type Pause struct {
	Reason string `json:"reason"`
	// From, when set, sets the pause ahead: it begins then.
	From *time.Time `json:"from,omitempty"`
	// Until, when set, is when the pause ends by itself.
	Until *time.Time `json:"until,omitempty"`
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request, p Principal) error {
	sc, err := s.scheduler()
	if err != nil {
		return err
	}
	var req Pause
	if err := s.decode(w, r, "pause", &req); err != nil {
		return err
	}
	var from, until time.Time
	if req.From != nil {
		from = *req.From
	}
	if req.Until != nil {
		until = *req.Until
	}
	info, err := sc.Pause(r.Context(), r.PathValue("name"), p.Actor, req.Reason, from, until)
	if err != nil {
		return scheduleErr(err)
	}
	s.log.Info("schedule paused", "request_id", requestID(r), "schedule", info.Name, "actor", p.Actor, "reason", req.Reason, "from", req.From, "until", req.Until)
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request, p Principal) error {
	sc, err := s.scheduler()
	if err != nil {
		return err
	}
	info, err := sc.Resume(r.Context(), r.PathValue("name"))
	if err != nil {
		return scheduleErr(err)
	}
	s.log.Info("schedule resumed", "request_id", requestID(r), "schedule", info.Name, "actor", p.Actor)
	writeJSON(w, http.StatusOK, info)
	return nil
}

// scheduleErr maps a scheduler's refusal to the API's.
func scheduleErr(err error) error {
	var nf *schedule.NotFoundError
	var re *schedule.RangeError
	var np *schedule.NotPausedError
	var pe *schedule.PauseEndError
	var ps *schedule.PauseStartError
	var pd *schedule.PausedError
	var oe *schedule.OverlapError
	switch {
	case errors.As(err, &nf):
		return apiErr(http.StatusNotFound, TypeNotFound, "", "%s", nf.Error())
	case errors.As(err, &re):
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "", "%s", re.Error())
	case errors.As(err, &pe):
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/until", "%s", pe.Error())
	case errors.As(err, &ps):
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/from", "%s", ps.Error())
	case errors.As(err, &pd):
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", pd.Error())
	case errors.As(err, &oe):
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", oe.Error())
	case errors.As(err, &np):
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", np.Error())
	case errors.Is(err, schedule.ErrNoPauses):
		return apiErr(http.StatusNotFound, TypeNotFound, "", "%s", strings.TrimPrefix(err.Error(), "schedule: "))
	}
	return err
}
