package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/aif"
	"flrh.dev/flrh/aif/channel"
	"flrh.dev/flrh/aif/choice"
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
                              and the choice; or run a channel model (continuous beliefs,
                              cascades, temperature dial, abstention) over observations
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
		Short: "Step a discrete or channel active-inference model",
		Long: `Step a discrete or channel active-inference model.

Observations come from --obs FILE, a JSON array with one entry per tick, each an array of
outcome names (one per modality), e.g. [["at-center", "none", "no-cue"]]. Without --obs the
model's "process" is simulated for --steps ticks, with draws seeded from the model digest,
so the same model always gives the same run.

A channel-model document (kind "flrh.aif.channels": continuous channels, a declarative
kernel of action effects, cascades over a horizon, a temperature dial and an abstention
margin) is run over --obs FILE, a JSON array of {"observe": {channel: value, ...},
"time_pressure": p}; each tick prints the update, the free energy, the diagnostics, the
temperature, the best cascades of the scorecard and the action (or the abstention).

Exit status: 0 on success, 2 for a malformed model or observation file (the error names
the exact location), 1 if a tick produced a degenerate posterior (reset and flagged).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			sum := sha256.Sum256(text)
			modelDigest := "sha256:" + hex.EncodeToString(sum[:])
			var head struct {
				Kind string `json:"kind"`
			}
			_ = json.Unmarshal(text, &head)
			if head.Kind == channel.DocumentKind {
				return runChannels(cmd, args[0], text, modelDigest, obsFile, steps, asJSON)
			}
			doc, err := aif.Decode(text)
			if err != nil {
				return usagef("%s: %v", args[0], err)
			}
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

func runChannels(cmd *cobra.Command, name string, text []byte, modelDigest, obsFile string, steps int, asJSON bool) error {
	doc, err := channel.DecodeDocument(text)
	if err != nil {
		return usagef("%s: %v", name, err)
	}
	if obsFile == "" {
		return usagef("a channel model needs --obs FILE (it declares no simulated process)")
	}
	otext, err := os.ReadFile(obsFile)
	if err != nil {
		return usagef("%v", err)
	}
	var raw []struct {
		Observe      map[string]json.Number `json:"observe"`
		TimePressure json.Number            `json:"time_pressure"`
	}
	dec := json.NewDecoder(bytes.NewReader(otext))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return usagef("%s: want an array of {\"observe\": {...}, \"time_pressure\": p}: %v", obsFile, err)
	}
	if cmd.Flags().Changed("steps") && steps >= 0 && steps < len(raw) {
		raw = raw[:steps]
	}
	var inputs []channel.Input
	for t, r := range raw {
		in := channel.Input{Observe: map[string]float64{}}
		for k, v := range r.Observe {
			n, err := fixed.Parse(string(v))
			if err != nil {
				return usagef("%s: /%d/observe/%s: %v", obsFile, t, k, err)
			}
			in.Observe[k] = n.Float()
		}
		if r.TimePressure != "" {
			n, err := fixed.Parse(string(r.TimePressure))
			if err != nil {
				return usagef("%s: /%d/time_pressure: %v", obsFile, t, err)
			}
			in.TimePressure = n.Float()
		}
		inputs = append(inputs, in)
	}
	rec, err := channel.Run(doc, modelDigest, inputs)
	if err != nil {
		return usagef("%s: %v", obsFile, err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		b, err := cjson.Marshal(rec)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, string(b))
		return nil
	}
	fmt.Fprintf(out, "model %s  goal %s\n", rec.ModelDigest, doc.Start.Goal)
	for _, s := range rec.Steps {
		u := s.Update
		fmt.Fprintf(out, "\ntick %d\n", s.Tick)
		for i, ch := range u.Channels {
			fmt.Fprintf(out, "  %-16s error %-10s trust %-8s belief %-10s uncertainty %s\n", ch,
				round(u.Errors[i]), round(u.Precision[i]), round(u.Mu[i]), round(u.V[i]))
		}
		d := s.Diagnostics
		fmt.Fprintf(out, "  free energy %s  diagnostics: regressions %d, uncertainty %s, contradictions %s, time pressure %s  →  τ %s\n",
			round(u.FreeEnergy), d.RecentRegressions, round(d.BeliefUncertainty), round(d.ContradictionRate), round(d.TimePressure), round(s.Scorecard.Temperature))
		cands := append([]choice.CandidateRecord(nil), s.Scorecard.Candidates...)
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].Total < cands[j].Total })
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  cascade\trisk\tambiguity\tEFE\ttotal\tP\t")
		for i, c := range cands {
			if i == 5 {
				fmt.Fprintf(tw, "  (%d more)\t\t\t\t\t\t\n", len(cands)-5)
				break
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t\n", c.ID, round(c.Core.Risk), round(c.Core.Ambiguity), round(c.Core.EFE), round(c.Total), round(c.Probability))
		}
		n := s.Scorecard.Nothing
		fmt.Fprintf(tw, "  do-nothing\t%s\t%s\t%s\t%s\t\t\n", round(n.Core.Risk), round(n.Core.Ambiguity), round(n.Core.EFE), round(n.Total))
		tw.Flush()
		if s.Scorecard.Abstain != "" {
			fmt.Fprintf(out, "  abstain (%s): %s\n", s.Scorecard.Abstain, s.Action)
		} else {
			fmt.Fprintf(out, "  pick %s (moved by %s): %s\n", s.Scorecard.Pick, strings.Join(s.Scorecard.MovedBy, ", "), s.Action)
		}
	}
	return nil
}
