package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/logic/ground"
)

// groundFlags are the inputs of one solve_l or step_incremental_l call, each
// a JSON file.
type groundFlags struct {
	bundle, inputs, prior string
	time                  int64
	asJSON                bool
}

func (f *groundFlags) register(cmd *cobra.Command, priorFlag, priorHelp string) {
	cmd.Flags().StringVar(&f.bundle, "bundle", "", "LRuleBundle JSON file (required)")
	cmd.Flags().StringVar(&f.inputs, "inputs", "", "JSON array of LFactDeltaInput (default: no inputs)")
	cmd.Flags().StringVar(&f.prior, priorFlag, "", priorHelp)
	cmd.Flags().Int64Var(&f.time, "time", 0, "logical time of the invocation (required)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the result or rejection as canonical JSON")
	_ = cmd.MarkFlagRequired("bundle")
	_ = cmd.MarkFlagRequired("time")
}

func readJSONFile(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	v, err := ground.Decode(data)
	if err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	return v, nil
}

// load reads the bundle, inputs and optional prior.
func (f *groundFlags) load() (prior, bundle, inputs any, err error) {
	if bundle, err = readJSONFile(f.bundle); err != nil {
		return nil, nil, nil, err
	}
	inputs = []any{}
	if f.inputs != "" {
		if inputs, err = readJSONFile(f.inputs); err != nil {
			return nil, nil, nil, err
		}
	}
	if f.prior != "" {
		if prior, err = readJSONFile(f.prior); err != nil {
			return nil, nil, nil, err
		}
	}
	return prior, bundle, inputs, nil
}

// report prints an accepted wire or a rejection; a rejection fails the
// command with exit code 1.
func (f *groundFlags) report(w io.Writer, result map[string]any, rej *ground.Rejection, human func(io.Writer, map[string]any)) error {
	var wire map[string]any
	if rej != nil {
		wire = rej.Wire()
	} else {
		wire = result
	}
	if f.asJSON {
		b, err := ground.Canonical(wire)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	} else if rej != nil {
		fmt.Fprintf(w, "rejected: %s at %q\n", rej.Code, rej.Path)
		if len(rej.Context) > 0 {
			b, _ := ground.Canonical(rej.Context)
			fmt.Fprintf(w, "  context %s\n", b)
		}
	} else {
		human(w, result)
	}
	if rej != nil {
		return errChecksFailed
	}
	return nil
}

