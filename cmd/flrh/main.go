// Command flrh is the command-line face of the flrh runtime: it runs the
// demo, checks run-FSM traces, evaluates Datalog programs, steps active
// inference models and, as the runtime grows, serves and operates runs.
//
// Every subcommand lives in its own file and registers itself with the root
// command in an init function, so the command tree is the sum of those files.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes. They are part of the interface: scripts branch on them.
const (
	exitOK      = 0 // the command did what was asked and every check passed
	exitFailure = 1 // the command ran but a check failed or the work was refused
	exitUsage   = 2 // the command line or an input file was malformed
)

// rootCmd is the top of the command tree. Subcommands attach themselves in
// init functions of their own files.
var rootCmd = &cobra.Command{
	Use:           "flrh",
	Short:         "flrh — a deterministic, governed runtime for agent loops",
	Long:          "flrh decides with evidence whether each action an agent proposes may reach the world,\nexecutes it at most once logically, reconciles what really happened, and makes every run\nreplayable and explainable.",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// usageError marks an error as the caller's fault (bad flags, unreadable or
// malformed input), so main exits with exitUsage rather than exitFailure.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef builds a usageError.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// failure is returned by a command whose checks failed after it already
// printed its report; main exits with exitFailure and prints nothing more.
var errChecksFailed = errors.New("checks failed")

func main() {
	rootCmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	err := rootCmd.Execute()
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errChecksFailed) {
		return exitFailure
	}
	fmt.Fprintln(os.Stderr, "flrh:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	// Cobra reports unknown commands and bad arguments as plain errors.
	if isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
