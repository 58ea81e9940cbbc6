package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/server"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
	"flrh.dev/flrh/workflow"
)

// runCmd groups the commands that start, advance and inspect runs.
var runCmd = &cobra.Command{Use: "run", Short: "Start, advance and inspect runs"}

func init() {

	list := &cobra.Command{Use: "list", Short: "List runs with their state and outcome", Args: cobra.NoArgs}
	lStore := addStoreFlag(list)
	lJSON := list.Flags().Bool("json", false, "print JSON")
	lAfter := list.Flags().String("after", "", "start after this run id (paging)")
	lLimit := list.Flags().Int("limit", 100, "at most this many runs")
	lState := list.Flags().String("state", "", "only runs in this run-FSM state (e.g. WAIT_APPROVAL, SUCCEEDED)")
	lWorkflow := list.Flags().String("workflow", "", "only runs of this workflow (ID or ID@VERSION)")
	lLabels := list.Flags().StringArray("label", nil, "only runs bearing this label, KEY=VALUE (repeatable: every one)")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		if *lLimit < 1 {
			return usagef("--limit must be at least 1, not %d", *lLimit)
		}
		labels, err := label.ParseAll(*lLabels)
		if err != nil {
			return usagef("--label: %v", err)
		}
		if *lState != "" && !slices.ContainsFunc(control.Default().States(), func(s control.State) bool { return s.ID == *lState }) {
			var ids []string
			for _, s := range control.Default().States() {
				ids = append(ids, s.ID)
			}
			return usagef("--state %q is not a run-FSM state (%s)", *lState, strings.Join(ids, ", "))
		}
		wfID, wfVersion, _ := strings.Cut(*lWorkflow, "@")
		if *lWorkflow != "" && (!cjson.ValidID(wfID) || strings.Contains(*lWorkflow, "@") && !cjson.ValidID(wfVersion)) {
			return usagef("--workflow %q is not ID or ID@VERSION", *lWorkflow)
		}
		st, err := openStore(cmd.Context(), *lStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		runs, _, err := store.MatchingRuns(cmd.Context(), st, *lAfter, *lLimit, 0,
			store.RunFilter{State: *lState, WorkflowID: wfID, WorkflowVersion: wfVersion, Labels: labels})
		if err != nil {
			return err
		}
		if *lJSON {
			views := []server.RunView{}
			for _, r := range runs {
				views = append(views, server.ViewRun(r))
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(views)
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "RUN\tWORKFLOW\tSTATE\tOUTCOME\tEVENTS\tQUARANTINE\tLABELS")
		for _, r := range runs {
			fmt.Fprintf(w, "%s\t%s@%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.WorkflowID, r.WorkflowVersion, r.State, r.Outcome, r.Head, r.Quarantine, label.String(r.Labels))
		}
		return w.Flush()
	}

	show := &cobra.Command{Use: "show RUN", Short: "Show a run: state, what it waits for, effects and receipts", Args: cobra.ExactArgs(1)}
	sStore := addStoreFlag(show)
	sWorkflows := addWorkflowsFlag(show)
	sJSON := show.Flags().Bool("json", false, "print the run as one JSON object")
	show.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *sStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		run, err := readRun(cmd.Context(), st, args[0])
		if err != nil {
			return err
		}
		v := runShow{Run: server.ViewRun(run),
			Generation: run.Lease.Generation, Waiting: []runner.ApprovalNeed{}, Offers: []workflow.Offer{}, Unknown: []string{},
			Effects: []showEffect{}, Receipts: []showReceipt{}}
		var status runner.Status
		if v.Pruned, err = pruningOf(cmd.Context(), st, run); err != nil {
			return err
		}
		wf, ok, err := workflowFor(cmd.Context(), st, run, *sWorkflows)
		switch {
		case v.Pruned != nil:
			// Its record is elsewhere: there is nothing here to inspect.
		case err != nil:
			return err
		case !ok:
			v.Unread = fmt.Sprintf("workflow %s@%s in the definition this run was started with is not loaded (give the same --workflows)", run.WorkflowID, run.WorkflowVersion)
		default:
			r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: nil})
			if err == nil {
				status, err = r.Inspect(cmd.Context(), run.ID)
			}
			if err != nil {
				v.Unread = err.Error()
				break
			}
			v.Budget = status.Budget
			if run.Outcome == "" {
				v.Waiting, v.Unknown = append(v.Waiting, status.Waiting...), append(v.Unknown, status.Unknown...)
				if view, ok := status.View.(workflow.View); ok {
					v.Offers = append(v.Offers, view.Offers...)
					v.Held = append(v.Held, view.Held...)
				}
			}
			if view, ok := status.View.(workflow.View); ok {
				v.MRPState = view.MRPState
			}
		}
		pending, err := st.Inbox(cmd.Context(), run.ID, true)
		if err != nil {
			return err
		}
		v.Inbox = len(pending)
		ins, err := st.Intents(cmd.Context(), run.ID)
		if err != nil {
			return err
		}
		for _, in := range ins {
			v.Effects = append(v.Effects, showEffect{IntentID: in.ID, EffectType: in.EffectType, IdempotencyKey: in.IdempotencyKey, Outbox: string(in.Outbox), Attempts: in.Attempts})
		}
		rcs, err := st.Receipts(cmd.Context(), run.ID)
		if err != nil {
			return err
		}
		for _, rc := range rcs {
			v.Receipts = append(v.Receipts, showReceipt{IntentID: rc.IntentID, Outcome: rc.Outcome, Digest: rc.Digest})
		}
		out := cmd.OutOrStdout()
		if *sJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		outcome, lease := "no outcome yet", "no lease held"
		if run.Outcome != "" {
			outcome = "outcome " + run.Outcome
		}
		switch {
		case run.Outcome != "":
			lease = "ended"
		case run.Lease.Owner != "" && run.Lease.ExpiresAt.After(time.Now()):
			lease = fmt.Sprintf("leased to %s until %s", run.Lease.Owner, run.Lease.ExpiresAt.UTC().Format(time.RFC3339))
		case run.Lease.Owner != "":
			lease = "lease lapsed (last held by " + run.Lease.Owner + ")"
		}
		fmt.Fprintf(out, "run %s (%s@%s)\n  state %s, %s, %d events, %s, generation %d\n", run.ID, run.WorkflowID, run.WorkflowVersion,
			run.State, outcome, run.Head, lease, run.Lease.Generation)
		if len(run.Labels) > 0 {
			fmt.Fprintf(out, "  labels %s\n", label.String(run.Labels))
		}
		if run.Quarantine != "" {
			fmt.Fprintf(out, "  QUARANTINED: %s\n", run.Quarantine)
		}
		if p := v.Pruned; p != nil {
			fmt.Fprintf(out, "  %s\n", prunedError{id: run.ID, p: p}.Error())
		}
		if v.Unread != "" {
			fmt.Fprintf(out, "  what it waits for cannot be read: %s\n", v.Unread)
		}
		if v.MRPState != "" {
			fmt.Fprintf(out, "  deliberation (MRP) %s\n", v.MRPState)
		}
		if run.Outcome == "" {
			printWaits(out, run.ID, status)
			printInbox(cmd.Context(), out, st, run.ID, false)
			if tr, err := st.Trace(cmd.Context(), run.ID); err == nil {
				printDecisions(out, tr)
			}
		}
		if run.Outcome != "" {
			printInbox(cmd.Context(), out, st, run.ID, true)
		}
		if b := v.Budget; b != nil {
			fmt.Fprintf(out, "  budget: steps %d/%d, tool calls %d/%d, working %ds/%ds, waiting %ds/%ds, tokens %d/%d, cost_micros %d/%d\n", b.Used.Steps, b.Limits.Steps,
				b.Used.ToolCalls, b.Limits.ToolCalls, b.Used.WallSeconds, b.Limits.WallSeconds, b.Used.SuspendedSeconds, b.Limits.SuspendedSeconds,
				b.Used.Tokens, b.Limits.Tokens, b.Used.CostMicros, b.Limits.CostMicros)
			if b.Breach != "" {
				fmt.Fprintf(out, "  budget exhausted: %s\n", b.Breach)
			}
			if b.Retries != "" {
				fmt.Fprintf(out, "  retries exhausted: %s\n", b.Retries)
			}
		}
		for _, e := range v.Effects {
			fmt.Fprintf(out, "  effect %s %s key %s outbox %s attempts %d\n", e.IntentID, e.EffectType, e.IdempotencyKey, e.Outbox, e.Attempts)
		}
		for _, rc := range v.Receipts {
			fmt.Fprintf(out, "  receipt %s %s %s\n", rc.IntentID, rc.Outcome, rc.Digest)
		}
		return nil
	}

	events := &cobra.Command{Use: "events RUN", Short: "Print a run's event log (control records and accepted inputs)", Args: cobra.ExactArgs(1)}
	eStore := addStoreFlag(events)
	eJSON := events.Flags().Bool("json", false, "print each event's canonical body as a JSON line")
	events.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *eStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := readHeldRun(cmd.Context(), st, args[0]); err != nil {
			return err
		}
		evs, err := st.Events(cmd.Context(), args[0], 0)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		for _, e := range evs {
			if *eJSON {
				fmt.Fprintf(out, `{"seq":%d,"kind":%q,"digest":%q,"chain_hash":%q,"body":%s}`+"\n", e.Seq, e.Kind, e.Digest, e.ChainHash, e.Body)
				continue
			}
			switch e.Kind {
			case runner.EventControl, runner.EventRejected:
				var rec control.Record
				if err := json.Unmarshal(e.Body, &rec); err != nil {
					return err
				}
				verdict := "→ " + rec.To
				if !rec.Accepted {
					verdict = fmt.Sprintf("refused (%s: %s)", rec.Reason, rec.Detail)
				}
				fmt.Fprintf(out, "%4d  %-24s %-24s %s  by %s/%s\n", e.Seq, rec.Event, rec.From, verdict, rec.ActorRole, rec.Capability)
			default:
				// An accepted input says what it was and who handed it in.
				var acc struct {
					Kind, Actor, Capability string
					Seq                     int64
				}
				if e.Kind == "accepted" && json.Unmarshal(e.Body, &acc) == nil && acc.Kind != "" {
					by := ""
					if acc.Actor != "" {
						by = fmt.Sprintf("  by %s/%s", acc.Actor, acc.Capability)
					}
					fmt.Fprintf(out, "%4d  %-24s %-24s %s%s\n", e.Seq, e.Kind, fmt.Sprintf("%s #%d", acc.Kind, acc.Seq), e.Digest, by)
					continue
				}
				fmt.Fprintf(out, "%4d  %-24s %s\n", e.Seq, e.Kind, e.Digest)
			}
		}
		return nil
	}

	trace := &cobra.Command{Use: "trace RUN", Short: "Print a run's trace records (never authoritative)", Args: cobra.ExactArgs(1)}
	tStore := addStoreFlag(trace)
	tJSON := trace.Flags().Bool("json", false, "print each record as a JSON line {seq, kind, body}")
	trace.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *tStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := readHeldRun(cmd.Context(), st, args[0]); err != nil {
			return err
		}
		tr, err := st.Trace(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		for i, t := range tr {
			if *tJSON {
				fmt.Fprintf(cmd.OutOrStdout(), `{"seq":%d,"kind":%q,"body":%s}`+"\n", i+1, t.Kind, t.Body)
				continue
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%-20s %s\n", t.Kind, t.Body)
		}
		return nil
	}
	export := &cobra.Command{Use: "export RUN", Short: "Print a run's durable record (events, checkpoint, intents, attempts, receipts, approvals) as canonical JSON", Args: cobra.ExactArgs(1)}
	xStore := addStoreFlag(export)
	export.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *xStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		x, err := exportRun(cmd.Context(), st, args[0])
		if err != nil {
			return err
		}
		b, err := cjson.Marshal(x)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
		return err
	}
	runCmd.AddCommand(list, show, events, trace, export, runCaseCommand())
	rootCmd.AddCommand(runCmd)
}

