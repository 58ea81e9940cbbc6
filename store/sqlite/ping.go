package sqlite

import "context"

// Ping implements store.Pinger: one query on a reading connection.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return mapErr("ping", "", s.rdb.QueryRowContext(ctx, `SELECT 1`).Scan(&one))
}
