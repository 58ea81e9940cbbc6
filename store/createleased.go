package store

import (
	"context"
	"time"
)

// LeasedCreator is implemented by stores that can create a run and lease
// it to its creator in one transaction: CreateRun followed by
// AcquireLease, one commit (one log sync) where the two took two. A runner
// that starts a run it goes on to advance itself uses it.
//
// It is looked for on the store itself, not through Unwrapper: it writes,
// and a wrapper that observes the writes it passes on (CreateRun,
// AcquireLease) offers it only if it observes this one too.
type LeasedCreator interface {
	// CreateRunLeased is CreateRun(ctx, run, first...) followed by
	// AcquireLease(ctx, run.ID, owner, ttl), with the same rows written,
	// the same lease returned (generation 1) and the same errors: the
	// run and its first entries are checked as CreateRun checks them, and
	// then owner and ttl as AcquireLease does, before anything is written;
	// a run id taken is CodeExists. On any error nothing is written, not
	// even the run.
	CreateRunLeased(ctx context.Context, run Run, owner string, ttl time.Duration, first ...Inbound) (Lease, error)
}

// ValidateLeaseRequest is the check of a lease request's owner and ttl
// that a store's AcquireLease makes, and its CreateRunLeased before it
// writes anything, so that both refuse alike.
func ValidateLeaseRequest(runID, owner string, ttl time.Duration) error {
	if owner == "" || ttl <= 0 {
		return Errorf(CodeInvalidInput, "acquire lease", runID, nil, "owner and a positive ttl are required")
	}
	return nil
}
