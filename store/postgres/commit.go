package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/store"
)

// Commit implements store.Store: one REPEATABLE READ transaction that locks
// the run's row, checks the fence and the head, revalidates and consumes
// approvals, appends events to the hash chain, writes intents with their
// outbox rows, attempt results, new attempts, receipts, inbox consumption,
// the checkpoint, the run header and the trace — or nothing.
func (s *Store) Commit(ctx context.Context, lease store.Lease, tick store.Tick) error {
	const op = "commit"
	if err := store.ValidateTick(lease.RunID, tick); err != nil {
		return err
	}
	return s.write(ctx, op, lease.RunID, func(tx *wtx) error {
		run, now, err := s.fence(ctx, tx, op, lease)
		if err != nil {
			return err
		}
		if run.Head != tick.ExpectHead {
			return store.Errorf(store.CodeHeadMismatch, op, lease.RunID, nil, "writer computed from event %d, the run is at %d", tick.ExpectHead, run.Head)
		}
		if run.Outcome != "" {
			return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "run already ended with %s", run.Outcome)
		}
		ts := nanos(now)
		head := run.Head + int64(len(tick.Events))

		// Approvals: revalidated against the grant as stored, at this
		// transaction's clock reading, then consumed once.
		for _, use := range tick.Approvals {
			if err := s.consumeApproval(ctx, tx, lease.RunID, use, now); err != nil {
				return err
			}
		}

		// Intents, each with its outbox row. A reused idempotency key with the
		// same content is the same intent committed twice: refused as a
		// duplicate. With other content it is a conflict, never a reuse.
		for _, in := range tick.Intents {
			var existing string
			err := tx.QueryRow(ctx, `SELECT content_digest FROM intents WHERE idempotency_key = $1`, in.IdempotencyKey).Scan(&existing)
			switch {
			case err == nil && existing != in.ContentDigest:
				return store.Errorf(store.CodeIdempotencyConflict, op, lease.RunID, nil, "idempotency key %s is bound to other content", in.IdempotencyKey)
			case err == nil:
				return store.Errorf(store.CodeExists, op, lease.RunID, nil, "intent with idempotency key %s already committed", in.IdempotencyKey)
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
			var approval any
			if in.ApprovalID != "" {
				approval = in.ApprovalID
			}
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				in.ID, lease.RunID, head, in.EffectType, in.IdempotencyKey, in.ContentDigest, approval, in.Body, in.Digest, lease.Generation, ts)
			b.Queue(`INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ($1, $2, 'pending', $3)`, in.ID, lease.RunID, ts)
			if err := tx.SendBatch(ctx, b); err != nil {
				if isDuplicate(err) && pgConstraint(err) == "intents_idempotency_key" {
					// Another run committed this key after our snapshot
					// was taken; run again to report exactly what it is.
					return errRetryKey
				}
				return err
			}
		}

		// Attempt results move their intent's outbox. (Results come before
		// new attempts so that a retry can finish the last attempt and begin
		// the next one in one tick.)
		for _, r := range tick.Results {
			tag, err := tx.Exec(ctx, `UPDATE attempts SET status = $1, detail = $2, finished_at = $3
WHERE intent_id = $4 AND n = $5 AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = $6)`,
				string(r.Status), r.Detail, ts, r.IntentID, r.N, lease.RunID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "no attempt %d of intent %s in this run", r.N, r.IntentID)
			}
			if _, err := tx.Exec(ctx, `UPDATE outbox SET status = $1, route = $2, updated_at = $3 WHERE intent_id = $4`,
				string(r.Outbox), r.Route, ts, r.IntentID); err != nil {
				return err
			}
		}

		for _, id := range tick.Begin {
			if _, err := beginAttempt(ctx, tx, lease, id, now); err != nil {
				return err
			}
		}

		// Receipts close their intents.
		for _, rc := range tick.Receipts {
			var status string
			err := tx.QueryRow(ctx, `SELECT o.status FROM outbox o JOIN intents i ON i.intent_id = o.intent_id
WHERE o.intent_id = $1 AND i.run_id = $2`, rc.IntentID, lease.RunID).Scan(&status)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "receipt for unknown intent %s", rc.IntentID)
			} else if err != nil {
				return err
			}
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, rc.IntentID, lease.RunID, rc.Outcome, rc.Body, rc.Digest, lease.Generation, ts)
			b.Queue(`UPDATE outbox SET status = 'done', updated_at = $1 WHERE intent_id = $2`, ts, rc.IntentID)
			if err := tx.SendBatch(ctx, b); err != nil {
				return err
			}
		}

		for _, id := range tick.Consume {
			tag, err := tx.Exec(ctx, `UPDATE inbox SET consumed = true WHERE run_id = $1 AND inbound_id = $2 AND NOT consumed`, lease.RunID, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "inbound %s is not pending in this run", id)
			}
		}

		// The rest only appends and cannot be refused by what it finds, so
		// it travels in one round trip: events extending the hash chain,
		// the checkpoint, the run header and the trace.
		cpBody, traceBodies, err := s.sealTick(ctx, tx, op, lease.RunID, tick)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		seq, hash := run.Head, run.HeadHash
		for _, ev := range tick.Events {
			seq++
			next := store.ChainHash(hash, seq, ev.Digest)
			b.Queue(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, lease.RunID, seq, ev.Kind, ev.Body, ev.Digest, hash, next, lease.Generation, ts)
			hash = next
		}
		if cp := tick.Checkpoint; cp != nil {
			b.Queue(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES ($1, (SELECT COALESCE(MAX(n), 0) + 1 FROM checkpoints WHERE run_id = $1), $2, $3, $4, $5, $6, $7, $8)`,
				lease.RunID, head, cp.FormatVersion, cp.BuildDigest, cpBody, cp.Digest, lease.Generation, ts)
		}
		state := run.State
		if tick.State != "" {
			state = tick.State
		}
		b.Queue(`UPDATE runs SET head_seq = $1, head_hash = $2, state = $3, outcome = $4, updated_at = $5 WHERE run_id = $6`,
			head, hash, state, tick.Outcome, ts, lease.RunID)
		for i, tr := range tick.Trace {
			b.Queue(`INSERT INTO trace (run_id, seq, kind, body, recorded_at)
VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM trace WHERE run_id = $1), $2, $3, $4)`, lease.RunID, tr.Kind, traceBodies[i], ts)
		}
		return tx.commitWith(ctx, b)
	})
}

// errRetryKey makes write run a transaction again: a concurrent commit
// claimed an idempotency key first, and only a fresh snapshot can tell
// a duplicate from a conflict.
var errRetryKey = retryError{}

type retryError struct{}

func (retryError) Error() string { return "idempotency key claimed concurrently" }

func pgConstraint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

// consumeApproval revalidates a grant as stored, at the transaction's clock
// reading, and consumes it once.
func (s *Store) consumeApproval(ctx context.Context, tx *wtx, runID string, use store.ApprovalUse, now time.Time) error {
	const op = "commit"
	a, err := scanApproval(tx.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE approval_id = $1`, use.ApprovalID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s was never granted", use.ApprovalID)
	} else if err != nil {
		return err
	}
	if a.Status != store.ApprovalGranted {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s is %s", use.ApprovalID, a.Status)
	}
	if a.RunID != runID {
		return store.Errorf(store.CodeApprovalRejected, op, runID, nil, "approval %s belongs to run %s", use.ApprovalID, a.RunID)
	}
	if !now.Before(a.ExpiresAt) {
		return store.Errorf(store.CodeApprovalRejected, op, runID, nil, "approval %s expired at %s", use.ApprovalID, a.ExpiresAt.Format(time.RFC3339Nano))
	}
	if use.Check != nil {
		if err := use.Check(a, now); err != nil {
			return store.Errorf(store.CodeApprovalRejected, op, runID, err, "approval %s", use.ApprovalID)
		}
	}
	tag, err := tx.Exec(ctx, `UPDATE approvals SET status = 'consumed', consumed_by = $1 WHERE approval_id = $2 AND status = 'granted'`,
		use.IntentID, use.ApprovalID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s was consumed or revoked concurrently", use.ApprovalID)
	}
	return nil
}

