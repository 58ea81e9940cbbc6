package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

const runColumns = `run_id, workflow_id, workflow_version, state, outcome, head_seq, head_hash,
	lease_owner, lease_generation, lease_expires_at, quarantine, created_at, updated_at`

func scanRun(row pgx.Row, extra ...any) (store.Run, error) {
	var r store.Run
	var exp, created, updated int64
	dest := append([]any{&r.ID, &r.WorkflowID, &r.WorkflowVersion, &r.State, &r.Outcome, &r.Head, &r.HeadHash,
		&r.Lease.Owner, &r.Lease.Generation, &exp, &r.Quarantine, &created, &updated}, extra...)
	err := row.Scan(dest...)
	r.Lease.RunID = r.ID
	r.Lease.ExpiresAt = fromNanos(exp)
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return r, err
}

// lockSQL locks a run's header row and then reads the clock: the outer
// projection is evaluated on rows the locking CTE has already returned, so
// clock_timestamp() is read after the lock.
const lockSQL = `WITH r AS MATERIALIZED (
	SELECT ` + runColumns + ` FROM runs WHERE run_id = $1 FOR NO KEY UPDATE)
SELECT r.*, ` + nowNanos + ` FROM r`

// lockRun locks a run's header row for the rest of tx and reads the clock
// after the lock is held, so "now" is ordered after every earlier writer
// of the run. Every write to a run goes through this row lock: it is what
// serializes a run's writers, on one machine or many.
//
// reads, when given, queue more reads on the same round trip: they run
// after the lock, on the transaction's one snapshot, exactly as if they
// were sent one by one after it, and their callbacks fill what the caller
// decides on. They do not run when the run does not exist.
func (s *Store) lockRun(ctx context.Context, tx *wtx, runID string, reads ...func(*pgx.Batch)) (store.Run, time.Time, error) {
	var r store.Run
	var clock int64
	b := &pgx.Batch{}
	b.Queue(lockSQL, runID).QueryRow(func(row pgx.Row) error {
		var err error
		r, err = scanRun(row, &clock)
		return err
	})
	for _, q := range reads {
		q(b)
	}
	if err := tx.SendBatch(ctx, b); err != nil {
		return r, time.Time{}, err
	}
	now := fromNanos(clock)
	if s.clock != nil {
		now = s.clock()
	}
	return r, now, nil
}

// fence locks the run and checks, inside tx, that lease is the run's
// current, unexpired lease and that the run is not quarantined. reads are
// lockRun's.
func (s *Store) fence(ctx context.Context, tx *wtx, op string, lease store.Lease, reads ...func(*pgx.Batch)) (store.Run, time.Time, error) {
	r, now, err := s.lockRun(ctx, tx, lease.RunID, reads...)
	if err != nil {
		return r, now, err
	}
	if r.Quarantine != "" {
		return r, now, store.Errorf(store.CodeQuarantined, op, lease.RunID, nil, "%s", r.Quarantine)
	}
	if r.Lease.Generation != lease.Generation || r.Lease.Owner != lease.Owner {
		return r, now, store.Errorf(store.CodeFenced, op, lease.RunID, nil,
			"lease generation %d of %q is stale; current is %d of %q", lease.Generation, lease.Owner, r.Lease.Generation, r.Lease.Owner)
	}
	if !r.Lease.ExpiresAt.After(now) {
		return r, now, store.Errorf(store.CodeFenced, op, lease.RunID, nil, "lease generation %d expired at %s", lease.Generation, r.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	return r, now, nil
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, run store.Run) error {
	if run.ID == "" || run.WorkflowID == "" || run.State == "" {
		return store.Errorf(store.CodeInvalidInput, "create run", run.ID, nil, "run id, workflow id and state are required")
	}
	return s.write(ctx, "create run", run.ID, func(tx *wtx) error {
		// One round trip: BEGIN, the row, the notification and COMMIT.
		tx.Queue(`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, `+nowParam(6)+`, `+nowParam(6)+`)`,
			run.ID, run.WorkflowID, run.WorkflowVersion, run.State, store.GenesisHash, s.injected())
		// A new run is new work: wake idle runners (delivered on commit).
		tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), run.ID)
		return nil
	})
}

