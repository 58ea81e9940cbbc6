package verify

import (
	"context"

	"flrh.dev/flrh/store"
)

// runReader is implemented by stores that read the attempts of all of a
// run's intents, and the grants those intents name, in one query each
// (both SQLite and PostgreSQL do). Without it verify asks per intent.
type runReader interface {
	RunAttempts(ctx context.Context, runID string) ([]store.Attempt, error)
	RunApprovals(ctx context.Context, runID string) ([]store.Approval, error)
}

// runReaderOf returns the runReader of st, or of the first store it wraps
// that has one.
func runReaderOf(st store.Store) (runReader, bool) {
	for st != nil {
		if rr, ok := st.(runReader); ok {
			return rr, true
		}
		u, ok := st.(store.Unwrapper)
		if !ok {
			break
		}
		st = u.Unwrap()
	}
	return nil, false
}

// record is what verify and replay read of one run, each table once.
type record struct {
	st       store.Store
	run      store.Run
	events   []store.Event
	cp       store.Checkpoint
	hasCP    bool
	intents  []store.Intent
	receipts []store.Receipt
	// attempts and approvals hold what a runReader read in bulk; bulk is
	// false when the store has none and they are read per intent.
	bulk      bool
	attempts  map[string][]store.Attempt
	approvals map[string]store.Approval
	// known is what verifying the record vouched for, event by event
	// (see vouched), when it was verified before being replayed (Check);
	// nil otherwise.
	known []vouched
	// scanned is the checkpoint's members, read once for both the
	// verifier and the replay (see checkpointOf); nil until then.
	scanned *checkpoint
}

// checkpointOf returns the checkpoint body's members, scanning the body
// (which holds the whole workflow state) the first time only: Check
// verifies and replays one record, and both read the checkpoint.
func (r *record) checkpointOf() *checkpoint {
	if r.scanned == nil {
		r.scanned = readCheckpoint(r.cp.Body)
	}
	return r.scanned
}

// What load reads beyond the events, intents and checkpoint replay needs.
const (
	withRun     = 1 << iota // the run's header
	withEffects             // receipts, attempts and approvals
)

func load(ctx context.Context, st store.Store, runID string, parts int) (*record, error) {
	rec := &record{st: st}
	var err error
	if parts&withRun != 0 {
		if rec.run, err = st.Run(ctx, runID); err != nil {
			return nil, err
		}
	}
	if rec.events, err = st.Events(ctx, runID, 0); err != nil {
		return nil, err
	}
	rec.cp, err = st.Checkpoint(ctx, runID)
	switch {
	case err == nil:
		rec.hasCP = true
	case store.CodeOf(err) != store.CodeNotFound:
		return nil, err
	}
	if rec.intents, err = st.Intents(ctx, runID); err != nil {
		return nil, err
	}
	if parts&withEffects == 0 {
		return rec, nil
	}
	if rec.receipts, err = st.Receipts(ctx, runID); err != nil {
		return nil, err
	}
	rr, ok := runReaderOf(st)
	if !ok || len(rec.intents) == 0 {
		rec.bulk = ok
		return rec, nil
	}
	ats, err := rr.RunAttempts(ctx, runID)
	if err != nil {
		return nil, err
	}
	rec.attempts = make(map[string][]store.Attempt, len(rec.intents))
	for _, a := range ats {
		rec.attempts[a.IntentID] = append(rec.attempts[a.IntentID], a)
	}
	for _, in := range rec.intents {
		if in.ApprovalID != "" {
			aps, err := rr.RunApprovals(ctx, runID)
			if err != nil {
				return nil, err
			}
			rec.approvals = make(map[string]store.Approval, len(aps))
			for _, a := range aps {
				rec.approvals[a.ID] = a
			}
			break
		}
	}
	rec.bulk = true
	return rec, nil
}

// attemptsOf returns an intent's attempts in order.
func (r *record) attemptsOf(ctx context.Context, intentID string) ([]store.Attempt, error) {
	if r.bulk {
		return r.attempts[intentID], nil
	}
	return r.st.Attempts(ctx, intentID)
}

// approval returns a grant by id. One the bulk read did not return is
// looked up on its own, so that "not in the ledger" is the store's answer.
func (r *record) approval(ctx context.Context, id string) (store.Approval, error) {
	if a, ok := r.approvals[id]; ok {
		return a, nil
	}
	return r.st.Approval(ctx, id)
}
