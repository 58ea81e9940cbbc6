package runner

import (
	"context"
	"errors"

	"flrh.dev/flrh/store"
)

// errStartAgain ends a StartAdvance pass that would write something
// other than its first commit (a tripwire's report, a park) before the
// run exists: nothing is written, and the run is started and advanced the
// ordinary way instead.
var errStartAgain = errors.New("runner: the run is started on its own first")

// startRun is the run a StartAdvance pass creates with its first commit.
type startRun struct {
	sc    store.StartCommitter
	run   store.Run
	first store.Inbound
	// lease is the lease the store grants with the run (generation 1, to
	// this runner), its expiry by this runner's clock until the store's
	// is known.
	lease store.Lease
	// tried reports that the first commit was made, whatever it
	// returned; created that it returned without error.
	tried, created bool
}

// pending reports a run still to be created (false for no startRun).
func (s *startRun) pending() bool { return s != nil && !s.created }

// taken is what takeUp would read of the run once created: its header as
// CreateRunLeased leaves it, no checkpoint, its first input pending.
func (s *startRun) taken() (store.Run, *takenUp, []store.Inbound) {
	run := s.run
	run.HeadHash, run.Lease = store.GenesisHash, s.lease
	in := s.first
	in.Seq = 1
	pre := &takenUp{cpErr: store.Errorf(store.CodeNotFound, "checkpoint", run.ID, nil, "no checkpoint")}
	return run, pre, []store.Inbound{in}
}

// storeCommit writes the pass's pending tick: with Commit, or, on a
// StartAdvance pass's first commit, with the run's creation and lease
// (store.StartCommitter), after which the pass holds the lease the store
// granted.
func (r *Runner) storeCommit(ctx context.Context, t *tick, p *store.Tick) error {
	st := t.start
	if !st.pending() {
		return r.cfg.Store.Commit(ctx, t.lease, *p)
	}
	st.tried = true
	l, err := st.sc.CreateRunCommit(ctx, st.run, r.cfg.Owner, r.cfg.LeaseTTL, []store.Inbound{st.first}, *p)
	if err != nil {
		return err // nothing was written
	}
	st.created = true
	t.lease, t.run.Lease = l, l
	r.mu.Lock()
	r.leases[st.run.ID] = l
	r.mu.Unlock()
	return nil
}

// StartAdvance is Start followed by Advance, in one commit fewer: when the
// store offers it (store.StartCommitter), the run, its lease (held by this
// runner, as with Config.LeaseStarts), its first input and the first tick
// of its first pass are written in one transaction, and the pass goes on
// from there as Advance's does (effects are dispatched after the commit
// that holds their intents). Every record is byte for byte what Start and
// Advance write. The input is checked as Start checks it, and on any error
// of that first commit nothing is written, not even the run (a run id
// taken is store.CodeExists). Where the store does not offer it, or the
// pass would write anything else before that commit (a tripwire's park,
// say), the run is started and advanced the ordinary way: Start, then
// Advance.
func (r *Runner) StartAdvance(ctx context.Context, runID, workflowID, version string, input []byte, by Actor) (moved bool, err error) {
	return r.StartAdvanceWithUsage(ctx, runID, workflowID, version, input, Usage{}, by)
}

// StartAdvanceWithUsage is StartAdvance with the first input's usage
// report, checked and charged as StartWithUsage does.
func (r *Runner) StartAdvanceWithUsage(ctx context.Context, runID, workflowID, version string, input []byte, u Usage, by Actor) (moved bool, err error) {
	n, err := r.prepareStart(StartRequest{RunID: runID, WorkflowID: workflowID, Version: version, Input: input, Usage: u, By: by})
	if err != nil {
		return false, err
	}
	sc, ok := r.cfg.Store.(store.StartCommitter)
	if !ok || !r.claim(runID) {
		// No fused commit, or a pass of a run of that id is under way
		// here (Start then refuses the id).
		return r.startThenAdvance(ctx, n)
	}
	defer r.release(runID)
	undo := r.noteTrigger(ctx, runID)
	if n.kept != nil {
		r.keepFirst(runID, n.kept)
	}
	st := &startRun{sc: sc, run: n.run, first: n.input,
		lease: store.Lease{RunID: runID, Owner: r.cfg.Owner, Generation: 1, ExpiresAt: r.cfg.Clock().Add(r.cfg.LeaseTTL)}}
	moved, _, _, err = r.pass(ctx, runID, nil, false, st)
	if st.created {
		r.Wake()
		return moved, err
	}
	// Nothing was written. The pass kept nothing of the run.
	undo()
	r.takeFirst(runID)
	r.forget(runID)
	r.forgetCarry(runID)
	if st.tried {
		return false, err // the fused commit's error: Start's would be the same
	}
	return r.startThenAdvance(ctx, n)
}

// startThenAdvance is Start's write of what prepareStart made, then
// Advance.
func (r *Runner) startThenAdvance(ctx context.Context, n newRun) (bool, error) {
	if err := r.startPrepared(ctx, n); err != nil {
		return false, err
	}
	return r.advance(ctx, n.run.ID, nil)
}
