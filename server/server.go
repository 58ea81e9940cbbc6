package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/ratelimit"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/server/webui"
	"flrh.dev/flrh/store"
)

// Catalog is where the server finds the workflows it offers. A static list
// is enough for the built-in workflows; a catalog that reloads bundles from
// a directory plugs in here.
type Catalog interface {
	Workflows() []runner.Workflow
}

// Static is a fixed Catalog.
type Static []runner.Workflow

// Workflows implements Catalog.
func (s Static) Workflows() []runner.Workflow { return s }

// Config assembles a Server. Store, Runner and Catalog are required.
type Config struct {
	Store   store.Store
	Runner  *runner.Runner
	Catalog Catalog
	// Tokens authenticates callers; nil serves loopback callers only, all as
	// the actor "local".
	Tokens *Tokens
	// Identity, when set, also authenticates callers by the signed tokens
	// (JWTs) of an identity provider: a bearer token the token file does
	// not hold is verified against the provider's keys. With Identity or
	// Tokens the server authenticates every caller.
	Identity *Identity
	// Logger receives one JSON line per request; nil discards them.
	Logger *slog.Logger
	// Metrics is where the server registers its collectors and the
	// runner's; nil makes a registry of its own. /metrics serves it.
	Metrics *prometheus.Registry
	// Tracer, when set, gives every request a server span (see trace.go);
	// nil traces nothing.
	Tracer trace.TracerProvider
	// Notifier, when set, wakes event streams the moment a commit lands;
	// streams also poll every StreamPoll.
	Notifier   *Notifier
	StreamPoll time.Duration
	// MaxBody bounds request bodies (DefaultMaxBody when 0).
	MaxBody int64
	// MaxStreams bounds concurrent event streams (256 when 0).
	MaxStreams int
	// RequestTimeout bounds every request but event streams (30 s when 0).
	RequestTimeout time.Duration
	// ApprovalTTL is how long a grant lasts when the approver does not say
	// (15 minutes when 0).
	ApprovalTTL time.Duration
	// Machine is the run FSM verify checks against; nil means the default.
	Machine *control.Machine
	// NewRunID names runs whose starter gave no id; nil draws random ids.
	NewRunID func() string
	// MCP, when set, is served at /v1/mcp (the streamable HTTP transport of
	// the MCP server, package mcp) to callers allowed to submit inputs. It
	// reads the caller's authenticated name with ActorFrom.
	MCP http.Handler
	// Webhooks, when set, are the webhooks other systems deliver to at
	// /v1/hooks/NAME (see webhooks.go); each names a workflow in Catalog.
	Webhooks *Webhooks
	// FollowUps reports that a notifier delivers notices to follow-ups
	// (notify.Config.FollowUps): without it, a webhook with follow_up is
	// refused, for no one would be told.
	FollowUps bool
	// Schedules, when set, are listed at /v1/schedules, and triggered and
	// backfilled through it (see schedules.go).
	Schedules *schedule.Scheduler
	// RateLimit holds every authenticated caller, by actor, to a rate
	// (ratelimit.go): a token's own rate stands in for it. The zero Limit
	// holds no one.
	RateLimit ratelimit.Limit
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	cfg      Config
	log      *slog.Logger
	mux      *http.ServeMux
	metrics  *metrics
	tracer   trace.Tracer // nil without tracing
	streams  atomic.Int64
	draining atomic.Bool // Drain was called: readiness probes answer 503
	// tokens authenticates callers: cfg.Tokens at first, then what
	// SetTokens puts in its place; nil serves loopback callers only.
	tokens atomic.Pointer[Tokens]
	// identity authenticates callers by an identity provider's tokens:
	// cfg.Identity, then what SetIdentity puts in its place.
	identity atomic.Pointer[Identity]
	// webhooks are the webhooks other systems deliver to: cfg.Webhooks,
	// then what SetWebhooks puts in its place; nil takes none.
	webhooks atomic.Pointer[Webhooks]
	// schedules are cfg.Schedules, then what SetSchedules puts in place.
	schedules atomic.Pointer[schedule.Scheduler]
	// swapped is closed, and replaced, each time SetTokens or SetIdentity
	// puts new credentials in place, or the identity provider's keys
	// change: streaming requests wait on it (watchRevocation).
	swappedMu sync.Mutex
	swapped   chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// mcpSessions binds each MCP session to the principal that opened it
	// (mcpsessions.go).
	mcpSessions mcpSessions
	// rates holds callers to their rates (ratelimit.go).
	rates rates
	// hookRates holds each webhook with a rate to it, by name: kept
	// across reloads, as rates is.
	hookRates rates
}

