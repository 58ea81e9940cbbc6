package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsontemplate"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/ratelimit"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/webhook"
	"flrh.dev/flrh/yamljson"
)

// Webhooks other systems send: a shop's refund requests, a tracker's
// tickets, a payment provider's disputes, each POSTed to /v1/hooks/NAME
// signed with a secret the sender and flrh share. A delivery whose
// signature holds, and which the hook acts on, starts a run or becomes
// an input of one (runner.Deliver): once, however often the sender
// delivers it again. The signature is the caller's credential, so the
// route takes no bearer token.

// deliveryNames are the named values a webhook's templates may take
// besides the body: {$delivery}, {$event}, {$hook}.
var deliveryNames = []string{"$delivery", "$event", "$hook"}

// WebhookSpec is one webhook of a webhooks file (schema/webhooks.json).
type WebhookSpec struct {
	Name             string                     `json:"name"`
	Scheme           webhook.Scheme             `json:"scheme"`
	SecretEnv        NameList                   `json:"secret_env,omitempty"`
	SecretFile       NameList                   `json:"secret_file,omitempty"`
	ToleranceSeconds int64                      `json:"tolerance_seconds,omitempty"`
	Events           []string                   `json:"events,omitempty"`
	When             map[string]json.RawMessage `json:"when,omitempty"`
	Workflow         string                     `json:"workflow"`
	Version          string                     `json:"version,omitempty"`
	RunID            string                     `json:"run_id,omitempty"`
	Start            *bool                      `json:"start,omitempty"`
	Input            json.RawMessage            `json:"input,omitempty"`
	Actor            string                     `json:"actor,omitempty"`
	KeepRefused      *int                       `json:"keep_refused,omitempty"`
	URL              string                     `json:"url,omitempty"`
	FollowUp         bool                       `json:"follow_up,omitempty"`
	// Labels are the labels of the runs the webhook starts, each value
	// a template as run_id is ("order": "{/order/id}"); every such run
	// bears flrh.webhook, the webhook's name, besides.
	Labels map[string]string `json:"labels,omitempty"`
	// Rate, "COUNT/UNIT" (ratelimit.Parse), holds the deliveries the
	// webhook takes, signed ones alone counted, to that many, Burst at
	// once (default the count); past it a delivery is answered 429 with
	// Retry-After, and taken when the sender delivers it again.
	Rate  string `json:"rate,omitempty"`
	Burst int    `json:"burst,omitempty"`
}

// WebhookLabelKey is the label every run a webhook starts bears, the
// webhook's name its value.
const WebhookLabelKey = label.Reserved + "webhook"

// DefaultKeepRefused is how many deliveries a webhook keeps parked when
// its keep_refused does not say.
const DefaultKeepRefused = 1000

type webhooksFile struct {
	Webhooks []WebhookSpec `json:"webhooks"`
}

// ParseWebhooks reads a webhooks file, JSON or (yaml set) YAML, checking
// everything but the secrets, which LoadWebhooks reads.
func ParseWebhooks(data []byte, yaml bool) ([]WebhookSpec, error) {
	if yaml {
		var err error
		if data, _, err = yamljson.Convert(data); err != nil {
			return nil, fmt.Errorf("webhooks: %w", err)
		}
	}
	var f webhooksFile
	if err := decodeStrict(data, "webhooks", &f); err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	for i, spec := range f.Webhooks {
		if _, err := compileWebhook(spec); err != nil {
			return nil, fmt.Errorf("webhooks: /webhooks/%d (%s): %w", i, spec.Name, err)
		}
		if slices.ContainsFunc(f.Webhooks[:i], func(o WebhookSpec) bool { return o.Name == spec.Name }) {
			return nil, fmt.Errorf("webhooks: /webhooks/%d: a second webhook named %s", i, spec.Name)
		}
	}
	return f.Webhooks, nil
}

// Webhooks are the webhooks a server takes, their secrets read.
type Webhooks struct {
	byName map[string]*inboundHook
	names  []string
}

