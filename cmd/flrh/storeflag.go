package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// defaultStore is where flrh keeps runs unless told otherwise.
const defaultStore = "sqlite:./flrh.db"

// addStoreFlag adds --store to a command and returns where its value lands.
func addStoreFlag(cmd *cobra.Command) *string {
	s := new(string)
	cmd.Flags().StringVar(s, "store", defaultStore, "the run store: sqlite:PATH (or a plain path), or postgres://USER@HOST:PORT/DB[?schema=NAME]")
	return s
}

// openStore opens the store a --store value names.
func openStore(ctx context.Context, spec string, readOnly bool) (store.Store, error) {
	path := spec
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path = strings.TrimPrefix(spec, "sqlite:")
	case strings.Contains(spec, "://"):
		return openURLStore(ctx, spec, readOnly)
	}
	if path == "" {
		return nil, usagef("empty store path")
	}
	if readOnly {
		// Reading a store that is not there is a mistake in the command
		// line, not an empty store: say so rather than create one.
		if _, err := os.Stat(path); err != nil {
			return nil, usagef("no store at %s (give --store sqlite:PATH)", path)
		}
	}
	return sqlite.Open(ctx, path, sqlite.Options{ReadOnly: readOnly})
}

// builtinWorkflows are the workflows compiled into this binary.
func builtinWorkflows() []runner.Workflow {
	return []runner.Workflow{demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}}
}

func workflowFor(run store.Run) (runner.Workflow, bool) {
	for _, wf := range builtinWorkflows() {
		if wf.ID() == run.WorkflowID && wf.Version() == run.WorkflowVersion {
			return wf, true
		}
	}
	return nil, false
}
