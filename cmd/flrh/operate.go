package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/workflow"
	"flrh.dev/flrh/yamljson"
)

// Fault injection for crash tests: when FLRH_FAULT_INJECTION=1 and
// FLRH_FAULT_CUT names a runner cut point, the process kills itself with
// SIGKILL the moment it reaches that point — no deferred cleanup, no
// flushed buffers, exactly as a crash. Without both variables nothing
// changes.
func faultCut() func(string) {
	if os.Getenv("FLRH_FAULT_INJECTION") != "1" {
		return nil
	}
	at := os.Getenv("FLRH_FAULT_CUT")
	if at == "" {
		return nil
	}
	// FLRH_FAULT_ACTION=stop pauses the process there once (SIGSTOP to
	// itself) instead of killing it: the split-brain tests resume it with
	// SIGCONT after another runner has taken its run over.
	if os.Getenv("FLRH_FAULT_ACTION") == "stop" {
		var once sync.Once
		return func(point string) {
			if point == at {
				once.Do(func() {
					// A stop sent to oneself lands asynchronously in a
					// multithreaded process: the kernel hands the group stop
					// to another thread, and this one may run on for a
					// moment (long enough to send an effect) before it
					// freezes. Waiting for SIGCONT, which only comes after
					// the stop, pins the pause to this point.
					cont := make(chan os.Signal, 1)
					signal.Notify(cont, syscall.SIGCONT)
					defer signal.Stop(cont)
					fmt.Fprintf(os.Stderr, "flrh: fault injection: SIGSTOP at %s\n", point)
					syscall.Kill(os.Getpid(), syscall.SIGSTOP)
					<-cont
					fmt.Fprintf(os.Stderr, "flrh: fault injection: resumed at %s\n", point)
				})
			}
		}
	}
	return func(point string) {
		if point == at {
			fmt.Fprintf(os.Stderr, "flrh: fault injection: SIGKILL at %s\n", point)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns
		}
	}
}

type runnerFlags struct {
	cmd         *cobra.Command
	store       *string
	workflows   *[]string
	destination string
	owner       string
	leaseTTL    time.Duration
	wait        time.Duration
	retryAfter  time.Duration
}

func addRunnerFlags(cmd *cobra.Command) *runnerFlags {
	f := &runnerFlags{cmd: cmd, store: addStoreFlag(cmd), workflows: addWorkflowsFlag(cmd)}
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&f.destination, "destination", "", "effect endpoint for every adapter, overriding the bundles' url_env (e.g. a flrh sandbox's http://127.0.0.1:PORT/v1/effects)")
	cmd.Flags().StringVar(&f.owner, "owner", fmt.Sprintf("cli:%s:%d", host, os.Getpid()), "this runner's name in leases")
	cmd.Flags().DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, "how long this runner's lease on a run lasts without renewal")
	cmd.Flags().DurationVar(&f.wait, "wait", 0, "wait up to this long for another runner's lease to lapse")
	cmd.Flags().DurationVar(&f.retryAfter, "max-retry-after", runner.DefaultMaxRetryAfter, maxRetryAfterUsage)
	return f
}

const maxRetryAfterUsage = "the longest a destination's Retry-After may stretch the wait before a retry (the contract's backoff applies either way); 0 ignores it"

