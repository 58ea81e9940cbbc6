package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
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
}

func addRunnerFlags(cmd *cobra.Command) *runnerFlags {
	f := &runnerFlags{cmd: cmd, store: addStoreFlag(cmd), workflows: addWorkflowsFlag(cmd)}
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&f.destination, "destination", "", "effect endpoint for every adapter, overriding the bundles' url_env (e.g. a flrh sandbox's http://127.0.0.1:PORT/v1/effects)")
	cmd.Flags().StringVar(&f.owner, "owner", fmt.Sprintf("cli:%s:%d", host, os.Getpid()), "this runner's name in leases")
	cmd.Flags().DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, "how long this runner's lease on a run lasts without renewal")
	cmd.Flags().DurationVar(&f.wait, "wait", 0, "wait up to this long for another runner's lease to lapse")
	return f
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
	c, err := loadCatalog(*f.workflows, f.cmd.Flags().Changed("workflows"), f.destination)
	if err != nil {
		return nil, nil, err
	}
	st, err := openStore(ctx, *f.store, false)
	if err != nil {
		return nil, nil, err
	}
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
	r, err := runner.New(runner.Config{Store: st, Workflows: wfs, Adapters: reg, Owner: f.owner, LeaseTTL: f.leaseTTL,
		Cut: faultCut(), Reconcile: effect.Plan{Backoff: []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond}}})
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
			run, err := st.Run(ctx, id)
			if err != nil {
				return nil, err
			}
			cd, ok := c.forRun(ctx, st, run, true)
			if !ok {
				return nil, usagef("run %s uses workflow %s@%s in a definition that is not loaded (give the same --workflows it was started with)", id, run.WorkflowID, run.WorkflowVersion)
			}
			out = append(out, cd)
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
			own := &catalog{}
			getenv := os.Getenv
			if destination != "" {
				getenv = func(string) string { return destination }
			}
			if err := own.addRef(ref, getenv); err != nil {
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

// advance runs the given runs (all live ones when none are named) until
// they wait for outside input, waiting for foreign leases up to f.wait.
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
		if err := r.RunToIdle(ctx); err != nil {
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

func printStatus(cmd *cobra.Command, r *runner.Runner, id string) error {
	st, err := r.Inspect(cmd.Context(), id)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "run %s: %s", id, st.State)
	if st.Run.Outcome != "" {
		fmt.Fprintf(out, " (outcome %s)", st.Run.Outcome)
	}
	if st.Run.Quarantine != "" {
		fmt.Fprintf(out, " QUARANTINED: %s", st.Run.Quarantine)
	}
	fmt.Fprintln(out)
	if st.Run.Outcome != "" {
		return nil // an ended run waits for nothing, whatever it was asked
	}
	for _, w := range st.Waiting {
		fmt.Fprintf(out, "  waits for approval %s: %s\n    request %s — approve with: flrh approve %s %s --as NAME\n", w.RequestID, w.Preview, w.RequestDigest, id, w.RequestID)
	}
	for _, u := range st.Unknown {
		fmt.Fprintf(out, "  outcome of %s unknown — after checking the destination: flrh reconcile %s %s --confirmed|--failed|--abandon --as NAME\n", u, id, u)
	}
	return nil
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
	start.Flags().StringVar(&inputFile, "input", "", "file with the run's input (JSON)")
	start.Flags().StringVar(&input, "input-json", "", "the run's input as a JSON string")
	start.RunE = func(cmd *cobra.Command, args []string) error {
		body := []byte(input)
		if inputFile != "" {
			b, err := os.ReadFile(inputFile)
			if err != nil {
				return usagef("--input: %v", err)
			}
			body = b
		}
		if len(body) == 0 {
			return usagef("give the run's input with --input FILE or --input-json TEXT")
		}
		if runID == "" {
			runID = fmt.Sprintf("run-%d", time.Now().UnixNano())
		}
		var wf runner.Workflow
		st, r, err := sf.openFor(cmd.Context(), func(st store.Store, c *catalog) ([]candidate, error) {
			cds, err := pinStart(args[0], sf.destination)(st, c)
			if err == nil {
				wf = cds[0].wf
			}
			return cds, err
		})
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		if err := r.Start(cmd.Context(), runID, wf.ID(), wf.Version(), body); err != nil {
			return err
		}
		if err := sf.advance(cmd.Context(), st, r, []string{runID}); err != nil {
			return err
		}
		return printStatus(cmd, r, runID)
	}

	resume := &cobra.Command{
		Use:   "resume [RUN...]",
		Short: "Advance runs (all live ones by default) until they wait; recovers runs a crash left mid-effect",
	}
	rf := addRunnerFlags(resume)
	resume.RunE = func(cmd *cobra.Command, args []string) error {
		st, r, err := rf.openFor(cmd.Context(), pinRuns(cmd.Context(), args))
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		ids := args
		if len(ids) == 0 {
			if ids, err = st.Live(cmd.Context()); err != nil {
				return err
			}
		}
		if err := rf.advance(cmd.Context(), st, r, ids); err != nil {
			return err
		}
		for _, id := range ids {
			if err := printStatus(cmd, r, id); err != nil {
				return err
			}
		}
		return nil
	}
	runCmd.AddCommand(start, resume)

	// Acts of people. The CLI trusts its user's --as (they hold the store);
	// the server takes the actor from an authenticated token instead.
	act := func(use, short string, nargs int, do func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error) *cobra.Command {
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
			if err := do(cmd, r, args, *as); err != nil {
				return err
			}
			if err := f.advance(cmd.Context(), st, r, args[:1]); err != nil {
				return err
			}
			return printStatus(cmd, r, args[0])
		}
		return c
	}
	approve := act("approve RUN REQUEST", "Approve exactly what a run waits for (bound to the request digest)", 2,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Approve(cmd.Context(), args[0], args[1], runner.Actor{Name: as, Role: "human_approver", Capability: "approval.grant_exact_hash"}, 15*time.Minute)
		})
	deny := act("deny RUN REQUEST", "Deny the approval a run waits for; the run fails permanently", 2,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Deny(cmd.Context(), args[0], args[1], "denied by "+as, runner.Actor{Name: as, Role: "human_approver", Capability: "approval.deny"})
		})
	cancel := act("cancel RUN", "Cancel a run (deferred until an in-flight effect is reconciled)", 1,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Cancel(cmd.Context(), args[0], "cancelled by "+as, runner.Actor{Name: as, Role: "authorized_requester", Capability: "run.cancel"})
		})
	reconcile := act("reconcile RUN INTENT", "Settle an effect whose outcome is unknown, after checking the destination", 2,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			res, _ := cmd.Flags().GetString("resolution")
			capability := "receipt.confirm_external"
			if res == "abandon" {
				capability = "receipt.abandon_unknown"
			}
			return r.Reconcile(cmd.Context(), args[0], args[1], res, runner.Actor{Name: as, Role: "human_reconciler", Capability: capability})
		})
	choose := act("choose RUN PROPOSAL OPTION", "Choose among the options H offered a person for a proposal (Contestable Gate Mode)", 3,
		func(cmd *cobra.Command, r *runner.Runner, args []string, as string) error {
			return r.Choose(cmd.Context(), args[0], args[1], args[2], runner.Actor{Name: as, Role: "operator", Capability: "mrp.choose_option"})
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
	rootCmd.AddCommand(approve, deny, cancel, reconcile, choose)
}
