package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// Compact implements store.Compactor: VACUUM FULL of every table of the
// store's schema, one after another, each rewritten into new files from
// its live rows alone, the old files removed. Dead row versions (records
// resealed under a new key, runs pruned) are then in no table's files.
// The write-ahead log, its archives and base backups taken before keep
// what they kept: they are PostgreSQL's to expire.
//
// VACUUM FULL locks each table against every other use while it rewrites
// it: runners wait on that table meanwhile. It needs the tables' owner.
func (s *Store) Compact(ctx context.Context) (store.Compacted, error) {
	const op = "compact"
	var c store.Compacted
	rows, err := s.pool.Query(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables
WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		return c, s.mapErr(op, "", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return c, s.mapErr(op, "", err)
	}
	if c.Before, err = s.tablesBytes(ctx); err != nil {
		return c, s.mapErr(op, "", err)
	}
	for _, t := range tables {
		// VACUUM runs outside a transaction: one statement each, on the
		// pool.
		if _, err := s.pool.Exec(ctx, `VACUUM (FULL) `+t); err != nil {
			return c, s.mapErr(op, "", err)
		}
		c.Tables = append(c.Tables, t)
	}
	if c.After, err = s.tablesBytes(ctx); err != nil {
		return c, s.mapErr(op, "", err)
	}
	return c, nil
}

// tablesBytes is the size on disk of the schema's tables, their indexes
// and TOAST included.
func (s *Store) tablesBytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(quote_ident(schemaname) || '.' || quote_ident(tablename))), 0)::bigint
FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n)
	return n, err
}
