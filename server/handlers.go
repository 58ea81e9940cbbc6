package server

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/ratelimit"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
	"flrh.dev/flrh/verify"
)

// routes is the API. Its order is the order of the OpenAPI document.
var routes = []route{
	{Method: "GET", Pattern: "/v1/openapi.json", Perm: permPublic, handle: (*Server).openAPI},
	{Method: "GET", Pattern: "/healthz", Perm: permPublic, handle: (*Server).health},
	{Method: "GET", Pattern: "/readyz", Perm: permPublic, handle: (*Server).ready},
	{Method: "GET", Pattern: "/metrics", Perm: permRead, handle: (*Server).serveMetrics},
	{Method: "GET", Pattern: "/v1/whoami", Perm: permRead, scope: scopeNone, handle: (*Server).whoami},
	// Sign-in to the web UI through the identity provider (login.go).
	{Method: "GET", Pattern: "/v1/login", Perm: permPublic, handle: (*Server).loginInfo},
	{Method: "POST", Pattern: "/v1/login/token", Perm: permPublic, Body: "login_token", handle: (*Server).loginToken},
	{Method: "POST", Pattern: "/v1/login/refresh", Perm: permPublic, Body: "login_refresh", handle: (*Server).loginRefresh},
	{Method: "GET", Pattern: "/v1/workflows", Perm: permRead, scope: scopeFiltered, handle: (*Server).listWorkflows},
	// Deliveries other systems sign (webhooks.go): the signature is the
	// credential.
	{Method: "POST", Pattern: "/v1/hooks/{name}", Perm: permPublic, Body: foreignBody, handle: (*Server).deliver},
	{Method: "GET", Pattern: "/v1/hooks", Perm: permHooks, scope: scopeFiltered, handle: (*Server).listHooks},
	{Method: "GET", Pattern: "/v1/hooks/{name}/parked", Perm: permHooks, scope: scopeHook, handle: (*Server).listParked},
	{Method: "POST", Pattern: "/v1/hooks/{name}/parked/{id}/redeliver", Perm: permHooks, scope: scopeHook, handle: (*Server).redeliver},
	{Method: "DELETE", Pattern: "/v1/hooks/{name}/parked/{id}", Perm: permHooks, scope: scopeHook, handle: (*Server).dropParked},
	// Schedules that start runs on a calendar (schedules.go).
	{Method: "GET", Pattern: "/v1/schedules", Perm: permRead, scope: scopeFiltered, handle: (*Server).listSchedules},
	{Method: "POST", Pattern: "/v1/schedules/{name}/trigger", Perm: permSchedule, scope: scopeSchedule, handle: (*Server).triggerSchedule},
	{Method: "POST", Pattern: "/v1/schedules/{name}/backfill", Perm: permSchedule, scope: scopeSchedule, Body: "backfill", handle: (*Server).backfillSchedule},
	{Method: "POST", Pattern: "/v1/schedules/{name}/pause", Perm: permSchedule, scope: scopeSchedule, Body: "pause", handle: (*Server).pauseSchedule},
	{Method: "POST", Pattern: "/v1/schedules/{name}/resume", Perm: permSchedule, scope: scopeSchedule, handle: (*Server).resumeSchedule},
	{Method: "GET", Pattern: "/v1/runs", Perm: permRead, scope: scopeFiltered, handle: (*Server).listRuns},
	{Method: "GET", Pattern: "/v1/approvals", Perm: permRead, scope: scopeFiltered, handle: (*Server).listApprovals},
	{Method: "POST", Pattern: "/v1/runs", Perm: permStart, scope: scopeFiltered, Body: "start_run", handle: (*Server).startRun},
	{Method: "GET", Pattern: "/v1/runs/{id}", Perm: permRead, scope: scopeRun, handle: (*Server).showRun},
	{Method: "GET", Pattern: "/v1/runs/{id}/events", Perm: permRead, scope: scopeRun, handle: (*Server).events},
	{Method: "GET", Pattern: "/v1/runs/{id}/trace", Perm: permRead, scope: scopeRun, handle: (*Server).trace},
	{Method: "GET", Pattern: "/v1/runs/{id}/verify", Perm: permRead, scope: scopeRun, handle: (*Server).verify},
	{Method: "GET", Pattern: "/v1/runs/{id}/replay", Perm: permRead, scope: scopeRun, handle: (*Server).replay},
	{Method: "GET", Pattern: "/v1/runs/{id}/stream", Perm: permRead, scope: scopeRun, streams: true, handle: (*Server).stream},
	// The workflow's record of its deliberation (handlers_record.go).
	{Method: "GET", Pattern: "/v1/runs/{id}/tickets", Perm: permRead, scope: scopeRun, handle: (*Server).listTickets},
	{Method: "GET", Pattern: "/v1/runs/{id}/fhr", Perm: permRead, scope: scopeRun, handle: (*Server).listFHR},
	{Method: "GET", Pattern: "/v1/runs/{id}/scorecard", Perm: permRead, scope: scopeRun, handle: (*Server).listScorecards},
	{Method: "GET", Pattern: "/v1/runs/{id}/why", Perm: permRead, scope: scopeRun, handle: (*Server).why},
	{Method: "GET", Pattern: "/v1/runs/{id}/case", Perm: permRead, scope: scopeRun, handle: (*Server).runCase},
	{Method: "POST", Pattern: "/v1/runs/{id}/inputs", Perm: permSubmit, scope: scopeRun, Body: "submit_input", handle: (*Server).submit},
	{Method: "POST", Pattern: "/v1/runs/{id}/approve", Perm: permApprove, scope: scopeRun, Body: "approve", handle: (*Server).approve},
	{Method: "POST", Pattern: "/v1/runs/{id}/deny", Perm: permApprove, scope: scopeRun, Body: "deny", handle: (*Server).deny},
	{Method: "POST", Pattern: "/v1/runs/{id}/cancel", Perm: permCancel, scope: scopeRun, Body: "cancel", handle: (*Server).cancel},
	{Method: "POST", Pattern: "/v1/runs/{id}/reconcile", Perm: permReconcile, scope: scopeRun, Body: "reconcile", handle: (*Server).reconcile},
	{Method: "POST", Pattern: "/v1/runs/{id}/release", Perm: permRelease, scope: scopeRun, Body: "release", handle: (*Server).release},
	// A person's steering of the deliberation (handlers_people.go).
	{Method: "POST", Pattern: "/v1/runs/{id}/choose", Perm: permChoose, scope: scopeRun, Body: "choose", handle: (*Server).choose},
	{Method: "POST", Pattern: "/v1/runs/{id}/mrp", Perm: permSteer, scope: scopeRun, Body: "mrp", handle: (*Server).steer},
	// The MCP server's streamable HTTP transport: agents read and propose
	// through it, never authorize (see package mcp); it holds a scoped
	// agent to its workflows (mcp.Deps.WorkflowsFrom).
	{Method: "POST", Pattern: "/v1/mcp", Perm: permSubmit, scope: scopeFiltered, streams: true, handle: (*Server).mcp},
	{Method: "GET", Pattern: "/v1/mcp", Perm: permSubmit, scope: scopeFiltered, streams: true, handle: (*Server).mcp},
	{Method: "DELETE", Pattern: "/v1/mcp", Perm: permSubmit, scope: scopeFiltered, streams: true, handle: (*Server).mcp},
}

