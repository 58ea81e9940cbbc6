package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// The write-ahead log's checkpoint, off the commit path.
//
// SQLite copies the log's pages back into the database file once the log
// holds wal_autocheckpoint frames (1,000 by default), at the end of the
// COMMIT that crossed the mark, on the committing connection: the commit
// that happens to cross it reads the log back, writes the pages it names
// and syncs the database file before its caller learns it committed. The
// writing connection's automatic checkpoint is set to walBackstopFrames
// instead, and a goroutine of the store's, on a connection of its own,
// runs a PASSIVE checkpoint each time the writer's COMMITs have written
// walCheckpointFrames log pages since it was last asked: it copies what
// is committed while the writer goes on writing, and never waits for a
// lock. SQLite restarts the log from its beginning at the first write
// after a checkpoint that copied every frame, as it does after its own.
//
// Crash safety is SQLite's checkpoint protocol, whichever connection runs
// it: the log is synced before any page is copied and the database file
// after, and a checkpoint cut short leaves the log to be copied again.
// The log stays bounded if the goroutine falls behind or fails: once it
// holds walBackstopFrames frames the writer's own automatic checkpoint
// runs again at each COMMIT.

const (
	// walCheckpointFrames is how many log pages the writer's COMMITs write
	// before the checkpointer is asked to run: SQLite's own default mark.
	walCheckpointFrames = 1000
	// walBackstopFrames is the writing connection's wal_autocheckpoint.
	walBackstopFrames = 4000
)

// checkpointer runs the log's checkpoints on a connection of its own.
type checkpointer struct {
	wake  chan struct{} // a checkpoint is due; buffered, never blocks the writer
	stop  chan struct{} // closed by Close
	done  chan struct{} // closed when the goroutine has returned
	once  sync.Once     // the goroutine is started at the first wake
	ended sync.Once     // stop closed (Close may run more than once)
	// every is the frames between wakes (walCheckpointFrames; tests change
	// it before the first write).
	every int
	conn  *sql.Conn // opened at the first checkpoint, dropped after an error
	// test, when set, sees each checkpoint's answer: SQLite's busy flag,
	// the frames in the log and those copied.
	test func(busy, log, copied int64, err error)
}

func newCheckpointer() checkpointer {
	return checkpointer{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), every: walCheckpointFrames}
}

// walFrames adds the log pages the COMMIT just made on the writing
// connection wrote (SQLite's count of pages the connection wrote, read
// and reset) and asks for a checkpoint when walCheckpointFrames have been
// written since the last ask.
func (s *Store) walFrames(tx *wtx) {
	n, ok := tx.cacheWrites()
	if !ok {
		return
	}
	w := &s.w
	w.logPages.Add(int64(n))
	w.walFrames += n
	if w.walFrames < s.ckpt.every {
		return
	}
	w.walFrames = 0
	s.ckpt.once.Do(func() { go s.checkpointLoop() })
	select {
	case s.ckpt.wake <- struct{}{}:
	default: // one is already due
	}
}

// checkpointLoop runs a checkpoint at each wake until the store closes.
func (s *Store) checkpointLoop() {
	c := &s.ckpt
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		s.checkpointOnce()
	}
}

// checkpointOnce runs one PASSIVE checkpoint. An error drops the
// connection; the next wake opens another, and the writer's backstop
// bounds the log meanwhile.
func (s *Store) checkpointOnce() {
	c := &s.ckpt
	ctx := context.Background()
	var busy, log, copied int64
	var err error
	if c.conn == nil {
		c.conn, err = s.db.Conn(ctx)
	}
	if err == nil {
		err = c.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &copied)
		if err != nil {
			c.conn.Close()
			c.conn = nil
		}
	}
	if c.test != nil {
		c.test(busy, log, copied, err)
	}
}

// stopCheckpoints ends the checkpointer, waiting for a checkpoint under
// way, and closes its connection. The last connection's close checkpoints
// the log as before.
func (s *Store) stopCheckpoints() {
	c := &s.ckpt
	started := true
	c.once.Do(func() { started = false })
	c.ended.Do(func() {
		close(c.stop)
		if started {
			<-c.done
		}
		if c.conn != nil {
			c.conn.Close()
			c.conn = nil
		}
	})
}
