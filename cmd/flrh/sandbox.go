package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/effect/sandbox"
)

func init() { rootCmd.AddCommand(newSandboxCmd()) }

func newSandboxCmd() *cobra.Command {
	var cfg sandbox.Config
	var quiet bool
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Serve a real HTTP effect destination for demos and tests",
		Long: "sandbox serves a destination that speaks flrh-effect-http/1: it applies mutations\n" +
			"(POST /v1/effects with Idempotency-Key and Content-Digest), records each one with its key,\n" +
			"content digest, body and sequence number, honours idempotency keys (the same key and content\n" +
			"answers the original result; the same key with other content is a 409 conflict), and answers\n" +
			"lookups (GET /v1/effects/KEY).\n\n" +
			"It can be told to misbehave through POST /_sandbox/faults, for example\n" +
			"  {\"key\":\"effect:1\",\"times\":1,\"drop\":true}     apply, then close without answering\n" +
			"  {\"times\":3,\"status\":503}                     fail the next three requests, applying nothing\n" +
			"  {\"times\":1,\"status\":429,\"retry_after\":5}     refuse the next one, asking for five seconds' rest\n" +
			"  {\"times\":1,\"delay_ms\":2000}                  wait two seconds before applying (lookups\n" +
			"                                               say in_progress meanwhile)\n" +
			"  {\"times\":1,\"delay_after_ms\":2000}            apply, then answer two seconds late\n" +
			"GET /_sandbox/mutations shows the ledger; DELETE /_sandbox/faults clears the rules.\n\n" +
			"With --state FILE the ledger is kept in an append-only journal, each mutation fsynced before\n" +
			"it is answered, and loaded at start, so a sandbox killed after applying a mutation still\n" +
			"knows it when restarted on the same file. A damaged journal refuses the start.\n\n" +
			"It binds to loopback only, unless --allow-remote is given, because the admin endpoints are\n" +
			"unauthenticated. Each mutation request is logged to standard error (--quiet to silence).\n" +
			"SIGTERM or SIGINT shuts it down gracefully.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cfg.AllowRemote && !sandbox.IsLoopback(cfg.Addr) {
				return usagef("--addr %q is not a loopback address (use --allow-remote to insist)", cfg.Addr)
			}
			if !quiet {
				cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return sandbox.Run(ctx, cfg, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&cfg.Addr, "addr", "127.0.0.1:8787", "listen address HOST:PORT (port 0 picks a free port)")
	cmd.Flags().StringVar(&cfg.StatePath, "state", "", "journal file (JSON lines) that keeps the ledger across restarts")
	cmd.Flags().BoolVar(&cfg.AllowRemote, "allow-remote", false, "permit a listen address that is not loopback")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "do not log each mutation request to standard error")
	return cmd
}