// mcp hands an authenticated request to the MCP server, with the caller's
// name for its records.
func (s *Server) mcp(w http.ResponseWriter, r *http.Request, p Principal) error {
	if s.cfg.MCP == nil {
		return apiErr(http.StatusNotFound, TypeNotFound, "", "this server has no MCP endpoint")
	}
	id := r.Header.Get(mcpSessionHeader)
	if id != "" && !s.mcpSessions.holds(id, p, time.Now()) {
		return apiErr(http.StatusNotFound, TypeNotFound, "", "MCP session %s was opened under another name or scope than this token's now: open a new session", id)
	}
	s.cfg.MCP.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	switch opened := w.Header().Get(mcpSessionHeader); {
	case r.Method == http.MethodDelete && id != "":
		s.mcpSessions.forget(id)
	case id == "" && opened != "":
		s.mcpSessions.open(opened, p, time.Now())
	}
	return nil
}

// The actors the runner records for each act: the authenticated name with
// the (role, capability) pair the run FSM expects for that act.
func approverActor(p Principal) runner.Actor {
	return runner.ApproverActor(p.Actor)
}

// starterActor records who started a run: the authenticated name under the
// first of its roles (roles are sorted).
func starterActor(p Principal) runner.Actor {
	role := "agent"
	if len(p.Roles) > 0 {
		role = p.Roles[0]
	}
	return runner.Actor{Name: p.Actor, Role: role, Capability: "run.start"}
}

