package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/frontier"
)

func init() {
	root := &cobra.Command{
		Use:   "frontier",
		Short: "Run R, the scalar-frontier reactive kernel (step_r)",
		Long: "R holds proposal and verdict deliveries per logical time until every declared source has\n" +
			"moved strictly past it, then publishes each epoch as one atomic batch when demand allows.",
	}
	root.AddCommand(frontierProfileCmd(), frontierStepCmd())
	rootCmd.AddCommand(root)
}

func frontierProfileCmd() *cobra.Command {
	var (
		dataflow string
		sources  []string
		l        frontier.Limits
	)
	cmd := &cobra.Command{
		Use:     "profile --dataflow V --source ID [--source ID ...]",
		Short:   "Print an RDataflowProfile with its derived profile_digest",
		Example: "  flrh frontier profile --dataflow dataflow/0 --source source:l --source source:f > profile.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, rej := frontier.NewProfile(dataflow, sources, l)
			if rej != nil {
				return usagef("%s at %s", rej.Code, rej.Path)
			}
			b, _ := json.Marshal(p)
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataflow, "dataflow", "", "dataflow version every object must bind (required)")
	f.StringSliceVar(&sources, "source", nil, "a declared source id (repeat for each source; required)")
	c := frontier.Ceilings
	f.Int64Var(&l.MaxDeltasPerCommand, "max-deltas-per-command", c.MaxDeltasPerCommand, "deltas one command may carry")
	f.Int64Var(&l.MaxActiveValues, "max-active-values", c.MaxActiveValues, "values held in open epochs and ready batches")
	f.Int64Var(&l.MaxOpenEpochs, "max-open-epochs", c.MaxOpenEpochs, "open epochs")
	f.Int64Var(&l.MaxReadyBatches, "max-ready-batches", c.MaxReadyBatches, "stabilized batches waiting for demand")
	f.Int64Var(&l.MaxDemandPerCommand, "max-demand-per-command", c.MaxDemandPerCommand, "batches one grant may add")
	f.Int64Var(&l.MaxOutstandingDemand, "max-outstanding-demand", c.MaxOutstandingDemand, "demand outstanding at once")
	_ = cmd.MarkFlagRequired("dataflow")
	_ = cmd.MarkFlagRequired("source")
	return cmd
}

func frontierStepCmd() *cobra.Command {
	var profilePath, statePath, commandPath, nextPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "step --profile P.json --command C.json [--state S.json]",
		Short: "Apply one RCommand to a state and print the RTransition or RRejection",
		Long: "step reads an RDataflowProfile, an optional prior RReactiveState (none: the initial state)\n" +
			"and one RCommand (RApplyDeltaBatch, RAdvanceFrontier or RGrantDemand), validates every\n" +
			"identity and digest, and prints the result. A rejection exits with status 1 and changes\n" +
			"nothing; --next writes the accepted next state for the following step.",
		Example: "  flrh frontier step --profile profile.json --command apply.json --next state.json\n" +
			"  flrh frontier step --profile profile.json --state state.json --command advance.json --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			read := func(path string) ([]byte, error) {
				if path == "" {
					return nil, nil
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return nil, usagef("%v", err)
				}
				return b, nil
			}
			profile, err := read(profilePath)
			if err != nil {
				return err
			}
			state, err := read(statePath)
			if err != nil {
				return err
			}
			command, err := read(commandPath)
			if err != nil {
				return err
			}
			out, accepted := frontier.StepJSON(state, profile, command)
			w := cmd.OutOrStdout()
			if asJSON {
				fmt.Fprintf(w, "%s\n", out)
			} else {
				printFrontierResult(w, out, accepted)
			}
			if !accepted {
				return errChecksFailed
			}
			if nextPath != "" {
				var t struct {
					Next json.RawMessage `json:"next_state"`
				}
				if err := json.Unmarshal(out, &t); err != nil {
					return err
				}
				if err := os.WriteFile(nextPath, append(t.Next, '\n'), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&profilePath, "profile", "", "RDataflowProfile JSON file (required)")
	f.StringVar(&statePath, "state", "", "prior RReactiveState JSON file (default: the initial state)")
	f.StringVar(&commandPath, "command", "", "RCommand JSON file (required)")
	f.StringVar(&nextPath, "next", "", "write the accepted next state to this file")
	f.BoolVar(&asJSON, "json", false, "print the canonical RTransition or RRejection")
	_ = cmd.MarkFlagRequired("profile")
	_ = cmd.MarkFlagRequired("command")
	return cmd
}

// printFrontierResult summarizes a canonical RTransition or RRejection.
func printFrontierResult(w interface{ Write([]byte) (int, error) }, out []byte, accepted bool) {
	if !accepted {
		var r struct {
			Code        string         `json:"code"`
			Path        string         `json:"path"`
			LogicalTime *int64         `json:"logical_time"`
			Context     map[string]any `json:"context"`
		}
		_ = json.Unmarshal(out, &r)
		fmt.Fprintf(w, "rejected: %s at %q", r.Code, r.Path)
		if r.LogicalTime != nil {
			fmt.Fprintf(w, " (logical time %d)", *r.LogicalTime)
		}
		fmt.Fprintln(w)
		if len(r.Context) > 0 {
			b, _ := json.Marshal(r.Context)
			fmt.Fprintf(w, "  context: %s\n", b)
		}
		fmt.Fprintln(w, "  the prior state is unchanged")
		return
	}
	var t struct {
		Digest    string `json:"transition_digest"`
		Published []struct {
			Batch struct {
				ID          string   `json:"batch_id"`
				LogicalTime int64    `json:"logical_time"`
				Proposals   []string `json:"proposal_ids"`
			} `json:"batch"`
		} `json:"published_batches"`
		Next struct {
			Digest string `json:"state_digest"`
			Global *int64 `json:"global_low_watermark"`
		} `json:"next_state"`
		BP struct {
			Open   int64           `json:"open_epoch_count"`
			Active int64           `json:"active_value_count"`
			Ready  int64           `json:"ready_batch_count"`
			Demand int64           `json:"outstanding_demand"`
			Limits frontier.Limits `json:"limits"`
		} `json:"backpressure"`
	}
	_ = json.Unmarshal(out, &t)
	bp := t.BP
	global := "null (a source has not reported)"
	if t.Next.Global != nil {
		global = fmt.Sprint(*t.Next.Global)
	}
	fmt.Fprintf(w, "accepted: %s\n", t.Digest)
	fmt.Fprintf(w, "  next state %s, global low watermark %s\n", t.Next.Digest, global)
	fmt.Fprintf(w, "  open epochs %d/%d, active values %d/%d, ready batches %d/%d, outstanding demand %d/%d\n",
		bp.Open, t.BP.Limits.MaxOpenEpochs, bp.Active, t.BP.Limits.MaxActiveValues,
		bp.Ready, t.BP.Limits.MaxReadyBatches, bp.Demand, t.BP.Limits.MaxOutstandingDemand)
	for _, p := range t.Published {
		fmt.Fprintf(w, "  published %s (logical time %d): %s\n", p.Batch.ID, p.Batch.LogicalTime, strings.Join(p.Batch.Proposals, ", "))
	}
}
