package store

import (
	"context"
	"time"
)

// Claimer is implemented by stores that hand ready runs to runners without
// a central coordinator: each call leases a batch of runs that have
// something to do, and runners claiming at once never receive the same
// run. A runner that finds one claims its work instead of trying
// AcquireLease on every live run in turn.
type Claimer interface {
	// ClaimReady leases up to limit ready runs to owner for ttl, oldest
	// first, each with its generation raised (fencing any earlier holder).
	// A run is ready when it has not ended, is not quarantined, holds no
	// unexpired lease, and either has a pending inbox entry or is in a
	// state that is not one of resting (nil: every such run is ready).
	ClaimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string) ([]Lease, error)
}

// DefinitionClaimer is implemented by Claimers that can leave alone the
// runs a runner cannot advance: those created under a workflow definition
// it has not loaded (another process, holding that definition, will).
type DefinitionClaimer interface {
	Claimer
	// ClaimReadyOf is ClaimReady limited to runs whose recorded definition
	// digest (Run.WorkflowDigest) is one of definitions, or "" (a run that
	// records none, which any runner of its workflow id and version may
	// take).
	ClaimReadyOf(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, definitions []string) ([]Lease, error)
}

// WorkWatcher is implemented by stores that can tell a runner when there
// may be new work (a run created, an input submitted, a lease released).
type WorkWatcher interface {
	WatchWork(ctx context.Context) WorkWaiter
}

// WorkWaiter waits for the next sign of work. Wait returns the run id a
// notification names, or "" when poll elapsed (or notifications are not
// being received): the caller then looks for work itself, since a
// notification may be lost. Only ctx's end is an error.
type WorkWaiter interface {
	Wait(ctx context.Context, poll time.Duration) (string, error)
	Close() error
}