// Names lists the webhooks, in the file's order.
func (w *Webhooks) Names() []string { return slices.Clone(w.names) }

// FollowUp reports whether a webhook tells people what becomes of the
// runs they start (WebhookSpec.FollowUp).
func (w *Webhooks) FollowUp() bool {
	for _, h := range w.byName {
		if h.spec.FollowUp {
			return true
		}
	}
	return false
}

// inboundHook is a webhook ready to take deliveries.
type inboundHook struct {
	spec     WebhookSpec
	verifier webhook.Verifier
	runID    *jsontemplate.Template
	input    *jsontemplate.Template
	when     []jsontemplate.Condition
	labels   map[string]*jsontemplate.Template
	rate     ratelimit.Limit // zero: no rate
	start    bool
	actor    string
}

// LoadWebhooks reads each webhook's keys (WebhookKeys: getenv reads a
// variable, files are read relative to dir) and makes the webhooks ready.
func LoadWebhooks(specs []WebhookSpec, dir string, getenv func(string) string) (*Webhooks, error) {
	w := &Webhooks{byName: map[string]*inboundHook{}}
	for _, spec := range specs {
		keys, err := WebhookKeys(spec, dir, getenv)
		if err != nil {
			return nil, err
		}
		h, err := compileWebhook(spec)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", spec.Name, err)
		}
		h.verifier = keys
		if _, dup := w.byName[spec.Name]; dup {
			return nil, fmt.Errorf("webhook %s: named twice", spec.Name)
		}
		w.byName[spec.Name] = h
		w.names = append(w.names, spec.Name)
	}
	return w, nil
}

// WebhookKeys reads a webhook's keys into the verifier its deliveries are
// checked with: its variables' first, then its files' (relative to dir),
// each as its scheme takes it (webhook.Verifier.AddKey: a secret, or a
// Standard Webhooks public key). A variable unset or empty, a file that
// cannot be read, or a key the scheme cannot use is an error naming the
// webhook and where the key was looked for, never the key.
func WebhookKeys(spec WebhookSpec, dir string, getenv func(string) string) (webhook.Verifier, error) {
	v := webhook.Verifier{Scheme: spec.Scheme, Tolerance: time.Duration(spec.ToleranceSeconds) * time.Second, URL: spec.URL}
	add := func(where, text string) error {
		if err := v.AddKey(text); err != nil {
			return fmt.Errorf("webhook %s: the secret in %s: %w", spec.Name, where, err)
		}
		return nil
	}
	for _, name := range spec.SecretEnv {
		text := getenv(name)
		if text == "" {
			return webhook.Verifier{}, fmt.Errorf("webhook %s: the environment variable %s is unset or empty", spec.Name, name)
		}
		if err := add("$"+name, text); err != nil {
			return webhook.Verifier{}, err
		}
	}
	for _, file := range spec.SecretFile {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return webhook.Verifier{}, fmt.Errorf("webhook %s: %w", spec.Name, err)
		}
		if err := add(file, strings.TrimSpace(string(b))); err != nil {
			return webhook.Verifier{}, err
		}
	}
	return v, nil
}

