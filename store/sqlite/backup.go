package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/store"
)

// Backup describes a copy of the store that Store.Backup wrote.
type Backup struct {
	Path          string // where the copy is
	Bytes         int64  // its size
	SchemaVersion int64  // the copy's schema version (the store's)
	Runs          int64  // run headers in the copy, pruned runs' included
}

// BackupOptions tune Store.Backup. The zero value is ready to use.
type BackupOptions struct {
	// BeforeRename, when set, is called once the copy is whole, synced
	// and checked under its temporary name, before it takes its own: the
	// crash tests stop the process there.
	BeforeRename func()
}

// PartialSuffix ends the name a backup is written under before it is
// renamed to its own: a file so named is a backup that never finished,
// and the next backup to the same name replaces it.
const PartialSuffix = ".partial"

// Backup writes a consistent copy of the whole store to dest, a file that
// must not exist, and returns what it wrote. The copy is one state of the
// database, read in one transaction while writers go on (they are never
// blocked, in WAL mode, and nothing they commit afterwards is in it); it
// holds every write whose caller had returned when Backup began. It is a
// database of its own in rollback-journal mode, one self-contained file
// that any flrh of this schema version opens as a store, sealed bodies
// sealed as they are (reading them needs the store's key).
//
// The copy is written to dest+PartialSuffix, synced, checked (SQLite's
// integrity_check, and the schema version), then renamed to dest and its
// directory synced: dest is either absent or a whole, checked copy, even
// when the process is killed. A partial file left by an earlier backup
// that did not finish is replaced. Backup never overwrites dest
// (store.CodeExists); on any error it leaves no file behind.
//
// It copies with VACUUM INTO rather than SQLite's online backup API: the
// backup API starts again whenever another connection writes the
// database, and may never finish under a busy runner, where VACUUM INTO
// reads one snapshot and finishes in one pass.
func (s *Store) Backup(ctx context.Context, dest string, opts BackupOptions) (Backup, error) {
	const op = "backup"
	if dest == "" {
		return Backup{}, store.Errorf(store.CodeInvalidInput, op, "", nil, "no file to back up to")
	}
	switch _, err := os.Lstat(dest); {
	case err == nil:
		return Backup{}, store.Errorf(store.CodeExists, op, "", nil, "%s exists; a backup never overwrites a file", dest)
	case !errors.Is(err, os.ErrNotExist):
		return Backup{}, store.Errorf(store.CodeUnavailable, op, "", err, "%s", dest)
	}
	dir := filepath.Dir(dest)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return Backup{}, store.Errorf(store.CodeInvalidInput, op, "", err, "%s: no such directory", dir)
	}
	tmp := dest + PartialSuffix
	if name, ok := s.ownFile(dest, tmp); ok {
		return Backup{}, store.Errorf(store.CodeInvalidInput, op, "", nil, "%s is the store's own file %s", dest, name)
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Backup{}, store.Errorf(store.CodeUnavailable, op, "", err, "remove the unfinished backup %s", tmp)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	// A lagging batch's transaction, left open, is committed first, so
	// that the copy holds every write whose caller has returned.
	// It runs on the writers' pool, not the readers' (whose query_only
	// refuses VACUUM INTO), but writes nothing to the store: it reads the
	// database in one read transaction and takes no write lock.
	s.settle(ctx)
	if _, err := s.db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return Backup{}, backupErr(tmp, err)
	}
	size, err := syncFile(tmp)
	if err != nil {
		return Backup{}, store.Errorf(store.CodeUnavailable, op, "", err, "sync %s", tmp)
	}
	b, err := checkCopy(ctx, op, tmp)
	if err != nil {
		return Backup{}, err
	}
	if b.SchemaVersion != SchemaVersion {
		return Backup{}, store.Errorf(store.CodeCorrupt, op, "", nil, "%s: the copy is at schema version %d, the store at %d", tmp, b.SchemaVersion, SchemaVersion)
	}
	if opts.BeforeRename != nil {
		opts.BeforeRename()
	}
	// Renaming over a file that appeared since the check above would
	// replace it; a hard link refuses instead, and the partial name is
	// then removed.
	if err := publish(op, tmp, dest); err != nil {
		return Backup{}, err
	}
	done = true
	if err := syncDir(dir); err != nil {
		return Backup{}, store.Errorf(store.CodeUnavailable, op, "", err, "sync %s", dir)
	}
	b.Path, b.Bytes = dest, size
	return b, nil
}

