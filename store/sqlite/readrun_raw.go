package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync"
)

// The runs' records are read through the driver itself.
//
// Through database/sql each statement of ReadRunRecords cost a Rows with
// its own lock and a fresh slice of column values, its arguments converted
// into a fresh slice, and each row a Scan of its fifteen columns through
// convertAssign's type switches into Scanners that only kept the value.
// The driver already hands Next its values as the cells keep them, so the
// record reads run the driver's own prepared statements (as the writer
// does, decision 1159) on a reading connection, and each row is read by
// driver.Rows.Next into the one reused array of cells. The values are
// those database/sql handed the Scanners: Scan gives a Scanner the
// driver's value as it is.
//
// The statements are prepared once per connection; a connection holding
// them is taken out of the readers' pool for the store's life (a pool may
// close a connection it holds idle, and a statement must be finalized
// before its connection closes). At most heldReaders are held: a read
// beyond them takes a connection from the pool for the read alone and
// prepares its statement for it.
const heldReaders = readers / 2

// recordConn is a reading connection held for the records' reads, with
// the driver's statements prepared on it.
type recordConn struct {
	conn  *sql.Conn
	stmts map[string]driver.Stmt
}

// recordConns are the held reading connections: free ones, and how many
// are held in all.
type recordConns struct {
	mu     sync.Mutex
	free   []*recordConn
	held   int
	closed bool
}

// take returns a held connection, holding a new one if fewer than
// heldReaders are; nil with no error when all are busy.
func (rc *recordConns) take(ctx context.Context, db *sql.DB) (*recordConn, error) {
	rc.mu.Lock()
	if n := len(rc.free); n > 0 {
		c := rc.free[n-1]
		rc.free = rc.free[:n-1]
		rc.mu.Unlock()
		return c, nil
	}
	if rc.closed || rc.held >= heldReaders {
		rc.mu.Unlock()
		return nil, nil
	}
	rc.held++
	rc.mu.Unlock()
	conn, err := db.Conn(ctx)
	if err != nil {
		rc.drop(nil)
		return nil, err
	}
	return &recordConn{conn: conn, stmts: map[string]driver.Stmt{}}, nil
}

// give hands c back after a read.
func (rc *recordConns) give(c *recordConn) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed {
		c.close()
		rc.held--
		return
	}
	rc.free = append(rc.free, c)
}

// drop closes c (nil: one that was never opened) and makes room for
// another.
func (rc *recordConns) drop(c *recordConn) {
	if c != nil {
		c.close()
	}
	rc.mu.Lock()
	rc.held--
	rc.mu.Unlock()
}

// close finalizes the free connections' statements and hands the
// connections back; one in use is closed as it is given back.
func (rc *recordConns) close() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.closed = true
	for _, c := range rc.free {
		c.close()
		rc.held--
	}
	rc.free = nil
}

func (c *recordConn) close() {
	c.conn.Raw(func(any) error {
		for _, st := range c.stmts {
			st.Close()
		}
		return nil
	})
	c.conn.Close()
}

// rowFunc reads the row in c; false stops the read.
type rowFunc func(c *cells) bool

// queryRecords runs query with args on a reading connection, outside any
// transaction, and hands each row to row in c; ok is false where the
// statement fails or row stops it (the caller then reads by parts). A
// lagging batch's open transaction is committed first, as by read.
func (s *Store) queryRecords(ctx context.Context, query string, args []driver.NamedValue, c *cells, row rowFunc) bool {
	s.settle(ctx)
	rc, err := s.rrecs.take(ctx, s.rdb)
	if err != nil {
		return false
	}
	var conn *sql.Conn
	if rc != nil {
		conn = rc.conn
	} else if conn, err = s.rdb.Conn(ctx); err != nil {
		return false
	} else {
		defer conn.Close()
	}
	ok := false
	err = conn.Raw(func(dc any) error {
		var st driver.Stmt
		if rc != nil {
			st = rc.stmts[query]
		}
		if st == nil {
			var err error
			if st, err = dc.(driver.ConnPrepareContext).PrepareContext(ctx, query); err != nil {
				return err
			}
			if rc != nil {
				rc.stmts[query] = st
			} else {
				defer st.Close()
			}
		}
		rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		if len(rows.Columns()) != recordWidth {
			return nil
		}
		for {
			switch err := rows.Next(c.row[:]); {
			case err == io.EOF:
				ok = true
				return nil
			case err != nil:
				return err
			}
			if !row(c) {
				return nil
			}
		}
	})
	if rc != nil {
		if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
			s.rrecs.drop(rc)
		} else {
			s.rrecs.give(rc)
		}
	}
	return ok && err == nil
}
