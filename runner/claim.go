package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"flrh.dev/flrh/store"
)

// Claimed work: how runners share one store without a coordinator.
//
// With a store.Claimer (the PostgreSQL store), Run does not walk the live
// runs and try a lease on each. It asks the store for a batch of ready runs
// — as many as it has free slots — and the store leases them to it in one
// statement, raising each run's generation: runners claiming at once never
// receive the same run, and whoever held a run before is fenced from it.
// A pass that leaves its run resting releases the lease, so that the next
// input is taken by whichever runner is free; a run that ends needs no
// release. Runs are looked for again when the store's WorkWatcher reports a
// change (a run created, an input submitted, a lease released), when a slot
// frees while the last claim took all it could, and otherwise on a poll
// whose interval doubles while nothing turns up, up to maxIdlePolls × Poll:
// notifications can be lost, and a runner that died leaves leases that only
// the clock frees. A resting run whose due time has come by this runner's
// clock (store.Run.DueAt: its time budget runs out) is claimed as ready, so
// that time budgets run out on runs that wait; with a store that keeps no
// due times, the loop instead visits each live run every DeadlineSweep, as
// the polling loop does.
//
// A run taken over from a runner that died or stalled is reconciled by the
// pass itself: its attempt in flight carries the old generation, so the
// destination is asked what became of it before anything is sent again.

// maxIdlePolls bounds the polling backoff, as a multiple of Config.Poll.
const maxIdlePolls = 8

// maxPassRetries is how often a runner retries a run whose pass failed
// (an unavailable database, say) before it lets the lease lapse for any
// runner to claim.
const maxPassRetries = 5

// sweepPass is the tries of a deadline sweep's visit: a failed one is not
// retried, and the lease it took is given back (see claimedPass).
const sweepPass = -1

// retryPass is a run whose pass failed while this runner kept its lease.
type retryPass struct {
	runID string
	tries int
	at    time.Time
}

// passDone reports a finished pass to the claiming loop.
type passDone struct {
	runID string
	tries int
	retry bool
}

// runClaiming is Run with a Claimer. On ctx's end it claims nothing more,
// gives passes in flight Drain to finish, cancels what is left, and
// releases every lease it still holds.
func (r *Runner) runClaiming(ctx context.Context) error {
	passCtx, cancelPasses := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPasses()
	defer r.Close(context.WithoutCancel(ctx))
	if r.cfg.Watcher != nil {
		stop := r.watch(ctx)
		defer stop()
	}

	par := r.cfg.Parallelism
	done := make(chan passDone, par)
	var wg sync.WaitGroup
	inflight := 0
	start := func(runID string, tries int) { // the caller has marked runID busy
		inflight++
		wg.Add(1)
		go func() {
			defer wg.Done()
			retry := r.claimedPass(passCtx, runID, tries)
			r.release(runID)
			done <- passDone{runID: runID, tries: tries, retry: retry}
		}()
	}

	var retries []retryPass
	var sweep []string // live runs still to visit in a deadline sweep
	idle := r.cfg.Poll
	claimNow, saturated := true, false
	var err error
	for ctx.Err() == nil {
		now := time.Now()
		kept := retries[:0]
		for _, rp := range retries {
			if inflight < par && !rp.at.After(now) && r.claim(rp.runID) {
				start(rp.runID, rp.tries)
				continue
			}
			kept = append(kept, rp)
		}
		retries = kept
		if claimNow && inflight < par {
			claimNow = false
			free := par - inflight
			var leases []store.Lease
			// The claim is not cancelled by shutdown: cancelled in flight,
			// it could commit at the database while its reply, and with it
			// the leases it took, is lost to this runner, which would then
			// exit holding runs no one releases until their leases lapse.
			// A claim that returns after shutdown began is recorded, its
			// runs are not started, and Close releases them.
			claimCtx, cancelClaim := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.LeaseTTL)
			if dc, ok := r.cfg.Claimer.(store.DefinitionClaimer); ok {
				// Only runs of the definitions this runner holds: another
				// definition's run is left for a runner holding it, not
				// leased and handed back on every claim.
				leases, err = dc.ClaimReadyOf(claimCtx, r.cfg.Owner, r.cfg.LeaseTTL, free, restingStates, r.definitions, r.dueBy())
			} else {
				leases, err = r.cfg.Claimer.ClaimReady(claimCtx, r.cfg.Owner, r.cfg.LeaseTTL, free, restingStates, r.dueBy())
			}
			cancelClaim()
			if err != nil {
				r.log.Error("claim ready runs", "err", err)
			}
			saturated = err == nil && len(leases) == free
			if len(leases) > 0 {
				idle = r.cfg.Poll
			}
			for _, l := range leases {
				r.mu.Lock()
				r.leases[l.RunID] = l
				delete(r.lapsing, l.RunID)
				delete(r.cps, l.RunID) // a cached checkpoint belongs to an older generation
				r.mu.Unlock()
				if ctx.Err() != nil {
					continue // shutting down: held, not started; Close releases it
				}
				if !r.claim(l.RunID) {
					// A pass of ours is still on it under the lease this
					// claim replaced (it ran past its lease): that pass
					// will be fenced; go on after it under the new lease.
					retries = append(retries, retryPass{runID: l.RunID, at: now})
					continue
				}
				start(l.RunID, 0)
			}
		}
		// With a store that keeps no due times, every live run is visited
		// now and then, resting or not, so that time budgets run out on
		// runs waiting for a person. Those runs are not claimable; the
		// pass takes each lease itself (a run another runner holds is
		// skipped) and the pass settles it as any other.
		if len(sweep) == 0 && r.sweepDue() {
			if sweep, err = r.cfg.Store.Live(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("list live runs for the deadline sweep", "err", err)
			}
		}
		for len(sweep) > 0 && inflight < par {
			id := sweep[0]
			sweep = sweep[1:]
			if r.claim(id) {
				start(id, sweepPass) // a failed sweep pass is not retried: the next sweep comes
			}
		}
		wait := idle
		for _, rp := range retries {
			if d := time.Until(rp.at); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-r.wake:
			claimNow, idle = true, r.cfg.Poll
		case d := <-done:
			inflight--
			claimNow = claimNow || saturated
			if d.retry {
				retries = append(retries, retryPass{runID: d.runID, tries: d.tries + 1, at: time.Now().Add(r.cfg.Poll << min(d.tries, 6))})
			}
		case <-timer.C:
			claimNow, idle = true, min(2*idle, maxIdlePolls*r.cfg.Poll)
		}
		timer.Stop()
	}

	// Shutting down: let the passes in flight finish, within Drain.
	drain := time.NewTimer(r.cfg.Drain)
	defer drain.Stop()
	for inflight > 0 {
		select {
		case <-done:
			inflight--
		case <-drain.C:
			r.log.Warn("shutdown: cancelling passes still in flight", "passes", inflight)
			cancelPasses()
		}
	}
	wg.Wait()
	return nil
}

