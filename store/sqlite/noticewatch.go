package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"flrh.dev/flrh/store"
)

// noticeLook is how often a notice watcher looks whether the database
// changed: a read of a counter SQLite keeps in the log's shared memory,
// with no I/O while nothing is written.
const noticeLook = 50 * time.Millisecond

// WatchNotices implements store.NoticeWatcher for every process that
// opens the file: a watcher reads, every noticeLook, whether anything was
// committed since its last look (PRAGMA data_version, which counts other
// connections' commits, this process's writer's among them) and, when
// something was, whether a notice is due. A notifier woken so delivers a
// notice another process wrote within about noticeLook, where its poll
// would have waited up to a second.
func (s *Store) WatchNotices(ctx context.Context) store.WorkWaiter {
	return &noticeWatcher{s: s}
}

// noticeWatcher holds a connection of the read pool for data_version,
// which compares commits on one connection only.
type noticeWatcher struct {
	s       *Store
	conn    *sql.Conn // nil until the first Wait, and after an error
	version int64
}

// Wait returns the run id of a notice due when one is found after a
// commit, "" when poll elapsed first (or the database could not be read:
// the caller then looks itself). Only ctx's end is an error.
func (w *noticeWatcher) Wait(ctx context.Context, poll time.Duration) (string, error) {
	deadline := time.NewTimer(poll)
	defer deadline.Stop()
	tick := time.NewTicker(noticeLook)
	defer tick.Stop()
	for {
		if id, ok := w.look(ctx); ok {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-deadline.C:
			return "", nil
		case <-tick.C:
		}
	}
}

// look reads data_version and, when it moved since the last look, the
// run of a notice due now.
func (w *noticeWatcher) look(ctx context.Context) (string, bool) {
	if w.conn == nil {
		conn, err := w.s.rdb.Conn(ctx)
		if err != nil {
			return "", false
		}
		w.conn = conn
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&w.version); err != nil {
			w.drop()
		}
		return "", false // the first look sets the mark
	}
	var v int64
	if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		w.drop()
		return "", false
	}
	if v == w.version {
		return "", false
	}
	w.version = v
	now := w.s.clock().UnixNano()
	var id string
	err := w.conn.QueryRowContext(ctx, `SELECT run_id FROM notices WHERE next_at <= ? AND held_until <= ? LIMIT 1`, now, now).Scan(&id)
	if err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			w.drop()
		}
		return "", false
	}
	return id, true
}

func (w *noticeWatcher) drop() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// Close gives the connection back.
func (w *noticeWatcher) Close() error {
	w.drop()
	return nil
}