// New checks cfg and builds the server's routes.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Runner == nil || cfg.Catalog == nil {
		return nil, fmt.Errorf("server: a store, a runner and a workflow catalog are required")
	}
	if _, err := compiled(); err != nil {
		return nil, fmt.Errorf("server: embedded schemas: %w", err)
	}
	if err := checkTokenRoles(cfg.Tokens, cfg.Identity); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.RateLimit != (ratelimit.Limit{}) {
		if err := cfg.RateLimit.Check(); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.StreamPoll <= 0 {
		cfg.StreamPoll = 250 * time.Millisecond
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 256
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.ApprovalTTL <= 0 {
		cfg.ApprovalTTL = 15 * time.Minute
	}
	if cfg.Machine == nil {
		cfg.Machine = control.Default()
	}
	if cfg.NewRunID == nil {
		cfg.NewRunID = func() string { return "run-" + randomHex(8) }
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), done: make(chan struct{}), tracer: newTracer(cfg.Tracer)}
	s.tokens.Store(cfg.Tokens)
	s.swapped = make(chan struct{})
	m, err := newMetrics(cfg.Metrics, s)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.schedules.Store(cfg.Schedules)
	if err := s.SetWebhooks(cfg.Webhooks); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Identity != nil {
		s.attach(cfg.Identity)
		s.identity.Store(cfg.Identity)
	}
	byPattern := map[string][]string{}
	var patterns []string
	for _, rt := range routes {
		s.mux.Handle(rt.Method+" "+rt.Pattern, s.wrap(rt))
		if _, seen := byPattern[rt.Pattern]; !seen {
			patterns = append(patterns, rt.Pattern)
		}
		byPattern[rt.Pattern] = append(byPattern[rt.Pattern], rt.Method)
	}
	// Any other method on a known path is a JSON 405 naming the allowed ones.
	for _, p := range patterns {
		allowed := byPattern[p]
		fallback := route{Method: "*", Pattern: p, Perm: permPublic, handle: func(_ *Server, w http.ResponseWriter, _ *http.Request, _ Principal) error {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			return apiErr(http.StatusMethodNotAllowed, TypeMethodNotAllowed, "", "allowed: %s", strings.Join(allowed, ", "))
		}}
		s.mux.Handle(p, s.wrap(fallback))
	}
	s.mux.Handle("/", s.wrap(route{Method: "*", Pattern: "/", Perm: permPublic, handle: func(*Server, http.ResponseWriter, *http.Request, Principal) error {
		return apiErr(http.StatusNotFound, TypeNotFound, "", "no such endpoint")
	}}))
	// The web UI: static files only, public like the API description (its
	// pages read and act through the API with the person's own token).
	ui := webui.Handler()
	s.mux.Handle(webui.Prefix, s.wrap(route{Method: "GET", Pattern: webui.Prefix, Perm: permPublic, handle: func(_ *Server, w http.ResponseWriter, r *http.Request, _ Principal) error {
		ui.ServeHTTP(w, r)
		return nil
	}}))
	s.mux.Handle("GET /{$}", s.wrap(route{Method: "GET", Pattern: "/{$}", Perm: permPublic, handle: func(_ *Server, w http.ResponseWriter, r *http.Request, _ Principal) error {
		http.Redirect(w, r, webui.Prefix, http.StatusFound)
		return nil
	}}))
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handlerFunc answers one request for an authenticated, authorized caller.
// A returned error becomes the error body; nil means it wrote its answer.
type handlerFunc func(s *Server, w http.ResponseWriter, r *http.Request, p Principal) error

// foreignBody is a route's Body when the body is another system's own
// JSON, which the handler checks itself (a webhook's delivery).
const foreignBody = "-"

// route is one entry of the route table; the OpenAPI document is checked
// against this table by the package's tests.
type route struct {
	Method  string
	Pattern string     // net/http pattern, e.g. /v1/runs/{id}
	Perm    permission // what the caller must hold
	Body    string     // the request body's schema name, "" for none, foreignBody for the sender's own
	streams bool       // a long-lived answer: no request timeout
	scope   scopeKind  // how a principal scoped to some workflows is held to them (scope.go)
	handle  handlerFunc
}

// Compiled on first use: the bounded repetition expands into a program of
// a few hundred instructions, which every command linking the server would
// otherwise build at start-up.
var reRequestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// statusWriter remembers the status for logs and metrics and keeps the
// underlying writer reachable (Flush for event streams).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type ctxKey int

const requestIDKey ctxKey = 0

// principalKey carries the authenticated principal to handlers mounted
// from other packages (the MCP server).
const principalKey ctxKey = 1

// ActorFrom returns the authenticated actor's name of a request the server
// passed on (to the MCP handler), or "" when there is none.
func ActorFrom(r *http.Request) string {
	p, _ := r.Context().Value(principalKey).(Principal)
	return p.Actor
}

// WorkflowsFrom returns the workflows the authenticated principal of a
// request the server passed on is scoped to (Principal.Workflows), nil
// for every workflow.
func WorkflowsFrom(r *http.Request) []string {
	p, _ := r.Context().Value(principalKey).(Principal)
	return p.Workflows
}

// wrap turns a route into an http.Handler: request id, authentication,
// authorization, panic recovery, one log line and metrics.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := r.Header.Get("X-Request-Id")
		if !reRequestID().MatchString(rid) {
			rid = randomHex(8)
		}
		w.Header().Set("X-Request-Id", rid)
		ctx, span := s.startSpan(context.WithValue(r.Context(), requestIDKey, rid), rt, r, rid)
		if !rt.streams {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
			defer cancel()
		}
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		var who Principal
		var failure *Error
		func() {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					s.log.Error("handler panic", "request_id", rid, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					failure = apiErr(http.StatusInternalServerError, TypeInternal, "", "internal error")
				}
			}()
			if rt.Perm != permPublic {
				p, aerr := s.authenticate(r)
				if aerr != nil {
					failure = aerr
					return
				}
				who = p
				if aerr := s.admit(p); aerr != nil {
					failure = aerr
					return
				}
				if !p.may(rt.Perm) {
					failure = apiErr(http.StatusForbidden, TypeForbidden, "", "actor %s (roles %s) may not %s", p.Actor, strings.Join(p.Roles, ","), rt.Perm)
					return
				}
				if aerr := s.checkScope(r, rt.scope, p); aerr != nil {
					failure = aerr
					return
				}
				if rt.streams && s.authenticates() {
					ctx, cancel := context.WithCancelCause(r.Context())
					defer cancel(nil)
					r = r.WithContext(ctx)
					go s.watchRevocation(ctx, cancel, r, rt)
				}
			}
			if err := rt.handle(s, sw, r, who); err != nil {
				failure = classify(err)
				if failure.Status >= 500 {
					s.log.Error("request failed", "request_id", rid, "route", rt.Pattern, "err", err.Error())
				}
				if code := store.CodeOf(err); code != "" && code != store.CodeNotFound {
					s.metrics.storeErrors.WithLabelValues(string(code)).Inc()
				}
			}
		}()
		if failure != nil && sw.status == 0 {
			writeError(sw, failure)
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.metrics.observe(rt, status, elapsed)
		endSpan(span, r, status, failure)
		attrs := []any{"request_id", rid, "method", r.Method, "route", rt.Pattern, "status", status,
			"duration_ms", float64(elapsed.Microseconds()) / 1000}
		if id := r.PathValue("id"); id != "" {
			attrs = append(attrs, "run_id", id)
		}
		if who.Actor != "" {
			attrs = append(attrs, "actor", who.Actor)
		}
		level := slog.LevelInfo
		switch {
		case status == http.StatusForbidden:
			level = slog.LevelWarn
			attrs = append(attrs, "denied", failure.Message)
		case status == http.StatusTooManyRequests:
			level = slog.LevelWarn
			attrs = append(attrs, "error_type", failure.Type)
		case status >= 500:
			level = slog.LevelError
		case failure != nil:
			attrs = append(attrs, "error_type", failure.Type)
		}
		s.log.Log(r.Context(), level, "request", attrs...)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// notLoaded is the answer for a workflow the server does not load, or a
// scoped caller may not see.
func notLoaded(id, version string) *Error {
	return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/workflow", "no workflow %q is loaded", strings.TrimSuffix(id+"@"+version, "@"))
}

// workflow finds a loaded workflow by id and version ("" when exactly one
// version of the id is loaded).
func (s *Server) workflow(id, version string) (runner.Workflow, *Error) {
	var found []runner.Workflow
	for _, wf := range s.cfg.Catalog.Workflows() {
		if wf.ID() == id && (version == "" || wf.Version() == version) {
			found = append(found, wf)
		}
	}
	switch {
	case len(found) == 0:
		return nil, notLoaded(id, version)
	case len(found) > 1:
		versions := []string{}
		for _, wf := range found {
			versions = append(versions, wf.Version())
		}
		slices.Sort(versions)
		return nil, apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/version", "workflow %q is loaded in versions %s; name one", id, strings.Join(versions, ", "))
	}
	return found[0], nil
}