// compileWebhook checks spec and makes its webhook, holding no key yet.
func compileWebhook(spec WebhookSpec) (*inboundHook, error) {
	if len(spec.SecretEnv)+len(spec.SecretFile) == 0 {
		return nil, errors.New("give the signing secret's secret_env or secret_file")
	}
	if (spec.URL != "") != (spec.Scheme == webhook.Twilio) {
		return nil, errors.New("url is the URL Twilio posts to, which it signs: required for a twilio webhook, and for no other")
	}
	if spec.FollowUp && spec.Scheme != webhook.Slack && spec.Scheme != webhook.Discord {
		return nil, errors.New("follow_up tells the person who sent a chat command what becomes of its run: slack and discord webhooks only")
	}
	h := &inboundHook{spec: spec, start: spec.Start == nil || *spec.Start, actor: spec.Actor}
	if h.actor == "" {
		h.actor = "hook:" + spec.Name
	}
	var err error
	runID := spec.RunID
	if runID == "" {
		runID = "{$hook}-{$delivery}"
	}
	if h.runID, err = jsontemplate.CompileString(runID, deliveryNames...); err != nil {
		return nil, fmt.Errorf("run_id: %w", err)
	}
	input := spec.Input
	if len(input) == 0 {
		input = json.RawMessage(`"{$body}"`)
	}
	if h.input, err = jsontemplate.Compile(input, deliveryNames...); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if err := label.CheckBeside(spec.Labels, WebhookLabelKey); err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	h.labels = make(map[string]*jsontemplate.Template, len(spec.Labels))
	for _, k := range slices.Sorted(maps.Keys(spec.Labels)) {
		if h.labels[k], err = jsontemplate.CompileString(spec.Labels[k], deliveryNames...); err != nil {
			return nil, fmt.Errorf("labels: %s: %w", k, err)
		}
	}
	if spec.Rate != "" {
		if h.rate, err = ratelimit.Parse(spec.Rate, spec.Burst); err != nil {
			return nil, fmt.Errorf("rate: %w", err)
		}
	} else if spec.Burst != 0 {
		return nil, errors.New("burst: a burst is of a rate: give rate too")
	}
	pointers := make([]string, 0, len(spec.When))
	for p := range spec.When {
		pointers = append(pointers, p)
	}
	slices.Sort(pointers)
	for _, p := range pointers {
		c, err := jsontemplate.NewCondition(p, spec.When[p])
		if err != nil {
			return nil, fmt.Errorf("when: %w", err)
		}
		h.when = append(h.when, c)
	}
	return h, nil
}

// SetWebhooks puts w in place of the webhooks the server takes (nil
// takes none); each must name a workflow the server runs.
func (s *Server) SetWebhooks(w *Webhooks) error {
	if w != nil {
		for _, name := range w.names {
			spec := w.byName[name].spec
			if _, err := s.workflow(spec.Workflow, spec.Version); err != nil {
				return fmt.Errorf("webhook %s: %s", name, err.Message)
			}
			if spec.FollowUp && !s.cfg.FollowUps {
				return fmt.Errorf("webhook %s: follow_up, and this server delivers no follow-ups: they are started with flrh serve, when its webhooks file has one", name)
			}
		}
	}
	s.webhooks.Store(w)
	return nil
}

