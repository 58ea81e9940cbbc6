package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
)

func init() {
	reseal := &cobra.Command{Use: "reseal",
		Short: "Seal every checkpoint and trace record again under the current encryption key",
		Long: `reseal finishes a key rotation. With a store encrypted at rest, records are
sealed under the key that was first when they were written; after a rotation
the older keys must stay in the key file for those records to open. reseal
opens every checkpoint and trace record of every run (or of the --run ones)
and seals each one not under the current (first) key again under it, at the
position it was written for: what they say does not change, and flrh verify
and flrh replay read them as before. Once it reports none failed, the older
keys can be dropped from the key file.

With --dry-run it opens and counts every record and writes nothing: what a
pass would do, and whether every record opens with the keys given.

With --clear it also seals records stored in clear: a store that held runs
before encryption was turned on becomes wholly encrypted, and those runs
can be read and advanced with the key.

Each run is resealed in one transaction, while runners go on (a run's pass
waits for its other writes, and theirs for it): a run whose pass is cut
short keeps every record as it was. Give every process the new key first:
one still sealing with the old key writes records the pass has not seen.
A record that does not open (a key the key file lacks, a record that fails
authentication) fails its run's pass, which writes nothing, and reseal goes
on with the others; exit status 1 if any failed.`,
		Args: cobra.NoArgs}
	storeSpec := addStoreFlag(reseal)
	clear := reseal.Flags().Bool("clear", false, "also seal records stored in clear (written before the store was encrypted)")
	only := reseal.Flags().StringSlice("run", nil, "reseal these runs only (repeatable)")
	dryRun := reseal.Flags().Bool("dry-run", false, "open and count every record as reseal would, and write nothing")
	asJSON := reseal.Flags().Bool("json", false, "print JSON")
	compact := reseal.Flags().Bool("compact", false, "then, when every run was resealed, rewrite the store's files so that they keep no byte of the old records (flrh store compact)")
	reseal.RunE = func(cmd *cobra.Command, _ []string) error {
		sealer, err := storeSealer()
		if err != nil {
			return err
		}
		if sealer == nil {
			return usagef("reseal seals under the store's encryption key: give --encryption-key-file (or set %s)", encryptionKeyEnv)
		}
		ctx := cmd.Context()
		st, err := openStoreThere(ctx, *storeSpec, false, true)
		if err != nil {
			return err
		}
		defer st.Close()
		if *compact && *dryRun {
			return usagef("--compact rewrites the store's files; a --dry-run writes nothing")
		}
		rep, err := resealStore(ctx, st, sealer, *only, store.ResealOptions{Clear: *clear, DryRun: *dryRun})
		if !*dryRun && !*compact && rep.Counts.Resealed > 0 {
			rep.Log = emptyStoreLog(ctx, st)
		}
		if err == nil && *compact && len(rep.Failed) == 0 {
			var c compactReport
			c, err = compactStore(ctx, st)
			rep.Compacted = &c.Compacted
		}
		return finishReport(cmd.OutOrStdout(), *asJSON, rep, err, len(rep.Failed) > 0)
	}
	storeCmd.AddCommand(reseal)
}

// resealReport is what reseal did, run by run.
type resealReport struct {
	Key    string          `json:"key"` // the key records are now sealed under
	Runs   int             `json:"runs"`
	Clear  bool            `json:"clear_asked"`
	DryRun bool            `json:"dry_run"`
	Counts store.Resealed  `json:"records"`
	Failed []resealFailure `json:"failed"`
	// Compacted is what --compact did, nil without it (or when a run
	// failed: the old key is still needed, and so are its records).
	Compacted *store.Compacted `json:"compacted,omitempty"`
	// Log is what emptying the store's log after the pass did (SQLite;
	// omitted for a store that keeps none, a dry run, nothing resealed, or
	// with --compact, which empties it too).
	Log *logEmptied `json:"log,omitempty"`
}

type resealFailure struct {
	Run   string     `json:"run"`
	Code  store.Code `json:"code"`
	Error string     `json:"error"`
}

func (r resealReport) print(w io.Writer) {
	for _, f := range r.Failed {
		fmt.Fprintf(w, "run %s: not resealed (%s): %s\n", f.Run, f.Code, f.Error)
	}
	verb := "sealed again"
	if r.DryRun {
		verb = "would be sealed again (dry run, nothing written)"
	}
	fmt.Fprintf(w, "%d records %s under key %s, %d already under it, over %d runs", r.Counts.Resealed, verb, r.Key, r.Counts.Current, r.Runs)
	if r.Counts.Clear > 0 {
		fmt.Fprintf(w, "; %d left in clear (--clear seals them)", r.Counts.Clear)
	}
	if len(r.Failed) > 0 {
		fmt.Fprintf(w, "; %d runs failed, keep the older keys until they are resealed", len(r.Failed))
	}
	fmt.Fprintln(w)
	r.Log.print(w, "records as they were sealed before")
	if r.Compacted != nil {
		compactReport{*r.Compacted}.print(w)
	}
}

// resealStore reseals the named runs, or every run the store holds, one
// transaction each, going on past a run that fails.
func resealStore(ctx context.Context, st store.Store, sealer store.Sealer, only []string, opts store.ResealOptions) (resealReport, error) {
	rep := resealReport{Clear: opts.Clear, DryRun: opts.DryRun, Failed: []resealFailure{}}
	if p, ok := sealer.(store.PrimaryKeyed); ok {
		rep.Key = p.Primary()
	}
	rs, ok := store.As[store.Resealer](st)
	if !ok {
		return rep, fmt.Errorf("this store cannot reseal its records")
	}
	ids, _, err := runIDs(ctx, st, only, len(only) == 0)
	if err != nil {
		return rep, err
	}
	for _, id := range ids {
		n, err := rs.Reseal(ctx, id, opts)
		if err != nil {
			if ctx.Err() != nil {
				return rep, err
			}
			rep.Failed = append(rep.Failed, resealFailure{Run: id, Code: store.CodeOf(err), Error: err.Error()})
			continue
		}
		rep.Runs++
		rep.Counts.Add(n)
	}
	return rep, nil
}
