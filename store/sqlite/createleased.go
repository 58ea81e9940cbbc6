package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

var _ store.LeasedCreator = (*Store)(nil)

// CreateRunLeased implements store.LeasedCreator: CreateRun's rows, with
// the lease AcquireLease would then grant written in the run's row as it
// is inserted (createRun), in one transaction, so one commit. On a new run
// AcquireLease only sets the lease columns and updated_at, which the
// insert sets to the same clock reading.
func (s *Store) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	if err := store.ValidateNewRun(run, first); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateLeaseRequest(run.ID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	return s.createRun(ctx, run, first, owner, ttl)
}
