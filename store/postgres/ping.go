package postgres

import "context"

// Ping implements store.Pinger: a pooled connection answers a query.
func (s *Store) Ping(ctx context.Context) error {
	return s.mapErr("ping", "", s.pool.Ping(ctx))
}