// backupErr says why VACUUM INTO failed.
func backupErr(tmp string, err error) error {
	if code, ok := sqliteCode(err); ok && code&0xff == sqlite3.SQLITE_FULL {
		return store.Errorf(store.CodeUnavailable, "backup", "", err, "disk full writing %s; no backup was written", tmp)
	}
	return mapErr("backup", "", err)
}

// checkCopy opens the copy at path read-only, runs SQLite's integrity
// check over every page of it, and reads its schema version and its count
// of runs.
func checkCopy(ctx context.Context, op, path string) (Backup, error) {
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", "trusted_schema(0)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return Backup{}, store.Errorf(store.CodeUnavailable, op, "", err, "open %s", path)
	}
	defer db.Close()
	problems, err := integrityProblems(ctx, op, path, db)
	if err != nil {
		return Backup{}, err
	}
	if len(problems) > 0 {
		return Backup{}, store.Errorf(store.CodeCorrupt, op, "", nil, "%s fails SQLite's integrity check: %s", path, strings.Join(problems, "; "))
	}
	var b Backup
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&b.SchemaVersion); err != nil {
		return Backup{}, mapErr(op, "", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&b.Runs); err != nil {
		return Backup{}, mapErr(op, "", err)
	}
	return b, nil
}

// integrityProblems runs SQLite's integrity check over every page of the
// database db (at path) and returns what it finds wrong, nothing when all
// is well. A database too damaged for the check to run is CORRUPT.
func integrityProblems(ctx context.Context, op, path string, db *sql.DB) ([]string, error) {
	damaged := func(err error) error {
		if store.CodeOf(mapErr(op, "", err)) == store.CodeCorrupt {
			return store.Errorf(store.CodeCorrupt, op, "", err, "%s fails SQLite's integrity check", path)
		}
		return mapErr(op, "", err)
	}
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return nil, damaged(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, damaged(err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, damaged(err)
	}
	return problems, nil
}

// Integrity runs SQLite's integrity check over every page of the store,
// in one read transaction beside the writers, and returns what it finds
// wrong: nothing when all is well. A store too damaged for the check to
// run is store.CodeCorrupt.
func (s *Store) Integrity(ctx context.Context) ([]string, error) {
	return integrityProblems(ctx, "integrity", s.path, s.rdb)
}

// syncFile syncs the file at path to stable storage and returns its size.
func syncFile(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), f.Close()
}

// syncDir syncs a directory, so that a name just given in it lasts.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// publish gives the finished copy at tmp the name dest, for op. Renaming over a
// file that appeared since Backup looked would replace it; a hard link
// refuses instead, and the temporary name is then removed. On a file
// system without hard links it renames, having looked once more.
func publish(op, tmp, dest string) error {
	exists := func() error {
		return store.Errorf(store.CodeExists, op, "", nil, "%s exists; a %s never overwrites a file", dest, op)
	}
	err := os.Link(tmp, dest)
	switch {
	case err == nil:
		if err := os.Remove(tmp); err != nil {
			return store.Errorf(store.CodeUnavailable, op, "", err, "remove %s", tmp)
		}
		return nil
	case errors.Is(err, os.ErrExist):
		return exists()
	}
	if _, serr := os.Lstat(dest); serr == nil {
		return exists()
	}
	if err := os.Rename(tmp, dest); err != nil {
		return store.Errorf(store.CodeUnavailable, op, "", err, "name the backup %s", dest)
	}
	return nil
}

// ownFile says whether either path names the store's database or one of
// the files SQLite keeps beside it (its log, its shared memory, a rollback
// journal), and which: a backup must neither write over one nor, clearing
// an unfinished backup's name, remove one.
func (s *Store) ownFile(paths ...string) (string, bool) {
	base, err := filepath.Abs(s.path)
	if err != nil {
		return s.path, true // cannot tell: refuse rather than risk the store
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p, true
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if abs == base+suffix {
				return s.path + suffix, true
			}
		}
		if a, err := os.Stat(abs); err == nil {
			if b, err := os.Stat(base); err == nil && os.SameFile(a, b) {
				return s.path, true
			}
		}
	}
	return "", false
}
