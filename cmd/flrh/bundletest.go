package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/policytest"
)

// policyCase is one case's result, with the file it came from.
type policyCase struct {
	File string `json:"file"`
	policytest.Result
}

type policyReport []policyCase

func (r policyReport) print(w io.Writer) {
	failed := 0
	for _, c := range r {
		if c.Passed() {
			fmt.Fprintf(w, "ok   %s: %s (%d steps)\n", c.File, c.Name, c.Steps)
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL %s: %s: step %d: %s\n", c.File, c.Name, c.Step, c.Failure)
	}
	fmt.Fprintf(w, "%d cases, %d failed\n", len(r), failed)
}

// coveredReport is a policy report with the gate policy's coverage
// (flrh bundle test --coverage).
type coveredReport struct {
	Cases    policyReport `json:"cases"`
	Coverage coverageView `json:"coverage"`
}

// coverageView is policytest.Coverage as the command reports it.
type coverageView struct {
	Rules     int        `json:"rules"`
	Exercised int        `json:"exercised"`
	Never     []ruleView `json:"never"`
	Untracked []ruleView `json:"untracked"`
}

// ruleView is a gate rule: its id, the output it writes, and where.
type ruleView struct {
	ID       string `json:"id,omitempty"`
	Relation string `json:"relation"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

func newCoverageView(dir string, c policytest.Coverage) coverageView {
	view := func(rules []authority.RuleRef) []ruleView {
		out := []ruleView{}
		for _, r := range rules {
			out = append(out, ruleView{ID: r.ID, Relation: r.Relation, File: filepath.Join(dir, r.Pos.File), Line: r.Pos.Line})
		}
		return out
	}
	return coverageView{Rules: c.Rules, Exercised: c.Exercised, Never: view(c.Never), Untracked: view(c.Untracked)}
}

func (r coveredReport) print(w io.Writer) {
	r.Cases.print(w)
	c := r.Coverage
	fmt.Fprintf(w, "coverage: %d of %d gate rules exercised\n", c.Exercised, c.Rules)
	for _, n := range c.Never {
		fmt.Fprintf(w, "  never   %s (%s, %s:%d)\n", n.ID, n.Relation, n.File, n.Line)
	}
	for _, n := range c.Untracked {
		fmt.Fprintf(w, "  untracked %s at %s:%d: its rule id is a variable\n", n.Relation, n.File, n.Line)
	}
}

// caseFiles are the case files of the bundle in dir: its *.test.json,
// *.test.yaml and *.test.yml, in name order.
func caseFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && policytest.Named(n) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out, nil
}

// policyTestCommand is flrh bundle test.
func policyTestCommand() *cobra.Command {
	test := &cobra.Command{Use: "test DIR [CASEFILE...]",
		Short: "Run a bundle's policy tests: inputs handed to the workflow, and what H is expected to decide",
		Long: `test compiles the bundle in DIR and runs its test cases against it: each a
fresh run handed inputs (and receipts for the effects they plan), with no
store, no runner and no effect sent, each step followed by what its author
expects: H's outcomes for the proposals (INTENT, APPROVAL_REQUEST, OPTIONS,
HELD, ESCALATED, REJECTED), the effects planned and who must approve them, the text
the outcomes' audit holds, whether the input is refused, whether the run is
then complete or failed. The cases are the bundle's *.test.yaml and *.test.json files
unless CASEFILEs are named (a bundle's digest binds only the files its
manifest names, so its tests do not change it). A case file:

  cases:
    - name: a large refund waits for finance-lead
      steps:
        - input: {type: refund.requested/1, payload: {refund_id: r-1, amount: 900, payee: bob, reason: late}}
          expect:
            outcomes: [APPROVAL_REQUEST]
            effects: [{effect_type: refund.pay, approver: finance-lead, params: {amount: 900}}]

A step is one of:
  input    an event, as flrh run start takes it ("as" says who hands it)
  receipt  confirmed_success or confirmed_failure, for the oldest effect
           authorized and not yet settled
  approve  a person's grant of the oldest approval request waiting, judged
           as a run judges it: who may answer, duties kept apart, a quorum,
           a panel ("expect: {approval: counted | approved | ignored}")
  deny     a person's denial of the oldest request waiting: one who may
           approve it, or it is refused; the run then fails
  choose   a person's choice of an option H offered, for "proposal" (the
           oldest proposal offered when left out)
  control  a person's trigger of the deliberation machine (PAUSE, RESUME,
           REJECT_ALL, REQUEST_TEST, ESCALATE, LEAVE_SAFE_MODE, EXIT), about
           "proposal" when given, for "reason"
