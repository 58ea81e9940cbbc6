package store

import (
	"context"
	"time"
)

// StartCommitter is implemented by stores that can create a run, lease it
// to its creator and commit the run's first tick under that lease in one
// transaction: CreateRunLeased followed by Commit, one commit (one log
// sync) where the two took two. A runner that starts a run and advances it
// at once (Runner.StartAdvance) uses it.
//
// It is looked for on the store itself, not through Unwrapper, for the
// reason LeasedCreator is: it writes, and a wrapper that observes the
// writes it passes on offers it only if it observes this one too.
type StartCommitter interface {
	// CreateRunCommit is CreateRunLeased(ctx, run, owner, ttl, first...)
	// followed by Commit(ctx, lease, tick) under the lease it grants
	// (generation 1), with the same rows written, the same lease returned
	// and the same errors: the run, its first entries, owner, ttl and the
	// tick are checked before anything is written; a run id taken is
	// CodeExists. On any error nothing is written, not even the run. The
	// store keeps none of the tick past the call, as Commit keeps none.
	CreateRunCommit(ctx context.Context, run Run, owner string, ttl time.Duration, first []Inbound, tick Tick) (Lease, error)
}

// ValidateStartCommit is the check CreateRunCommit makes before it writes
// anything: the run and its first entries as CreateRun checks them, owner
// and ttl as AcquireLease does, and the tick as Commit does, in that
// order, so that every store refuses alike.
func ValidateStartCommit(run Run, owner string, ttl time.Duration, first []Inbound, tick Tick) error {
	if err := ValidateNewRun(run, first); err != nil {
		return err
	}
	if err := ValidateLeaseRequest(run.ID, owner, ttl); err != nil {
		return err
	}
	return ValidateTick(run.ID, tick)
}
