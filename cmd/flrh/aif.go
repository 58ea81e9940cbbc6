package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/aif"
	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/aif/reduce"
	"flrh.dev/flrh/cjson"
)

func init() {
	aifCmd := &cobra.Command{
		Use:   "aif",
		Short: "Step active-inference models and run Bayesian model reduction",
		Long: `The aif commands drive the active-inference controller outside a run.

  flrh aif run MODEL.json     step a discrete generative model (A, B, C, D, E) and print,
                              per tick, the belief, the free energy, the scorecard (risk,
                              ambiguity, EFE, and the utility and information-gain views)
                              and the choice
  flrh aif reduce COUNTS.json score reduced priors against accumulated Dirichlet counts
                              and print every proposal with its ΔF and the decision

Every real number in --json output is a fixed-point integer at scale 1e9.`,
	}
	aifCmd.AddCommand(aifRunCmd(), aifReduceCmd())
	rootCmd.AddCommand(aifCmd)
}

func aifRunCmd() *cobra.Command {
	var steps int
	var obsFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run MODEL.json",
		Short: "Step a discrete active-inference model",
		Long: `Step a discrete active-inference model.

Observations come from --obs FILE, a JSON array with one entry per tick, each an array of
outcome names (one per modality), e.g. [["at-center", "none", "no-cue"]]. Without --obs the
model's "process" is simulated for --steps ticks, with draws seeded from the model digest,
so the same model always gives the same run.

Exit status: 0 on success, 2 for a malformed model or observation file (the error names
the exact location), 1 if a tick produced a degenerate posterior (reset and flagged).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			doc, err := aif.Decode(text)
			if err != nil {
				return usagef("%s: %v", args[0], err)
			}
			sum := sha256.Sum256(text)
			modelDigest := "sha256:" + hex.EncodeToString(sum[:])
			var obs [][]int
			if obsFile != "" {
				otext, err := os.ReadFile(obsFile)
				if err != nil {
					return usagef("%v", err)
				}
				var names [][]string
				if err := json.Unmarshal(otext, &names); err != nil {
					return usagef("%s: want an array of arrays of outcome names: %v", obsFile, err)
				}
				if obs, err = doc.Model.ObservationIndices(names); err != nil {
					return usagef("%s: %v", obsFile, err)
				}
				if cmd.Flags().Changed("steps") && steps < len(obs) {
					obs = obs[:max(steps, 0)]
				}
			}
			if steps < 1 || steps > 100000 {
				return usagef("--steps must be in 1..100000")
			}
			rec, err := aif.Run(doc, modelDigest, obs, steps)
			if err != nil {
				return usagef("%v", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := cjson.Marshal(rec)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
			} else {
				printRun(out, doc.Model, rec)
			}
			for _, s := range rec.Steps {
				if s.Degenerate != "" {
					return errChecksFailed
				}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&steps, "steps", 3, "number of ticks to simulate (or at most this many observations)")
	cmd.Flags().StringVar(&obsFile, "obs", "", "JSON file of observations, one array of outcome names per tick")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the canonical run record (fixed-point at 1e9)")
	return cmd
}

func printRun(w io.Writer, m *aif.Model, rec aif.RunRecord) {
	fmt.Fprintf(w, "model %s\n", rec.ModelDigest)
	for _, s := range rec.Steps {
		fmt.Fprintf(w, "\ntick %d  observed %s\n", s.Tick, strings.Join(s.Observation, ", "))
		for f, q := range s.Belief {
			var parts []string
			for i, x := range q {
				parts = append(parts, fmt.Sprintf("%s=%s", m.Factors[f].States[i], x))
			}
			fmt.Fprintf(w, "  belief %-10s %s\n", m.Factors[f].Name, strings.Join(parts, "  "))
		}
		if s.Degenerate != "" {
			fmt.Fprintf(w, "  DEGENERATE posterior (%s): belief reset to the prior\n", s.Degenerate)
		} else {
			fmt.Fprintf(w, "  free energy %s  (complexity %s, accuracy %s)\n", s.FreeEnergy, s.Complexity, s.Accuracy)
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  policy\trisk\tambiguity\tEFE\t|\tutility view\tinfo-gain view\tq(π)\t")
		for _, p := range s.Policies {
			var steps []string
			for _, st := range p.Actions {
				steps = append(steps, strings.Join(st, "+"))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t|\t%s\t%s\t%s\t\n", strings.Join(steps, " > "),
				round(p.Risk), round(p.Ambiguity), round(p.EFE), round(p.Utility), round(p.InfoGain), round(p.Probability))
		}
		tw.Flush()
		fmt.Fprintf(w, "  choice (%s): %s\n", s.Selection, strings.Join(s.Action, ", "))
	}
}

// round shows a fixed-point number to six decimals for people; the record
// keeps all nine.
func round(n fixed.Num) string {
	const unit = 1000
	r := int64(n)
	if r >= 0 {
		r = (r + unit/2) / unit * unit
	} else {
		r = (r - unit/2) / unit * unit
	}
	return fixed.Num(r).String()
}

func aifReduceCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reduce COUNTS.json",
		Short: "Bayesian model reduction over Dirichlet/Beta counts",
		Long: `Score reduced priors against the accumulated counts of a frozen parent model.

COUNTS.json:
  {"kind": "flrh.aif.counts", "version": 1, "threshold": 3,
   "parameters": [{"name": "fit", "prior": [1, 1], "posterior": [1, 30]}],
   "proposals":  [{"id": "prune", "reduced_prior": {"fit": [0.001, 1]}}]}

For each proposal ΔF = ln B(q) + ln B(r) − ln B(p) − ln B(q + r − p) is summed over the
parameters it reduces; it is accepted only when ΔF < −threshold (default 3 nats, ≈ 20:1).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			c, err := reduce.DecodeCounts(text)
			if err != nil {
				return usagef("%s: %v", args[0], err)
			}
			rep, _, err := reduce.BuildReport(c.Parameters, c.Proposals, c.Threshold)
			if err != nil {
				return usagef("%s: %v", args[0], err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := cjson.Marshal(rep)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "parent %s  threshold %s nats\n", rep.ParentDigest, rep.Threshold)
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "proposal\tΔF\tdecision\treduced posterior")
			for _, p := range rep.Proposals {
				var post []string
				for _, param := range rep.Parent.Parameters {
					if v, ok := p.ReducedPosterior[param.Name]; ok {
						var xs []string
						for _, x := range v {
							xs = append(xs, round(x))
						}
						post = append(post, param.Name+"=["+strings.Join(xs, ", ")+"]")
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, round(p.DeltaF), p.Decision, strings.Join(post, " "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the canonical reduction report (fixed-point at 1e9)")
	return cmd
}