// Run implements store.Store.
func (s *Store) Run(ctx context.Context, runID string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE run_id = $1`, runID))
	return r, s.mapErr("run", runID, err)
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, after string, limit int) ([]store.Run, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = $1), 0)
ORDER BY created_order LIMIT $2`, after, limit)
	if err != nil {
		return nil, s.mapErr("runs", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.mapErr("runs", "", err)
		}
		out = append(out, r)
	}
	return out, s.mapErr("runs", "", rows.Err())
}

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	if owner == "" || ttl <= 0 {
		return store.Lease{}, store.Errorf(store.CodeInvalidInput, "acquire lease", runID, nil, "owner and a positive ttl are required")
	}
	var lease store.Lease
	err := s.write(ctx, "acquire lease", runID, func(tx *wtx) error {
		r, now, err := s.lockRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if r.Quarantine != "" {
			return store.Errorf(store.CodeQuarantined, "acquire lease", runID, nil, "%s", r.Quarantine)
		}
		if r.Lease.Owner != "" && r.Lease.Owner != owner && r.Lease.ExpiresAt.After(now) {
			return store.Errorf(store.CodeLeaseHeld, "acquire lease", runID, nil,
				"held by %s (generation %d) until %s", r.Lease.Owner, r.Lease.Generation, r.Lease.ExpiresAt.Format(time.RFC3339Nano))
		}
		lease = store.Lease{RunID: runID, Owner: owner, Generation: r.Lease.Generation + 1, ExpiresAt: now.Add(ttl).UTC()}
		tx.Queue(`UPDATE runs SET lease_owner = $1, lease_generation = $2, lease_expires_at = $3, updated_at = $4 WHERE run_id = $5`,
			owner, lease.Generation, nanos(lease.ExpiresAt), nanos(now), runID)
		return nil
	})
	return lease, err
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	if ttl <= 0 {
		return store.Lease{}, store.Errorf(store.CodeInvalidInput, "renew lease", lease.RunID, nil, "a positive ttl is required")
	}
	out := lease
	err := s.write(ctx, "renew lease", lease.RunID, func(tx *wtx) error {
		_, now, err := s.fence(ctx, tx, "renew lease", lease)
		if err != nil {
			return err
		}
		out.ExpiresAt = now.Add(ttl).UTC()
		tx.Queue(`UPDATE runs SET lease_expires_at = $1, updated_at = $2 WHERE run_id = $3`,
			nanos(out.ExpiresAt), nanos(now), lease.RunID)
		return nil
	})
	return out, err
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, lease store.Lease) error {
	s.heads.forget(lease.RunID)
	return s.write(ctx, "release lease", lease.RunID, func(tx *wtx) error {
		_, now, err := s.fence(ctx, tx, "release lease", lease)
		if err != nil {
			return err
		}
		tx.Queue(`UPDATE runs SET lease_owner = '', lease_expires_at = 0, updated_at = $1 WHERE run_id = $2`,
			nanos(now), lease.RunID)
		// A released live run may be claimed by another runner at once.
		tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), lease.RunID)
		return nil
	})
}

// Quarantine implements store.Store.
func (s *Store) Quarantine(ctx context.Context, runID, reason string) error {
	if reason == "" {
		return store.Errorf(store.CodeInvalidInput, "quarantine", runID, nil, "a reason is required")
	}
	return s.write(ctx, "quarantine", runID, func(tx *wtx) error {
		_, now, err := s.lockRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		tx.Queue(`UPDATE runs SET quarantine = $1, lease_owner = '', lease_expires_at = 0, updated_at = $2 WHERE run_id = $3`,
			reason, nanos(now), runID)
		return nil
	})
}

// Live implements store.Store.
func (s *Store) Live(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM runs WHERE outcome = '' AND quarantine = '' ORDER BY created_order`)
	if err != nil {
		return nil, s.mapErr("live", "", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, s.mapErr("live", "", err)
}

// Ready implements store.ReadyLister.
func (s *Store) Ready(ctx context.Context, resting []string) ([]string, error) {
	if resting == nil {
		resting = []string{}
	}
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM runs r WHERE outcome = '' AND quarantine = '' AND (
	EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = r.run_id AND NOT i.consumed) OR NOT (state = ANY($1)))
ORDER BY created_order`, resting)
	if err != nil {
		return nil, s.mapErr("ready", "", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, s.mapErr("ready", "", err)
}
