package runner

import (
	"context"
	"sync"
	"time"

	"flrh.dev/flrh/store"
)

// leaseKeeper renews a run's lease every third of its life while a call
// to a destination is under way (an attempt, or the lookups of a
// reconciliation). A destination may take longer to answer than a lease
// lasts (an adapter's timeout may be minutes, a lease is 30 s by
// default); without the keeper, another runner would take the run over
// mid-call, find the attempt started and the destination still busy with
// it, and have only a person to hand it to, while this runner's commit of
// the answer would be fenced out. A renewal that fails (the run was taken
// over after all) stops the renewing; the commit that follows the call is
// fenced as before. Nothing runs unless the call outlasts a third of the
// lease: a timer, not a goroutine, waits.
type leaseKeeper struct {
	r       *Runner
	ctx     context.Context
	every   time.Duration
	timer   *time.Timer
	mu      sync.Mutex // held by a renewal, and by stop while it waits for one
	lease   store.Lease
	stopped bool
}

// keepLease starts keeping t's lease; stop ends it and hands the renewed
// lease back to t. A run being created has no lease yet: nothing is kept.
func (r *Runner) keepLease(ctx context.Context, t *tick) *leaseKeeper {
	every := r.cfg.LeaseTTL / 3
	if every <= 0 || t.start.pending() {
		return nil
	}
	k := &leaseKeeper{r: r, ctx: ctx, every: every, lease: t.lease}
	k.timer = time.AfterFunc(every, k.renew)
	return k
}

func (k *leaseKeeper) renew() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	l, err := k.r.cfg.Store.RenewLease(k.ctx, k.lease, k.r.cfg.LeaseTTL)
	if err != nil {
		k.r.forgetIfTakenOver(k.lease, err)
		return
	}
	k.lease = l
	k.timer.Reset(k.every)
}

// stop ends the keeping, waiting for a renewal under way, and gives t the
// lease as last renewed.
func (k *leaseKeeper) stop(t *tick) {
	if k == nil {
		return
	}
	k.timer.Stop()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.lease.Generation == t.lease.Generation && k.lease.ExpiresAt.After(t.lease.ExpiresAt) {
		t.lease = k.lease
		k.r.keptLease(k.lease)
	}
}

// keptLease records a lease renewed during a call as the one this runner
// holds on its run, as fenceDispatch does.
func (r *Runner) keptLease(l store.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if held, ok := r.leases[l.RunID]; ok && held.Generation == l.Generation {
		r.leases[l.RunID] = l
	}
}
