package runner

import (
	"context"

	"flrh.dev/flrh/store"
)

// TakeUpReader is implemented by a store that reads what a pass reads of
// a run it takes up without a header of its own (see pass) in one go: the
// run's row as Run returns it, its last checkpoint with the error
// Checkpoint would return (cpErr; not found is not a failure of the
// read), and its pending inbox as Inbox(ctx, runID, true) returns it. err
// is Run's error, or the read's. A store without it is read call by call.
type TakeUpReader interface {
	TakeUp(ctx context.Context, runID string) (run store.Run, cp store.Checkpoint, cpErr error, pending []store.Inbound, err error)
}

// takenUp is what a pass read with its run's header, for load and
// readInbox to take instead of reading.
type takenUp struct {
	cp    store.Checkpoint
	cpErr error
}

// takeUp reads the run's header, and with it (when the store reads them
// in one go and this runner holds a lease on the run that a pass takes as
// it is, so that no other writer moves the run meanwhile) its checkpoint
// and pending inbox: pre is nil when only the header was read.
func (r *Runner) takeUp(ctx context.Context, runID string) (run store.Run, pre *takenUp, pending []store.Inbound, err error) {
	tr, ok := r.cfg.Store.(TakeUpReader)
	if !ok || !r.leaseHeld(runID) {
		run, err = r.cfg.Store.Run(ctx, runID)
		return run, nil, nil, err
	}
	pre = &takenUp{}
	run, pre.cp, pre.cpErr, pending, err = tr.TakeUp(ctx, runID)
	if err != nil {
		return run, nil, nil, err
	}
	return run, pre, pending, nil
}

// leaseHeld reports whether lease would return the lease this runner
// holds on the run without a write.
func (r *Runner) leaseHeld(runID string) bool {
	r.mu.Lock()
	l, ok := r.leases[runID]
	r.mu.Unlock()
	return ok && l.ExpiresAt.After(r.cfg.Clock().Add(r.cfg.LeaseTTL/2))
}
