package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
)

func init() {
	compact := &cobra.Command{Use: "compact",
		Short: "Rewrite the store's files so that they keep no byte of records resealed or pruned",
		Long: `compact rewrites the store's files from what it keeps, so that no byte of a
record rewritten or removed remains in them: records resealed under a new key
(or sealed from clear) by flrh store reseal, runs pruned by flrh store prune.
Run it when the old key may have leaked, or when what was pruned must not be
read from the store's files again.

The embedded store is rebuilt (SQLite's VACUUM, freed space zeroed) and its
log emptied: writers of other processes wait while it runs. A PostgreSQL
store has each table of its schema rewritten (VACUUM FULL, the tables' owner
needed), each locked against every other use meanwhile; PostgreSQL's WAL,
its archives and base backups taken before keep what they kept, as backups
of either store do: expire them too.`,
		Example: `  flrh store reseal --clear --encryption-key-file flrh.key && flrh store compact
  flrh store compact --store 'postgres://flrh@db.internal/flrh' --json`,
		Args: cobra.NoArgs,
	}
	storeSpec := addStoreFlag(compact)
	asJSON := compact.Flags().Bool("json", false, "print JSON")
	compact.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		st, err := openStoreThere(ctx, *storeSpec, false, true)
		if err != nil {
			return err
		}
		defer st.Close()
		rep, err := compactStore(ctx, st)
		return finishReport(cmd.OutOrStdout(), *asJSON, rep, err, false)
	}
	storeCmd.AddCommand(compact)
}

// compactReport is what compact did.
type compactReport struct {
	store.Compacted
}

func (r compactReport) print(w io.Writer) {
	fmt.Fprintf(w, "compacted: %s before, %s after", diskSize(r.Before), diskSize(r.After))
	if len(r.Tables) > 0 {
		fmt.Fprintf(w, " (%d tables rewritten)", len(r.Tables))
	}
	fmt.Fprintln(w)
}

// compactStore compacts st.
func compactStore(ctx context.Context, st store.Store) (compactReport, error) {
	c, ok := store.As[store.Compactor](st)
	if !ok {
		return compactReport{}, fmt.Errorf("this store cannot compact its files")
	}
	done, err := c.Compact(ctx)
	return compactReport{done}, err
}

// diskSize writes n bytes for people: B, KiB, MiB or GiB; "unknown" for
// a negative n.
func diskSize(n int64) string {
	switch {
	case n < 0:
		return "unknown"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
