package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/workflow"
)

// mrpTriggerNames are the triggers `flrh mrp` takes, by their lower-case
// names, in the order of workflow.ControlTriggers.
func mrpTriggerNames() []string {
	var out []string
	for _, t := range workflow.ControlTriggers {
		out = append(out, strings.ToLower(string(t)))
	}
	return out
}

func init() {
	cmd := &cobra.Command{
		Use:   "mrp RUN TRIGGER",
		Short: "Steer a run's deliberation as a person: pause, reject_all, request_test, escalate, resume, leave_safe_mode, exit",
		Long: `mrp hands a run a person's transition of its deliberation machine (MRP):

  pause            back to HOLD from any live state
  reject_all       reject the options offered, and withdraw what is held
                   (--proposal P: only that proposal's)
  request_test     into TEST from HOLD, OPTIONS or DECIDE
  escalate         hand the turn to a person (ESCALATE)
  resume           back from FAILSAFE or ESCALATE (to OPTIONS when options
                   are on record); held and escalated proposals are decided
                   again (--proposal P: P first, and only P's escalation
                   counts as answered)
  leave_safe_mode  end Degraded Safe Mode
  exit             end the turn (EXIT)

The act is recorded as --as in the role operator, exercising the trigger's
capability (mrp.pause, ...), and shows in the run's Journey Strip. It is
checked against the run's machine first: a trigger the machine would refuse
now is an error and nothing is handed to the run. Choosing an option is
'flrh choose'.`,
		Example: `  flrh mrp refund-7 pause --reason "checking with the customer" --as dana
  flrh mrp refund-7 reject_all --proposal proposal:4b1… --as dana`,
		Args: cobra.ExactArgs(2),
	}
	f := addRunnerFlags(cmd)
	as := cmd.Flags().String("as", "", "who acts (required)")
	proposal := cmd.Flags().String("proposal", "", "with reject_all: the proposal whose options are rejected or that is withdrawn; with resume: the kept proposal the resumption answers")
	reason := cmd.Flags().String("reason", "", "why, for the Journey Strip")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		runID := args[0]
		name := strings.ToLower(args[1])
		if !slices.Contains(mrpTriggerNames(), name) {
			return usagef("TRIGGER must be one of %s, not %q", strings.Join(mrpTriggerNames(), ", "), args[1])
		}
		trigger := mrp.Trigger(strings.ToUpper(name))
		switch {
		case *as == "":
			return usagef("say who acts with --as NAME")
		case *proposal != "" && trigger != mrp.RejectAll && trigger != mrp.Resume:
			return usagef("--proposal goes with reject_all or resume only")
		case len(*reason) > 1000:
			return usagef("--reason is longer than 1000 bytes")
		}
		capName, _ := mrp.RequiredCapability(trigger)
		by := runner.Actor{Name: *as, Role: "operator", Capability: capName}
		st, r, err := f.openFor(cmd.Context(), pinRuns(cmd.Context(), args[:1]))
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		status, err := r.Inspect(cmd.Context(), runID)
		if err != nil {
			return err
		}
		if status.Run.Outcome != "" {
			return fmt.Errorf("run %s has ended (%s)", runID, status.Run.Outcome)
		}
		v, ok := status.View.(workflow.View)
		if !ok {
			return fmt.Errorf("run %s has no deliberation machine to steer: its workflow keeps none", runID)
		}
		c := workflow.Control{Trigger: trigger, ProposalID: *proposal, Reason: *reason}
		issuer := mrp.Actor{ID: by.Name, Kind: mrp.ActorHuman, Role: by.Role, Capabilities: []string{by.Capability}}
		if err := workflow.CheckControl(v, c, issuer); err != nil {
			return fmt.Errorf("run %s (MRP %s): %v", runID, v.MRPState, err)
		}
		if err := r.Control(cmd.Context(), runID, string(trigger), *proposal, *reason, by); err != nil {
			return err
		}
		if err := f.advance(cmd.Context(), st, r, args[:1]); err != nil {
			return err
		}
		if err := printStatus(cmd, st, r, runID); err != nil {
			return err
		}
		after, err := r.Inspect(cmd.Context(), runID)
		if err != nil {
			return err
		}
		if v, ok := after.View.(workflow.View); ok {
			fmt.Fprintf(cmd.OutOrStdout(), "  MRP %s, Journey Strip %s\n", v.MRPState, strings.Join(v.Strip, " → "))
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}
