package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/control"
)

func init() {
	fsmCmd := &cobra.Command{
		Use:   "fsm",
		Short: "Inspect the run FSM and check trace vectors against it",
		Long: "The run FSM is the sole authority over a run's lifecycle: every state change of a run\n" +
			"is one of its transitions. These commands show the table and run trace vectors through it.",
	}
	fsmCmd.AddCommand(newFSMCheckCmd(), newFSMTableCmd(), newFSMContractCmd(), newFSMSchemaCmd())
	rootCmd.AddCommand(fsmCmd)
}

// loadMachine returns the embedded machine, or the one in path when set.
func loadMachine(path string) (*control.Machine, error) {
	if path == "" {
		return control.Default(), nil
	}
	text, err := readLimited(path, 1<<20)
	if err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	m, err := control.Load(text)
	if err != nil {
		return nil, fileError(path, err)
	}
	return m, nil
}

// fileError reports a malformed input file as a usage error, naming the
// file inside a typed control error so the message reads file:/pointer.
func fileError(path string, err error) error {
	var ce *control.Error
	if errors.As(err, &ce) {
		c := *ce
		c.File = path
		return usagef("%v", &c)
	}
	return usagef("%s: %v", path, err)
}

func newFSMCheckCmd() *cobra.Command {
	var asJSON bool
	var tablePath string
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Run trace vectors (run-fsm-traces/v1) through the run FSM",
		Long: "check reads trace vector files in the flrh-run-fsm-traces/v1 format, runs every case from\n" +
			"the initial state, and compares the state and the emitted effects after every step.\n" +
			"It prints one line per case, a line saying which transitions, false guards, final states\n" +
			"and interrupts the vectors exercised, and a final line \"N passed, M failed\".\n\n" +
			"Exit status: 0 when every case passes, 1 when any fails, 2 when a file is unreadable or\n" +
			"malformed (nothing is run then).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := loadMachine(tablePath)
			if err != nil {
				return err
			}
			type fileCases struct {
				path string
				tf   *control.TraceFile
			}
			var files []fileCases
			for _, path := range args {
				text, err := readLimited(path, control.MaxTraceFileBytes)
				if err != nil {
					return usagef("%s: %v", path, err)
				}
				tf, err := control.DecodeTraces(text)
				if err != nil {
					return fileError(path, err)
				}
				files = append(files, fileCases{path, tf})
			}
			type caseJSON struct {
				File string `json:"file"`
				control.CaseResult
			}
			var results []caseJSON
			var cov control.Coverage
			passed, failed := 0, 0
			for _, f := range files {
				for _, tc := range f.tf.Cases {
					res, err := m.RunCase(tc)
					if err != nil {
						return fileError(f.path, err)
					}
					if res.Passed {
						passed++
					} else {
						failed++
					}
					cov.Add(m, res)
					results = append(results, caseJSON{f.path, res})
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{
					"table": m.Digest(), "cases": results, "passed": passed, "failed": failed,
					"coverage": cov.Report(m),
				}); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if len(files) > 1 {
						fmt.Fprintf(out, "%s: %s\n", r.File, r.CaseResult)
					} else {
						fmt.Fprintln(out, r.CaseResult)
					}
				}
				fmt.Fprintln(out, cov.Report(m))
				fmt.Fprintf(out, "%d passed, %d failed\n", passed, failed)
			}
			if failed > 0 {
				return errChecksFailed
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON report instead of lines")
	cmd.Flags().StringVar(&tablePath, "table", "", "check against this control table instead of the built-in one")
	return cmd
}