// runShow is what run show prints, as --json writes it. The run's header
// has the API's shape (GET /v1/runs/{id}).
type runShow struct {
	Run        server.RunView        `json:"run"`
	Generation int64                 `json:"generation"`
	MRPState   string                `json:"mrp_state,omitempty"`
	Waiting    []runner.ApprovalNeed `json:"waiting"` // approvals, with the preview the approver is shown
	Offers     []workflow.Offer      `json:"offers"`  // proposals waiting for a person's choice among options
	// Held are proposals H held or escalated, decided again once a test
	// passes or a person resumes.
	Held     []workflow.HeldProposal `json:"held,omitempty"`
	Unknown  []string                `json:"unknown"` // intents whose outcome a person must reconcile
	Budget   *runner.BudgetStatus    `json:"budget,omitempty"`
	Effects  []showEffect            `json:"effects"`
	Receipts []showReceipt           `json:"receipts"`
	// Inbox counts the inputs the run holds unread: handed to it while it
	// waited for something else, or left unread when it ended.
	Inbox int `json:"inbox_pending"`
	// Pruned is set when the store pruned the run: it holds its header
	// alone, and the lists are empty.
	Pruned *verify.Pruned `json:"pruned,omitempty"`
	// Unread says why what the run waits for could not be read (its
	// workflow is not loaded, say); the lists above are then empty.
	Unread string `json:"unread,omitempty"`
}

