package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

var _ store.StartCommitter = (*Store)(nil)

// CreateRunCommit implements store.StartCommitter in one round trip:
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
	if err := store.ValidateNewRun(run, first); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateLeaseRequest(run.ID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateTick(run.ID, tick); err != nil {
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
	var clock int64
	var next runHead
	err := s.write(ctx, op, run.ID, func(tx *wtx) error {
		clock, next = 0, h // read afresh on every try
		tx.implicit = implicitTick
		tx.Queue(createLeasedSQL, run.ID, run.WorkflowID, run.WorkflowVersion, run.State, store.GenesisHash, s.injected(), run.WorkflowDigest,
			owner, ttl.Nanoseconds()).QueryRow(func(row pgx.Row) error { return row.Scan(&clock) })
		s.queueFirstInbox(tx, run.ID, first)
		tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), run.ID)
		chains := chainOf(h.hash, h.head, tick.Events)
		fence := aheadFenceArgs(s, lease, tick, h, &chains, false)
		tx.Queue(fenceAheadSQL, fence...)
		tx.fence, tx.fenceInbox, tx.fenceSubs = fence, fenceChecksInbox(tick), h.submissions
		if err := s.queueTick(tx, lease, tick, &next, chains, "", aheadBegin(tick), nil); err != nil {
			return err
		}
		return tx.commit(ctx)
	})
	if err != nil {
		return store.Lease{}, err
	}
	lease.ExpiresAt = fromNanos(clock).Add(ttl).UTC()
	if tick.ExpectInboxEmpty {
		next.inboxEmpty = true
	}
	s.heads.set(lease, tick, next)
	return lease, nil
}
