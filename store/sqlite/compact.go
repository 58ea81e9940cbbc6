package sqlite

import (
	"context"
	"errors"
	"os"

	"flrh.dev/flrh/store"
)

// Compact implements store.Compactor: the database is rebuilt with
// VACUUM, secure_delete on, so that every page it keeps is written afresh
// with its free space zeroed, and the pages past its new end are cut
// off; then the log is checkpointed and truncated, so that neither file
// holds a byte of a record that was rewritten (resealed), removed
// (pruned) or of a page freed before. What the file system keeps of
// blocks the files no longer use, and copies made before (backups), are
// beyond it.
//
// VACUUM holds the write lock while it runs: writers of other processes
// wait (up to their busy timeout, then fail and try again) and readers
// go on. A reader holding the log (a long read transaction) keeps it from
// being truncated: CodeUnavailable, the database compacted and the log
// not emptied, to be run again.
func (s *Store) Compact(ctx context.Context) (store.Compacted, error) {
	const op = "compact"
	if s.ro {
		return store.Compacted{}, store.Errorf(store.CodeInvalidInput, op, "", nil, "the store is open read-only")
	}
	var c store.Compacted
	c.Before = s.fileBytes()
	// A lagging batch's transaction, left open, is committed first: VACUUM
	// cannot run while a transaction is open on the connection it needs.
	s.settle(ctx)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return c, mapErr(op, "", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return c, mapErr(op, "", err)
	}
	// The connection goes back to the writers' pool: it writes as the
	// others do afterwards.
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA secure_delete = OFF`)
	if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
		return c, mapErr(op, "", err)
	}
	var busy, log, copied int64
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &copied); err != nil {
		return c, mapErr(op, "", err)
	}
	c.After = s.fileBytes()
	if busy != 0 {
		return c, store.Errorf(store.CodeUnavailable, op, "", nil,
			"the database was compacted but a reader kept the log from being emptied (%d of %d pages copied): run compact again", copied, log)
	}
	return c, nil
}

// fileBytes is the size of the database file and its log together.
func (s *Store) fileBytes() int64 {
	var n int64
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		} else if !errors.Is(err, os.ErrNotExist) {
			return -1
		}
	}
	return n
}