func denierActor(p Principal) runner.Actor {
	return runner.Actor{Name: p.Actor, Role: "human_approver", Capability: "approval.deny"}
}

func cancellerActor(p Principal) runner.Actor {
	return runner.Actor{Name: p.Actor, Role: "authorized_requester", Capability: "run.cancel"}
}

func reconcilerActor(p Principal, resolution string) runner.Actor {
	capability := "receipt.confirm_external"
	if resolution == "abandon" {
		capability = "receipt.abandon_unknown"
	}
	return runner.Actor{Name: p.Actor, Role: "human_reconciler", Capability: capability}
}

// releaserActor is the caller releasing a parked run: a reconciler for a
// park that summons receipt.confirm_external, an operator for one that
// summons mrp.leave_safe_mode. A caller whose roles do not carry the
// summoned capability acts under the one they do carry, and the runner
// refuses it (ReleaseRefusedError, 403).
func releaserActor(p Principal, summoned string) runner.Actor {
	if summoned == tripwire.SummonReconcile && slices.Contains(p.Roles, RoleReconciler) {
		return runner.Actor{Name: p.Actor, Role: "human_reconciler", Capability: tripwire.SummonReconcile}
	}
	if slices.Contains(p.Roles, RoleOperator) {
		return runner.Actor{Name: p.Actor, Role: "operator", Capability: tripwire.SummonSafeMode}
	}
	return runner.Actor{Name: p.Actor, Role: "human_reconciler", Capability: tripwire.SummonReconcile}
}

func submitterActor(p Principal) runner.Actor {
	if p.isAgentOnly() {
		return runner.Actor{Name: p.Actor, Role: "agent", Capability: "input.propose"}
	}
	return runner.Actor{Name: p.Actor, Role: "authorized_requester", Capability: "input.submit"}
}

// --- reading -----------------------------------------------------------------

