package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// statements caches prepared statements by their text. SQLite spends a
// good part of a small statement's cost parsing it; the store runs the same
// few dozen statements in every tick, so each is prepared once per
// connection and reused inside transactions (database/sql keeps the
// per-connection handles).
type statements struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if st, ok := s.stmts.m[query]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts.m == nil {
		s.stmts.m = map[string]*sql.Stmt{}
	}
	s.stmts.m[query] = st
	return st, nil
}

// exec runs a statement inside tx through the statement cache.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// queryRow runs a one-row query inside tx through the statement cache. A
// failure to prepare surfaces from Scan, as with QueryRowContext.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return tx.QueryRowContext(ctx, query, args...) // reports the same error on Scan
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

func (s *Store) closeStatements() {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	for _, st := range s.stmts.m {
		st.Close()
	}
	s.stmts.m = nil
}
