package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/seam"
)

func init() {
	root := &cobra.Command{
		Use:   "seam",
		Short: "Project L's four-valued facts into eligibility verdicts for R (project_lr)",
		Long: "The seam reads a solved L fixpoint through an explicit query mapping and produces one\n" +
			"EligibilityVerdict per proposal (TRUE_ONLY/FALSE_ONLY satisfy, BOTH conflicts, NEITHER is\n" +
			"unproven) and the R command that delivers each proposal with its verdict.",
	}
	root.AddCommand(seamBindingCmd(), seamProjectCmd())
	rootCmd.AddCommand(root)
}

func seamBindingCmd() *cobra.Command {
	var b seam.BindingProfile
	cmd := &cobra.Command{
		Use:   "binding --rule-set V --dataflow V --proposal-source ID --verdict-source ID",
		Short: "Print an LRBindingProfile with its derived profile_digest",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, _ := json.Marshal(b.Sealed())
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&b.RuleSetVersion, "rule-set", "", "rule-set version of the L rule bundle (required)")
	f.StringVar(&b.DataflowVersion, "dataflow", "", "dataflow version shared with R (required)")
	f.StringVar(&b.ProposalSourceID, "proposal-source", "", "R source that delivers proposals (required)")
	f.StringVar(&b.VerdictSourceID, "verdict-source", "", "R source that delivers verdicts (required)")
	f.Int64Var(&b.MaxQueries, "max-queries", seam.MaxQueriesCeiling, "queries per batch")
	f.Int64Var(&b.MaxFactRequirementsPerQuery, "max-requirements", seam.MaxFactRequirementsCeiling, "fact requirements per query")
	for _, name := range []string{"rule-set", "dataflow", "proposal-source", "verdict-source"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func seamProjectCmd() *cobra.Command {
	var paths [5]string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "project --l-result F --rule-bundle F --r-profile F --binding F --query-batch F",
		Short: "Run project_lr and print the LRProjectionResult or LRProjectionRejection",
		Long: "project validates the five inputs (every digest is recomputed), maps each query through\n" +
			"the four-valued truth table, and prints the verdicts and the RApplyDeltaBatch to feed\n" +
			"'flrh frontier step'. A rejection exits with status 1.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var in [5][]byte
			for i, p := range paths {
				b, err := os.ReadFile(p)
				if err != nil {
					return usagef("%v", err)
				}
				in[i] = b
			}
			out, ok := seam.ProjectJSON(in[0], in[1], in[2], in[3], in[4])
			w := cmd.OutOrStdout()
			if asJSON {
				fmt.Fprintf(w, "%s\n", out)
			} else if ok {
				var p struct {
					Digest   string `json:"projection_digest"`
					Time     int64  `json:"logical_time"`
					Verdicts []struct {
						ProposalID string   `json:"proposal_id"`
						Status     string   `json:"status"`
						Supports   []string `json:"support_derivation_ids"`
					} `json:"verdicts"`
					Command *struct {
						Deltas []json.RawMessage `json:"deltas"`
					} `json:"command"`
				}
				_ = json.Unmarshal(out, &p)
				fmt.Fprintf(w, "projected: %s (logical time %d)\n", p.Digest, p.Time)
				for _, v := range p.Verdicts {
					fmt.Fprintf(w, "  %s: %s %v\n", v.ProposalID, v.Status, v.Supports)
				}
				if p.Command == nil {
					fmt.Fprintln(w, "  no queries: no R command")
				} else {
					fmt.Fprintf(w, "  R command: %d deltas (use --json to get it)\n", len(p.Command.Deltas))
				}
			} else {
				var r struct {
					Code    string         `json:"code"`
					Path    string         `json:"path"`
					Context map[string]any `json:"context"`
				}
				_ = json.Unmarshal(out, &r)
				fmt.Fprintf(w, "rejected: %s at %q\n", r.Code, r.Path)
				if len(r.Context) > 0 {
					b, _ := json.Marshal(r.Context)
					fmt.Fprintf(w, "  context: %s\n", b)
				}
			}
			if !ok {
				return errChecksFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	for i, n := range []struct{ name, help string }{
		{"l-result", "LFixpointResult JSON file (from 'flrh ground solve --json')"},
		{"rule-bundle", "the sealed LRuleBundle it was solved with"},
		{"r-profile", "RDataflowProfile JSON file ('flrh frontier profile')"},
		{"binding", "LRBindingProfile JSON file ('flrh seam binding')"},
		{"query-batch", "LRQueryBatch JSON file"},
	} {
		f.StringVar(&paths[i], n.name, "", n.help+" (required)")
		_ = cmd.MarkFlagRequired(n.name)
	}
	f.BoolVar(&asJSON, "json", false, "print the canonical result or rejection")
	return cmd
}