// maxRetryAfter checks a --max-retry-after value and returns the runner's
// setting for it: 0 on the command line ignores destinations' asks.
func maxRetryAfter(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, usagef("--max-retry-after must not be negative, not %s", d)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// open opens the store and a runner over every workflow the command can
// use (see catalog), the first of each id and version winning.
func (f *runnerFlags) open(ctx context.Context) (store.Store, *runner.Runner, error) {
	return f.openFor(ctx, nil)
}

// openFor is open with pin choosing, once the store is open, the
// workflows that must win over others of the same id and version: the
// bundle a run was started from, the definition a run's checkpoint names.
func (f *runnerFlags) openFor(ctx context.Context, pin func(store.Store, *catalog) ([]candidate, error)) (store.Store, *runner.Runner, error) {
	c, err := f.catalog()
	if err != nil {
		return nil, nil, err
	}
	return f.openWith(ctx, c, pin)
}

// catalog loads the workflows the command's flags name.
func (f *runnerFlags) catalog() (*catalog, error) {
	return loadCatalog(*f.workflows, f.cmd.Flags().Changed("workflows"), f.destination)
}

// openWith is openFor over a catalog already loaded, so that a command can
// check what it was given (a bundle, an input) before the store is opened
// — opening a SQLite store creates its file.
func (f *runnerFlags) openWith(ctx context.Context, c *catalog, pin func(store.Store, *catalog) ([]candidate, error)) (store.Store, *runner.Runner, error) {
	if f.leaseTTL <= 0 {
		// The runner would quietly take 30s instead.
		return nil, nil, usagef("--lease-ttl must be positive, not %s", f.leaseTTL)
	}
	retryAfter, err := maxRetryAfter(f.retryAfter)
	if err != nil {
		return nil, nil, err
	}
	st, err := openStore(ctx, *f.store, false)
	if err != nil {
		return nil, nil, err
	}
	// Before any effect is sent: adapters that share their limits hold
	// them in this store.
	c.shared.Bind(st)
	var pinned []candidate
	if pin != nil {
		if pinned, err = pin(st, c); err != nil {
			st.Close()
			return nil, nil, err
		}
	}
	for _, cd := range pinned {
		if cd.unwired != "" {
			fmt.Fprintf(f.cmd.ErrOrStderr(), "flrh: warning: %s (%s); its effects fail until that is set or --destination is given\n", cd.unwired, cd.from)
		}
	}
	wfs, reg, err := c.pick(pinned...)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	// LeaseStarts: the one command that starts a run (run start) advances
	// it on this runner right after, so the run is created already leased
	// to it, one commit fewer.
	r, err := runner.New(runner.Config{Store: st, Workflows: wfs, Adapters: reg, Owner: f.owner, LeaseTTL: f.leaseTTL,
		Cut: faultCut(), Reconcile: effect.Plan{Backoff: []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond}},
		LeaseStarts: true, MaxRetryAfter: retryAfter, NoticesWhenDelivered: true})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, r, nil
}

// pinRuns pins the workflow each named run was recorded with.
func pinRuns(ctx context.Context, ids []string) func(store.Store, *catalog) ([]candidate, error) {
	return func(st store.Store, c *catalog) ([]candidate, error) {
		var out []candidate
		for _, id := range ids {
			run, err := readRun(ctx, st, id)
			if err != nil {
				return nil, err
			}
			cd, ok := c.forRun(ctx, st, run, true)
			if !ok {
				return nil, usagef("run %s uses workflow %s@%s in a definition that is not loaded, or has no checkpoint yet to say which loaded one (give the same --workflows it was started with: its bundle directory or example:NAME)", id, run.WorkflowID, run.WorkflowVersion)
			}
			out = append(out, cd)
		}
		return out, nil
	}
}

// pinLive pins the definition of every live run and sets ids to the runs
// one runner can advance. A run whose definition is not loaded, or whose
// workflow id and version another live run holds in another definition,
// is left alone with a note on warn: advanced under the wrong definition
// it would be quarantined.
func pinLive(ctx context.Context, ids *[]string, warn io.Writer) func(store.Store, *catalog) ([]candidate, error) {
	return func(st store.Store, c *catalog) ([]candidate, error) {
		live, err := st.Live(ctx)
		if err != nil {
			return nil, err
		}
		var out []candidate
		*ids = (*ids)[:0]
		for _, id := range live {
			run, err := st.Run(ctx, id)
			if err != nil {
				return nil, err
			}
			cd, ok := c.forRun(ctx, st, run, true)
			if !ok {
				fmt.Fprintf(warn, "flrh: run %s left as it is: workflow %s@%s in the definition it was started with is not loaded, or it has no checkpoint yet to say which (give the same --workflows)\n", id, run.WorkflowID, run.WorkflowVersion)
				continue
			}
			k := slices.IndexFunc(out, func(o candidate) bool { return o.wf.ID() == cd.wf.ID() && o.wf.Version() == cd.wf.Version() })
			if k >= 0 && out[k].wf.Digest() != cd.wf.Digest() {
				fmt.Fprintf(warn, "flrh: run %s left as it is: it runs %s@%s as defined by %s, another live run as defined by %s; resume it on its own (flrh run resume %s)\n",
					id, run.WorkflowID, run.WorkflowVersion, cd.from, out[k].from, id)
				continue
			}
			if k < 0 {
				out = append(out, cd)
			}
			*ids = append(*ids, id)
		}
		return out, nil
	}
}

