package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/store"
)

// Restored describes what Restore did.
type Restored struct {
	Path          string // the store, now a copy of the backup
	SchemaVersion int64  // the backup's schema version (the store is migrated past it when older)
	Runs          int64  // run headers in the backup
	// Replaced is where the store that was at Path went, "" when there
	// was none. Restore never deletes a store: it sets it aside.
	Replaced string
}

// RestoreOptions tune Restore. The zero value is ready to use.
type RestoreOptions struct {
	// Now stamps the name the replaced store is set aside under; zero
	// means the clock's reading.
	Now time.Time
	// Cut, when set, is called at restore's cut points for the crash
	// tests: "restore-written" once the copy of the backup is whole and
	// synced under its temporary name, the store still in its place;
	// "restore-set-aside" once the store is set aside, the copy not yet
	// named.
	Cut func(point string)
}

// ReplacedInfix names a store Restore set aside: path + ReplacedInfix + a
// UTC time.
const ReplacedInfix = ".replaced-"

// Restore puts a copy of the backup at from (a file Store.Backup wrote)
// in the place of the store at path, and opens it once so that it is
// migrated to this build's schema and in WAL mode again.
//
// The backup is checked first (SQLite's integrity check; its schema
// version no newer than this build's); a file in WAL mode is refused, as
// it may be a live store whose latest commits are in its log, not a
// backup. The store at path, if there is one, must not be open anywhere:
// Restore takes it out of WAL mode, which SQLite allows only to a
// connection alone with the database (store.CodeUnavailable otherwise).
// The copy is then written whole as path + PartialSuffix and synced; a
// copy that fails (a full disk) leaves the store as it was. Only then is
// the store, checked alone once more and now one self-contained file, set
// aside under path + ReplacedInfix + the time (a store too damaged to open
// is set aside with whatever log is beside it), and the copy named path,
// the directory synced.
//
// Killed anywhere, Restore leaves the old store in place, or no store at
// path and the old one set aside, or the restored store: run again, it
// finishes.
func Restore(ctx context.Context, from, path string, opts RestoreOptions) (Restored, error) {
	const op = "restore"
	cut := func(point string) {
		if opts.Cut != nil {
			opts.Cut(point)
		}
	}
	if from == "" || path == "" {
		return Restored{}, store.Errorf(store.CodeInvalidInput, op, "", nil, "restore needs a backup and a store path")
	}
	fi, err := os.Stat(from)
	switch {
	case err != nil:
		return Restored{}, store.Errorf(store.CodeInvalidInput, op, "", err, "no backup at %s", from)
	case !fi.Mode().IsRegular():
		return Restored{}, store.Errorf(store.CodeInvalidInput, op, "", nil, "%s is not a file", from)
	}
	if pi, err := os.Stat(path); err == nil && os.SameFile(fi, pi) {
		return Restored{}, store.Errorf(store.CodeInvalidInput, op, "", nil, "%s is the store itself", from)
	}
	if wal, err := inWALMode(from); err != nil {
		return Restored{}, store.Errorf(store.CodeUnavailable, op, "", err, "read %s", from)
	} else if wal {
		return Restored{}, store.Errorf(store.CodeInvalidInput, op, "", nil,
			"%s is a store in WAL mode, not a backup (its latest commits may be in its log); back it up with flrh store backup and restore that", from)
	}
	b, err := checkCopy(ctx, op, from)
	if err != nil {
		return Restored{}, err
	}
	if b.SchemaVersion > SchemaVersion {
		return Restored{}, store.Errorf(store.CodeSchemaTooNew, op, "", nil,
			"%s is at schema version %d, newer than this build's %d", from, b.SchemaVersion, SchemaVersion)
	}
	r := Restored{Path: path, SchemaVersion: b.SchemaVersion, Runs: b.Runs}

	exists := false
	switch _, err := os.Lstat(path); {
	case err == nil:
		// Refused now, before anything is written, if the store is open.
		if err := aloneWith(ctx, path); err != nil {
			return Restored{}, err
		}
		exists = true
	case !errors.Is(err, os.ErrNotExist):
		return Restored{}, store.Errorf(store.CodeUnavailable, op, "", err, "%s", path)
	default:
		// No store: its log must not be there either, or the copy would
		// open with another database's commits in it.
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
			return Restored{}, store.Errorf(store.CodeInvalidInput, op, "", nil,
				"%s-wal holds a log without its database; move it away first", path)
		}
	}

	// The copy is made whole beside the store before the store is moved:
	// a copy that fails (a full disk) leaves the store where it was.
	tmp := path + PartialSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Restored{}, store.Errorf(store.CodeUnavailable, op, "", err, "remove the unfinished copy %s", tmp)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	if err := copyFile(from, tmp); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return Restored{}, store.Errorf(store.CodeUnavailable, op, "", err, "disk full copying %s to %s; the store is as it was", from, tmp)
		}
		return Restored{}, store.Errorf(store.CodeUnavailable, op, "", err, "copy %s to %s; the store is as it was", from, tmp)
	}
	cut("restore-written")
	if exists {
		now := opts.Now
		if now.IsZero() {
			now = time.Now()
		}
		var err error
		if r.Replaced, err = setAside(ctx, path, path+ReplacedInfix+now.UTC().Format("20060102T150405.000000000Z")); err != nil {
			return Restored{}, err
		}
		cut("restore-set-aside")
	} else {
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
	}
	if err := publish(op, tmp, path); err != nil {
		return Restored{}, err
	}
	done = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return Restored{}, store.Errorf(store.CodeUnavailable, op, "", err, "sync %s", filepath.Dir(path))
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		return r, err
	}
	return r, s.Close()
}

