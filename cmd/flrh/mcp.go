package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"flrh.dev/flrh/mcp"
)

func init() {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the agent tools over MCP on stdin/stdout (agents read and propose; they never approve)",
		Long: `mcp serves the Model Context Protocol on stdin and stdout for an agent host.

The agent can list workflows and runs, start runs, submit inputs and read a run's
state, effects, receipts and journey. It cannot approve, deny, reconcile or cancel:
no tool does, and everything it submits is recorded under the "agent" role, which
the run FSM never accepts as authority. People approve with "flrh approve" or the
web UI.

A runner advances the runs in the background while the server runs, paying effects
through --destination. Logs go to stderr; stdout carries only the protocol.`,
		Example: `  flrh mcp --store sqlite:./flrh.db --destination http://127.0.0.1:7701/v1/effects`,
		Args:    cobra.NoArgs,
	}
	rf := addRunnerFlags(cmd)
	// The runner here runs for as long as the server does; there is no
	// single pass to wait for.
	cmd.Flags().MarkHidden("wait")
	agent := cmd.Flags().String("agent", mcp.DefaultAgent, "the agent's name in the records of what it submits (its role is always \"agent\")")
	verbose := cmd.Flags().Bool("verbose", false, "log the runner's and the server's activity to stderr")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		st, r, err := rf.open(ctx)
		if err != nil {
			return err
		}
		defer st.Close()
		var logger *slog.Logger
		if *verbose {
			logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
		}
		rctx, rstop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- r.Run(rctx) }()
		srv := mcp.NewServer(mcp.Deps{Store: st, Runner: r, Catalog: mcp.Workflows(builtinWorkflows()), Agent: *agent, Logger: logger})
		err = srv.Run(ctx, &sdk.StdioTransport{})
		rstop()
		if rerr := <-ran; rerr != nil && err == nil {
			err = rerr
		}
		// A client hanging up or a signal is the normal way to stop.
		if err == nil || errors.Is(err, context.Canceled) || ctx.Err() != nil || isClosed(err) {
			return nil
		}
		return fmt.Errorf("mcp: %w", err)
	}
	rootCmd.AddCommand(cmd)
}

// isClosed reports whether err only says that the client went away.
func isClosed(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, os.ErrClosed)
}