type showEffect struct {
	IntentID       string `json:"intent_id"`
	EffectType     string `json:"effect_type"`
	IdempotencyKey string `json:"idempotency_key"`
	Outbox         string `json:"outbox"`
	Attempts       int64  `json:"attempts"`
}

type showReceipt struct {
	IntentID string `json:"intent_id"`
	Outcome  string `json:"outcome"`
	Digest   string `json:"digest"`
}

// readRun reads a run's header. A run the store does not hold is said to
// be missing in those words (the store's own error names its lookup).
func readRun(ctx context.Context, st store.Store, id string) (store.Run, error) {
	run, err := st.Run(ctx, id)
	if store.CodeOf(err) == store.CodeNotFound {
		return run, noRunError{id: id, err: err}
	}
	return run, err
}

// readHeldRun reads a run's header as readRun does, for a command that
// reads the run's record: a run the store pruned is refused with a
// prunedError, which says where its record went.
func readHeldRun(ctx context.Context, st store.Store, id string) (store.Run, error) {
	run, err := readRun(ctx, st, id)
	if err != nil {
		return run, err
	}
	p, err := pruningOf(ctx, st, run)
	if err != nil {
		return run, err
	}
	if p != nil {
		return run, prunedError{id: id, p: p}
	}
	return run, nil
}

