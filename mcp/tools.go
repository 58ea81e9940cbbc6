package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// MaxInputBytes bounds the input an agent may hand a run in one call.
const MaxInputBytes = 1 << 20

// MaxListRuns bounds one page of list_runs.
const MaxListRuns = 500

type tools struct {
	d     Deps
	agent runner.Actor
}

func ptr[T any](v T) *T { return &v }

// readOnly annotates a tool that changes nothing. The hints whose protocol
// default is true are set explicitly, though the protocol says they do not
// matter for a read-only tool, so that no client has to apply a default.
func readOnly(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}
}

// proposes annotates a tool that adds to the run store: a new run or a new
// input. It overwrites and deletes nothing (not destructive); calling it
// twice adds twice (not idempotent); and what it starts may, once policy or
// a person allows it, reach destinations outside flrh (open world).
func proposes(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(true)}
}

func (t *tools) register(s *sdk.Server) {
	sdk.AddTool(s, &sdk.Tool{Name: "list_workflows", Annotations: readOnly("List workflows"),
		Description: "List the workflows a run can be started with: id, version and the digest that binds their exact definition."},
		guarded(t.listWorkflows))
	sdk.AddTool(s, &sdk.Tool{Name: "list_runs", Annotations: readOnly("List runs"),
		Description: "List runs in creation order, optionally only those in one state or bearing given labels. Page with `after` (the `next` of the previous page)."},
		guarded(t.listRuns))
	sdk.AddTool(s, &sdk.Tool{Name: "get_run", Annotations: readOnly("Show a run"),
		Description: "Show a run: its control state and outcome, what it waits for (and from whom), its effects with every attempt, and its receipts."},
		guarded(t.getRun))
	sdk.AddTool(s, &sdk.Tool{Name: "get_journey", Annotations: readOnly("Show a run's journey"),
		Description: "Show a run's control path (every control transition, refused event and accepted input, in order) and its FHR / journey trace records."},
		guarded(t.getJourney))
	sdk.AddTool(s, &sdk.Tool{Name: "start_run", Annotations: proposes("Start a run"),
		Description: "Start a run of a workflow with an input (a JSON object) and wait briefly for it to settle. " +
			"The run is governed: effects within policy proceed, larger ones wait in WAIT_APPROVAL for a person; this tool cannot approve them."},
		guarded(t.startRun))
	sdk.AddTool(s, &sdk.Tool{Name: "submit_input", Annotations: proposes("Submit an input to a run"),
		Description: "Hand a run a new domain input (an observation or a proposal, as a JSON object), optionally with a usage report (the tokens and cost it took). " +
			"It is recorded as the agent's input and is never taken as an approval, denial, reconciliation or cancellation."},
		guarded(t.submitInput))
}

// guarded turns a panic in a tool into a tool error, so that a bug in one
// call (or in what it reads) cannot take the server, and every other
// session on it, down.
func guarded[In, Out any](h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (res *sdk.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				var zero Out
				res, out, err = nil, zero, fmt.Errorf("internal error in %s: %v", req.Params.Name, p)
			}
		}()
		return h(ctx, req, in)
	}
}

// Inputs. Every struct's schema forbids unknown properties; fields without
// omitempty are required.

type listWorkflowsIn struct{}

