package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/verify"
)

func init() {
	vc := &cobra.Command{
		Use:   "verify RUN...",
		Short: "Check a run's durable record independently of the runner that wrote it",
		Long: `verify opens the store read-only and checks, for each run: canonical bytes,
digests and the event hash chain; every control record re-stepped through the
FSM table; intents as valid protocol objects bound to their idempotency keys and
to the exact grants they consumed; receipts bound to their intents; attempts,
outbox and receipts coherent; fencing generations; and, for an ended run, that
every effect it owes is closed. Exit status 1 if any check fails.`,
		Args: cobra.MinimumNArgs(1),
	}
	vStore := addStoreFlag(vc)
	vJSON := vc.Flags().Bool("json", false, "print the reports as JSON")
	vc.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *vStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		failed := false
		var reports []*verify.Report
		for _, id := range args {
			rep, err := verify.Run(cmd.Context(), st, nil, id)
			if err != nil {
				return err
			}
			reports = append(reports, rep)
			failed = failed || !rep.OK()
			if *vJSON {
				continue
			}
			verdict := "verified"
			if !rep.OK() {
				verdict = fmt.Sprintf("FAILED (%d findings)", len(rep.Findings))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s: %s — %s %q; %d events, %d control records, %d intents, %d receipts, %d approvals consumed\n",
				id, verdict, rep.State, rep.Outcome, rep.Events, rep.Controls, rep.Intents, rep.Receipts, rep.Approvals)
			for _, f := range rep.Findings {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s at %s: %s\n", f.Check, f.Where, f.Detail)
			}
		}
		if *vJSON {
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(reports); err != nil {
				return err
			}
		}
		if failed {
			return errChecksFailed
		}
		return nil
	}
	rootCmd.AddCommand(vc)

	rc := &cobra.Command{
		Use:   "replay RUN...",
		Short: "Re-execute a run's pure steps from its accepted inputs and compare every result",
		Args:  cobra.MinimumNArgs(1),
	}
	rStore := addStoreFlag(rc)
	rWorkflows := addWorkflowsFlag(rc)
	rc.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *rStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		failed := false
		for _, id := range args {
			run, err := st.Run(cmd.Context(), id)
			if err != nil {
				return err
			}
			wf, ok, err := workflowFor(cmd.Context(), st, run, *rWorkflows)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("run %s uses workflow %s@%s, which is not loaded (give the same --workflows it was started with)", id, run.WorkflowID, run.WorkflowVersion)
			}
			ver, err := verify.Run(cmd.Context(), st, nil, id)
			if err != nil {
				return err
			}
			rep, err := verify.Replay(cmd.Context(), st, wf, id)
			if err != nil {
				return err
			}
			ok = rep.OK() && ver.OK()
			failed = failed || !ok
			verdict := "identical"
			if !ok {
				verdict = "DIFFERS"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s: %s — %d inputs, %d effects, %d control records re-stepped; state %s\n",
				id, verdict, rep.Inputs, rep.Effects, ver.Controls, rep.State)
			for _, f := range append(ver.Findings, rep.Findings...) {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s at %s: %s\n", f.Check, f.Where, f.Detail)
			}
		}
		if failed {
			return errChecksFailed
		}
		return nil
	}
	rootCmd.AddCommand(rc)
}
