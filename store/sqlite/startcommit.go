package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

var _ store.StartCommitter = (*Store)(nil)

// CreateRunCommit implements store.StartCommitter: CreateRunLeased's rows
// (the run's row with its lease, its first inbox entries) and then the
// tick's (commitTick, fenced by that lease, at the same clock reading) in
// one write, so one transaction and one commit.
func (s *Store) CreateRunCommit(ctx context.Context, run store.Run, owner string, ttl time.Duration, first []store.Inbound, tick store.Tick) (store.Lease, error) {
	if err := store.ValidateStartCommit(run, owner, ttl, first, tick); err != nil {
		return store.Lease{}, err
	}
	var lease store.Lease
	err := s.write(ctx, "create run", run.ID, func(ctx context.Context, tx *wtx, now time.Time) error {
		// Set afresh on every try, as createRun's.
		lease = store.Lease{RunID: run.ID, Owner: owner, Generation: 1, ExpiresAt: now.Add(ttl).UTC()}
		if err := s.insertRun(ctx, tx, now, run, first, lease); err != nil {
			return err
		}
		return s.commitTick(ctx, tx, now, lease, &tick)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return lease, nil
}