A receipt, an approval or a denial may name the "effect" type it answers:
the oldest effect or request of that type rather than the oldest of all.
"expect" may also name the options the step offered ("options") and the
deliberation machine's state after it ("mrp_state"). What "expect" leaves
out is not checked, but a step refused fails unless "refused" expects it.
A run complete or failed with nothing left to settle or answer, or denied,
has ended: a step after that fails.

--coverage reports which of the gate policy's rules no case exercised: a
rule is exercised when some decision's reason names its rule id (a gate's
decision, an assessment, a quorum, an approver; an option or a SHAPE bound
goes with its decision's id). --require-coverage fails when one is never
exercised. With --json and either, the report is {"cases": [...],
"coverage": {"rules", "exercised", "never", "untracked"}}.

--pin CASEFILE prints the file with every step's expectations set to what
the bundle decides (outcomes, effects with every parameter, options, the
machine's state, completion, what a grant did, or the refusal), as JSON:
steps written without expectations, pinned, become a snapshot of the
bundle's behaviour to review and keep. A step that cannot be taken (a
receipt with nothing waiting) is a case file error (exit 2).

flrh run case RUN prints a recorded run as a case (a *.test.json), pinned
to what its bundle decided: run here against a changed bundle, it says
where the change would have decided otherwise.

Exit status: 0 when every case passes, 1 when one fails, the bundle does
not compile or (--require-coverage) a gate rule is never exercised, 2 when
a case file cannot be read.`,
		Args: cobra.MinimumNArgs(1)}
	asJSON := test.Flags().Bool("json", false, "print JSON")
	coverage := test.Flags().Bool("coverage", false, "also report which gate rules no case exercised")
	requireCoverage := test.Flags().Bool("require-coverage", false, "report coverage, and fail when a gate rule is never exercised")
	pin := test.Flags().Bool("pin", false, "print CASEFILE (one) with every step's expectations set to what the bundle decides, as JSON, instead of testing")
	test.RunE = func(cmd *cobra.Command, args []string) error {
		dir := args[0]
		if !bundle.IsDir(dir) {
			return usagef("%s is not a bundle directory", dir)
		}
		w, _, err := bundle.Load(dir)
		if err != nil {
			return err
		}
		files := args[1:]
		if *pin {
			// Pinning writes no report: the pinned file is the output.
			if len(files) != 1 || *coverage || *requireCoverage || *asJSON {
				return usagef("--pin takes exactly one CASEFILE, and no other flag")
			}
			src, err := os.ReadFile(files[0])
			if err != nil {
				return usagef("%v", err)
			}
			out, err := policytest.Pin(w.Workflow, files[0], src)
			if err != nil {
				return usagef("%v", err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		}
		if len(files) == 0 {
			if files, err = caseFiles(dir); err != nil {
				return usagef("%v", err)
			}
			if len(files) == 0 {
				return usagef("%s has no test cases: write them in %s (or *.test.json), or name case files", dir, filepath.Join(dir, "policy.test.yaml"))
			}
		}
		var rep policyReport
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				return usagef("%v", err)
			}
			res, err := policytest.Run(w.Workflow, f, src)
			if err != nil {
				return usagef("%v", err)
			}
			for _, r := range res {
				rep = append(rep, policyCase{File: f, Result: r})
			}
		}
		failed := slices.ContainsFunc(rep, func(c policyCase) bool { return !c.Passed() })
		if !*coverage && !*requireCoverage {
			return finishReport(cmd.OutOrStdout(), *asJSON, rep, nil, failed)
		}
		results := make([]policytest.Result, len(rep))
		for i, c := range rep {
			results[i] = c.Result
		}
		cov := policytest.Cover(w.Workflow, results)
		failed = failed || *requireCoverage && len(cov.Never) > 0
		return finishReport(cmd.OutOrStdout(), *asJSON, coveredReport{Cases: rep, Coverage: newCoverageView(dir, cov)}, nil, failed)
	}
	return test
}