// claimedPass advances a run this runner has claimed (or visits on the
// deadline sweep: tries is sweepPass) and settles its lease: released
// when the run rests (another runner may take its next input), forgotten
// when it ended or another runner took it over, kept for a retry when the
// pass failed otherwise, and given back when a sweep's visit failed. It
// reports whether to retry.
func (r *Runner) claimedPass(ctx context.Context, runID string, tries int) bool {
	r.mu.Lock()
	before, heldBefore := r.leases[runID]
	r.mu.Unlock()
	_, err := r.Advance(ctx, runID)
	r.mu.Lock()
	held, holding := r.leases[runID]
	r.mu.Unlock()
	switch code := store.CodeOf(err); {
	case err == nil || errors.Is(err, ErrDefinitionNotLoaded):
		// A run of a definition this runner lacks (claimed from a store
		// that cannot tell, or visited by the sweep) was not touched: the
		// lease, if the claim took one, is given back at once.
		if holding {
			r.giveBack(ctx, held)
		}
		return false
	case code == store.CodeFenced || code == store.CodeLeaseHeld:
		// The pass forgot the lease it found stale; one the loop claimed
		// while the pass ran is newer and stays.
		if heldBefore {
			r.forgetLease(before)
		}
		r.log.Warn("fenced: another runner holds the run now", "run", runID, "err", err)
		return false
	case ctx.Err() != nil:
		return false // shutting down; Close releases what is held
	case tries == sweepPass:
		// A visit, not a claim: its run was not ready, and a failure here
		// (a write race lost, the database away for a moment) says nothing
		// against it. Leaving the lease to lapse would keep every runner
		// off it — a person's approval arriving meanwhile included — and
		// outlive this runner's stop; it is given back, the next sweep
		// visits again, and the run is claimed as soon as it is ready.
		r.log.Warn("advance on the deadline sweep", "run", runID, "err", err)
		if holding {
			r.giveBack(ctx, held)
		}
		return false
	case tries >= maxPassRetries:
		r.leaveToLapse(runID)
		r.log.Error("advance failed; leaving the run for its lease to lapse", "run", runID, "tries", tries+1, "err", err)
		return false
	default:
		r.log.Warn("advance", "run", runID, "err", err, "try", tries+1)
		return true
	}
}

// giveBack lets a lease go after a pass that leaves it, logging a release
// the store refused for any reason but another runner holding the run.
func (r *Runner) giveBack(ctx context.Context, l store.Lease) {
	if err := r.letGo(ctx, l); err != nil && store.CodeOf(err) != store.CodeFenced {
		r.log.Warn("release lease", "run", l.RunID, "err", err)
	}
}

// watch turns the store's notifications into wakes until ctx ends; the
// returned function stops it and waits for it.
func (r *Runner) watch(ctx context.Context) func() {
	wctx, cancel := context.WithCancel(ctx)
	w := r.cfg.Watcher.WatchWork(wctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			id, err := w.Wait(wctx, maxIdlePolls*r.cfg.Poll)
			if err != nil {
				return
			}
			if id != "" {
				r.Wake()
			}
		}
	}()
	return func() {
		cancel()
		<-stopped
		w.Close()
	}
}

// fenceDispatch makes sure a pass still owns its run right before it sends
// an effect. The commit that made the intent durable was fenced, but the
// process may have stalled since (a pause, a long GC, SIGSTOP) while another
// runner took the run over. When less than half the lease is left by this
// runner's clock, the lease is renewed first — a write the store fences —
// and a renewal that fails stops the send: a runner that cannot show it
// still owns the run sends nothing. (A stall between this check and the
// send itself is covered by the destination's idempotency key.)
func (r *Runner) fenceDispatch(ctx context.Context, t *tick) error {
	if t.lease.ExpiresAt.After(r.cfg.Clock().Add(r.cfg.LeaseTTL / 2)) {
		return nil
	}
	l, err := r.cfg.Store.RenewLease(ctx, t.lease, r.cfg.LeaseTTL)
	if err != nil {
		r.forgetIfTakenOver(t.lease, err)
		return fmt.Errorf("runner: run %s: not sending: the lease could not be renewed: %w", t.run.ID, err)
	}
	t.lease = l
	r.keptLease(l)
	return nil
}
