package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/runner"
)

// releaseView is what run release --json prints: who released the run,
// under which capability and why, and where the pass after it left the run
// (parked again when the cause of the trip persists).
type releaseView struct {
	RunID      string `json:"run_id"`
	ReleasedBy string `json:"released_by"`
	Capability string `json:"capability"`
	Reason     string `json:"reason"`
	State      string `json:"state"`
	Outcome    string `json:"outcome,omitempty"`
	Quarantine string `json:"quarantine,omitempty"`
}

// newReleaseCmd is flrh run release: a person releases a run a tripwire
// parked. The CLI trusts its user's --as, as for every act (they hold the
// store), and acts with the capability the park summons; the runner still
// refuses a quarantine that is no park. The run is then advanced, so a
// cancel queued while it was parked is taken now, and a cause that persists
// parks it again, which the output shows.
func newReleaseCmd() *cobra.Command {
	c := &cobra.Command{Use: "release RUN", Short: "Release a run a tripwire parked, on a person's word (audited in its trace)", Args: cobra.ExactArgs(1)}
	f := addRunnerFlags(c)
	as := c.Flags().String("as", "", "who releases the run (required)")
	reason := c.Flags().String("reason", "", `why the run may go on (default "released by NAME")`)
	asJSON := c.Flags().Bool("json", false, "print the release and the run's state as one JSON object")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *as == "" {
			return usagef("say who releases the run with --as NAME")
		}
		why := *reason
		if why == "" {
			why = "released by " + *as
		}
		id := args[0]
		st, r, err := f.openFor(cmd.Context(), pinRuns(cmd.Context(), args))
		if err != nil {
			return err
		}
		defer st.Close()
		defer r.Close(cmd.Context())
		if _, err := readRun(cmd.Context(), st, id); err != nil {
			return err
		}
		capability, err := r.Summoned(cmd.Context(), id)
		if err != nil {
			return err
		}
		by := runner.Actor{Name: *as, Role: "operator", Capability: capability}
		if err := r.Release(cmd.Context(), id, why, by); err != nil {
			return err
		}
		if err := f.advance(cmd.Context(), st, r, args); err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(cmd.OutOrStdout(), "run %s released by %s (%s): %s\n", id, *as, capability, why)
			return printStatus(cmd, st, r, id)
		}
		run, err := st.Run(cmd.Context(), id)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetEscapeHTML(false)
		return enc.Encode(releaseView{RunID: id, ReleasedBy: *as, Capability: capability, Reason: why,
			State: run.State, Outcome: run.Outcome, Quarantine: run.Quarantine})
	}
	return c
}

func init() { runCmd.AddCommand(newReleaseCmd()) }
