package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

const approvalColumns = `approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, consumed_by`

func scanApproval(row pgx.Row) (store.Approval, error) {
	var a store.Approval
	var exp int64
	var status string
	err := row.Scan(&a.ID, &a.RunID, &a.RequestDigest, &a.Nonce, &a.Body, &a.Digest, &exp, &status, &a.ConsumedBy)
	a.ExpiresAt = fromNanos(exp)
	a.Status = store.ApprovalStatus(status)
	return a, err
}

// GrantApproval implements store.Store.
func (s *Store) GrantApproval(ctx context.Context, a store.Approval) error {
	if err := store.ValidateGrant("grant approval", a); err != nil {
		return err
	}
	return s.write(ctx, "grant approval", a.RunID, func(tx *wtx) error {
		tx.Queue(`INSERT INTO approvals (approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'granted', `+nowParam(8)+`)`,
			a.ID, a.RunID, a.RequestDigest, a.Nonce, a.Body, a.Digest, nanos(a.ExpiresAt), s.injected())
		return nil
	})
}

// RevokeApproval implements store.Store.
func (s *Store) RevokeApproval(ctx context.Context, approvalID string) error {
	return s.write(ctx, "revoke approval", "", func(tx *wtx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM approvals WHERE approval_id = $1 FOR UPDATE`, approvalID).Scan(&status)
		if err != nil {
			return err
		}
		if status != string(store.ApprovalGranted) {
			return store.Errorf(store.CodeApprovalUnavailable, "revoke approval", "", nil, "approval %s is %s", approvalID, status)
		}
		tx.Queue(`UPDATE approvals SET status = 'revoked' WHERE approval_id = $1`, approvalID)
		return nil
	})
}

// Approval implements store.Store.
func (s *Store) Approval(ctx context.Context, approvalID string) (store.Approval, error) {
	a, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE approval_id = $1`, approvalID))
	return a, s.mapErr("approval", "", err)
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, runID string, after int64) ([]store.Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+eventRowColumns+` FROM events WHERE run_id = $1 AND last_seq > $2 ORDER BY last_seq`, runID, after)
	if err != nil {
		return nil, s.mapErr("events", runID, err)
	}
	defer rows.Close()
	var out []store.Event
	var r eventRow
	for rows.Next() {
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, s.mapErr("events", runID, err)
		}
		if out, err = r.appendTo(out, after); err != nil {
			return nil, s.mapErr("events", runID, err)
		}
	}
	return out, s.mapErr("events", runID, rows.Err())
}

// Checkpoint implements store.Store.
func (s *Store) Checkpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	var c store.Checkpoint
	var n int64
	err := scanCheckpoint(s.pool.QueryRow(ctx, checkpointSQL, runID), &c, &n)
	return s.openCheckpoint(runID, c, n, err)
}

// scanCheckpoint scans checkpointSQL's row into c and its number n.
func scanCheckpoint(row pgx.Row, c *store.Checkpoint, n *int64) error {
	return row.Scan(n, &c.Seq, &c.FormatVersion, &c.BuildDigest, &c.Body, &c.Digest)
}

// checkpointSQL reads a run's last checkpoint, as openCheckpoint takes it.
const checkpointSQL = `SELECT n, seq, format_version, build_digest, body, digest FROM checkpoints
WHERE run_id = $1 ORDER BY n DESC LIMIT 1`

// openCheckpoint is what Checkpoint returns for checkpoint number n, c, as
// checkpointSQL's row scanned with err.
func (s *Store) openCheckpoint(runID string, c store.Checkpoint, n int64, err error) (store.Checkpoint, error) {
	if err != nil {
		return c, s.mapErr("checkpoint", runID, err)
	}
	c.Body, err = store.OpenBody(s.sealer, "checkpoint", store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: n}, c.Body)
	return c, err
}

// Intents implements store.Store.
func (s *Store) Intents(ctx context.Context, runID string) ([]store.Intent, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.intent_id, i.run_id, i.seq, i.effect_type, i.idempotency_key, i.content_digest,
	COALESCE(i.approval_id, ''), i.body, i.digest, o.status, o.route, o.attempts
FROM intents i JOIN outbox o ON o.intent_id = i.intent_id WHERE i.run_id = $1 ORDER BY i.commit_order`, runID)
	if err != nil {
		return nil, s.mapErr("intents", runID, err)
	}
	defer rows.Close()
	var out []store.Intent
	for rows.Next() {
		var in store.Intent
		var status string
		if err := rows.Scan(&in.ID, &in.RunID, &in.Seq, &in.EffectType, &in.IdempotencyKey, &in.ContentDigest,
			&in.ApprovalID, &in.Body, &in.Digest, &status, &in.Route, &in.Attempts); err != nil {
			return nil, s.mapErr("intents", runID, err)
		}
		in.Outbox = store.OutboxStatus(status)
		out = append(out, in)
	}
	return out, s.mapErr("intents", runID, rows.Err())
}

// OpenOutbox implements store.OutboxLister, in one read.
func (s *Store) OpenOutbox(ctx context.Context) ([]store.OutboxEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.run_id, i.intent_id, i.effect_type, o.status, o.route, o.attempts
FROM outbox o JOIN intents i ON i.intent_id = o.intent_id JOIN runs r ON r.run_id = i.run_id
WHERE o.status <> 'done' ORDER BY r.created_order, i.commit_order`)
	if err != nil {
		return nil, s.mapErr("open outbox", "", err)
	}
	defer rows.Close()
	var out []store.OutboxEntry
	for rows.Next() {
		var e store.OutboxEntry
		var status string
		if err := rows.Scan(&e.RunID, &e.IntentID, &e.EffectType, &status, &e.Route, &e.Attempts); err != nil {
			return nil, s.mapErr("open outbox", "", err)
		}
		e.Status = store.OutboxStatus(status)
		out = append(out, e)
	}
	return out, s.mapErr("open outbox", "", rows.Err())
}

