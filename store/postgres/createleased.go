package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

var _ store.LeasedCreator = (*Store)(nil)

// createLeasedSQL is CreateRun's insert with the lease AcquireLease would
// then grant (generation 1, expiring ttl after the clock reading) in the
// row as it is inserted, the clock read once for all three times. It
// returns the reading.
const createLeasedSQL = `WITH k AS (SELECT ` + `COALESCE($6::bigint, ` + nowNanos + `) AS now)
INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, head_hash, created_at, updated_at,
	lease_owner, lease_generation, lease_expires_at, labels)
SELECT $1, $2, $3, $7, $4, $5, k.now, k.now, $8, 1, k.now + $9, $10 FROM k
RETURNING updated_at`

// CreateRunLeased implements store.LeasedCreator in CreateRun's one round
// trip (BEGIN, the row, its first inbox entries, the notification and
// COMMIT), where CreateRun and then AcquireLease took two transactions.
// As AcquireLease does on a run without events, it leaves the store the
// run's head (seedHead), so that the first tick under the lease takes the
// one-round-trip path.
func (s *Store) CreateRunLeased(ctx context.Context, run store.Run, owner string, ttl time.Duration, first ...store.Inbound) (store.Lease, error) {
	if err := store.ValidateNewRun(run, first); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateLeaseRequest(run.ID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	var clock int64
	err := s.write(ctx, "create run", run.ID, func(tx *wtx) error {
		clock = 0 // read afresh on every try
		s.queueCreateLeased(tx, run, s.injected(), owner, ttl, first).QueryRow(func(row pgx.Row) error { return row.Scan(&clock) })
		return nil
	})
	if err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{RunID: run.ID, Owner: owner, Generation: 1, ExpiresAt: fromNanos(clock).Add(ttl).UTC()}
	// The run was created counting no submissions (its first inputs are
	// not counted), and the count only grows.
	s.seedHead(l, store.Run{ID: run.ID, State: run.State, HeadHash: store.GenesisHash}, 0)
	return l, nil
}

// queueCreateLeased queues a new run's row leased to owner for ttl from
// the clock reading at (nil: the server's), its first inbox entries and
// the notification of new work, and returns the row's insert, whose one
// column is the clock reading the lease was reckoned from.
func (s *Store) queueCreateLeased(tx *wtx, run store.Run, at any, owner string, ttl time.Duration, first []store.Inbound) *pgx.QueuedQuery {
	q := tx.Queue(createLeasedSQL, run.ID, run.WorkflowID, run.WorkflowVersion, run.State, store.GenesisHash, at, run.WorkflowDigest,
		owner, ttl.Nanoseconds(), label.Encode(run.Labels))
	queueLabels(tx, run)
	s.queueFirstInbox(tx, run.ID, first)
	// A new run is new work, as CreateRun tells idle runners; leased, it
	// is not theirs to claim until the lease lapses or is released.
	tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), run.ID)
	return q
}