// pinStart resolves the WORKFLOW argument of run start: example:NAME, a
// bundle directory, builtin:ID, or a workflow id with an optional @version
// (see catalog.byName).
func pinStart(ref, destination string) func(store.Store, *catalog) ([]candidate, error) {
	return func(_ store.Store, c *catalog) ([]candidate, error) {
		isDir := false
		if fi, err := os.Stat(ref); err == nil && fi.IsDir() {
			isDir = true
		}
		if strings.HasPrefix(ref, examplePrefix) || isDir {
			own := &catalog{shared: c.shared}
			if err := own.addRef(ref, bundleEnv(destination, c.shared)); err != nil {
				return nil, usagef("%v", err)
			}
			if len(own.cands) != 1 {
				return nil, usagef("%s holds %d bundles; start one of them", ref, len(own.cands))
			}
			return own.cands, nil
		}
		cd, err := c.byName(ref)
		if err != nil {
			return nil, err
		}
		return []candidate{cd}, nil
	}
}

// advance runs the given runs until they wait for outside input, waiting
// for foreign leases up to f.wait. A command acts on the runs it names
// (runner.AdvanceToIdle): the runner holds one definition per workflow id
// and version, and another live run of the same id recorded under another
// definition (the built-in refund-agent and example:refund-agent, say)
// would be quarantined if this runner advanced it.
func (f *runnerFlags) advance(ctx context.Context, st store.Store, r *runner.Runner, ids []string) error {
	deadline := time.Now().Add(f.wait)
	heldElsewhere := func() (bool, error) {
		now := time.Now()
		for _, id := range ids {
			run, err := st.Run(ctx, id)
			if err != nil {
				return false, err
			}
			if run.Outcome == "" && run.Quarantine == "" && run.Lease.Owner != "" && run.Lease.Owner != f.owner && run.Lease.ExpiresAt.After(now) {
				return true, nil
			}
		}
		return false, nil
	}
	for {
		// A lease that was held before the pass may have lapsed during it,
		// after the pass skipped the run: then one more pass is owed.
		before, err := heldElsewhere()
		if err != nil {
			return err
		}
		if err := r.AdvanceToIdle(ctx, ids); err != nil {
			return err
		}
		held, err := heldElsewhere()
		if err != nil {
			return err
		}
		if (!held && !before) || time.Now().After(deadline) {
			return nil
		}
		if held {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// checkFirstInput refuses, before the store is opened (opening a SQLite
// store creates its file), a first input the workflow would refuse: the
// runner's own check (runner.CheckFirstInput), which Start makes again,
// with its refusal a usage error.
func checkFirstInput(wf runner.Workflow, runID string, input []byte) error {
	body, err := cjson.Canonicalize(input)
	if err != nil {
		return usagef("the run's input: %v", err)
	}
	err = runner.CheckFirstInput(wf, runID, body, runner.Usage{}, runner.Itself)
	var refused *runner.InputRefusedError
	if errors.As(err, &refused) {
		return usagef("%v", err)
	}
	return err
}

// checkChoice says whether a run waits for this choice, with the checks
// the server makes before it hands a choice on (the run's deliberation
// machine and the options it offered). A choice the run does not wait for
// is refused here: handed on, it would sit unread in the run's inbox, or
// be refused later with nothing said to the person who made it.
func checkChoice(st runner.Status, runID, proposal, option string, by runner.Actor) error {
	if st.Run.Outcome != "" {
		return fmt.Errorf("run %s has ended (%s): it waits for no choice", runID, st.Run.Outcome)
	}
	v, ok := st.View.(workflow.View)
	if !ok {
		return fmt.Errorf("run %s has no deliberation machine: its workflow offers no options to choose from", runID)
	}
	k := slices.IndexFunc(v.Offers, func(o workflow.Offer) bool { return o.ProposalID == proposal })
	if k < 0 {
		var pending []string
		for _, o := range v.Offers {
			pending = append(pending, o.ProposalID)
		}
		if len(pending) == 0 {
			return &runner.NotWaitingError{RunID: runID, What: "a choice (no options are pending)"}
		}
		return &runner.NotWaitingError{RunID: runID, What: fmt.Sprintf("a choice on %s (options are pending for %s)", proposal, strings.Join(pending, ", "))}
	}
	if of := v.Offers[k]; !slices.Contains(of.Options, option) {
		return usagef("%s was offered %s, not %s", proposal, strings.Join(of.Options, ", "), option)
	}
	if _, err := mrp.Step(v.Machine, mrp.Event{Trigger: mrp.ChooseOption, Target: mrp.Decide, Option: option,
		Actor: mrp.Actor{ID: by.Name, Kind: mrp.ActorHuman, Role: by.Role, Capabilities: []string{by.Capability}}}); err != nil {
		return fmt.Errorf("run %s (MRP %s) does not take a choice now: %v", runID, v.MRPState, err)
	}
	return nil
}

// refusedAct turns the refusals a run recorded while it took a person's
// act (trace records of the given kinds: a grant that does not answer the
// request, a choice the workflow refused) into an error, so that the
// act's command fails instead of printing an unchanged status and
// exiting 0.
func refusedAct(runID string, kinds []string, recs []store.TraceRecord) error {
	var why []string
	for _, rec := range recs {
		if !slices.Contains(kinds, rec.Kind) {
			continue
		}
		var body struct {
			Detail string `json:"detail"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(rec.Body, &body) != nil {
			why = append(why, rec.Kind)
			continue
		}
		why = append(why, strings.TrimSpace(body.Detail+body.Reason))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("run %s refused it: %s", runID, strings.Join(why, "; "))
}

func printStatus(cmd *cobra.Command, st0 store.Store, r *runner.Runner, id string) error {
	st, err := r.Inspect(cmd.Context(), id)
	out := cmd.OutOrStdout()
	if err != nil && st.Run.Quarantine != "" {
		// A run the pass quarantined has a checkpoint nothing can read:
		// say what became of it rather than only why its state is unreadable.
		fmt.Fprintf(out, "run %s: %s QUARANTINED: %s\n", id, st.Run.State, st.Run.Quarantine)
		return errChecksFailed
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "run %s: %s", id, st.State)
	if st.Run.Outcome != "" {
		fmt.Fprintf(out, " (outcome %s)", st.Run.Outcome)
	}
	if st.Run.Quarantine != "" {
		fmt.Fprintf(out, " QUARANTINED: %s", st.Run.Quarantine)
	}
	fmt.Fprintln(out)
	if st.Run.Outcome != "" {
		printInbox(cmd.Context(), out, st0, id, true)
		return nil // an ended run waits for nothing, whatever it was asked
	}
	printWaits(out, id, st)
	printInbox(cmd.Context(), out, st0, id, false)
	if tr, err := st0.Trace(cmd.Context(), id); err == nil {
		printDecisions(out, tr)
	}
	return nil
}

// printInbox says how many inputs a live run holds unread: an input
// handed to a run that waits for something else stays in its inbox until
// the run next takes input.
// An ended run reads nothing more: what it left unread is said too, so
// that nobody takes an input handed to it for one it acted on.
func printInbox(ctx context.Context, out io.Writer, st store.Store, id string, ended bool) {
	pending, err := st.Inbox(ctx, id, true)
	if err != nil || len(pending) == 0 {
		return
	}
	n, s := len(pending), "s"
	if n == 1 {
		s = ""
	}
	if ended {
		them := "them"
		if n == 1 {
			them = "it"
		}
		fmt.Fprintf(out, "  %d input%s never read: the run ended before it took %s\n", n, s, them)
		return
	}
	fmt.Fprintf(out, "  %d input%s in the inbox, read when the run next takes input\n", n, s)
}

// printDecisions prints H's latest decision on each proposal it turned
// into neither an effect nor a wait shown elsewhere — a refusal, an
// ineligible proposal, an escalation to a person — from the run's trace,
// so that a run resting in INGEST says why nothing happened. The trace is
// not authoritative; the proof trees are GET /v1/runs/{id}/why.
func printDecisions(out io.Writer, recs []store.TraceRecord) {
	type decision struct {
		Proposal  string   `json:"proposal_id"`
		Ticket    string   `json:"ticket_id"`
		Outcome   string   `json:"outcome"`
		Held      string   `json:"held"`
		Audit     []string `json:"audit"`
		Rejection *struct {
			Code string `json:"code"`
		} `json:"rejection"`
	}
	var order []string
	last := map[string]decision{}
	gates := map[string][]string{}   // ticket → the gate signals that held it back, latest turn
	withdrawn := map[string]string{} // proposal → who withdrew it, and how, since H last decided it
	for _, rec := range recs {
		if rec.Kind == "held.withdrawn" {
			var w struct {
				Actor     string   `json:"actor"`
				Trigger   string   `json:"trigger"`
				Proposals []string `json:"proposals"`
			}
			if json.Unmarshal(rec.Body, &w) == nil {
				for _, p := range w.Proposals {
					withdrawn[p] = fmt.Sprintf("withdrawn by %s (%s)", w.Actor, w.Trigger)
				}
			}
			continue
		}
		if rec.Kind == "h.fhr" {
			var f struct {
				FHR struct {
					Signals []struct {
						Decision, Rule, Source, Ticket string
					} `json:"signals"`
				} `json:"fhr"`
			}
			if json.Unmarshal(rec.Body, &f) == nil {
				turn := map[string][]string{}
				for _, sg := range f.FHR.Signals {
					if sg.Decision != "ALLOW" && sg.Ticket != "" {
						turn[sg.Ticket] = append(turn[sg.Ticket], fmt.Sprintf("%s %s %s", sg.Source, sg.Decision, sg.Rule))
					}
				}
				for t, g := range turn {
					gates[t] = g
				}
			}
			continue
		}
		var d decision
		if rec.Kind != "h.outcome" || json.Unmarshal(rec.Body, &d) != nil || d.Proposal == "" {
			continue
		}
		if _, seen := last[d.Proposal]; !seen {
			order = append(order, d.Proposal)
		}
		last[d.Proposal] = d
		delete(withdrawn, d.Proposal)
	}
	for _, p := range order {
		d := last[p]
		var why []string
		switch d.Outcome {
		case "INTENT", "APPROVAL_REQUEST", "OPTIONS":
			continue // an effect, an approval or a choice: shown with the run
		}
		if d.Rejection != nil {
			why = append(why, d.Rejection.Code)
		}
		if d.Ticket != "" {
			why = append(why, gates[d.Ticket]...)
		}
		if d.Held != "" {
			why = append(why, d.Held)
		}
		why = append(why, d.Audit...)
		if w := withdrawn[p]; w != "" {
			why = append(why, w)
		}
		line := fmt.Sprintf("  H decided %s on %s", d.Outcome, p)
		if len(why) > 0 {
			line += ": " + strings.Join(why, "; ")
		}
		fmt.Fprintln(out, line)
	}
}

// printApprovalWait prints, under an approval w a run waits for, the
// preview the approver must see, who may approve it and, for a quorum, who
// has and, for a panel, whom it still waits for.
func printApprovalWait(out io.Writer, w runner.ApprovalNeed) {
	for _, line := range strings.Split(strings.TrimRight(w.Preview, "\n"), "\n") {
		fmt.Fprintf(out, "    | %s\n", line)
	}
	if w.WhoMayApprove != "" {
		fmt.Fprintf(out, "    who may approve: %s\n", w.WhoMayApprove)
	}
	if w.Quorum > 1 {
		so := "no one yet"
		if len(w.ApprovedBy) > 0 {
			so = strings.Join(w.ApprovedBy, ", ")
		}
		fmt.Fprintf(out, "    approved so far: %s (%d of %d)\n", so, len(w.ApprovedBy), w.Quorum)
	}
	if w.Awaiting != "" {
		fmt.Fprintf(out, "    still to approve: %s\n", w.Awaiting)
	}
}

// printWaits prints what a live run waits for from a person, each with the
// command that answers it: approvals (with the preview the approver
// must see, indented under its request), choices among the options H
// offered, effects whose outcome is unknown.
func printWaits(out io.Writer, id string, st runner.Status) {
	v, viewed := st.View.(workflow.View)
	for _, w := range st.Waiting {
		fmt.Fprintf(out, "  waits for approval %s (request %s)\n", w.RequestID, w.RequestDigest)
		printApprovalWait(out, w)
		fmt.Fprintf(out, "    approve with: flrh approve %s %s --as NAME\n", id, w.RequestID)
	}
	if viewed {
		// The offers outlive a turn that left OPTIONS (a pause, an exit);
		// only a machine that takes a choice now gets the command.
		capName, _ := mrp.RequiredCapability(mrp.ChooseOption)
		for _, o := range v.Offers {
			option := ""
			if len(o.Options) > 0 {
				option = o.Options[0]
			}
			_, refused := mrp.Step(v.Machine, mrp.Event{Trigger: mrp.ChooseOption, Target: mrp.Decide, Option: option,
				Actor: mrp.Actor{ID: "person", Kind: mrp.ActorHuman, Role: "operator", Capabilities: []string{capName}}})
			if refused != nil {
				fmt.Fprintf(out, "  options %s are pending for %s, but MRP %s takes no choice now\n", strings.Join(o.Options, ", "), o.ProposalID, v.MRPState)
				continue
			}
			fmt.Fprintf(out, "  waits for a choice on %s among %s\n    choose with: flrh choose %s %s OPTION --as NAME\n",
				o.ProposalID, strings.Join(o.Options, ", "), id, o.ProposalID)
		}
		for _, h := range v.Held {
			fmt.Fprintf(out, "  holds %s (%s since %d: %s), decided again when a test passes or a person resumes (flrh mrp %s resume)\n",
				h.ProposalID, h.Outcome, h.Since, h.Why, id)
		}
	}
	for _, u := range st.Unknown {
		fmt.Fprintf(out, "  outcome of %s unknown — after checking the destination: flrh reconcile %s %s --confirmed|--failed|--abandon --as NAME\n", u, id, u)
	}
}

func init() {
	start := &cobra.Command{
		Use:   "start WORKFLOW",
		Short: "Start a run of a workflow with an input and advance it until it waits",
		Long: `start creates a run and advances it until it waits for outside input.
WORKFLOW is example:NAME for a bundle embedded in the binary (refund-agent,
ops-agent, support-agent), a bundle directory, builtin:ID for a workflow
compiled into the binary (builtin:refund-agent), or a workflow id (ID or
ID@VERSION): a bundle of --workflows first, else the one workflow of that id
(refund-agent is both a built-in and an example: say which). Adapters come
from the bundle; --destination overrides every endpoint it names. Later
commands on the run (approve, resume, replay, ...) find its workflow the same
way: give them the same --workflows (a directory, or example:NAME).`,
		Args: cobra.ExactArgs(1),
	}
	sf := addRunnerFlags(start)
	var runID, inputFile, input string
	start.Flags().StringVar(&runID, "id", "", "the run's id (default: derived from the time)")
	start.Flags().StringVar(&inputFile, "input", "", "file with the run's input (JSON, or YAML when named *.yaml)")
	start.Flags().StringVar(&input, "input-json", "", "the run's input as a JSON string")
	labelFlags := start.Flags().StringArray("label", nil, "a label naming what the run is for, KEY=VALUE (repeatable; list runs by it with flrh run list --label)")
	start.RunE = func(cmd *cobra.Command, args []string) error {
		body, err := readInputFlags(inputFile, input)
		if err != nil {
			return err
		}
		labels, err := label.ParseAll(*labelFlags)
		if err == nil {
			err = label.CheckGiven(labels)
		}
		if err != nil {
			return usagef("--label: %v", err)
		}
		if runID == "" {
			runID = fmt.Sprintf("run-%d", time.Now().UnixNano())
		}
		if !cjson.ValidID(runID) {
			return usagef("--id %q is not a run id (letters, digits and . _ : / -, starting with a letter or digit, at most %d)", runID, cjson.MaxIDLength)
		}
		// The workflow and the input are checked before the store is
		// opened: a malformed bundle or an input the workflow refuses
		// creates no store, no run and no event.
		c, err := sf.catalog()
		if err != nil {
			return err
		}
		cds, err := pinStart(args[0], sf.destination)(nil, c)
		if err != nil {
			return err
		}
		wf := cds[0].wf
		if err := checkFirstInput(wf, runID, body); err != nil {
			return err
		}
		st, r, err := sf.openWith(cmd.Context(), c, func(store.Store, *catalog) ([]candidate, error) { return cds, nil })
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		var refused *runner.InputRefusedError
		err = r.StartRun(cmd.Context(), runner.StartRequest{RunID: runID, WorkflowID: wf.ID(), Version: wf.Version(), Input: body,
			By: runner.Itself, Labels: labels})
		if store.CodeOf(err) == store.CodeExists {
			return usagef("run %s already exists in this store (give another --id)", runID)
		} else if errors.As(err, &refused) {
			// Refused with the adapters in hand (an effect they cannot
			// send): as a refusal before the store was opened is.
			return usagef("%v", err)
		} else if err != nil {
			return err
		}
		if err := sf.advance(cmd.Context(), st, r, []string{runID}); err != nil {
			return err
		}
		return printStatus(cmd, st, r, runID)
	}

	resume := &cobra.Command{
		Use:   "resume [RUN...]",
		Short: "Advance runs (all live ones by default) until they wait; recovers runs a crash left mid-effect",
	}
	rf := addRunnerFlags(resume)
	resume.RunE = func(cmd *cobra.Command, args []string) error {
		ids := args
		pin := pinRuns(cmd.Context(), args)
		if len(args) == 0 {
			pin = pinLive(cmd.Context(), &ids, cmd.ErrOrStderr())
		}
		st, r, err := rf.openFor(cmd.Context(), pin)
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		if err := rf.advance(cmd.Context(), st, r, ids); err != nil {
			return err
		}
		for _, id := range ids {
			if err := printStatus(cmd, st, r, id); err != nil {
				return err
			}
		}
		return nil
	}
	runCmd.AddCommand(start, resume)

	// Acts of people. The CLI trusts its user's --as (they hold the store);
	// the server takes the actor from an authenticated token instead.
	// refusals names the trace records in which the run refuses this kind
	// of act (see refusedAct); after, when not nil, judges the act once the
	// run has taken it and rests (a submission the run ended without
	// reading, say).
	act := func(use, short string, nargs int, refusals []string, after func(ctx context.Context, st store.Store, runID string) error,
		do func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(nargs)}
		f := addRunnerFlags(c)
		as := c.Flags().String("as", "", "who acts (required)")
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if *as == "" {
				return usagef("say who acts with --as NAME")
			}
			st, r, err := f.openFor(cmd.Context(), pinRuns(cmd.Context(), args[:1]))
			if err != nil {
				return err
			}
			defer st.Close()
			defer r.Close(cmd.Context())
			if run, err := readRun(cmd.Context(), st, args[0]); err != nil {
				return err
			} else if run.Outcome != "" {
				return fmt.Errorf("run %s has ended (%s): it takes no %s", args[0], run.Outcome, cmd.Name())
			}
			before, err := st.Trace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := do(cmd, r, args, *as); err != nil {
				return err
			}
			if err := f.advance(cmd.Context(), st, r, args[:1]); err != nil {
				return err
			}
			if err := printStatus(cmd, st, r, args[0]); err != nil {
				return err
			}
			recs, err := st.Trace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := refusedAct(args[0], refusals, recs[min(len(before), len(recs)):]); err != nil || after == nil {
				return err
			}
			return after(cmd.Context(), st, args[0])
		}
		return c
	}
	approve := act("approve RUN REQUEST", "Approve exactly what a run waits for (bound to the request digest)", 2, []string{"approval_refused", "approval_ignored"}, nil,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Approve(cmd.Context(), args[0], args[1], runner.ApproverActor(as), 15*time.Minute)
		})
	deny := act("deny RUN REQUEST", "Deny the approval a run waits for; the run fails permanently", 2, nil, nil,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Deny(cmd.Context(), args[0], args[1], "denied by "+as, runner.Actor{Name: as, Role: "human_approver", Capability: "approval.deny"})
		})
	cancel := act("cancel RUN", "Cancel a run (deferred until an in-flight effect is reconciled)", 1, nil, nil,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Cancel(cmd.Context(), args[0], "cancelled by "+as, runner.Actor{Name: as, Role: "authorized_requester", Capability: "run.cancel"})
		})
	reconcile := act("reconcile RUN INTENT", "Settle an effect whose outcome is unknown, after checking the destination", 2, []string{"reconcile_ignored"}, nil,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			res, _ := cmd.Flags().GetString("resolution")
			capability := "receipt.confirm_external"
			if res == "abandon" {
				capability = "receipt.abandon_unknown"
			}
			return r.Reconcile(cmd.Context(), args[0], args[1], res, runner.Actor{Name: as, Role: "human_reconciler", Capability: capability})
		})
	choose := act("choose RUN PROPOSAL OPTION", "Choose among the options H offered a person for a proposal (Contestable Gate Mode)", 3, []string{"refusal"}, nil,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			by := runner.Actor{Name: as, Role: "operator", Capability: "mrp.choose_option"}
			status, err := r.Inspect(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := checkChoice(status, args[0], args[1], args[2], by); err != nil {
				return err
			}
			return r.Choose(cmd.Context(), args[0], args[1], args[2], by)
		})
	var confirmed, failed, abandon bool
	reconcile.Flags().BoolVar(&confirmed, "confirmed", false, "the destination shows the effect applied")
	reconcile.Flags().BoolVar(&failed, "failed", false, "the destination shows the effect not applied")
	reconcile.Flags().BoolVar(&abandon, "abandon", false, "give up: the run ends with the outcome unknown")
	reconcile.Flags().String("resolution", "", "")
	reconcile.Flags().MarkHidden("resolution")
	reconcile.PreRunE = func(cmd *cobra.Command, _ []string) error {
		n, res := 0, ""
		for _, c := range []struct {
			on  bool
			res string
		}{{confirmed, "confirmed_success"}, {failed, "confirmed_failure"}, {abandon, "abandon"}} {
			if c.on {
				n++
				res = c.res
			}
		}
		if n != 1 {
			return usagef("give exactly one of --confirmed, --failed, --abandon")
		}
		return cmd.Flags().Set("resolution", res)
	}
	var subFile, subJSON string
	var subTokens, subCost int64
	submit := act("submit RUN", "Hand a live run a new input and advance it until it waits", 1, []string{"refusal"}, unreadAtEnd,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			body, _ := readInputFlags(subFile, subJSON) // checked in PreRunE
			u := runner.Usage{Tokens: subTokens, CostMicros: subCost}
			_, err := r.SubmitAdvanceWithUsage(cmd.Context(), args[0], body, u, runner.Actor{Name: as, Role: "authorized_requester", Capability: "input.submit"})
			return err
		})
	submit.Long = `submit hands a live run one more input (the same JSON a run's first
input is, e.g. another refund request) and advances the run until it waits.
A run that waits for something else (an approval, a choice, a reconciliation)
keeps the input in its inbox and reads it when it next takes input. --tokens
and --cost-micros report what producing the input cost; they are charged
against the run's budgets in the commit that accepts it. An input the
workflow refuses is recorded as refused and the command fails saying why.`
	submit.Flags().StringVar(&subFile, "input", "", "file with the input (JSON, or YAML when named *.yaml)")
	submit.Flags().StringVar(&subJSON, "input-json", "", "the input as a JSON string")
	submit.Flags().Int64Var(&subTokens, "tokens", 0, "model tokens producing this input cost (charged to the run's tokens budget)")
	submit.Flags().Int64Var(&subCost, "cost-micros", 0, "what producing this input cost, in millionths of the budget's currency")
	submit.PreRunE = func(cmd *cobra.Command, args []string) error {
		// Everything the command can check without the store is checked
		// before it is opened: a malformed input or report changes nothing.
		body, err := readInputFlags(subFile, subJSON)
		if err != nil {
			return err
		}
		if _, err := cjson.Canonicalize(body); err != nil {
			return usagef("the input: %v", err)
		}
		if err := (runner.Usage{Tokens: subTokens, CostMicros: subCost}).Check(); err != nil {
			return usagef("the usage report: %v", err)
		}
		return nil
	}
	runCmd.AddCommand(submit)
	rootCmd.AddCommand(approve, deny, cancel, reconcile, choose)
}

// unreadAtEnd fails a submission the run will never read: it ended (its
// completion decided by what it had read before) with inputs left in its
// inbox.
func unreadAtEnd(ctx context.Context, st store.Store, id string) error {
	run, err := st.Run(ctx, id)
	if err != nil || run.Outcome == "" {
		return err
	}
	pending, err := st.Inbox(ctx, id, true)
	if err != nil || len(pending) == 0 {
		return err
	}
	return fmt.Errorf("run %s ended (%s) before it read the input: nothing was done with it", id, run.Outcome)
}

// readInputFlags reads an input given as --input FILE or --input-json TEXT
// (exactly one of them).
func readInputFlags(file, text string) ([]byte, error) {
	if file != "" && text != "" {
		return nil, usagef("give the input once: --input FILE or --input-json TEXT, not both")
	}
	body := []byte(text)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("--input: %v", err)
		}
		if yamljson.Named(file) {
			// Written in YAML: the one JSON value it spells (yamljson).
			if b, _, err = yamljson.Convert(b); err != nil {
				return nil, usagef("--input %s: %v", file, err)
			}
		}
		body = b
	}
	if len(body) == 0 {
		return nil, usagef("give the input with --input FILE or --input-json TEXT")
	}
	return body, nil
}