func (s *Server) health(w http.ResponseWriter, _ *http.Request, _ Principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyWait bounds a readiness probe's question to the store.
const readyWait = 2 * time.Second

// ready answers a readiness probe: 200 while the server takes work and
// its store answers; 503 once it drains (Drain) or while its store does
// not answer within readyWait, so that a load balancer sends requests
// elsewhere. What it says names no address or credential: the store's
// error code alone.
func (s *Server) ready(w http.ResponseWriter, r *http.Request, _ Principal) error {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyWait)
	defer cancel()
	if err := store.Ping(ctx, s.cfg.Store); err != nil {
		code := store.CodeOf(err)
		if code == "" {
			code = store.CodeUnavailable
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "store": string(code)})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// Drain has readiness probes answer 503 from now on: the server is
// shutting down and takes no new work, though it still answers what it
// is asked while it drains.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ Principal) error {
	promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

func (s *Server) whoami(w http.ResponseWriter, _ *http.Request, p Principal) error {
	out := map[string]any{"actor": p.Actor, "roles": p.Roles}
	if p.scoped() {
		out["workflows"] = p.Workflows
	}
	// The rate the caller is held to, so that an agent can pace itself
	// rather than learn it from 429s.
	if lim := s.rateOf(p); lim != (ratelimit.Limit{}) {
		out["rate"] = map[string]any{"count": lim.Count, "per_seconds": int64(lim.Per / time.Second), "burst": lim.Burst}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// WorkflowView is a workflow as the API lists it.
type WorkflowView struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	out := []WorkflowView{}
	for _, wf := range s.cfg.Catalog.Workflows() {
		if p.sees(wf.ID()) {
			out = append(out, WorkflowView{ID: wf.ID(), Version: wf.Version(), Digest: wf.Digest()})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflows": out})
	return nil
}

// RunView is a run's header as the API shows it.
type RunView struct {
	ID         string    `json:"id"`
	Workflow   string    `json:"workflow"`
	Version    string    `json:"version"`
	State      string    `json:"state"`
	Outcome    string    `json:"outcome,omitempty"`
	Events     int64     `json:"events"`
	HeadHash   string    `json:"head_hash"`
	Quarantine string    `json:"quarantine,omitempty"`
	LeaseOwner string    `json:"lease_owner,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Labels are what the run was started with, omitted when none.
	Labels map[string]string `json:"labels,omitempty"`
}

// ViewRun is a run's header as the API shows it.
func ViewRun(r store.Run) RunView {
	v := RunView{ID: r.ID, Workflow: r.WorkflowID, Version: r.WorkflowVersion, State: r.State, Outcome: r.Outcome, Events: r.Head,
		HeadHash: r.HeadHash, Quarantine: r.Quarantine, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Labels: r.Labels}
	if r.Outcome == "" && r.Lease.Owner != "" {
		v.LeaseOwner = r.Lease.Owner
	}
	return v
}

// Compiled on first use, like reRequestID: the bounded repetition makes a
// large program that commands other than serve would build for nothing.
var reState = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`) })

// Paging bounds for run lists.
const (
	defaultRunPage = 50
	maxRunPage     = 500
	maxRunScan     = 5000 // rows one filtered list request may read
)

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	labels, err := labelParams(q)
	if err != nil {
		return err
	}
	if err := checkQuery(q, "state", "workflow", "after", "limit"); err != nil {
		return err
	}
	state, wf, after := q.Get("state"), q.Get("workflow"), q.Get("after")
	if state != "" && !reState().MatchString(state) {
		return apiErr(http.StatusBadRequest, TypeMalformed, "?state", "state must be a run FSM state such as WAIT_APPROVAL")
	}
	wfID, wfVersion := splitWorkflow(wf)
	if wf != "" && (!cjson.ValidID(wfID) || (wfVersion != "" && !cjson.ValidID(wfVersion))) {
		return apiErr(http.StatusBadRequest, TypeMalformed, "?workflow", "workflow must be ID or ID@VERSION")
	}
	if after != "" && !cjson.ValidID(after) {
		return apiErr(http.StatusBadRequest, TypeMalformed, "?after", "after must be a run id")
	}
	limit, err := intParam(q, "limit", defaultRunPage, 1, maxRunPage)
	if err != nil {
		return err
	}
	out := []RunView{}
	next := ""
	if state == "" && wf == "" && labels == nil && !p.scoped() {
		page, err := s.cfg.Store.Runs(r.Context(), after, int(limit)+1)
		if err != nil {
			return err
		}
		if len(page) > int(limit) {
			page = page[:limit]
			next = page[len(page)-1].ID
		}
		for _, run := range page {
			out = append(out, ViewRun(run))
		}
	} else {
		// A filter scans (store.MatchingRuns, inside the database on
		// flrh's stores): a request reads at most maxRunScan rows and
		// hands back a cursor.
		runs, cursor, err := store.MatchingRuns(r.Context(), s.cfg.Store, after, int(limit), maxRunScan,
			store.RunFilter{State: state, WorkflowID: wfID, WorkflowVersion: wfVersion, WorkflowIDs: p.Workflows, Labels: labels})
		if err != nil {
			return err
		}
		for _, run := range runs {
			out = append(out, ViewRun(run))
		}
		next = cursor
	}
	body := map[string]any{"runs": out}
	if next != "" {
		body["next_after"] = next
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// labelsErr is a 422 naming the label a body's /labels refused, or the
// member itself when the refusal is of the set.
func labelsErr(err error) error {
	field := "/labels"
	if le, ok := err.(*label.Error); ok && le.Key != "" {
		field += "/" + cjson.EscapePointer(le.Key)
	}
	return apiErr(http.StatusUnprocessableEntity, TypeInvalid, field, "%v", err)
}

// labelParams takes the repeatable ?label=KEY=VALUE from q, the labels a
// listed run must bear: nil when none is given.
func labelParams(q url.Values) (map[string]string, error) {
	given := q["label"]
	delete(q, "label")
	labels, err := label.ParseAll(given)
	if err != nil {
		return nil, apiErr(http.StatusBadRequest, TypeMalformed, "?label", "%v (a label to look for is ?label=KEY=VALUE)", err)
	}
	return labels, nil
}

func splitWorkflow(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '@' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// EffectView is one effect of a run: its intent, outbox and receipt.
type EffectView struct {
	IntentID       string       `json:"intent_id"`
	EffectType     string       `json:"effect_type"`
	IdempotencyKey string       `json:"idempotency_key"`
	ContentDigest  string       `json:"content_digest"`
	ApprovalID     string       `json:"approval_id,omitempty"`
	Outbox         string       `json:"outbox"`
	Route          string       `json:"route,omitempty"`
	Attempts       int64        `json:"attempts"`
	Receipt        *ReceiptView `json:"receipt,omitempty"`
}

// ReceiptView is the receipt that closed an effect.
type ReceiptView struct {
	Outcome string `json:"outcome"`
	Digest  string `json:"digest"`
}

// RunPage is everything a run's page shows.
type RunPage struct {
	Run      RunView               `json:"run"`
	Waiting  []runner.ApprovalNeed `json:"waiting"`
	Unknown  []string              `json:"unknown"`
	Open     int                   `json:"open_effects"`
	Accepted int64                 `json:"accepted_inputs"`
	// Inbox counts inputs handed to the run and not yet read: it waits for
	// something else, or it ended before it took them.
	Inbox   int          `json:"inbox_pending"`
	Effects []EffectView `json:"effects"`
	// View is the workflow's own view of the run (MRP state, Journey
	// Strip, options offered with their ranking, approvals pending), when
	// its workflow keeps one.
	View any `json:"view,omitempty"`
	// StatusError says why the run's checkpoint could not be read (its
	// workflow is not loaded here, for one); the header is still shown.
	StatusError string `json:"status_error,omitempty"`
	// Pruned is set when the store pruned the run (store.Pruner): it keeps
	// the header alone, and the lists are empty.
	Pruned *PrunedView `json:"pruned,omitempty"`
}

// PrunedView is what the store recorded of a run's pruning.
type PrunedView struct {
	At       time.Time `json:"at"`
	HeadHash string    `json:"head_hash"`
	Archive  string    `json:"archive"` // the archive's digest; "" when the record was discarded
}

func (s *Server) runPage(r *http.Request, id string) (RunPage, error) {
	ctx := r.Context()
	st, err := s.cfg.Runner.Inspect(ctx, id)
	if err != nil && st.Run.ID == "" {
		return RunPage{}, err
	}
	page := RunPage{Run: ViewRun(st.Run), Waiting: st.Waiting, Unknown: st.Unknown, Open: st.Open, Accepted: st.Accepted, Effects: []EffectView{},
		View: st.View}
	if err != nil {
		page.StatusError = err.Error()
	}
	// A pruned run (ended, its record gone) says so, instead of why its
	// checkpoint could not be read.
	switch p, err := store.PruningOf(ctx, s.cfg.Store, st.Run); {
	case err != nil:
		return RunPage{}, err
	case p != nil:
		page.Pruned, page.StatusError = &PrunedView{At: p.At.UTC(), HeadHash: p.HeadHash, Archive: p.Archive}, ""
	}
	if page.Waiting == nil {
		page.Waiting = []runner.ApprovalNeed{}
	}
	if page.Unknown == nil {
		page.Unknown = []string{}
	}
	pending, err := s.cfg.Store.Inbox(ctx, id, true)
	if err != nil {
		return RunPage{}, err
	}
	page.Inbox = len(pending)
	ins, err := s.cfg.Store.Intents(ctx, id)
	if err != nil {
		return RunPage{}, err
	}
	// Receipts are read only when an effect is closed: a run still waiting
	// has none, and the store's receipts-by-run read is not cheap.
	receipts := map[string]store.Receipt{}
	if slices.ContainsFunc(ins, func(in store.Intent) bool { return in.Outbox == store.OutboxDone }) {
		rcs, err := s.cfg.Store.Receipts(ctx, id)
		if err != nil {
			return RunPage{}, err
		}
		for _, rc := range rcs {
			receipts[rc.IntentID] = rc
		}
	}
	for _, in := range ins {
		e := EffectView{IntentID: in.ID, EffectType: in.EffectType, IdempotencyKey: in.IdempotencyKey, ContentDigest: in.ContentDigest,
			ApprovalID: in.ApprovalID, Outbox: string(in.Outbox), Route: in.Route, Attempts: in.Attempts}
		if rc, ok := receipts[in.ID]; ok {
			e.Receipt = &ReceiptView{Outcome: rc.Outcome, Digest: rc.Digest}
		}
		page.Effects = append(page.Effects, e)
	}
	return page, nil
}

func (s *Server) showRun(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r)
	if err != nil {
		return err
	}
	page, err := s.runPage(r, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// EventView is one event of a run's log, its body as stored.
type EventView struct {
	Seq        int64           `json:"seq"`
	Kind       string          `json:"kind"`
	Digest     string          `json:"digest"`
	PrevHash   string          `json:"prev_hash"`
	ChainHash  string          `json:"chain_hash"`
	Generation int64           `json:"generation"`
	RecordedAt time.Time       `json:"recorded_at"`
	Body       json.RawMessage `json:"body"`
}

func eventView(e store.Event) EventView {
	return EventView{Seq: e.Seq, Kind: e.Kind, Digest: e.Digest, PrevHash: e.PrevHash, ChainHash: e.ChainHash,
		Generation: e.Generation, RecordedAt: e.RecordedAt.UTC(), Body: rawJSON(e.Body)}
}

// rawJSON passes stored canonical JSON through; anything else becomes a
// JSON string so the answer stays valid JSON.
func rawJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}

const maxEventPage = 1000

func (s *Server) events(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r, "after", "limit")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	after, err := intParam(q, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", maxEventPage, 1, maxEventPage)
	if err != nil {
		return err
	}
	run, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		return err
	}
	evs, err := s.cfg.Store.Events(r.Context(), id, after)
	if err != nil {
		return err
	}
	if len(evs) == 0 && after < run.Head {
		if err := s.refusePruned(r.Context(), run); err != nil {
			return err
		}
	}
	body := map[string]any{}
	if len(evs) > int(limit) {
		evs = evs[:limit]
		body["next_after"] = evs[len(evs)-1].Seq
	}
	out := make([]EventView, 0, len(evs))
	for _, e := range evs {
		out = append(out, eventView(e))
	}
	body["events"] = out
	writeJSON(w, http.StatusOK, body)
	return nil
}

// refusePruned answers 410 for a run the store pruned: what it is asked
// for is in the run's archive, not here.
func (s *Server) refusePruned(ctx context.Context, run store.Run) error {
	p, err := store.PruningOf(ctx, s.cfg.Store, run)
	switch {
	case err != nil || p == nil:
		return err
	case p.Archive == "":
		return apiErr(http.StatusGone, TypeGone, "", "run %s was pruned at %s and its record discarded", run.ID, p.At.UTC().Format(time.RFC3339))
	}
	return apiErr(http.StatusGone, TypeGone, "", "run %s was pruned at %s; its record is in the archive whose digest is %s", run.ID, p.At.UTC().Format(time.RFC3339), p.Archive)
}

func (s *Server) trace(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r)
	if err != nil {
		return err
	}
	if run, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		return err
	} else if err := s.refusePruned(r.Context(), run); err != nil {
		return err
	}
	tr, err := s.cfg.Store.Trace(r.Context(), id)
	if err != nil {
		return err
	}
	type rec struct {
		Kind string          `json:"kind"`
		Body json.RawMessage `json:"body"`
	}
	out := make([]rec, 0, len(tr))
	for _, t := range tr {
		out = append(out, rec{t.Kind, rawJSON(t.Body)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"trace": out})
	return nil
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r)
	if err != nil {
		return err
	}
	if _, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		return err
	}
	rep, err := verify.Run(r.Context(), s.cfg.Store, s.cfg.Machine, id)
	if err != nil {
		return err
	}
	if rep.Findings == nil {
		rep.Findings = []verify.Finding{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": rep.OK(), "report": rep})
	return nil
}

// runWorkflow reads a run and the workflow it runs: the store's error for
// a run it does not hold, 409 when the workflow is not loaded here.
func (s *Server) runWorkflow(ctx context.Context, id string) (store.Run, runner.Workflow, error) {
	run, err := s.cfg.Store.Run(ctx, id)
	if err != nil {
		return run, nil, err
	}
	wf, werr := s.workflow(run.WorkflowID, run.WorkflowVersion) // a *Error: nil is not an error's nil
	if werr != nil {
		return run, nil, apiErr(http.StatusConflict, TypeConflict, "", "run %s needs workflow %s@%s, which is not loaded", id, run.WorkflowID, run.WorkflowVersion)
	}
	return run, wf, nil
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r)
	if err != nil {
		return err
	}
	_, wf, err := s.runWorkflow(r.Context(), id)
	if err != nil {
		return err
	}
	rep, err := verify.Replay(r.Context(), s.cfg.Store, wf, id)
	if err != nil {
		return err
	}
	if rep.Findings == nil {
		rep.Findings = []verify.Finding{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": rep.OK(), "report": rep})
	return nil
}

// --- acting ------------------------------------------------------------------

// StartRun is the body of POST /v1/runs (schema/start_run.json).
type StartRun struct {
	Workflow string          `json:"workflow"`
	Version  string          `json:"version,omitempty"`
	RunID    string          `json:"run_id,omitempty"`
	Input    json.RawMessage `json:"input"`
	Usage    *runner.Usage   `json:"usage,omitempty"`
	// Labels name what the run is for; keys beginning "flrh." are
	// flrh's own.
	Labels map[string]string `json:"labels,omitempty"`
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req StartRun
	if err := s.decode(w, r, "start_run", &req); err != nil {
		return err
	}
	if werr := s.seesWorkflow(p, req.Workflow, req.Version); werr != nil {
		return werr
	}
	if err := label.CheckGiven(req.Labels); err != nil {
		return labelsErr(err)
	}
	wf, werr := s.workflow(req.Workflow, req.Version)
	if werr != nil {
		return werr
	}
	id := req.RunID
	if id == "" {
		id = s.cfg.NewRunID()
	}
	var u runner.Usage
	if req.Usage != nil {
		u = *req.Usage
	}
	if err := s.cfg.Runner.StartRun(r.Context(), runner.StartRequest{RunID: id, WorkflowID: wf.ID(), Version: wf.Version(), Input: req.Input,
		Usage: u, By: starterActor(p), Labels: req.Labels}); err != nil {
		if store.CodeOf(err) == store.CodeExists {
			return apiErr(http.StatusConflict, TypeConflict, "/run_id", "run %s already exists", id)
		}
		return err
	}
	s.log.Info("run started", "request_id", requestID(r), "run_id", id, "workflow", wf.ID()+"@"+wf.Version(), "actor", p.Actor)
	run, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/runs/"+url.PathEscape(id))
	writeJSON(w, http.StatusCreated, map[string]any{"run": ViewRun(run)})
	return nil
}

// SubmitInput is the body of POST /v1/runs/{id}/inputs: the input and,
// optionally, its submitter's usage report.
type SubmitInput struct {
	Input json.RawMessage `json:"input"`
	Usage *runner.Usage   `json:"usage,omitempty"`
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[SubmitInput](s, w, r, "submit_input")
	if err != nil {
		return err
	}
	var u runner.Usage
	if req.Usage != nil {
		u = *req.Usage
	}
	if err := s.cfg.Runner.SubmitWithUsage(r.Context(), id, req.Input, u, submitterActor(p)); err != nil {
		return err
	}
	return accepted(w, id, "input")
}

// Approve is the body of POST /v1/runs/{id}/approve.
type Approve struct {
	RequestID     string `json:"request_id"`
	RequestDigest string `json:"request_digest"`
	TTLSeconds    int64  `json:"ttl_seconds,omitempty"`
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[Approve](s, w, r, "approve")
	if err != nil {
		return err
	}
	// The approver approves what they were shown: the digest they send must
	// be the one the run waits on now.
	st, err := s.cfg.Runner.Inspect(r.Context(), id)
	if err != nil {
		return err
	}
	if st.Run.Outcome != "" {
		return &runner.EndedError{RunID: id, Outcome: st.Run.Outcome}
	}
	var need *runner.ApprovalNeed
	for i := range st.Waiting {
		if st.Waiting[i].RequestID == req.RequestID {
			need = &st.Waiting[i]
		}
	}
	if need == nil {
		return apiErr(http.StatusConflict, TypeConflict, "/request_id", "run %s is not waiting for approval %s", id, req.RequestID)
	}
	if need.RequestDigest != req.RequestDigest {
		return apiErr(http.StatusConflict, TypeConflict, "/request_digest", "approval %s now binds %s, not the digest given", req.RequestID, need.RequestDigest)
	}
	ttl := s.cfg.ApprovalTTL
	if req.TTLSeconds > 0 {
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	if err := s.cfg.Runner.Approve(r.Context(), id, req.RequestID, approverActor(p), ttl); err != nil {
		return err
	}
	s.log.Info("approval granted", "request_id", requestID(r), "run_id", id, "approval", req.RequestID, "binds", req.RequestDigest, "actor", p.Actor)
	return accepted(w, id, "approve")
}

// Deny is the body of POST /v1/runs/{id}/deny.
type Deny struct {
	RequestID string `json:"request_id"`
	Reason    string `json:"reason,omitempty"`
}

func (s *Server) deny(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[Deny](s, w, r, "deny")
	if err != nil {
		return err
	}
	reason := cmp.Or(req.Reason, "denied by "+p.Actor)
	if err := s.cfg.Runner.Deny(r.Context(), id, req.RequestID, reason, denierActor(p)); err != nil {
		return err
	}
	s.log.Info("approval denied", "request_id", requestID(r), "run_id", id, "approval", req.RequestID, "actor", p.Actor)
	return accepted(w, id, "deny")
}

// Cancel is the body of POST /v1/runs/{id}/cancel.
type Cancel struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[Cancel](s, w, r, "cancel")
	if err != nil {
		return err
	}
	reason := cmp.Or(req.Reason, "cancelled by "+p.Actor)
	if _, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		return err
	}
	if err := s.cfg.Runner.Cancel(r.Context(), id, reason, cancellerActor(p)); err != nil {
		return err
	}
	return accepted(w, id, "cancel")
}

// Reconcile is the body of POST /v1/runs/{id}/reconcile.
type Reconcile struct {
	IntentID   string `json:"intent_id"`
	Resolution string `json:"resolution"`
}

func (s *Server) reconcile(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[Reconcile](s, w, r, "reconcile")
	if err != nil {
		return err
	}
	if err := s.cfg.Runner.Reconcile(r.Context(), id, req.IntentID, req.Resolution, reconcilerActor(p, req.Resolution)); err != nil {
		return err
	}
	s.log.Info("effect reconciled", "request_id", requestID(r), "run_id", id, "intent", req.IntentID, "resolution", req.Resolution, "actor", p.Actor)
	return accepted(w, id, "reconcile")
}

// Release is the body of POST /v1/runs/{id}/release.
type Release struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) release(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, req, err := runBody[Release](s, w, r, "release")
	if err != nil {
		return err
	}
	reason := cmp.Or(req.Reason, "released by "+p.Actor)
	summoned, err := s.cfg.Runner.Summoned(r.Context(), id)
	if err != nil {
		return err
	}
	if err := s.cfg.Runner.Release(r.Context(), id, reason, releaserActor(p, summoned)); err != nil {
		return err
	}
	s.cfg.Runner.Wake()
	return accepted(w, id, "release")
}

// accepted answers an act the run will take up on its next tick.
func accepted(w http.ResponseWriter, runID, act string) error {
	writeJSON(w, http.StatusAccepted, map[string]string{"run_id": runID, "accepted": act})
	return nil
}

// --- helpers -----------------------------------------------------------------

func (s *Server) decode(w http.ResponseWriter, r *http.Request, schema string, dst any) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	body, aerr := readBody(w, r, s.cfg.MaxBody)
	if aerr != nil {
		return aerr
	}
	return decodeStrict(body, schema, dst)
}