func init() {
	groundCmd := &cobra.Command{
		Use:   "ground",
		Short: "Run the reference ground logic profile (solve_l, step_incremental_l)",
		Long: `The ground profile evaluates fully ground, stratified rule bundles over named
base supports, exactly as the flrh-l-kernel/1 contract defines it: four-valued
fact states, conflicts for BOTH, absence witnesses for default negation,
derived FactDelta changes and a digest for everything. Every input is a JSON
file holding the contract's wire objects.`,
	}

	var solve groundFlags
	solveCmd := &cobra.Command{
		Use:   "solve --bundle BUNDLE.json [--inputs INPUTS.json] [--prior MATERIALIZATION.json] --time T",
		Short: "Compute one fixpoint (solve_l)",
		Long: `Apply a batch of LFactDeltaInput to a prior materialization (or none) under a
rule bundle at logical time T and print the LFixpointResult, or the typed
LRejection (exit status 1). Feed the printed next_materialization back with
--prior to continue.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prior, bundle, inputs, err := solve.load()
			if err != nil {
				return err
			}
			res, rej := ground.Solve(prior, bundle, inputs, solve.time)
			return solve.report(cmd.OutOrStdout(), res, rej, printFixpoint)
		},
	}
	solve.register(solveCmd, "prior", "prior LMaterialization JSON file (default: none)")

	var step groundFlags
	stepCmd := &cobra.Command{
		Use:   "step --bundle BUNDLE.json [--inputs INPUTS.json] [--checkpoint CHECKPOINT.json] --time T",
		Short: "Advance a persistent checkpoint (step_incremental_l)",
		Long: `Advance an explicit checkpoint (or none) by one batch, reusing every cached
rule evaluation whose context is unchanged, and print the LPersistentLStep
(fixpoint, next checkpoint, reuse receipt) or the rejection (exit status 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prior, bundle, inputs, err := step.load()
			if err != nil {
				return err
			}
			res, rej := ground.StepIncremental(prior, bundle, inputs, step.time)
			return step.report(cmd.OutOrStdout(), res, rej, printStep)
		},
	}
	step.register(stepCmd, "checkpoint", "prior LPersistentLCheckpoint JSON file (default: none)")

	sealCmd := &cobra.Command{
		Use:   "seal DRAFT.json",
		Short: "Compute the rule and bundle digests of a draft rule bundle",
		Long: `Read a draft LRuleBundle whose rule_digest and rule_bundle_digest members may
be missing or stale, compute them, order every set canonically, validate the
bundle as solve would (stratification included) and print it as canonical
JSON. A bundle that cannot be sealed is printed as its LRejection (exit 1).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			draft, err := readJSONFile(args[0])
			if err != nil {
				return err
			}
			sealed, rej := ground.SealBundle(draft)
			wire := sealed
			if rej != nil {
				wire = rej.Wire()
			}
			b, err := ground.Canonical(wire)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			if rej != nil {
				return errChecksFailed
			}
			return nil
		},
	}

	var whyBundle, whyMat string
	var whyJSON bool
	whyCmd := &cobra.Command{
		Use:   "why --bundle BUNDLE.json --materialization MATERIALIZATION.json 'ATOM'",
		Short: "Explain an atom of a materialization with minimal proofs",
		Long: `Validate a materialization against its rule bundle (digests, provenance and
equality with its clean recomputation) and explain one atom, given as a JSON
object: its state and, for each side that holds, a minimal proof of base
supports, fired rules and absence witnesses.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bundle, err := readJSONFile(whyBundle)
			if err != nil {
				return err
			}
			mat, err := readJSONFile(whyMat)
			if err != nil {
				return err
			}
			atom, err := ground.Decode([]byte(args[0]))
			if err != nil {
				return usagef("atom: %v", err)
			}
			ex, rej := ground.Explain(mat, bundle, atom)
			out := cmd.OutOrStdout()
			if rej != nil {
				fmt.Fprintf(out, "rejected: %s at %q\n", rej.Code, rej.Path)
				return errChecksFailed
			}
			if whyJSON {
				b, err := ground.Canonical(groundExplanationWire(ex))
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%s\n", b)
				return nil
			}
			fmt.Fprintf(out, "%s is %s\n", canon(ex.Atom), ex.State)
			for _, p := range []*ground.Proof{ex.Positive, ex.Negative} {
				if p != nil {
					printGroundProof(out, p, "  ")
				}
			}
			return nil
		},
	}
	whyCmd.Flags().StringVar(&whyBundle, "bundle", "", "LRuleBundle JSON file (required)")
	whyCmd.Flags().StringVar(&whyMat, "materialization", "", "LMaterialization JSON file (required)")
	whyCmd.Flags().BoolVar(&whyJSON, "json", false, "print the explanation as canonical JSON")
	_ = whyCmd.MarkFlagRequired("bundle")
	_ = whyCmd.MarkFlagRequired("materialization")

	groundCmd.AddCommand(solveCmd, stepCmd, sealCmd, whyCmd)
	rootCmd.AddCommand(groundCmd)
}