// deliver takes a delivery to POST /v1/hooks/{name}.
func (s *Server) deliver(w http.ResponseWriter, r *http.Request, _ Principal) error {
	name := r.PathValue("name")
	h, err := s.hook(name)
	if err != nil {
		return err
	}
	outcome := "refused"
	defer func() { s.metrics.webhookDeliveries.WithLabelValues(name, outcome).Inc() }()
	media := []string{"application/json"}
	if h.spec.Scheme.TakesForms() {
		media = append(media, "application/x-www-form-urlencoded")
	}
	body, aerr := readBodyOf(w, r, s.cfg.MaxBody, media...)
	if aerr != nil {
		return aerr
	}
	d, err := h.verifier.Verify(webhook.Header(r.Header), body, time.Now())
	if err != nil {
		var we *webhook.Error
		if errors.As(err, &we) && we.Reason == webhook.ReasonSecret {
			return err // the server's configuration, not the caller's fault: 500
		}
		s.log.Warn("webhook delivery refused", "request_id", requestID(r), "webhook", name, "err", err.Error())
		return apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "%s", strings.TrimPrefix(err.Error(), "webhook: "))
	}
	if d.Handshake != nil {
		// Slack's url_verification, Discord's PING: the endpoint proves
		// it is the one the app was given; it is no event.
		outcome = "handshake"
		if d.Quiet {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		writeJSON(w, http.StatusOK, d.Handshake)
		return nil
	}
	var t taken
	if err = s.admitDelivery(h); err == nil {
		t, err = s.take(r, h, d)
	} else {
		t.outcome = "rate_limited"
	}
	outcome = t.outcome
	if d.Interactive {
		// A person waits on the answer (a slash command, a button, a
		// modal), and the sender shows them what it is: they are told,
		// as their sender shows it, what became of it, a refusal too.
		status, ctype, body := webhook.Reply(h.spec.Scheme, d, replyText(t, err))
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(status)
		w.Write(body)
		return nil
	}
	if err != nil {
		return err
	}
	if d.Quiet {
		// Discord's webhook events want an empty 204, whatever became of
		// them; the log and the metric say what did.
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeTaken(w, t)
	return nil
}

// admitDelivery spends one of webhook h's deliveries, or refuses it with
// when to deliver it again: nothing of it is taken or parked, as the
// sender delivers it again. The count is this process's, as a caller's
// is (rates).
func (s *Server) admitDelivery(h *inboundHook) error {
	if h.rate == (ratelimit.Limit{}) {
		return nil
	}
	ok, wait := s.hookRates.take(h.spec.Name, h.rate)
	if ok {
		return nil
	}
	return &Error{Status: http.StatusTooManyRequests, Type: TypeRateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("webhook %s took more deliveries than its rate, %s, allows: deliver it again in %s", h.spec.Name, h.rate, wait.Truncate(time.Second)+time.Second)}
}

// replyText tells the person who sent an interactive delivery what
// became of it.
func replyText(t taken, err error) string {
	if err != nil {
		return "Refused: " + classify(err).Message
	}
	switch t.outcome {
	case "ignored":
		return "Not acted on: " + t.ignored + "."
	case "again":
		return "Taken already: run " + t.runID + "."
	case "started":
		return "Started run " + t.runID + "." + t.followUp()
	}
	return "Handed to run " + t.runID + "." + t.followUp()
}

// followUp says, when the person is to be told more, that they will be.
func (t taken) followUp() string {
	if !t.followed {
		return ""
	}
	return " You will be told here when it waits for someone or ends."
}

// writeTaken answers with what became of a delivery; a run it started is
// named by Location.
func writeTaken(w http.ResponseWriter, t taken) {
	if t.status == http.StatusCreated {
		w.Header().Set("Location", "/v1/runs/"+url.PathEscape(t.runID))
	}
	writeJSON(w, t.status, t.answer)
}

// hook is the webhook name the server takes, or a 404.
func (s *Server) hook(name string) (*inboundHook, error) {
	if hooks := s.webhooks.Load(); hooks != nil {
		if h := hooks.byName[name]; h != nil {
			return h, nil
		}
	}
	return nil, noHook(name)
}

// taken is what became of a verified delivery.
type taken struct {
	status  int
	answer  map[string]any
	outcome string // the metric's: started, input, again, ignored or failed
	runID   string // the run it started or went to
	ignored string // why it was not acted on
	// followed reports that the person who sent it is to be told what
	// becomes of the run (WebhookSpec.FollowUp).
	followed bool
}

// take acts on a verified delivery: it starts or feeds the run its
// templates name, or is ignored. A delivery it cannot take for want of
// something an operator can mend (a template finds nothing, the workflow
// refuses the input, the run does not exist) is parked; one taken is
// unparked, had it been parked.
func (s *Server) take(r *http.Request, h *inboundHook, d webhook.Delivery) (taken, error) {
	name := h.spec.Name
	key := name + ":" + d.ID
	t := taken{status: http.StatusOK, answer: map[string]any{"webhook": name, "delivery": d.ID}, outcome: "ignored"}
	if t.ignored = h.ignores(d); t.ignored != "" {
		t.answer["ignored"] = t.ignored
		s.unpark(r, key)
		return t, nil
	}
	to, err := s.takeDelivery(r, h, d, key)
	if err != nil {
		t.outcome = "failed"
		refusal := classify(err)
		if refusal.Status == http.StatusNotFound || refusal.Status == http.StatusUnprocessableEntity {
			s.park(r, h, d, key, refusal)
		}
		return t, refusal
	}
	s.unpark(r, key)
	t.runID, t.followed = to.RunID, to.followed
	t.answer["run_id"], t.answer["started"], t.answer["again"] = to.RunID, to.Started, to.Again
	switch {
	case to.Again:
		t.outcome = "again"
	case to.Started:
		t.outcome, t.status = "started", http.StatusCreated
	default:
		t.outcome, t.status = "input", http.StatusAccepted
	}
	s.log.Info("webhook delivery taken", "request_id", requestID(r), "webhook", name, "delivery", d.ID, "event", d.Event, "run_id", to.RunID, "outcome", t.outcome)
	return t, nil
}

// deliveredTo is the run a delivery went to, and how.
type deliveredTo struct {
	RunID string
	runner.Delivered
	followed bool // a follow-up was kept for the run
}

// takeDelivery renders the delivery's run id and input and hands them
// to the runner under key.
func (s *Server) takeDelivery(r *http.Request, h *inboundHook, d webhook.Delivery, key string) (deliveredTo, error) {
	values := jsontemplate.Values{Body: d.Body, Names: map[string]string{"$delivery": d.ID, "$event": d.Event, "$hook": h.spec.Name}}
	runID, err := h.runID.RenderString(values)
	if err != nil {
		return deliveredTo{}, apiErr(http.StatusUnprocessableEntity, TypeInvalid, "", "the run id: %v", err)
	}
	if !cjson.ValidID(runID) {
		return deliveredTo{}, apiErr(http.StatusUnprocessableEntity, TypeInvalid, "", "the run id %q the delivery gives is not an id (letters, digits and ._:/- up to %d)", runID, cjson.MaxIDLength)
	}
	input, err := h.input.RenderCanonical(values)
	if err != nil {
		return deliveredTo{}, apiErr(http.StatusUnprocessableEntity, TypeInvalid, "", "the input: %v", err)
	}
	del := runner.Delivery{Key: key, RunID: runID, Input: input, Actor: h.actor}
	if h.start {
		wf, werr := s.workflow(h.spec.Workflow, h.spec.Version)
		if werr != nil {
			return deliveredTo{}, werr
		}
		del.Workflow, del.Version = wf.ID(), wf.Version()
		if del.Labels, err = h.renderLabels(values); err != nil {
			return deliveredTo{}, apiErr(http.StatusUnprocessableEntity, TypeInvalid, "", "%v", err)
		}
	}
	// Kept before the run is started, so that its first notice, which
	// may be delivered as soon as the run's first tick commits, finds it.
	followed := s.keepFollowUp(r, h, d, runID)
	got, err := s.cfg.Runner.Deliver(r.Context(), del)
	if !h.start && store.CodeOf(err) == store.CodeNotFound {
		err = apiErr(http.StatusNotFound, TypeNotFound, "", "no run %s: the webhook feeds runs already started only (start: false)", runID)
	}
	if err != nil && followed {
		s.dropFollowUp(r, runID, d.FollowUp.URL)
		followed = false
	}
	return deliveredTo{RunID: runID, Delivered: got, followed: followed}, err
}

// renderLabels is the labels of the run a delivery starts: the webhook's,
// rendered from the delivery, and its name.
func (h *inboundHook) renderLabels(values jsontemplate.Values) (map[string]string, error) {
	labels := map[string]string{WebhookLabelKey: h.spec.Name}
	for _, k := range slices.Sorted(maps.Keys(h.labels)) {
		v, err := h.labels[k].RenderString(values)
		if err != nil {
			return nil, fmt.Errorf("the label %s: %w", k, err)
		}
		// Another system's text, in whichever Unicode form it wrote it:
		// put in the one form a label takes, not refused for it.
		v = norm.NFC.String(v)
		if err := label.CheckValue(k, v); err != nil {
			return nil, fmt.Errorf("the delivery gives %w", err)
		}
		labels[k] = v
	}
	return labels, nil
}

// keepFollowUp keeps, for a webhook with follow_up, where the person who
// sent an interactive delivery is told what becomes of run runID, and
// reports whether it did. Best effort: a follow-up not kept costs them
// messages, and the delivery is taken as it would be without.
func (s *Server) keepFollowUp(r *http.Request, h *inboundHook, d webhook.Delivery, runID string) bool {
	fus, ok := store.FollowUpsOf(s.cfg.Store)
	if !h.spec.FollowUp || d.FollowUp.URL == "" || !ok {
		return false
	}
	err := fus.AddFollowUp(context.WithoutCancel(r.Context()), store.FollowUp{RunID: runID, Scheme: string(h.spec.Scheme), Address: d.FollowUp.URL}, d.FollowUp.TTL)
	if err != nil {
		s.log.Error("follow-up not kept", "request_id", requestID(r), "webhook", h.spec.Name, "delivery", d.ID, "run_id", runID, "err", err.Error())
		return false
	}
	return true
}

// dropFollowUp drops the follow-up of a delivery that was not taken: no
// one is to be told of a run it did not start or feed.
func (s *Server) dropFollowUp(r *http.Request, runID, address string) {
	fus, _ := store.FollowUpsOf(s.cfg.Store)
	if _, err := fus.DropFollowUp(context.WithoutCancel(r.Context()), runID, store.FollowUpName(address)); err != nil {
		s.log.Error("follow-up of a delivery not taken not dropped", "request_id", requestID(r), "run_id", runID, "err", err.Error())
	}
}

// keepRefused is how many deliveries the webhook keeps parked.
func (h *inboundHook) keepRefused() int {
	if h.spec.KeepRefused != nil {
		return *h.spec.KeepRefused
	}
	return DefaultKeepRefused
}

// ignores says why the webhook does not act on d, or "".
func (h *inboundHook) ignores(d webhook.Delivery) string {
	if len(h.spec.Events) > 0 && !slices.Contains(h.spec.Events, d.Event) {
		return fmt.Sprintf("the event %q is not one this webhook acts on", d.Event)
	}
	for _, c := range h.when {
		if !c.Holds(d.Body) {
			return "the body does not hold the webhook's value at " + c.Pointer
		}
	}
	return ""
}

// park keeps a delivery the webhook verified and could not take, with
// the refusal, for an operator to take again once its cause is mended
// (the sender may never send it again: GitHub does not). Parking is
// best effort: the delivery is refused as it was whether or not it is
// kept.
func (s *Server) park(r *http.Request, h *inboundHook, d webhook.Delivery, key string, refusal *Error) {
	keep := h.keepRefused()
	p, ok := store.DeliveryParkingOf(s.cfg.Store)
	if !ok || keep == 0 {
		return
	}
	body, err := json.Marshal(d.Body) // numbers stay as they were sent (json.Number)
	if err == nil {
		err = p.ParkDelivery(context.WithoutCancel(r.Context()), store.ParkedDelivery{Key: key, Hook: h.spec.Name, Event: d.Event, Body: body,
			Status: refusal.Status, Reason: store.ParkedReason(refusal.Message)}, keep)
	}
	if err != nil {
		s.log.Error("webhook delivery not parked", "request_id", requestID(r), "webhook", h.spec.Name, "delivery", d.ID, "err", err.Error())
		return
	}
	s.metrics.webhookParked.WithLabelValues(h.spec.Name).Inc()
	s.log.Warn("webhook delivery parked", "request_id", requestID(r), "webhook", h.spec.Name, "delivery", d.ID, "status", refusal.Status, "reason", refusal.Message)
}

// unpark drops a delivery taken from those parked, had it been.
func (s *Server) unpark(r *http.Request, key string) {
	p, ok := store.DeliveryParkingOf(s.cfg.Store)
	if !ok {
		return
	}
	if _, err := p.UnparkDelivery(context.WithoutCancel(r.Context()), key); err != nil {
		s.log.Error("webhook delivery not unparked", "request_id", requestID(r), "key", key, "err", err.Error())
	}
}
