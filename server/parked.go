package server

import (
	"encoding/json"
	"net/http"
	"time"

	"flrh.dev/flrh/jsontemplate"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/webhook"
)

// Deliveries a webhook verified but could not take (its template found
// nothing where it looked, the workflow refused the input, the run did
// not exist) are parked in the store: listed for an operator, taken again
// once the cause is mended (a template fixed, a workflow version loaded,
// the run started), or dropped. A delivery taken again goes through the
// webhook as it is now, under its first key, so it is still taken once.

// ParkedDelivery is a parked delivery as the API shows it.
type ParkedDelivery struct {
	Delivery string          `json:"delivery"`
	Event    string          `json:"event,omitempty"`
	Status   int             `json:"status"`
	Reason   string          `json:"reason"`
	First    time.Time       `json:"first_refused"`
	Last     time.Time       `json:"last_refused"`
	Times    int             `json:"times"`
	Body     json.RawMessage `json:"body"`
}

const (
	defaultParkedPage = 100
	maxParkedPage     = 1000
)

// parkedOf is the webhook the request's path names and the store's
// parked deliveries, or a 404 when there is no such webhook or the store
// keeps no parked deliveries.
func (s *Server) parkedOf(r *http.Request) (*inboundHook, store.DeliveryParking, error) {
	h, err := s.hook(r.PathValue("name"))
	if err != nil {
		return nil, nil, err
	}
	p, ok := store.DeliveryParkingOf(s.cfg.Store)
	if !ok {
		return nil, nil, apiErr(http.StatusNotFound, TypeNotFound, "", "this server's store keeps no parked deliveries")
	}
	return h, p, nil
}

// HookInfo is a webhook as GET /v1/hooks lists it: what it takes and
// where it sends it, never its keys.
type HookInfo struct {
	Name        string         `json:"name"`
	Scheme      webhook.Scheme `json:"scheme"`
	Workflow    string         `json:"workflow"`
	Version     string         `json:"version,omitempty"`
	Events      []string       `json:"events,omitempty"`
	Start       bool           `json:"start"`
	KeepRefused int            `json:"keep_refused"`
	URL         string         `json:"url,omitempty"`
}

// listHooks answers GET /v1/hooks: the webhooks the server takes, in the
// file's order.
func (s *Server) listHooks(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	out := []HookInfo{}
	if hooks := s.webhooks.Load(); hooks != nil {
		for _, name := range hooks.names {
			h := hooks.byName[name]
			if !p.sees(h.spec.Workflow) {
				continue
			}
			out = append(out, HookInfo{Name: name, Scheme: h.spec.Scheme, Workflow: h.spec.Workflow, Version: h.spec.Version,
				Events: h.spec.Events, Start: h.start, KeepRefused: h.keepRefused(), URL: h.spec.URL})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": out})
	return nil
}

// listParked answers GET /v1/hooks/{name}/parked.
func (s *Server) listParked(w http.ResponseWriter, r *http.Request, _ Principal) error {
	q := r.URL.Query()
	if err := checkQuery(q, "limit"); err != nil {
		return err
	}
	limit, err := intParam(q, "limit", defaultParkedPage, 1, maxParkedPage)
	if err != nil {
		return err
	}
	h, p, err := s.parkedOf(r)
	if err != nil {
		return err
	}
	name := h.spec.Name
	list, err := p.ParkedDeliveries(r.Context(), name, int(limit))
	if err != nil {
		return err
	}
	out := make([]ParkedDelivery, 0, len(list))
	for _, d := range list {
		out = append(out, ParkedDelivery{Delivery: d.Key[len(name)+1:], Event: d.Event, Status: d.Status, Reason: d.Reason,
			First: d.First, Last: d.Last, Times: d.Times, Body: d.Body})
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhook": name, "parked": out})
	return nil
}

// redeliver answers POST /v1/hooks/{name}/parked/{id}/redeliver: the
// parked delivery is taken as the webhook takes a delivery now, its
// signature having held when it came. Taken (or ignored), it is unparked;
// refused again, it stays parked, counted once more.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, p Principal) error {
	h, parking, err := s.parkedOf(r)
	if err != nil {
		return err
	}
	name, id := h.spec.Name, r.PathValue("id")
	parked, err := parking.ParkedDelivery(r.Context(), name+":"+id)
	if err != nil {
		return err
	}
	body, err := jsontemplate.Decode(parked.Body)
	if err != nil {
		return apiErr(http.StatusInternalServerError, TypeInternal, "", "the parked body does not read: %v", err)
	}
	t, err := s.take(r, h, webhook.Delivery{ID: id, Event: parked.Event, Body: body})
	s.metrics.webhookDeliveries.WithLabelValues(name, t.outcome).Inc()
	s.log.Info("webhook delivery taken again", "request_id", requestID(r), "webhook", name, "delivery", id, "outcome", t.outcome, "actor", p.Actor)
	if err != nil {
		return err
	}
	t.answer["redelivered"] = true
	writeTaken(w, t)
	return nil
}

// dropParked answers DELETE /v1/hooks/{name}/parked/{id}.
func (s *Server) dropParked(w http.ResponseWriter, r *http.Request, p Principal) error {
	h, parking, err := s.parkedOf(r)
	if err != nil {
		return err
	}
	name, id := h.spec.Name, r.PathValue("id")
	dropped, err := parking.UnparkDelivery(r.Context(), name+":"+id)
	if err != nil {
		return err
	}
	if !dropped {
		return apiErr(http.StatusNotFound, TypeNotFound, "", "no delivery %s of webhook %s is parked", id, name)
	}
	s.log.Info("parked webhook delivery dropped", "request_id", requestID(r), "webhook", name, "delivery", id, "actor", p.Actor)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
