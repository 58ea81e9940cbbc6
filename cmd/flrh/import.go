package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
)

func init() {
	imp := &cobra.Command{Use: "import --from STORE",
		Short: "Take another store's pruned runs in: their headers, prunings and idempotency keys",
		Long: `import copies what another store keeps of each run it pruned (flrh store prune)
into this one: the run's header, its pruning (the archive's digest) and each of
its effects' idempotency keys, bound to the content they were committed with.
The run's id is then taken in this store too, flrh verify --archive FILE --store
ties each archive to it, and no run of this store can commit an effect an
imported run committed: how runs move from the embedded store to PostgreSQL
(docs/postgres.md).

A run the other store has not pruned is left and reported (prune it first; a
run still live must end first). So is a run whose id, or one of whose keys,
this store holds already for something else. A run imported before is
counted as such and not written again. Exit status 1 when any run is left.`,
		Args: cobra.NoArgs}
	iStore := addStoreFlag(imp)
	iFrom := imp.Flags().String("from", "", "the store to take the pruned runs from (opened read-only)")
	iJSON := imp.Flags().Bool("json", false, "print JSON")
	imp.RunE = func(cmd *cobra.Command, _ []string) error {
		if *iFrom == "" {
			return usagef("--from STORE is required")
		}
		if *iFrom == *iStore {
			return usagef("--from and --store name the same store")
		}
		ctx := cmd.Context()
		src, err := openStore(ctx, *iFrom, true)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := openStore(ctx, *iStore, false)
		if err != nil {
			return err
		}
		defer dst.Close()
		rep, err := importPruned(ctx, src, dst)
		return finishReport(cmd.OutOrStdout(), *iJSON, rep, err, len(rep.Left) > 0)
	}
	storeCmd.AddCommand(imp)
}

// importReport is what flrh store import did, run by run.
type importReport struct {
	Imported []string     `json:"imported"`
	Keys     int          `json:"keys"`    // idempotency keys imported
	Already  []string     `json:"already"` // imported before
	Left     []skippedRun `json:"left"`
}

// finishReport prints rep for people, or as JSON, then returns err, or
// errChecksFailed when failed: how the store commands that report run by
// run end.
func finishReport(w io.Writer, asJSON bool, rep interface{ print(io.Writer) }, err error, failed bool) error {
	if asJSON {
		if jerr := json.NewEncoder(w).Encode(rep); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		rep.print(w)
	}
	if err != nil {
		return err
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

func (r importReport) print(w io.Writer) {
	for _, l := range r.Left {
		fmt.Fprintf(w, "left %s: %s\n", l.RunID, l.Reason)
	}
	fmt.Fprintf(w, "imported %d pruned runs (%d idempotency keys); %d imported before; left %d\n", len(r.Imported), r.Keys, len(r.Already), len(r.Left))
}

// importPruned takes every run src pruned into dst, in src's creation
// order. A run that cannot be taken (not pruned, or its id or a key taken
// in dst) is left; a failure of either store stops it.
func importPruned(ctx context.Context, src, dst store.Store) (importReport, error) {
	rep := importReport{Imported: []string{}, Already: []string{}, Left: []skippedRun{}}
	from, ok := store.PrunedMoverOf(src)
	pr, ok2 := store.PrunerOf(src)
	to, ok3 := store.PrunedMoverOf(dst)
	if !ok || !ok2 || !ok3 {
		return rep, usagef("these stores cannot move pruned runs")
	}
	err := walkPrunings(ctx, src, pr, func(r store.Run, p *store.Pruning) error {
		left := func(why string) { rep.Left = append(rep.Left, skippedRun{RunID: r.ID, Reason: why}) }
		switch {
		case r.Outcome == "":
			left(fmt.Sprintf("it has not ended (state %s)", r.State))
			return nil
		case p == nil:
			left("it is not pruned (flrh store prune it first)")
			return nil
		}
		keys, err := from.PrunedKeys(ctx, r.ID)
		if err != nil {
			return err
		}
		imported, err := to.ImportPruned(ctx, store.PrunedRun{Run: r, Pruning: *p, Keys: keys})
		switch c := store.CodeOf(err); {
		case c == store.CodeExists || c == store.CodeIdempotencyConflict || c == store.CodeInvalidInput:
			left(fmt.Sprintf("this store refused: %v", err))
		case err != nil:
			return fmt.Errorf("run %s: %w", r.ID, err)
		case imported:
			rep.Imported = append(rep.Imported, r.ID)
			rep.Keys += len(keys)
		default:
			rep.Already = append(rep.Already, r.ID)
		}
		return nil
	})
	return rep, err
}

// walkPrunings calls fn with each run of st in creation order and, for an
// ended run pr pruned, its pruning (nil for any other); an error from fn
// or the store stops the walk.
func walkPrunings(ctx context.Context, st store.Store, pr store.Pruner, fn func(r store.Run, p *store.Pruning) error) error {
	const page = 500
	after := ""
	for {
		runs, err := st.Runs(ctx, after, page)
		if err != nil {
			return err
		}
		for _, r := range runs {
			var p *store.Pruning
			if r.Outcome != "" {
				got, err := pr.Pruning(ctx, r.ID)
				switch {
				case err == nil:
					p = &got
				case store.CodeOf(err) != store.CodeNotFound:
					return err
				}
			}
			if err := fn(r, p); err != nil {
				return err
			}
		}
		if len(runs) < page {
			return nil
		}
		after = runs[len(runs)-1].ID
	}
}