func runID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !cjson.ValidID(id) {
		return "", apiErr(http.StatusBadRequest, TypeMalformed, "{id}", "%q is not a valid run id", id)
	}
	return id, nil
}

// runBody reads a request's run id from its path and its JSON body
// (named name in errors) into a T, refusing either as runID and decode
// do.
func runBody[T any](s *Server, w http.ResponseWriter, r *http.Request, name string) (string, T, error) {
	var req T
	id, err := runID(r)
	if err == nil {
		err = s.decode(w, r, name, &req)
	}
	return id, req, err
}

// runQuery reads a request's run id from its path and refuses query
// parameters other than known (checkQuery).
func runQuery(r *http.Request, known ...string) (string, error) {
	id, err := runID(r)
	if err == nil {
		err = checkQuery(r.URL.Query(), known...)
	}
	return id, err
}

// checkQuery refuses query parameters the endpoint does not know, and
// repeated ones.
func checkQuery(q url.Values, known ...string) error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad parameter by name, not map order
	for _, k := range keys {
		vs := q[k]
		ok := false
		for _, n := range known {
			ok = ok || n == k
		}
		if !ok {
			return apiErr(http.StatusBadRequest, TypeMalformed, "?"+k, "unknown query parameter %q", k)
		}
		if len(vs) > 1 {
			return apiErr(http.StatusBadRequest, TypeMalformed, "?"+k, "query parameter %q given more than once", k)
		}
	}
	return nil
}

func intParam(q url.Values, name string, def, lo, hi int64) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, apiErr(http.StatusBadRequest, TypeMalformed, "?"+name, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

func requestID(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey).(string)
	return id
}
