package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
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
	return func(point string) {
		if point == at {
			fmt.Fprintf(os.Stderr, "flrh: fault injection: SIGKILL at %s\n", point)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns
		}
	}
}

type runnerFlags struct {
	store       *string
	destination string
	owner       string
	leaseTTL    time.Duration
	wait        time.Duration
}

func addRunnerFlags(cmd *cobra.Command) *runnerFlags {
	f := &runnerFlags{store: addStoreFlag(cmd)}
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&f.destination, "destination", "", "effect endpoint of the payments destination (e.g. a flrh sandbox's http://127.0.0.1:PORT/v1/effects)")
	cmd.Flags().StringVar(&f.owner, "owner", fmt.Sprintf("cli:%s:%d", host, os.Getpid()), "this runner's name in leases")
	cmd.Flags().DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, "how long this runner's lease on a run lasts without renewal")
	cmd.Flags().DurationVar(&f.wait, "wait", 0, "wait up to this long for another runner's lease to lapse")
	return f
}

// openRunner opens the store and a runner over the built-in workflows.
func (f *runnerFlags) open(ctx context.Context) (store.Store, *runner.Runner, error) {
	st, err := openStore(ctx, *f.store, false)
	if err != nil {
		return nil, nil, err
	}
	reg := &effect.Registry{}
	if f.destination != "" {
		ad, err := httpadapter.New(httpadapter.Config{URL: f.destination, Timeout: 10 * time.Second})
		if err != nil {
			st.Close()
			return nil, nil, usagef("--destination: %v", err)
		}
		if err := reg.Register("refund.pay", "http/1", demo.HTTPAdapter(ad)); err != nil {
			st.Close()
			return nil, nil, err
		}
	}
	r, err := runner.New(runner.Config{Store: st, Workflows: builtinWorkflows(), Adapters: reg, Owner: f.owner, LeaseTTL: f.leaseTTL,
		Cut: faultCut(), Reconcile: effect.Plan{Backoff: []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond}}})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, r, nil
}

// advance runs the given runs (all live ones when none are named) until
// they wait for outside input, waiting for foreign leases up to f.wait.
func (f *runnerFlags) advance(ctx context.Context, st store.Store, r *runner.Runner, ids []string) error {
	deadline := time.Now().Add(f.wait)
	for {
		if err := r.RunToIdle(ctx); err != nil {
			return err
		}
		held := false
		now := time.Now()
		for _, id := range ids {
			run, err := st.Run(ctx, id)
			if err != nil {
				return err
			}
			if run.Outcome == "" && run.Quarantine == "" && run.Lease.Owner != "" && run.Lease.Owner != f.owner && run.Lease.ExpiresAt.After(now) {
				held = true
			}
		}
		if !held || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
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
		Args:  cobra.ExactArgs(1),
	}
	sf := addRunnerFlags(start)
	var runID, inputFile, input string
	start.Flags().StringVar(&runID, "id", "", "the run's id (default: derived from the time)")
	start.Flags().StringVar(&inputFile, "input", "", "file with the run's input (JSON)")
	start.Flags().StringVar(&input, "input-json", "", "the run's input as a JSON string")
	start.RunE = func(cmd *cobra.Command, args []string) error {
		wfID, version, _ := strings.Cut(args[0], "@")
		if version == "" {
			version = "1"
		}
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
		st, r, err := sf.open(cmd.Context())
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		if err := r.Start(cmd.Context(), runID, wfID, version, body); err != nil {
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
		st, r, err := rf.open(cmd.Context())
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
			st, r, err := f.open(cmd.Context())
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
