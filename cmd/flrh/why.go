package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/logic"
)

func init() {
	var flags datalogFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "why PROGRAM.dl [-F FACTS_DIR] 'fact(args)'",
		Short: "Explain a Datalog fact with a minimal proof tree",
		Long: `Evaluate the program over its input facts and explain one atom: its
four-valued state and, for each side that holds (both for a BOTH conflict),
a minimal proof tree of rules, premises and absence witnesses.

A negated atom (-fact(args)) starts with a dash: put -- before the
arguments so that it is not read as a flag.`,
		Example: `  flrh why tc.dl -F facts 'tc(1, 4)'
  flrh why policy.dl -F facts --json 'blocked("bob")'
  flrh why policy.dl -F facts -- '-blocked("alice")'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			flags.warn = cmd.ErrOrStderr()
			m, _, err := flags.loadAndEvaluate(args[0])
			if err != nil {
				return err
			}
			f, err := logic.ParseFact(m.Program(), args[1])
			if err != nil {
				return usageError{err}
			}
			e, err := m.Why(f)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				// Rules hold comparisons: keep "a >= 18" as written
				// rather than as \u003e escapes meant for HTML.
				enc.SetEscapeHTML(false)
				return enc.Encode(explanationJSON(e))
			}
			printExplanation(out, e)
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the explanation as JSON")
	// A negated atom on the command line reads as a cluster of shorthand
	// flags; say what was meant.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "unknown shorthand flag") && strings.Contains(err.Error(), "(") {
			return usagef("%v (a negated atom goes after --: flrh why PROGRAM.dl -- '-fact(args)')", err)
		}
		return usageError{err}
	})
	rootCmd.AddCommand(cmd)
}

func printExplanation(w io.Writer, e *logic.Explanation) {
	fmt.Fprintf(w, "%s is %s\n", e.Atom, e.State)
	if e.State == logic.Neither {
		fmt.Fprintln(w, "  no positive and no negative support")
	}
	for _, p := range []*logic.Proof{e.Positive, e.Negative} {
		if p == nil {
			continue
		}
		seen := map[*logic.Proof]bool{}
		printProof(w, p, "", "", seen)
	}
}

func proofLine(p *logic.Proof) string {
	switch {
	case p.Base && len(p.BaseIDs) > 0:
		return p.Fact.String() + "  [base: " + strings.Join(p.BaseIDs, ", ") + "]"
	case p.Base:
		return p.Fact.String() + "  [base fact]"
	}
	return fmt.Sprintf("%s  [rule %s  at %s]", p.Fact, p.RuleText, p.RulePos)
}

func printProof(w io.Writer, p *logic.Proof, first, rest string, seen map[*logic.Proof]bool) {
	if seen[p] && !p.Base {
		fmt.Fprintf(w, "%s%s  (proved above)\n", first, p.Fact)
		return
	}
	seen[p] = true
	fmt.Fprintf(w, "%s%s\n", first, proofLine(p))
	n := len(p.Premises) + len(p.Absent) + len(p.Aggregates)
	i := 0
	for _, q := range p.Premises {
		i++
		if i == n {
			printProof(w, q, rest+"└─ ", rest+"   ", seen)
		} else {
			printProof(w, q, rest+"├─ ", rest+"│  ", seen)
		}
	}
	for _, a := range p.Absent {
		i++
		branch := "├─ "
		if i == n {
			branch = "└─ "
		}
		fmt.Fprintf(w, "%s%s%s  [absent: no support once stratum %d is complete]\n", rest, branch, a, a.Stratum)
	}
	for _, a := range p.Aggregates {
		i++
		branch := "├─ "
		if i == n {
			branch = "└─ "
		}
		fmt.Fprintf(w, "%s%s%s  [aggregate over a complete lower stratum]\n", rest, branch, a)
	}
}

type proofJSON struct {
	Fact     string       `json:"fact"`
	Base     bool         `json:"base,omitempty"`
	BaseIDs  []string     `json:"base_ids,omitempty"`
	Rule     string       `json:"rule,omitempty"`
	RulePos  string       `json:"rule_position,omitempty"`
	Premises []*proofJSON `json:"premises,omitempty"`
	Absent   []absentJSON `json:"absent,omitempty"`
	// Aggregates: each aggregate's text, value and the facts it ranged over.
	Aggregates []aggregateJSON `json:"aggregates,omitempty"`
}

type aggregateJSON struct {
	Aggregate string   `json:"aggregate"`
	Value     int64    `json:"value"`
	Over      []string `json:"over"`
}

type absentJSON struct {
	Pattern string `json:"pattern"`
	Stratum int    `json:"stratum"`
}

type explanationOut struct {
	Atom     string     `json:"atom"`
	State    string     `json:"state"`
	Positive *proofJSON `json:"positive,omitempty"`
	Negative *proofJSON `json:"negative,omitempty"`
}

func explanationJSON(e *logic.Explanation) explanationOut {
	conv := func(p *logic.Proof) *proofJSON { return toProofJSON(p) }
	out := explanationOut{Atom: e.Atom.String(), State: e.State.String()}
	if e.Positive != nil {
		out.Positive = conv(e.Positive)
	}
	if e.Negative != nil {
		out.Negative = conv(e.Negative)
	}
	return out
}

func toProofJSON(p *logic.Proof) *proofJSON {
	j := &proofJSON{Fact: p.Fact.String(), Base: p.Base, BaseIDs: p.BaseIDs}
	if !p.Base {
		j.Rule = p.RuleText
		j.RulePos = p.RulePos.String()
	}
	for _, q := range p.Premises {
		j.Premises = append(j.Premises, toProofJSON(q))
	}
	for _, a := range p.Absent {
		j.Absent = append(j.Absent, absentJSON{Pattern: a.String(), Stratum: a.Stratum})
	}
	for _, a := range p.Aggregates {
		over := make([]string, 0, len(a.Over))
		for _, f := range a.Over {
			over = append(over, f.String())
		}
		j.Aggregates = append(j.Aggregates, aggregateJSON{Aggregate: a.Text, Value: a.Value, Over: over})
	}
	return j
}
