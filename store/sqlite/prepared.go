package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// statements caches prepared statements of one connection pool by their
// text. SQLite spends a good part of a small statement's cost parsing it;
// the store runs the same few dozen statements in every tick and every read,
// so each is prepared once per connection and reused (database/sql keeps the
// per-connection handles).
type statements struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *statements) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

func (c *statements) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// read runs a query outside any transaction on the readers' pool.
// A lagging batch's open transaction is committed first (linger.go).
func (s *Store) read(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s.settle(ctx)
	st, err := s.rstmts.get(ctx, s.rdb, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// readRow runs a one-row query outside any transaction on the readers'
// pool. A failure to prepare surfaces from Scan, as with QueryRowContext.
func (s *Store) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	s.settle(ctx)
	st, err := s.rstmts.get(ctx, s.rdb, query)
	if err != nil {
		return s.rdb.QueryRowContext(ctx, query, args...) // reports the same error on Scan
	}
	return st.QueryRowContext(ctx, args...)
}

func (s *Store) closeStatements() {
	s.w.close()
	s.rstmts.close()
	s.rrecs.close()
}
