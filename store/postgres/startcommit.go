package postgres

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

var _ store.StartCommitter = (*Store)(nil)

// CreateRunCommit implements store.StartCommitter in one round trip
// (decision 1811):
// CreateRunLeased's statements (the run's row with its lease, its first
// inbox entries, the notification) and then the tick as the
// one-round-trip commit sends it under a lease this store knows
// (commitAhead: the guarded fence on the row just inserted, the tick's
// writes), as one transaction. Every check the tick's reads would make is
// made by a guard or a constraint, so a tick the two-round-trip commit
// would refuse fails the transaction, and nothing is written; a run id
// taken is CodeExists. Its first tick consumes no approval (a new run has
// none granted) and begins only intents it creates: a tick that does
// either is refused (CodeInvalidInput) before anything is sent, as is a
// tick computed from another head than a new run's (CodeHeadMismatch).
func (s *Store) CreateRunCommit(ctx context.Context, run store.Run, owner string, ttl time.Duration, first []store.Inbound, tick store.Tick) (store.Lease, error) {
	const op = "create run"
	if err := store.ValidateStartCommit(run, owner, ttl, first, tick); err != nil {
		return store.Lease{}, err
	}
	if tick.ExpectHead != 0 {
		return store.Lease{}, store.Errorf(store.CodeHeadMismatch, "commit", run.ID, nil, "writer computed from event %d, the run is at 0", tick.ExpectHead)
	}
	if len(tick.Approvals) > 0 {
		return store.Lease{}, store.Errorf(store.CodeInvalidInput, op, run.ID, nil, "a new run's first tick consumes no approval")
	}
	for _, id := range tick.Begin {
		if !newIntent(tick, id) {
			return store.Lease{}, store.Errorf(store.CodeInvalidInput, op, run.ID, nil, "a new run's first tick begins only its own intents")
		}
	}
	for _, r := range tick.Results {
		if newIntent(tick, r.IntentID) {
			return store.Lease{}, store.Errorf(store.CodeInvalidInput, op, run.ID, nil, "a result for intent %s the tick creates", r.IntentID)
		}
	}
	lease := store.Lease{RunID: run.ID, Owner: owner, Generation: 1}
	// What the store knows of the run once CreateRunLeased wrote it
	// (seedHead): the fence checks it on the row the same transaction
	// inserted.
	h := runHead{owner: owner, generation: 1, hash: store.GenesisHash}
	var sent time.Time
	var next runHead
	err := s.write(ctx, op, run.ID, func(tx *wtx) error {
		// The lease's expiry is reckoned from a clock reading taken
		// before the transaction is sent, not read back from the row: a
		// statement whose result is read takes the round trip off the
		// direct path, which costs two more. With the store's clock
		// injected it is the reading the row holds; with the server's,
		// the row's is taken later, so the lease returned never outlasts
		// the one the server fences by (when the two clocks agree).
		next = h // afresh on every try
		var at any
		if s.clock != nil {
			sent = s.clock()
			at = nanos(sent)
		} else {
			sent = time.Now()
		}
		tx.implicit = implicitTick
		s.queueCreateLeased(tx, run, at, owner, ttl, first)
		chains := chainOf(h.hash, h.head, tick.Events)
		if err := s.queueAhead(tx, lease, tick, h, &next, chains, aheadBegin(tick), false); err != nil {
			return err
		}
		return tx.commit(ctx)
	})
	if err != nil {
		return store.Lease{}, err
	}
	lease.ExpiresAt = sent.Add(ttl).UTC()
	if tick.ExpectInboxEmpty {
		next.inboxEmpty = true
	}
	s.heads.set(lease, tick, next)
	return lease, nil
}
