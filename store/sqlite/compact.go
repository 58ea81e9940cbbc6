package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

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
	err = emptyLog(ctx, conn, op, "the database was compacted but ")
	c.After = s.fileBytes()
	return c, err
}

// EmptyLog implements store.LogEmptier: the log is checkpointed and
// truncated (wal_checkpoint(TRUNCATE)). Pruning and resealing zero what
// they remove in the pages they write (secure_delete), so once the log
// holding the pages as they were is gone, neither file holds it. Writers
// wait while it runs, and it waits for readers at most emptyLogWait (a
// scheduled prune must not hold a busy server's writers for the busy
// timeout): past that, CodeUnavailable, the log left for another time.
func (s *Store) EmptyLog(ctx context.Context) error {
	const op = "empty log"
	if s.ro {
		return store.Errorf(store.CodeInvalidInput, op, "", nil, "the store is open read-only")
	}
	s.settle(ctx) // a lagging batch's open transaction would hold the log
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return mapErr(op, "", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, emptyLogWait.Milliseconds())); err != nil {
		return mapErr(op, "", err)
	}
	// The connection goes back to the pool: with the pool's timeout.
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA busy_timeout = %d`, s.busy.Milliseconds()))
	return emptyLog(ctx, conn, op, "")
}

// emptyLogWait bounds how long EmptyLog waits for readers (and writers
// for it).
const emptyLogWait = 250 * time.Millisecond

// emptyLog checkpoints and truncates the log on conn; a reader that kept
// it from being emptied is CodeUnavailable, said after done.
func emptyLog(ctx context.Context, conn *sql.Conn, op, done string) error {
	var busy, log, copied int64
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &copied); err != nil {
		return mapErr(op, "", err)
	}
	if busy != 0 {
		return store.Errorf(store.CodeUnavailable, op, "", nil,
			"%sa reader kept the log from being emptied (%d of %d pages copied): run it again", done, copied, log)
	}
	return nil
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
