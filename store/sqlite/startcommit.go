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
	if err := store.ValidateNewRun(run, first); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateLeaseRequest(run.ID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateTick(run.ID, tick); err != nil {
		return store.Lease{}, err
	}
	var lease store.Lease
	err := s.write(ctx, "create run", run.ID, func(ctx context.Context, tx *wtx, now time.Time) error {
		// Set afresh on every try, as createRun's.
		lease = store.Lease{RunID: run.ID, Owner: owner, Generation: 1, ExpiresAt: now.Add(ttl).UTC()}
		if _, err := s.exec(ctx, tx, `
INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, head_hash, created_at, updated_at, created_order,
	lease_owner, lease_generation, lease_expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(created_order), 0) + 1 FROM runs), ?, ?, ?)`,
			run.ID, run.WorkflowID, run.WorkflowVersion, run.WorkflowDigest, run.State, store.GenesisHash, nanos(now), nanos(now),
			owner, lease.Generation, nanos(lease.ExpiresAt)); err != nil {
			return err
		}
		for i, in := range first {
			if _, err := s.exec(ctx, tx, `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				run.ID, i+1, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, nanos(now)); err != nil {
				return err
			}
		}
		return s.commitTick(ctx, tx, now, lease, &tick)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return lease, nil
}
