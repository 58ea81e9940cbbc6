package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
)

// runCmd groups the commands that start, advance and inspect runs.
var runCmd = &cobra.Command{Use: "run", Short: "Start, advance and inspect runs"}

func init() {

	list := &cobra.Command{Use: "list", Short: "List runs with their state and outcome", Args: cobra.NoArgs}
	lStore := addStoreFlag(list)
	lJSON := list.Flags().Bool("json", false, "print JSON")
	lAfter := list.Flags().String("after", "", "start after this run id (paging)")
	lLimit := list.Flags().Int("limit", 100, "at most this many runs")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		st, err := openStore(cmd.Context(), *lStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		runs, err := st.Runs(cmd.Context(), *lAfter, *lLimit)
		if err != nil {
			return err
		}
		if *lJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(runs)
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "RUN\tWORKFLOW\tSTATE\tOUTCOME\tEVENTS\tQUARANTINE")
		for _, r := range runs {
			fmt.Fprintf(w, "%s\t%s@%s\t%s\t%s\t%d\t%s\n", r.ID, r.WorkflowID, r.WorkflowVersion, r.State, r.Outcome, r.Head, r.Quarantine)
		}
		return w.Flush()
	}

	show := &cobra.Command{Use: "show RUN", Short: "Show a run: state, what it waits for, effects and receipts", Args: cobra.ExactArgs(1)}
	sStore := addStoreFlag(show)
	sWorkflows := addWorkflowsFlag(show)
	show.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *sStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		run, err := st.Run(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "run %s (%s@%s)\n  state %s, outcome %q, %d events, lease %s gen %d\n", run.ID, run.WorkflowID, run.WorkflowVersion,
			run.State, run.Outcome, run.Head, run.Lease.Owner, run.Lease.Generation)
		if run.Quarantine != "" {
			fmt.Fprintf(out, "  QUARANTINED: %s\n", run.Quarantine)
		}
		wf, ok, err := workflowFor(cmd.Context(), st, run, *sWorkflows)
		if err != nil {
			return err
		}
		if ok {
			r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: nil})
			if err == nil {
				status, err := r.Inspect(cmd.Context(), run.ID)
				if err == nil {
					for _, w := range status.Waiting {
						fmt.Fprintf(out, "  waits for approval %s: %s (request %s)\n", w.RequestID, w.Preview, w.RequestDigest)
					}
					for _, u := range status.Unknown {
						fmt.Fprintf(out, "  waits for a person to reconcile %s (outcome unknown)\n", u)
					}
				}
			}
		}
		ins, err := st.Intents(cmd.Context(), run.ID)
		if err != nil {
			return err
		}
		for _, in := range ins {
			fmt.Fprintf(out, "  effect %s %s key %s outbox %s attempts %d\n", in.ID, in.EffectType, in.IdempotencyKey, in.Outbox, in.Attempts)
		}
		rcs, err := st.Receipts(cmd.Context(), run.ID)
		if err != nil {
			return err
		}
		for _, rc := range rcs {
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
				fmt.Fprintf(out, "%4d  %-24s %s\n", e.Seq, e.Kind, e.Digest)
			}
		}
		return nil
	}

	trace := &cobra.Command{Use: "trace RUN", Short: "Print a run's trace records (never authoritative)", Args: cobra.ExactArgs(1)}
	tStore := addStoreFlag(trace)
	trace.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), *tStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		tr, err := st.Trace(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		for _, t := range tr {
			fmt.Fprintf(cmd.OutOrStdout(), "%-20s %s\n", t.Kind, t.Body)
		}
		return nil
	}
	runCmd.AddCommand(list, show, events, trace)
	rootCmd.AddCommand(runCmd)
}