type listRunsIn struct {
	After  string            `json:"after,omitempty" jsonschema:"return runs created after this run id (the next of the previous page)"`
	Limit  int               `json:"limit,omitempty" jsonschema:"at most this many runs (default 50, at most 500)"`
	State  string            `json:"state,omitempty" jsonschema:"only runs in this control state, e.g. WAIT_APPROVAL or SUCCEEDED"`
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only runs bearing every one of these labels, value for value (e.g. {\"order\": \"A-1042\"})"`
}

type runIn struct {
	RunID string `json:"run_id" jsonschema:"the run's id"`
}

type journeyIn struct {
	RunID string `json:"run_id" jsonschema:"the run's id"`
	All   bool   `json:"all_trace,omitempty" jsonschema:"include every trace record, not only FHR and journey records"`
}

type startIn struct {
	Workflow    string            `json:"workflow" jsonschema:"the workflow id, optionally with @version (e.g. refund-agent@1)"`
	Version     string            `json:"version,omitempty" jsonschema:"the workflow version (default 1, or the one after @)"`
	RunID       string            `json:"run_id,omitempty" jsonschema:"the new run's id (default: a fresh random id)"`
	Input       map[string]any    `json:"input" jsonschema:"the run's input, a JSON object the workflow understands (integers only, no fractions)"`
	Usage       *usageIn          `json:"usage,omitempty" jsonschema:"what producing the input cost you, charged against the run's tokens and cost budgets when it is accepted"`
	WaitSeconds *int              `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the run to settle (default 10, at most 30; 0 returns at once)"`
	Labels      map[string]string `json:"labels,omitempty" jsonschema:"labels naming what the run is for (an order, a ticket), by which list_runs finds it again: at most 16, keys of a-z 0-9 . _ / - (not beginning flrh.), values 1 to 256 bytes in Unicode NFC"`
}

type submitIn struct {
	RunID       string         `json:"run_id" jsonschema:"the run's id"`
	Input       map[string]any `json:"input" jsonschema:"the input, a JSON object the workflow understands (integers only, no fractions)"`
	Usage       *usageIn       `json:"usage,omitempty" jsonschema:"what producing the input cost you, charged against the run's tokens and cost budgets when it is accepted; an input whose report does not fit what is left is refused and the run ends BUDGET_EXHAUSTED"`
	WaitSeconds *int           `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the run to settle (default 10, at most 30; 0 returns at once)"`
}

// usageIn is a usage report as an agent declares it.
type usageIn struct {
	Tokens     int64 `json:"tokens,omitempty" jsonschema:"model tokens consumed (0 to 2^52)"`
	CostMicros int64 `json:"cost_micros,omitempty" jsonschema:"cost in micro-units of the workflow's currency (0 to 2^52)"`
}

func (u *usageIn) usage() runner.Usage {
	if u == nil {
		return runner.Usage{}
	}
	return runner.Usage{Tokens: u.Tokens, CostMicros: u.CostMicros}
}

func (t *tools) listWorkflows(_ context.Context, _ *sdk.CallToolRequest, _ listWorkflowsIn) (*sdk.CallToolResult, WorkflowList, error) {
	out := WorkflowList{Workflows: []WorkflowInfo{}}
	for _, wf := range t.d.Catalog.Workflows() {
		if t.sees(wf.ID()) {
			out.Workflows = append(out.Workflows, WorkflowInfo{ID: wf.ID(), Version: wf.Version(), Digest: wf.Digest()})
		}
	}
	return nil, out, nil
}

func (t *tools) listRuns(ctx context.Context, _ *sdk.CallToolRequest, in listRunsIn) (*sdk.CallToolResult, RunList, error) {
	limit := in.Limit
	switch {
	case limit < 0 || limit > MaxListRuns:
		return nil, RunList{}, fmt.Errorf("limit must be between 1 and %d, not %d", MaxListRuns, limit)
	case limit == 0:
		limit = 50
	}
	// Filtered inside the database on flrh's stores, a bounded number of
	// runs read, so that one call cannot walk an unbounded store; next
	// says where to go on.
	if err := label.Check(in.Labels); err != nil {
		return nil, RunList{}, fmt.Errorf("labels: %w", err)
	}
	runs, next, err := store.MatchingRuns(ctx, t.d.Store, in.After, limit, 20*MaxListRuns, store.RunFilter{State: in.State, WorkflowIDs: t.d.Workflows, Labels: in.Labels})
	if err != nil {
		return nil, RunList{}, explain(err, "")
	}
	out := RunList{Runs: []RunHeader{}, Next: next}
	for _, r := range runs {
		out.Runs = append(out.Runs, header(r))
	}
	return nil, out, nil
}

func (t *tools) getRun(ctx context.Context, _ *sdk.CallToolRequest, in runIn) (*sdk.CallToolResult, RunDetail, error) {
	if err := t.seesRun(ctx, in.RunID); err != nil {
		return nil, RunDetail{}, err
	}
	st, err := t.d.Runner.Inspect(ctx, in.RunID)
	note := ""
	if err != nil {
		if st.Run.ID == "" {
			return nil, RunDetail{}, explain(err, in.RunID)
		}
		// The header was read but not the checkpoint (a workflow this
		// server does not load, say): show what there is, and say so.
		note = "what the run waits for cannot be read here: " + err.Error()
	}
	det := RunDetail{Run: view(st), Effects: []Effect{}, Receipts: []Receipt{}, Note: note}
	intents, err := t.d.Store.Intents(ctx, in.RunID)
	if err != nil {
		return nil, RunDetail{}, explain(err, in.RunID)
	}
	for _, it := range intents {
		e := Effect{IntentID: it.ID, EffectType: it.EffectType, IdempotencyKey: it.IdempotencyKey, ContentDigest: it.ContentDigest,
			ApprovalID: it.ApprovalID, Outbox: string(it.Outbox), Route: it.Route, Digest: it.Digest, Intent: decoded(it.Body), Attempts: []Attempt{}}
		atts, err := t.d.Store.Attempts(ctx, it.ID)
		if err != nil {
			return nil, RunDetail{}, explain(err, in.RunID)
		}
		for _, a := range atts {
			e.Attempts = append(e.Attempts, Attempt{N: a.N, Status: string(a.Status), Detail: a.Detail, StartedAt: stamp(a.StartedAt), FinishedAt: stamp(a.FinishedAt)})
		}
		det.Effects = append(det.Effects, e)
	}
	rcs, err := t.d.Store.Receipts(ctx, in.RunID)
	if err != nil {
		return nil, RunDetail{}, explain(err, in.RunID)
	}
	for _, rc := range rcs {
		det.Receipts = append(det.Receipts, Receipt{IntentID: rc.IntentID, Outcome: rc.Outcome, Digest: rc.Digest, Receipt: decoded(rc.Body)})
	}
	return nil, det, nil
}

func (t *tools) getJourney(ctx context.Context, _ *sdk.CallToolRequest, in journeyIn) (*sdk.CallToolResult, Journey, error) {
	run, err := t.d.Store.Run(ctx, in.RunID)
	if err == nil && !t.sees(run.WorkflowID) {
		err = unseen(in.RunID)
	}
	if err != nil {
		return nil, Journey{}, explain(err, in.RunID)
	}
	evs, err := t.d.Store.Events(ctx, in.RunID, 0)
	if err != nil {
		return nil, Journey{}, explain(err, in.RunID)
	}
	trace, err := t.d.Store.Trace(ctx, in.RunID)
	if err != nil {
		return nil, Journey{}, explain(err, in.RunID)
	}
	j, err := journey(run, evs, trace, in.All)
	if err != nil {
		return nil, Journey{}, err
	}
	return nil, j, nil
}

func (t *tools) startRun(ctx context.Context, req *sdk.CallToolRequest, in startIn) (*sdk.CallToolResult, Progress, error) {
	wait, err := t.wait(in.WaitSeconds)
	if err != nil {
		return nil, Progress{}, err
	}
	id, version, _ := strings.Cut(in.Workflow, "@")
	if in.Version != "" {
		if version != "" && version != in.Version {
			return nil, Progress{}, fmt.Errorf("workflow %q names version %s but version is %q", in.Workflow, version, in.Version)
		}
		version = in.Version
	}
	if version == "" {
		version = "1"
	}
	if !t.offers(id, version) || !t.sees(id) {
		return nil, Progress{}, fmt.Errorf("no workflow %s@%s; list_workflows shows what can be started", id, version)
	}
	body, err := rawInput(req.Params.Arguments)
	if err != nil {
		return nil, Progress{}, err
	}
	if err := label.CheckGiven(in.Labels); err != nil {
		return nil, Progress{}, fmt.Errorf("labels: %w", err)
	}
	runID := in.RunID
	if runID == "" {
		runID = t.d.NewRunID()
	}
	if !cjson.ValidID(runID) {
		return nil, Progress{}, fmt.Errorf("run_id %q is not a valid id (letters, digits and . _ : - only)", runID)
	}
	if err := t.d.Runner.StartRun(ctx, runner.StartRequest{RunID: runID, WorkflowID: id, Version: version, Input: body, Usage: in.Usage.usage(),
		By: t.agent, Labels: in.Labels}); err != nil {
		return nil, Progress{}, explain(err, runID)
	}
	return t.progress(ctx, runID, wait)
}

func (t *tools) submitInput(ctx context.Context, req *sdk.CallToolRequest, in submitIn) (*sdk.CallToolResult, Progress, error) {
	wait, err := t.wait(in.WaitSeconds)
	if err != nil {
		return nil, Progress{}, err
	}
	body, err := rawInput(req.Params.Arguments)
	if err != nil {
		return nil, Progress{}, err
	}
	run, err := t.d.Store.Run(ctx, in.RunID)
	if err == nil && !t.sees(run.WorkflowID) {
		err = unseen(in.RunID)
	}
	if err != nil {
		return nil, Progress{}, explain(err, in.RunID)
	}
	if run.Outcome != "" {
		return nil, Progress{}, fmt.Errorf("run %s has ended (%s, outcome %s) and takes no more input", run.ID, run.State, run.Outcome)
	}
	if !t.offers(run.WorkflowID, run.WorkflowVersion) {
		return nil, Progress{}, fmt.Errorf("run %s is a run of %s@%s, which this server does not offer", run.ID, run.WorkflowID, run.WorkflowVersion)
	}
	// Always the agent's own identity and the input kind: the body cannot
	// choose either.
	if err := t.d.Runner.SubmitWithUsage(ctx, in.RunID, body, in.Usage.usage(), t.agent); err != nil {
		return nil, Progress{}, explain(err, in.RunID)
	}
	return t.progress(ctx, in.RunID, wait)
}

// sees reports whether the agent may see the runs of workflow wf
// (Deps.Workflows).
func (t *tools) sees(wf string) bool {
	return t.d.Workflows == nil || slices.Contains(t.d.Workflows, wf)
}

// seesRun answers a run of a workflow the agent may not see as one that
// does not exist; nil when it may see it, or there is no such run (whose
// reading says so).
func (t *tools) seesRun(ctx context.Context, id string) error {
	if t.d.Workflows == nil {
		return nil
	}
	run, err := t.d.Store.Run(ctx, id)
	if err == nil && !t.sees(run.WorkflowID) {
		err = unseen(id)
	}
	if store.CodeOf(err) == store.CodeNotFound {
		return explain(err, id)
	}
	return err
}

// unseen is a run the agent may not see, as the store says of one that
// does not exist.
func unseen(id string) error {
	return store.Errorf(store.CodeNotFound, "read run", id, nil, "no run %q", id)
}

func (t *tools) offers(id, version string) bool {
	for _, wf := range t.d.Catalog.Workflows() {
		if wf.ID() == id && wf.Version() == version {
			return true
		}
	}
	return false
}

func (t *tools) wait(seconds *int) (time.Duration, error) {
	if seconds == nil {
		return t.d.DefaultWait, nil
	}
	limit := int(t.d.MaxWait / time.Second)
	if *seconds < 0 || *seconds > limit {
		return 0, fmt.Errorf("wait_seconds must be between 0 and %d, not %d", limit, *seconds)
	}
	return time.Duration(*seconds) * time.Second, nil
}

// progress waits up to wait for the run to settle (end, wait for a person,
// or stop moving with its inbox drained) and reports where it stands.
func (t *tools) progress(ctx context.Context, runID string, wait time.Duration) (*sdk.CallToolResult, Progress, error) {
	deadline := time.Now().Add(wait)
	lastHead, still := int64(-1), 0
	for {
		st, err := t.d.Runner.Inspect(ctx, runID)
		if err != nil {
			return nil, Progress{}, explain(err, runID)
		}
		pending, err := t.d.Store.Inbox(ctx, runID, true)
		if err != nil {
			return nil, Progress{}, explain(err, runID)
		}
		settled := st.Run.Outcome != "" || st.Run.Quarantine != "" || len(st.Waiting) > 0 || len(st.Unknown) > 0
		if !settled && st.Open == 0 {
			if len(pending) == 0 && st.Run.Head == lastHead {
				still++
			} else {
				still = 0
			}
			settled = still >= 2
		}
		lastHead = st.Run.Head
		if settled || !time.Now().Before(deadline) {
			p := Progress{Run: view(st), Settled: settled, Pending: len(pending)}
			switch {
			case !settled:
				p.Note = "the run is still moving; read it again with get_run"
			case len(pending) > 0 && st.Run.Outcome == "":
				p.Note = "the run has not read every input yet: it reads them once a person has acted on what it waits for"
			}
			return nil, p, nil
		}
		select {
		case <-ctx.Done():
			return nil, Progress{}, ctx.Err()
		case <-time.After(t.d.Poll):
		}
	}
}

// rawInput takes the input argument exactly as the agent sent it, not as
// the SDK re-encoded it after validation (which passes numbers through
// float64), and canonicalizes it.
func rawInput(args json.RawMessage) ([]byte, error) {
	var a struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	if len(a.Input) > MaxInputBytes {
		return nil, fmt.Errorf("input is %d bytes; at most %d are accepted", len(a.Input), MaxInputBytes)
	}
	body, err := cjson.Canonicalize(a.Input)
	if err != nil {
		return nil, fmt.Errorf("input: %v", err)
	}
	return body, nil
}

// explain turns store and runner failures into messages an agent can act on.
func explain(err error, runID string) error {
	switch store.CodeOf(err) {
	case store.CodeNotFound:
		if runID != "" {
			return fmt.Errorf("no run %q; list_runs shows the runs there are", runID)
		}
	case store.CodeExists:
		return fmt.Errorf("a run %q already exists; choose another run_id or leave it out", runID)
	}
	return err
}
