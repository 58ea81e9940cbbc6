package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/runcase"
)

// runCaseCommand is flrh run case: a recorded run as a policy test case.
func runCaseCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "case RUN",
		Short: "Print a recorded run as a bundle policy test case, pinned to what its workflow decided",
		Long: `case reads a run's record and prints it as a policy test case (JSON, for a
bundle's *.test.json or flrh bundle test DIR FILE): each input, receipt,
choice, control, approval and denial the run took, in order, as a step;
each step's expectations pinned to what the run's own bundle decides for
it (H's outcomes, the effects with every parameter, the deliberation
machine's state, the completion, what a grant did). The case carries the
run's id, so its proposals and intents are the run's own.

Run against another version of the bundle, the case says at which step it
would decide otherwise: a change to a gate, a limit or the approval policy
checked against what happened in production, before it is deployed.

  flrh run case refund-1042 --store sqlite:prod.db > refund-1042.test.json
  flrh bundle test workflows/refunds-v2 refund-1042.test.json

The case is checked against the record before it is printed: it must
authorize exactly the intents the run committed, in order, and end as the
run ended. A run whose
bundle is not loaded (--workflows), or whose course a case cannot take
(a grant refused for its expiry, say), is refused, saying where the case
parts from it. What a runner decides beyond the workflow (a cancellation,
a budget, the no-progress window, a reconciliation abandoned) ends the
case there; the case's note says what followed.`,
		Args: cobra.ExactArgs(1)}
	st := addStoreFlag(cmd)
	refs := addWorkflowsFlag(cmd)
	name := cmd.Flags().String("name", "", `the case's name (default "run RUN")`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		s, err := openStore(ctx, *st, true)
		if err != nil {
			return err
		}
		defer s.Close()
		run, err := readHeldRun(ctx, s, args[0])
		if err != nil {
			return err
		}
		wf, found, err := workflowFor(ctx, s, run, *refs)
		if err != nil {
			return err
		}
		if !found {
			return notLoaded(run)
		}
		b, ok := wf.(*bundle.Workflow)
		if !ok {
			return fmt.Errorf("run %s uses workflow %s@%s, which is built into flrh, not a bundle: a case is a bundle's", run.ID, run.WorkflowID, run.WorkflowVersion)
		}
		out, err := runcase.Make(ctx, s, b.Workflow, run, *name)
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(out)
		return err
	}
	return cmd
}