// pruningOf returns what the store recorded of run's pruning, as verify
// reports it; nil when it was not pruned.
func pruningOf(ctx context.Context, st store.Store, run store.Run) (*verify.Pruned, error) {
	p, err := store.PruningOf(ctx, st, run)
	if p == nil || err != nil {
		return nil, err
	}
	return verify.PrunedOf(*p), nil
}

// prunedError reports a run whose record the store no longer holds.
type prunedError struct {
	id string
	p  *verify.Pruned
}

func (e prunedError) Error() string {
	open := ""
	if e.p.OpenEffects > 0 {
		open = fmt.Sprintf("; %d of its effects were pruned with their outcome unknown (abandoned), their keys still taken", e.p.OpenEffects)
	}
	if e.p.Archive == "" {
		return fmt.Sprintf("run %s was pruned at %s and its record discarded; the store keeps its header alone%s", e.id, e.p.At.Format(time.RFC3339), open)
	}
	return fmt.Sprintf("run %s was pruned at %s; its record is in the archive whose digest is %s (check it with flrh verify --archive FILE or flrh replay --archive FILE; read it whole in another store after flrh store import --archive FILE there)%s",
		e.id, e.p.At.Format(time.RFC3339), e.p.Archive, open)
}

// noRunError reports a run id the store does not hold; it unwraps to the
// store's NOT_FOUND error.
type noRunError struct {
	id  string
	err error
}

