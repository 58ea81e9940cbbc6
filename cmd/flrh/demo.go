package main

import (
	"github.com/spf13/cobra"

	"flrh.dev/flrh/demo"
)

func init() {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the refund agent end to end and print its evidence",
		Long: `demo runs the refund agent on a temporary embedded store against a real HTTP
sandbox destination on loopback: a small refund is paid automatically, a large
one waits for approval and is approved by a named demo approver, a goodwill
refund makes two contestable gates offer different safe paths (H opens
OPTIONS for a person, and the run waits for that choice), and a refund to a
blocked payee is refused by policy (the run waits for further input). It
prints each run's control-FSM path, H's decision, the MRP Journey Strip,
effects, attempts, receipts and outcome, and the sandbox's ledger, and exits 0
only if every run ended, or waits, as the policy requires. With --dir the
store is kept, for flrh run show, verify and replay (the directory is made
if need be; one that holds a store already is refused: a demo starts its
runs afresh).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := demo.Run(cmd.Context(), cmd.OutOrStdout(), demo.Options{Dir: dir}); err != nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "keep the demo's store in this directory (made if need be; not one that holds a store) instead of a temporary one")
	rootCmd.AddCommand(cmd)
}
