package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

func init() {
	backup := &cobra.Command{Use: "backup --to FILE",
		Short: "Write a consistent copy of an embedded store to a file, while runners go on",
		Long: `backup copies the whole SQLite store into FILE: one state of the database,
read in one transaction while runners and the server go on writing (they are
never blocked, and nothing they commit after backup begins is in the copy).
The copy is written as FILE` + sqlite.PartialSuffix + `, synced, checked page by page with
SQLite's integrity check, and only then named FILE, its directory synced: FILE
is either absent or a whole copy, even if backup is killed. backup never
overwrites a file. The copy is itself a store (one file, no log beside it):
read it with --store sqlite:FILE, or restore it by putting it in the store's
place while nothing has the store open. A store encrypted at rest is copied
encrypted, and reading the copy needs the same key.

With --verify, every run in the copy is then verified as flrh verify --all
does; exit status 1 if any check fails (the copy is kept: it is a faithful copy
of the store, which holds the same runs).

A PostgreSQL store is backed up by PostgreSQL's own means (pg_dump, or base
backups with archived WAL): see docs/postgres.md.`,
		Args: cobra.NoArgs}
	bStore := addStoreFlag(backup)
	bTo := backup.Flags().String("to", "", "the file to write the copy to; it must not exist")
	bVerify := backup.Flags().Bool("verify", false, "verify every run in the copy")
	bJSON := backup.Flags().Bool("json", false, "print JSON")
	backup.RunE = func(cmd *cobra.Command, _ []string) error {
		if *bTo == "" {
			return usagef("--to FILE is required")
		}
		if strings.Contains(*bStore, "://") {
			return usagef("flrh store backup copies an embedded (SQLite) store; back a PostgreSQL store up with pg_dump or base backups (docs/postgres.md)")
		}
		ctx := cmd.Context()
		st, err := openStore(ctx, *bStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		rep, err := backupStore(ctx, st, *bTo, *bVerify, faultCut())
		if rep.Path == "" {
			return err
		}
		// The copy is written: say so, even when verifying it could not be done.
		return finishReport(cmd.OutOrStdout(), *bJSON, rep, err, rep.Verified != nil && rep.Verified.Failed > 0)
	}
	storeCmd.AddCommand(backup)

	restore := &cobra.Command{Use: "restore --from BACKUP",
		Short: "Put a backup in an embedded store's place; the store it replaces is set aside",
		Long: `restore replaces the SQLite store with a copy of a backup flrh store backup
wrote. The backup is checked first (page by page, and its schema version no
newer than this build's). Nothing may have the store open: restore refuses
while a runner, the server or any other command uses it. The store it replaces
is never deleted: it is set aside, whole, as PATH` + sqlite.ReplacedInfix + `TIME. The copy is
written as PATH` + sqlite.PartialSuffix + `, synced, and named PATH; killed, restore is simply
run again.

Restoring takes the store back to the backup's moment. What runs did after it
is forgotten by the store, not by the world: an effect committed before the
backup and executed after it is attempted again with the same idempotency key,
which the destination answers with its first result; runs, approvals and
inputs given after the backup must be given again.`,
		Args: cobra.NoArgs}
	rStore := addStoreFlag(restore)
	rFrom := restore.Flags().String("from", "", "the backup to restore")
	rJSON := restore.Flags().Bool("json", false, "print JSON")
	restore.RunE = func(cmd *cobra.Command, _ []string) error {
		if *rFrom == "" {
			return usagef("--from BACKUP is required")
		}
		path, err := sqlitePath(*rStore)
		if err != nil {
			return err
		}
		r, err := sqlite.Restore(cmd.Context(), *rFrom, path, sqlite.RestoreOptions{Cut: faultCut()})
		if code := store.CodeOf(err); code == store.CodeInvalidInput || code == store.CodeExists {
			return usagef("%v", err)
		} else if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *rJSON {
			return json.NewEncoder(out).Encode(restoreReport{Path: r.Path, SchemaVersion: r.SchemaVersion, Runs: r.Runs, Replaced: r.Replaced})
		}
		fmt.Fprintf(out, "restored %d runs from %s to %s (schema version %d)\n", r.Runs, *rFrom, r.Path, r.SchemaVersion)
		if r.Replaced != "" {
			fmt.Fprintf(out, "the store it replaced is set aside as %s\n", r.Replaced)
		}
		return nil
	}
	storeCmd.AddCommand(restore)
}

// restoreReport is what flrh store restore --json prints.
type restoreReport struct {
	Path          string `json:"path"`
	SchemaVersion int64  `json:"schema_version"`
	Runs          int64  `json:"runs"`
	Replaced      string `json:"replaced,omitempty"`
}

// sqlitePath is the file of the SQLite store a --store value names; a
// PostgreSQL store is restored by PostgreSQL's own means.
func sqlitePath(spec string) (string, error) {
	if strings.Contains(spec, "://") {
		return "", usagef("flrh store restore restores an embedded (SQLite) store; restore a PostgreSQL store with pg_restore or from a base backup (docs/postgres.md)")
	}
	path := strings.TrimPrefix(spec, "sqlite:")
	if path == "" {
		return "", usagef("empty store path")
	}
	return path, nil
}

// backupReport is what flrh store backup prints.
type backupReport struct {
	Path          string          `json:"path"`
	Bytes         int64           `json:"bytes"`
	SchemaVersion int64           `json:"schema_version"`
	Runs          int64           `json:"runs"`
	Verified      *backupVerified `json:"verified,omitempty"`
}

// backupVerified sums up verifying every run of a backup.
type backupVerified struct {
	Runs   int `json:"runs"`
	Pruned int `json:"pruned"` // runs reported pruned (their records are archived)
	Failed int `json:"failed"`
	// Failures are the failing runs' reports.
	Failures []*verify.Report `json:"failures,omitempty"`
}

// backupStore backs st up to dest and, when check, verifies every run of
// the copy, opened read-only as a store of its own. cut, when not nil, is
// called at the crash tests' cut point "backup-written": the copy whole
// and synced under its temporary name, not yet under its own.
func backupStore(ctx context.Context, st store.Store, dest string, check bool, cut func(string)) (backupReport, error) {
	sq, ok := store.As[*sqlite.Store](st)
	if !ok {
		return backupReport{}, usagef("this store cannot be backed up by flrh (only an embedded SQLite store can)")
	}
	var opts sqlite.BackupOptions
	if cut != nil {
		opts.BeforeRename = func() { cut("backup-written") }
	}
	b, err := sq.Backup(ctx, dest, opts)
	switch code := store.CodeOf(err); {
	case err == nil:
	case code == store.CodeExists || code == store.CodeInvalidInput:
		// --to names a file in the way, the store's own, or none at all.
		return backupReport{}, usagef("%v", err)
	default:
		return backupReport{}, err
	}
	rep := backupReport{Path: b.Path, Bytes: b.Bytes, SchemaVersion: b.SchemaVersion, Runs: b.Runs}
	if !check {
		return rep, nil
	}
	unverified := func(err error) error {
		return fmt.Errorf("the backup is written, but could not be verified: %w", err)
	}
	cp, err := openStore(ctx, "sqlite:"+b.Path, true)
	if err != nil {
		return rep, unverified(err)
	}
	defer cp.Close()
	ids, _, err := runIDs(ctx, cp, nil, true)
	if err != nil {
		return rep, unverified(err)
	}
	reports, err := verify.Many(ctx, cp, nil, ids)
	if err != nil {
		return rep, unverified(err)
	}
	v := &backupVerified{Runs: len(reports)}
	for _, r := range reports {
		if r.Pruned != nil {
			v.Pruned++
		}
		if !r.OK() {
			v.Failed++
			v.Failures = append(v.Failures, r)
		}
	}
	rep.Verified = v
	return rep, nil
}

func (r backupReport) print(w io.Writer) {
	fmt.Fprintf(w, "backed up %d runs to %s (%d bytes, schema version %d)\n", r.Runs, r.Path, r.Bytes, r.SchemaVersion)
	v := r.Verified
	if v == nil {
		return
	}
	if v.Failed == 0 {
		fmt.Fprintf(w, "verified the copy: %d runs intact (%d pruned)\n", v.Runs, v.Pruned)
		return
	}
	fmt.Fprintf(w, "verified the copy: %d of %d runs fail (the store holds the same records):\n", v.Failed, v.Runs)
	for _, f := range v.Failures {
		printVerify(w, f)
	}
}