func (e noRunError) Error() string { return fmt.Sprintf("no run %s in this store", e.id) }
func (e noRunError) Unwrap() error { return e.err }

// RunExportKind names the layout of an exported run.
const RunExportKind = "flrh-run-export/1"

// runExport is a run's durable record, everything verify and replay read,
// without wall-clock times (so that the same run exports to the same
// bytes). Bodies are canonical JSON embedded as values; their digests are
// the stored ones, so an import can prove it restored the exact bytes.
type runExport struct {
	Kind       string            `json:"kind"`
	Run        exportRunHeader   `json:"run"`
	Events     []exportEvent     `json:"events"`
	Checkpoint *exportCheckpoint `json:"checkpoint"`
	Intents    []exportIntent    `json:"intents"`
	Receipts   []exportReceipt   `json:"receipts"`
	Approvals  []exportApproval  `json:"approvals"`
}

type exportRunHeader struct {
	ID              string `json:"id"`
	WorkflowID      string `json:"workflow_id"`
	WorkflowVersion string `json:"workflow_version"`
	State           string `json:"state"`
	Outcome         string `json:"outcome"`
	Head            int64  `json:"head"`
	HeadHash        string `json:"head_hash"`
	Generation      int64  `json:"generation"`
	Quarantine      string `json:"quarantine"`
	// Labels are the run's labels, omitted when none: not evidence.
	Labels map[string]string `json:"labels,omitempty"`
}

type exportEvent struct {
	Seq        int64  `json:"seq"`
	Kind       string `json:"kind"`
	Body       any    `json:"body"`
	Digest     string `json:"digest"`
	ChainHash  string `json:"chain_hash"`
	Generation int64  `json:"generation"`
}

type exportCheckpoint struct {
	Seq           int64  `json:"seq"`
	FormatVersion int64  `json:"format_version"`
	BuildDigest   string `json:"build_digest"`
	Body          any    `json:"body"`
	Digest        string `json:"digest"`
}

type exportIntent struct {
	ID             string          `json:"id"`
	Seq            int64           `json:"seq"`
	EffectType     string          `json:"effect_type"`
	IdempotencyKey string          `json:"idempotency_key"`
	ContentDigest  string          `json:"content_digest"`
	ApprovalID     string          `json:"approval_id"`
	Body           any             `json:"body"`
	Digest         string          `json:"digest"`
	Outbox         string          `json:"outbox"`
	Route          string          `json:"route"`
	Attempts       []exportAttempt `json:"attempts"`
}

type exportAttempt struct {
	N          int64  `json:"n"`
	Status     string `json:"status"`
	Generation int64  `json:"generation"`
	Detail     string `json:"detail"`
}

type exportReceipt struct {
	IntentID string `json:"intent_id"`
	Outcome  string `json:"outcome"`
	Body     any    `json:"body"`
	Digest   string `json:"digest"`
}

type exportApproval struct {
	ID            string `json:"id"`
	RequestDigest string `json:"request_digest"`
	Nonce         string `json:"nonce"`
	Body          any    `json:"body"`
	Digest        string `json:"digest"`
	Status        string `json:"status"`
	ConsumedBy    string `json:"consumed_by"`
}

// addApproval adds grant a to the export, its body decoded by body.
func (x *runExport) addApproval(a store.Approval, body func(string, []byte) (any, error)) error {
	b, err := body("approval "+a.ID, a.Body)
	if err != nil {
		return err
	}
	x.Approvals = append(x.Approvals, exportApproval{ID: a.ID, RequestDigest: a.RequestDigest, Nonce: a.Nonce, Body: b, Digest: a.Digest,
		Status: string(a.Status), ConsumedBy: a.ConsumedBy})
	return nil
}

