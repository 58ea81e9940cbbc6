package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

var _ store.LeasedCreator = (*Store)(nil)

// CreateRunLeased implements store.LeasedCreator: CreateRun's rows, with
// the lease AcquireLease would then grant (generation 1, expiring ttl after
// the transaction's clock reading) written in the run's row as it is
// inserted, in one transaction, so one commit. On a new run AcquireLease
// only sets the lease columns and updated_at, which the insert sets to the
// same clock reading.
func (s *Store) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	if err := store.ValidateNewRun(run, first); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateLeaseRequest(run.ID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	var lease store.Lease
	err := s.write(ctx, "create run", run.ID, func(ctx context.Context, tx *wtx, now time.Time) error {
		// Set afresh on every try: a write retried after a busy database
		// runs again at a later clock reading.
		lease = store.Lease{RunID: run.ID, Owner: owner, Generation: 1, ExpiresAt: now.Add(ttl).UTC()}
		_, err := s.exec(ctx, tx, `
INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, head_hash, created_at, updated_at, created_order,
	lease_owner, lease_generation, lease_expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(created_order), 0) + 1 FROM runs), ?, ?, ?)`,
			run.ID, run.WorkflowID, run.WorkflowVersion, run.WorkflowDigest, run.State, store.GenesisHash, nanos(now), nanos(now),
			owner, lease.Generation, nanos(lease.ExpiresAt))
		if err != nil {
			return err
		}
		return s.insertFirstInbox(ctx, tx, run.ID, first, now)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return lease, nil
}