// BeginAttempt implements store.Store.
func (s *Store) BeginAttempt(ctx context.Context, lease store.Lease, intentID string) (store.Attempt, error) {
	const op = "begin attempt"
	var at store.Attempt
	err := s.write(ctx, op, lease.RunID, func(tx *wtx) error {
		_, now, err := s.fence(ctx, tx, op, lease)
		if err != nil {
			return err
		}
		at, err = beginAttempt(ctx, tx, lease, intentID, now)
		return err
	})
	return at, err
}

// beginAttempt records attempt n+1 of an intent inside tx (already fenced).
func beginAttempt(ctx context.Context, tx *wtx, lease store.Lease, intentID string, now time.Time) (store.Attempt, error) {
	const op = "begin attempt"
	var status string
	var attempts int64
	err := tx.QueryRow(ctx, `SELECT o.status, o.attempts FROM outbox o JOIN intents i ON i.intent_id = o.intent_id
WHERE o.intent_id = $1 AND i.run_id = $2`, intentID, lease.RunID).Scan(&status, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Attempt{}, store.Errorf(store.CodeNotFound, op, lease.RunID, nil, "no intent %s in this run", intentID)
	} else if err != nil {
		return store.Attempt{}, err
	}
	// Only a pending intent or one whose last attempt failed transiently
	// may be attempted; in-flight and unknown outcomes reconcile first.
	if status != string(store.OutboxPending) && status != string(store.OutboxRetry) {
		return store.Attempt{}, store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "intent %s is %s, not attemptable", intentID, status)
	}
	at := store.Attempt{IntentID: intentID, N: attempts + 1, Status: store.AttemptStarted, Generation: lease.Generation, StartedAt: now.UTC()}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO attempts (intent_id, n, status, generation, started_at) VALUES ($1, $2, 'started', $3, $4)`,
		intentID, at.N, lease.Generation, nanos(now))
	b.Queue(`UPDATE outbox SET status = 'in_flight', attempts = $1, updated_at = $2 WHERE intent_id = $3`, at.N, nanos(now), intentID)
	return at, tx.SendBatch(ctx, b)
}

// sealTick returns the bodies the tick's checkpoint and trace records are
// stored with: as they are without a sealer, else sealed for the positions
// the INSERTs above will give them. The run's row is locked, so no other
// commit of this run can take those positions first. The tick itself is
// left alone: a transaction run again seals afresh.
func (s *Store) sealTick(ctx context.Context, tx *wtx, op, runID string, tick store.Tick) (cp []byte, trace [][]byte, err error) {
	trace = make([][]byte, len(tick.Trace))
	if tick.Checkpoint != nil {
		cp = tick.Checkpoint.Body
	}
	for i, tr := range tick.Trace {
		trace[i] = tr.Body
	}
	if s.sealer == nil {
		return cp, trace, nil
	}
	var n, seq int64
	if err := tx.QueryRow(ctx, `SELECT (SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = $1),
	(SELECT COALESCE(MAX(seq), 0) FROM trace WHERE run_id = $1)`, runID).Scan(&n, &seq); err != nil {
		return nil, nil, err
	}
	if cp != nil {
		if cp, err = store.SealBody(s.sealer, op, store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: n + 1}, cp); err != nil {
			return nil, nil, err
		}
	}
	for i, tr := range tick.Trace {
		if trace[i], err = store.SealBody(s.sealer, op, store.SealRef{RunID: runID, Kind: store.SealTrace + "/" + tr.Kind, Seq: seq + int64(i) + 1}, tr.Body); err != nil {
			return nil, nil, err
		}
	}
	return cp, trace, nil
}