// inWALMode says whether the database file at path is in WAL mode: the
// file format's read and write versions (header bytes 18 and 19) are 2.
func inWALMode(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, nil // too short to be a database: checkCopy says what it is
	}
	return h[18] == 2 || h[19] == 2, nil
}

// setAside renames the store at path to aside, its log and shared memory
// with it, once aloneWith has found nothing else has it open.
func setAside(ctx context.Context, path, aside string) (string, error) {
	const op = "restore"
	if err := aloneWith(ctx, path); err != nil {
		return "", err
	}
	if _, err := os.Lstat(aside); err == nil {
		return "", store.Errorf(store.CodeExists, op, "", nil, "%s exists", aside)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", store.Errorf(store.CodeUnavailable, op, "", err, "set %s%s aside", path, suffix)
		}
	}
	if err := os.Rename(path, aside); err != nil {
		return "", store.Errorf(store.CodeUnavailable, op, "", err, "set %s aside", path)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", store.Errorf(store.CodeUnavailable, op, "", err, "sync %s", filepath.Dir(path))
	}
	return aside, nil
}

// aloneWith takes the store at path out of WAL mode, which SQLite does
// only for a connection alone with the database, and which folds the log
// into the file: a store open anywhere is refused, and one left alone is
// one self-contained file. A store SQLite cannot read at all passes, to be
// set aside as it is.
func aloneWith(ctx context.Context, path string) error {
	const op = "restore"
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(0)&_pragma=trusted_schema(0)")
	if err != nil {
		return store.Errorf(store.CodeUnavailable, op, "", err, "open %s", path)
	}
	var mode string
	err = db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode)
	db.Close()
	code, _ := sqliteCode(err)
	switch {
	case err == nil && mode == "delete":
	case err == nil:
		return store.Errorf(store.CodeUnavailable, op, "", nil, "%s stays in %s mode; is it open elsewhere?", path, mode)
	case code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED:
		return store.Errorf(store.CodeUnavailable, op, "", err,
			"the store at %s is open (a runner, the server, or another command); stop everything that uses it, then restore", path)
	case code&0xff == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB:
		// Damaged: set aside as it is, with its log.
	default:
		return mapErr(op, "", err)
	}
	return nil
}

// copyFile copies from to a new file to, synced.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
