package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// waitingApproval is one approval a run waits for, as `flrh approvals`
// lists it; with --as, whether that person may give it now.
type waitingApproval struct {
	RunID         string   `json:"run_id"`
	Workflow      string   `json:"workflow"`
	RequestID     string   `json:"request_id"`
	RequestDigest string   `json:"request_digest"`
	Preview       string   `json:"preview"`
	WhoMayApprove string   `json:"who_may_approve,omitempty"`
	Quorum        int      `json:"quorum,omitempty"`
	ApprovedBy    []string `json:"approved_by,omitempty"`
	Awaiting      string   `json:"awaiting,omitempty"` // whom a panel still waits for
	// Labels are the run's, omitted when none.
	Labels map[string]string `json:"labels,omitempty"`
	// MayApprove and WhyNot answer --as: whether the person may approve
	// it now, and if not, why (Approve's refusal, word for word).
	MayApprove *bool  `json:"may_approve,omitempty"`
	WhyNot     string `json:"why_not,omitempty"`
	// Unread says why a run waiting for approval could not be read (its
	// workflow is not loaded, its checkpoint is unreadable).
	Unread string `json:"unread,omitempty"`
}

// approvalsPage bounds the runs read per page of the store's listing.
const approvalsPage = 100

func init() {
	c := &cobra.Command{Use: "approvals", Short: "List the approvals runs wait for; with --as, those a person may give now", Args: cobra.NoArgs,
		Long: `List every approval a live run waits for: the run, the request, the exact
preview the approver must see, who may approve it and who has so far.

With --as NAME, ask of each whether NAME may approve it now, by the checks
"flrh approve" makes (the approval policy's approver or group, a quorum's
second approval by one person, separation of duties, a grant the run has yet
to take), and list only those NAME may give, each with its command; --all
lists the others too, with why not. Nothing is written.`}
	sStore := addStoreFlag(c)
	sWorkflows := addWorkflowsFlag(c)
	as := c.Flags().String("as", "", "the person asking: list only what they may approve now")
	all := c.Flags().Bool("all", false, "with --as, also list what the person may not approve, and why")
	asJSON := c.Flags().Bool("json", false, "print one JSON object per approval, one per line")
	labelFlags := c.Flags().StringArray("label", nil, "only runs bearing this label, KEY=VALUE (repeatable: every one)")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if *all && *as == "" {
			return usagef("--all lists what a person may not approve: give --as NAME")
		}
		labels, err := label.ParseAll(*labelFlags)
		if err != nil {
			return usagef("--label: %v", err)
		}
		st, err := openStore(cmd.Context(), *sStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		cat, err := loadCatalog(*sWorkflows, len(*sWorkflows) > 0, "")
		if err != nil {
			return err
		}
		list, err := listWaitingApprovals(cmd, st, cat, *as, labels)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			enc := json.NewEncoder(out)
			for _, w := range list {
				if *as != "" && !*all && w.MayApprove != nil && !*w.MayApprove {
					continue
				}
				if err := enc.Encode(w); err != nil {
					return err
				}
			}
			return nil
		}
		printWaitingApprovals(out, list, *as, *all)
		return nil
	}
	rootCmd.AddCommand(c)
}

// listWaitingApprovals reads every run waiting for an approval (bearing
// labels, when given), oldest first (the store's creation order), and
// what it waits for; as, when set, is asked of each request. One runner
// serves the runs of one loaded workflow.
func listWaitingApprovals(cmd *cobra.Command, st store.Store, cat *catalog, as string, labels map[string]string) ([]waitingApproval, error) {
	ctx := cmd.Context()
	runners := map[runner.Workflow]*runner.Runner{}
	defer func() {
		for _, r := range runners {
			r.Close(ctx)
		}
	}()
	var by *runner.Actor
	if as != "" {
		actor := runner.ApproverActor(as)
		by = &actor
	}
	list := []waitingApproval{}
	after := ""
	for {
		runs, next, err := store.MatchingRuns(ctx, st, after, approvalsPage, 0, store.RunFilter{State: "WAIT_APPROVAL", Labels: labels})
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			if run.Outcome != "" {
				continue
			}
			name := run.WorkflowID + "@" + run.WorkflowVersion
			cd, ok := cat.forRun(ctx, st, run, false)
			if !ok {
				list = append(list, waitingApproval{RunID: run.ID, Workflow: name,
					Unread: fmt.Sprintf("workflow %s in the definition this run was started with is not loaded (give the same --workflows)", name)})
				continue
			}
			r := runners[cd.wf]
			if r == nil {
				if r, err = runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{cd.wf}}); err != nil {
					return nil, err
				}
				runners[cd.wf] = r
			}
			waits, err := r.Awaiting(ctx, run.ID, by)
			if err != nil {
				list = append(list, waitingApproval{RunID: run.ID, Workflow: name, Unread: err.Error()})
				continue
			}
			for _, a := range waits {
				w := waitingApproval{RunID: run.ID, Workflow: name, RequestID: a.RequestID, RequestDigest: a.RequestDigest,
					Preview: a.Preview, Quorum: a.Quorum, ApprovedBy: a.ApprovedBy, WhoMayApprove: a.WhoMayApprove, Awaiting: a.Awaiting, Labels: run.Labels}
				if by != nil {
					may := a.MayNot == nil
					w.MayApprove = &may
					if !may {
						w.WhyNot = a.MayNot.Error()
					}
				}
				list = append(list, w)
			}
		}
		if next == "" {
			return list, nil
		}
		after = next
	}
}

// printWaitingApprovals prints the list for a person: each approval with
// its preview, who may give it and who has, and the command that gives it.
func printWaitingApprovals(out io.Writer, list []waitingApproval, as string, all bool) {
	shown, others, unread := 0, 0, 0
	for _, w := range list {
		if w.Unread != "" {
			unread++
			fmt.Fprintf(out, "run %s (%s) waits for an approval that cannot be read here: %s\n", w.RunID, w.Workflow, w.Unread)
			continue
		}
		if w.MayApprove != nil && !*w.MayApprove && !all {
			others++
			continue
		}
		shown++
		fmt.Fprintf(out, "run %s (%s) waits for approval %s (request %s)\n", w.RunID, w.Workflow, w.RequestID, w.RequestDigest)
		if len(w.Labels) > 0 {
			fmt.Fprintf(out, "    labels %s\n", label.String(w.Labels))
		}
		printApprovalWait(out, runner.ApprovalNeed{Preview: w.Preview, WhoMayApprove: w.WhoMayApprove, Quorum: w.Quorum,
			ApprovedBy: w.ApprovedBy, Awaiting: w.Awaiting})
		switch {
		case w.MayApprove == nil:
			fmt.Fprintf(out, "    approve with: flrh approve %s %s --as NAME\n", w.RunID, w.RequestID)
		case *w.MayApprove:
			fmt.Fprintf(out, "    %s may approve: flrh approve %s %s --as %s\n", as, w.RunID, w.RequestID, as)
		default:
			fmt.Fprintf(out, "    %s may not approve it: %s\n", as, w.WhyNot)
		}
	}
	switch {
	case as == "" && shown == 0 && unread == 0:
		fmt.Fprintln(out, "no run waits for an approval")
	case as != "" && shown == 0 && others == 0 && unread == 0:
		fmt.Fprintln(out, "no run waits for an approval")
	case as != "" && shown == 0 && !all:
		fmt.Fprintf(out, "nothing waits for %s's approval\n", as)
	}
	if others > 0 {
		fmt.Fprintf(out, "%d more waiting that %s may not approve now (--all lists them, with why)\n", others, as)
	}
}