func canon(v any) string {
	b, err := ground.Canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func printFixpoint(w io.Writer, res map[string]any) {
	mat := res["next_materialization"].(map[string]any)
	fmt.Fprintf(w, "fixpoint %s at logical time %v\n", res["fixpoint_digest"], res["logical_time"])
	fmt.Fprintf(w, "  rule bundle %s\n  materialization %s\n", res["rule_bundle_digest"], mat["materialization_digest"])
	fmt.Fprintln(w, "facts:")
	for _, s := range mat["fact_states"].([]any) {
		st := s.(map[string]any)
		fmt.Fprintf(w, "  %-10s %s  (+%d -%d)\n", st["state"], canon(st["atom"]),
			len(st["positive_support_ids"].([]any)), len(st["negative_support_ids"].([]any)))
	}
	conflicts := mat["conflicts"].([]any)
	if len(conflicts) == 0 {
		fmt.Fprintln(w, "conflicts: none")
	} else {
		fmt.Fprintln(w, "conflicts:")
		for _, c := range conflicts {
			cm := c.(map[string]any)
			fmt.Fprintf(w, "  %s %s\n", cm["conflict_id"], canon(cm["atom"]))
		}
	}
	deltas := res["derived_fact_deltas"].([]any)
	if len(deltas) == 0 {
		fmt.Fprintln(w, "derived changes: none")
	} else {
		fmt.Fprintln(w, "derived changes:")
		for _, d := range deltas {
			dm := d.(map[string]any)
			delta := dm["delta"].(map[string]any)
			prov := delta["provenance_delta"].(map[string]any)
			fmt.Fprintf(w, "  %+d %s %s  by %s\n", delta["diff"], dm["polarity"], canon(delta["tuple"]), prov["rule_id"])
		}
	}
	st := res["stats"].(map[string]any)
	fmt.Fprintf(w, "stats: %v rule evaluations, %v firings, %v worklist pops, depth %v\n",
		st["rule_evaluation_count"], st["rule_firing_count"], st["worklist_pop_count"], st["max_derivation_depth"])
}

func printStep(w io.Writer, step map[string]any) {
	printFixpoint(w, step["fixpoint_result"].(map[string]any))
	rc := step["reuse_receipt"].(map[string]any)
	fmt.Fprintf(w, "checkpoint %s\n", rc["next_checkpoint_digest"])
	fmt.Fprintf(w, "reuse: %v lookups, %v hits, %v executed\n",
		rc["candidate_cache_lookups"], rc["candidate_cache_hits"], rc["executed_candidate_body_evaluations"])
	fmt.Fprintf(w, "step %s\n", step["step_digest"])
}

func printGroundProof(w io.Writer, p *ground.Proof, indent string) {
	sign := "+"
	if p.Polarity == "negative" {
		sign = "-"
	}
	if p.RuleID == "" {
		fmt.Fprintf(w, "%s%s%s  base support %s, provenance %s\n", indent, sign, canon(p.Atom), p.SupportID, canon(p.Provenance))
		return
	}
	fmt.Fprintf(w, "%s%s%s  by %s (depth %d)\n", indent, sign, canon(p.Atom), p.RuleID, p.Depth)
	for _, q := range p.Premises {
		printGroundProof(w, q, indent+"  ")
	}
	for _, a := range p.Absences {
		fmt.Fprintf(w, "%s  not %s  (no positive support once stratum %d was complete)\n", indent, canon(a.Atom), a.ReferencedStratum)
	}
}

func groundProofWire(p *ground.Proof) any {
	if p == nil {
		return nil
	}
	premises := []any{}
	for _, q := range p.Premises {
		premises = append(premises, groundProofWire(q))
	}
	absences := []any{}
	for _, a := range p.Absences {
		absences = append(absences, map[string]any{"atom": a.Atom, "referenced_stratum": a.ReferencedStratum,
			"completed_stratum_digest": a.CompletedStratumDigest, "witness_digest": a.WitnessDigest})
	}
	w := map[string]any{"polarity": p.Polarity, "atom": p.Atom, "support_id": p.SupportID, "depth": p.Depth,
		"premises": premises, "absences": absences}
	if p.RuleID != "" {
		w["rule_id"] = p.RuleID
	} else {
		w["provenance"] = p.Provenance
	}
	return w
}

func groundExplanationWire(e *ground.Explanation) map[string]any {
	return map[string]any{"atom": e.Atom, "fact_key": e.FactKey, "state": e.State,
		"positive": groundProofWire(e.Positive), "negative": groundProofWire(e.Negative)}
}