// exportRun reads a run's durable record from st.
func exportRun(ctx context.Context, st store.Store, runID string) (*runExport, error) {
	run, err := readHeldRun(ctx, st, runID)
	if err != nil {
		return nil, err
	}
	body := func(what string, b []byte) (any, error) {
		v, err := cjson.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return v, nil
	}
	x := &runExport{Kind: RunExportKind, Run: exportRunHeader{ID: run.ID, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion,
		State: run.State, Outcome: run.Outcome, Head: run.Head, HeadHash: run.HeadHash, Generation: run.Lease.Generation, Quarantine: run.Quarantine,
		Labels: run.Labels},
		Events: []exportEvent{}, Intents: []exportIntent{}, Receipts: []exportReceipt{}, Approvals: []exportApproval{}}
	evs, err := st.Events(ctx, runID, 0)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		b, err := body(fmt.Sprintf("event %d", e.Seq), e.Body)
		if err != nil {
			return nil, err
		}
		x.Events = append(x.Events, exportEvent{Seq: e.Seq, Kind: e.Kind, Body: b, Digest: e.Digest, ChainHash: e.ChainHash, Generation: e.Generation})
	}
	switch cp, err := st.Checkpoint(ctx, runID); {
	case store.CodeOf(err) == store.CodeNotFound:
	case err != nil:
		return nil, err
	default:
		b, err := body("checkpoint", cp.Body)
		if err != nil {
			return nil, err
		}
		x.Checkpoint = &exportCheckpoint{Seq: cp.Seq, FormatVersion: cp.FormatVersion, BuildDigest: cp.BuildDigest, Body: b, Digest: cp.Digest}
	}
	ins, err := st.Intents(ctx, runID)
	if err != nil {
		return nil, err
	}
	for _, in := range ins {
		b, err := body("intent "+in.ID, in.Body)
		if err != nil {
			return nil, err
		}
		xi := exportIntent{ID: in.ID, Seq: in.Seq, EffectType: in.EffectType, IdempotencyKey: in.IdempotencyKey, ContentDigest: in.ContentDigest,
			ApprovalID: in.ApprovalID, Body: b, Digest: in.Digest, Outbox: string(in.Outbox), Route: in.Route, Attempts: []exportAttempt{}}
		ats, err := st.Attempts(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range ats {
			xi.Attempts = append(xi.Attempts, exportAttempt{N: a.N, Status: string(a.Status), Generation: a.Generation, Detail: a.Detail})
		}
		x.Intents = append(x.Intents, xi)
		if in.ApprovalID != "" {
			a, err := st.Approval(ctx, in.ApprovalID)
			if err != nil {
				return nil, err
			}
			if err := x.addApproval(a, body); err != nil {
				return nil, err
			}
		}
	}
	// The grants intents consumed beside the ones they name (a quorum's
	// other approvals), by id, after them.
	if rp, ok := store.As[store.RecordParts](st); ok && len(x.Approvals) > 0 {
		aps, err := rp.RunApprovals(ctx, runID)
		if err != nil {
			return nil, err
		}
		for _, a := range aps {
			if !slices.ContainsFunc(x.Approvals, func(e exportApproval) bool { return e.ID == a.ID }) {
				if err := x.addApproval(a, body); err != nil {
					return nil, err
				}
			}
		}
	}
	rcs, err := st.Receipts(ctx, runID)
	if err != nil {
		return nil, err
	}
	for _, rc := range rcs {
		b, err := body("receipt "+rc.IntentID, rc.Body)
		if err != nil {
			return nil, err
		}
		x.Receipts = append(x.Receipts, exportReceipt{IntentID: rc.IntentID, Outcome: rc.Outcome, Body: b, Digest: rc.Digest})
	}
	return x, nil
}