func newFSMTableCmd() *cobra.Command {
	var asJSON bool
	var tablePath string
	cmd := &cobra.Command{
		Use:   "table",
		Short: "Validate and summarise the run FSM table (built-in, or --table FILE)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := loadMachine(tablePath)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type state struct {
					ID      string `json:"id"`
					Outcome string `json:"outcome,omitempty"`
				}
				var states []state
				for _, s := range m.States() {
					states = append(states, state{s.ID, s.Outcome})
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"digest": m.Digest(), "machine": m.ID(), "initial": m.InitialState(),
					"states": states, "transitions": len(m.Transitions()), "events": len(m.Events()),
					"deferred_in": m.DeferredIn(),
				})
			}
			atomic, final := 0, 0
			for _, s := range m.States() {
				if s.Final() {
					final++
				} else {
					atomic++
				}
			}
			fmt.Fprintf(out, "machine %s: valid\n", m.ID())
			fmt.Fprintf(out, "digest  %s\n", m.Digest())
			fmt.Fprintf(out, "states  %d atomic, %d final; initial %s\n", atomic, final, m.InitialState())
			fmt.Fprintf(out, "events  %d; transitions %d; interrupts %d deferred in %v\n",
				len(m.Events()), len(m.Transitions()), len(m.Interrupts()), m.DeferredIn())
			for _, t := range m.Transitions() {
				guard := ""
				if t.Guard != "" {
					guard = " [" + t.Guard + "]"
				}
				fmt.Fprintf(out, "  %-28s %s --%s%s--> %s\n", t.ID, t.From, t.Event, guard, t.To)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&tablePath, "table", "", "validate this control table instead of the built-in one")
	return cmd
}

// readLimited reads at most limit bytes of path and refuses larger files.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("file is larger than %d bytes", limit)
	}
	return b, nil
}

func newFSMContractCmd() *cobra.Command {
	var asJSON bool
	var tablePath, contractPath string
	cmd := &cobra.Command{
		Use:   "contract",
		Short: "Validate the loop contract and its binding to the run FSM table",
		Long: "contract loads the loop contract (built-in, or --contract FILE) against the table\n" +
			"(built-in, or --table FILE). It fails if the contract binds another table digest, or if its\n" +
			"outcomes, effect-critical states, safety properties or effect path disagree with the table.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := loadMachine(tablePath)
			if err != nil {
				return err
			}
			text := control.DefaultContractText()
			if contractPath != "" {
				if text, err = readLimited(contractPath, 1<<20); err != nil {
					return usagef("%s: %v", contractPath, err)
				}
			}
			c, err := control.LoadContract(text, m)
			if err != nil {
				return fileError(orBuiltin(contractPath), err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"digest": c.Digest, "table": c.MachineDigest, "name": c.Name, "tier": c.Tier,
					"budgets": c.Budgets, "no_progress": c.NoProgress, "retry": c.Retry,
				})
			}
			b := c.Budgets
			fmt.Fprintf(out, "contract %s: valid, bound to table %s\n", c.Name, c.MachineDigest)
			fmt.Fprintf(out, "digest   %s\n", c.Digest)
			fmt.Fprintf(out, "budgets  steps %d, tool calls %d, retries/transition %d, wall %ds, suspended %ds, tokens %d, cost %d micro-units, depth %d, parallelism %d; soft checkpoint at %d%%\n",
				b.Limits.Steps, b.Limits.ToolCalls, b.RetriesPerTransition, b.Limits.WallSeconds, b.Limits.SuspendedSeconds,
				b.Limits.Tokens, b.Limits.CostMicros, b.Limits.RecursionDepth, b.Limits.Parallelism, b.SoftPercent)
			np := c.NoProgress
			fmt.Fprintf(out, "progress weights %d/%d/%d (obligation/conflict/receipt), epsilon %d, window %d, threshold %d\n",
				np.Weights.ClosedObligations, np.Weights.ResolvedConflicts, np.Weights.VerifiedReceipts, np.Epsilon, np.WindowRounds, np.Threshold)
			fmt.Fprintf(out, "retry    %d retries, backoff %dms doubling to %dms, equal jitter\n", c.Retry.MaxRetries, c.Retry.BaseMillis, c.Retry.CapMillis)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&tablePath, "table", "", "bind against this control table instead of the built-in one")
	cmd.Flags().StringVar(&contractPath, "contract", "", "validate this loop contract instead of the built-in one")
	return cmd
}

func orBuiltin(path string) string {
	if path == "" {
		return "built-in contract"
	}
	return path
}

func newFSMSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:       "schema table|contract",
		Short:     "Print the JSON Schema of the control table or loop contract format",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"table", "contract"},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "table":
				_, err := cmd.OutOrStdout().Write(control.TableSchema())
				return err
			case "contract":
				_, err := cmd.OutOrStdout().Write(control.ContractSchema())
				return err
			}
			return usagef("schema: want \"table\" or \"contract\", got %q", args[0])
		},
	}
}