// Attempts implements store.Store.
func (s *Store) Attempts(ctx context.Context, intentID string) ([]store.Attempt, error) {
	return s.attempts(ctx, "", `SELECT intent_id, n, status, generation, detail, started_at, finished_at
FROM attempts WHERE intent_id = $1 ORDER BY n`, intentID)
}

// RunAttempts returns the attempts of every intent of a run, ordered by
// intent and attempt number: one read where Attempts takes one per intent,
// for a reader that checks a whole run (verify).
func (s *Store) RunAttempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	return s.attempts(ctx, runID, `SELECT a.intent_id, a.n, a.status, a.generation, a.detail, a.started_at, a.finished_at
FROM intents i JOIN attempts a ON a.intent_id = i.intent_id WHERE i.run_id = $1 ORDER BY a.intent_id, a.n`, runID)
}

// attempts reads attempt rows selected by query with its one argument;
// runID names the run in errors, if the read is a run's.
func (s *Store) attempts(ctx context.Context, runID, query, arg string) ([]store.Attempt, error) {
	rows, err := s.pool.Query(ctx, query, arg)
	if err != nil {
		return nil, s.mapErr("attempts", runID, err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
		var status string
		var st, fin int64
		if err := rows.Scan(&a.IntentID, &a.N, &status, &a.Generation, &a.Detail, &st, &fin); err != nil {
			return nil, s.mapErr("attempts", runID, err)
		}
		a.Status = store.AttemptStatus(status)
		a.StartedAt, a.FinishedAt = fromNanos(st), fromNanos(fin)
		out = append(out, a)
	}
	return out, s.mapErr("attempts", runID, rows.Err())
}

// RunApprovals returns the grants a run's intents name, whichever run each
// grant belongs to, and the run's other grants consumed (a quorum's
// concurring approvals), in one read.
func (s *Store) RunApprovals(ctx context.Context, runID string) ([]store.Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by
FROM intents i JOIN approvals a ON a.approval_id = i.approval_id WHERE i.run_id = $1
UNION ALL
SELECT a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by
FROM approvals a JOIN intents i ON i.intent_id = a.consumed_by WHERE a.run_id = $1 AND `+store.ConcurringGrants+`
ORDER BY 1`, runID)
	if err != nil {
		return nil, s.mapErr("approvals", runID, err)
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, s.mapErr("approvals", runID, err)
		}
		out = append(out, a)
	}
	return out, s.mapErr("approvals", runID, rows.Err())
}

// Receipts implements store.Store.
func (s *Store) Receipts(ctx context.Context, runID string) ([]store.Receipt, error) {
	rows, err := s.pool.Query(ctx, `SELECT intent_id, outcome, body, digest FROM receipts WHERE run_id = $1 ORDER BY commit_order`, runID)
	if err != nil {
		return nil, s.mapErr("receipts", runID, err)
	}
	defer rows.Close()
	var out []store.Receipt
	for rows.Next() {
		var r store.Receipt
		if err := rows.Scan(&r.IntentID, &r.Outcome, &r.Body, &r.Digest); err != nil {
			return nil, s.mapErr("receipts", runID, err)
		}
		out = append(out, r)
	}
	return out, s.mapErr("receipts", runID, rows.Err())
}

// Trace implements store.Store.
func (s *Store) Trace(ctx context.Context, runID string) ([]store.TraceRecord, error) {
	// A row holds a tick's records in order; each takes the position
	// after the row's first one by its place in the row.
	rows, err := s.pool.Query(ctx, `SELECT t.seq + r.i - 1, r.kind, r.body
FROM trace t CROSS JOIN LATERAL unnest(t.kinds, t.bodies) WITH ORDINALITY AS r(kind, body, i)
WHERE t.run_id = $1 ORDER BY t.seq, r.i`, runID)
	if err != nil {
		return nil, s.mapErr("trace", runID, err)
	}
	defer rows.Close()
	var out []store.TraceRecord
	for rows.Next() {
		var t store.TraceRecord
		var seq int64
		if err := rows.Scan(&seq, &t.Kind, &t.Body); err != nil {
			return nil, s.mapErr("trace", runID, err)
		}
		if t.Body, err = store.OpenBody(s.sealer, "trace", store.SealRef{RunID: runID, Kind: store.SealTrace + "/" + t.Kind, Seq: seq}, t.Body); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, s.mapErr("trace", runID, rows.Err())
}
