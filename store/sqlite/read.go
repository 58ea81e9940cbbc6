package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

const approvalColumns = `approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, consumed_by`

func scanApproval(row scanner) (store.Approval, error) {
	var a store.Approval
	var exp int64
	var status string
	err := row.Scan(&a.ID, &a.RunID, &a.RequestDigest, &a.Nonce, blob{&a.Body}, &a.Digest, &exp, &status, &a.ConsumedBy)
	a.ExpiresAt = fromNanos(exp)
	a.Status = store.ApprovalStatus(status)
	return a, err
}

// GrantApproval implements store.Store.
func (s *Store) GrantApproval(ctx context.Context, a store.Approval) error {
	if err := store.ValidateGrant("grant approval", a); err != nil {
		return err
	}
	return s.write(ctx, "grant approval", a.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		return s.insertGrant(ctx, tx, a, now)
	})
}

// insertGrant records grant a, granted at now, in tx: for GrantApproval,
// and for Submit with the entry that hands it over.
func (s *Store) insertGrant(ctx context.Context, tx *wtx, a store.Approval, now time.Time) error {
	_, err := s.exec(ctx, tx, `INSERT INTO approvals (approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, 'granted', ?)`, a.ID, a.RunID, a.RequestDigest, a.Nonce, a.Body, a.Digest, nanos(a.ExpiresAt), nanos(now))
	return err
}

// RevokeApproval implements store.Store.
func (s *Store) RevokeApproval(ctx context.Context, approvalID string) error {
	return s.write(ctx, "revoke approval", "", func(ctx context.Context, tx *wtx, now time.Time) error {
		var status string
		err := s.queryRow(ctx, tx, `SELECT status FROM approvals WHERE approval_id = ?`, approvalID).Scan(&status)
		if err != nil {
			return err
		}
		if status != string(store.ApprovalGranted) {
			return store.Errorf(store.CodeApprovalUnavailable, "revoke approval", "", nil, "approval %s is %s", approvalID, status)
		}
		_, err = s.exec(ctx, tx, `UPDATE approvals SET status = 'revoked' WHERE approval_id = ?`, approvalID)
		return err
	})
}

// Approval implements store.Store.
func (s *Store) Approval(ctx context.Context, approvalID string) (store.Approval, error) {
	a, err := scanApproval(s.readRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE approval_id = ?`, approvalID))
	return a, mapErr("approval", "", err)
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, runID string, after int64) ([]store.Event, error) {
	rows, err := s.read(ctx, `SELECT seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at
FROM events WHERE run_id = ? AND seq > ? ORDER BY seq`, runID, after)
	if err != nil {
		return nil, mapErr("events", runID, err)
	}
	defer rows.Close()
	var out []store.Event
	var h [3]any // the hash columns' values, reused from row to row
	for rows.Next() {
		var e store.Event
		var at int64
		if err := rows.Scan(&e.Seq, &e.Kind, blob{&e.Body}, hashRaw{&h[0]}, hashRaw{&h[1]}, hashRaw{&h[2]}, &e.Generation, &at); err != nil {
			return nil, mapErr("events", runID, err)
		}
		if err := unpackHashes([3]*string{&e.Digest, &e.PrevHash, &e.ChainHash}, &h); err != nil {
			return nil, mapErr("events", runID, err)
		}
		e.RecordedAt = fromNanos(at)
		out = append(out, e)
	}
	return out, mapErr("events", runID, rows.Err())
}

// Checkpoint implements store.Store.
func (s *Store) Checkpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	var c store.Checkpoint
	var n int64
	err := s.readRow(ctx, `SELECT n, seq, format_version, build_digest, body, digest FROM checkpoints
WHERE run_id = ? ORDER BY n DESC LIMIT 1`, runID).Scan(&n, &c.Seq, &c.FormatVersion, &c.BuildDigest, blob{&c.Body}, &c.Digest)
	if err != nil {
		return c, mapErr("checkpoint", runID, err)
	}
	c.Body, err = store.OpenPackedBody(s.sealer, "checkpoint", store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: n}, c.Body)
	return c, err
}

// Intents implements store.Store.
func (s *Store) Intents(ctx context.Context, runID string) ([]store.Intent, error) {
	rows, err := s.read(ctx, intentsQuery, runID)
	if err != nil {
		return nil, mapErr("intents", runID, err)
	}
	defer rows.Close()
	var out []store.Intent
	for rows.Next() {
		var in store.Intent
		var status string
		if err := rows.Scan(&in.ID, &in.RunID, &in.Seq, &in.EffectType, &in.IdempotencyKey, &in.ContentDigest,
			&in.ApprovalID, blob{&in.Body}, &in.Digest, &status, &in.Route, &in.Attempts); err != nil {
			return nil, mapErr("intents", runID, err)
		}
		in.Outbox = store.OutboxStatus(status)
		out = append(out, in)
	}
	return out, mapErr("intents", runID, rows.Err())
}

// OpenOutbox implements store.OutboxLister, in one read.
func (s *Store) OpenOutbox(ctx context.Context) ([]store.OutboxEntry, error) {
	rows, err := s.read(ctx, `SELECT i.run_id, i.intent_id, i.effect_type, o.status, o.route, o.attempts
FROM outbox o JOIN intents i ON i.commit_order = o.intent_order JOIN runs r ON r.run_id = i.run_id
WHERE o.status <> 'done' ORDER BY r.created_order, i.commit_order`)
	if err != nil {
		return nil, mapErr("open outbox", "", err)
	}
	defer rows.Close()
	var out []store.OutboxEntry
	for rows.Next() {
		var e store.OutboxEntry
		var status string
		if err := rows.Scan(&e.RunID, &e.IntentID, &e.EffectType, &status, &e.Route, &e.Attempts); err != nil {
			return nil, mapErr("open outbox", "", err)
		}
		e.Status = store.OutboxStatus(status)
		out = append(out, e)
	}
	return out, mapErr("open outbox", "", rows.Err())
}

// Attempts implements store.Store.
func (s *Store) Attempts(ctx context.Context, intentID string) ([]store.Attempt, error) {
	return s.attempts(ctx, "", attemptsQuery, intentID)
}

// RunAttempts returns the attempts of every intent of a run, ordered by
// intent and attempt number: one read where Attempts takes one per intent,
// for a reader that checks a whole run (verify).
func (s *Store) RunAttempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	return s.attempts(ctx, runID, runAttemptsQuery, runID)
}

// The reads of a run's intents with their outbox rows, of an intent's
// attempts and of a run's. The outbox and the attempts are keyed by
// their intent's commit order (schema version 9); an attempt's intent id
// is read from its intent.
const (
	intentsQuery = `SELECT i.intent_id, i.run_id, i.seq, i.effect_type, i.idempotency_key, i.content_digest,
	COALESCE(i.approval_id, ''), i.body, i.digest, o.status, o.route, o.attempts
FROM intents i JOIN outbox o ON o.intent_order = i.commit_order WHERE i.run_id = ? ORDER BY i.commit_order`
	attemptsQuery = `SELECT i.intent_id, a.n, a.status, a.generation, a.detail, a.started_at, a.finished_at
FROM intents i JOIN attempts a ON a.intent_order = i.commit_order WHERE i.intent_id = ? ORDER BY a.n`
	runAttemptsQuery = `SELECT i.intent_id, a.n, a.status, a.generation, a.detail, a.started_at, a.finished_at
FROM intents i JOIN attempts a ON a.intent_order = i.commit_order WHERE i.run_id = ? ORDER BY i.intent_id, a.n`
)

// attempts reads attempt rows selected by query with its one argument;
// runID names the run in errors, if the read is a run's.
func (s *Store) attempts(ctx context.Context, runID, query, arg string) ([]store.Attempt, error) {
	rows, err := s.read(ctx, query, arg)
	if err != nil {
		return nil, mapErr("attempts", runID, err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
		var status string
		var st, fin int64
		if err := rows.Scan(&a.IntentID, &a.N, &status, &a.Generation, &a.Detail, &st, &fin); err != nil {
			return nil, mapErr("attempts", runID, err)
		}
		a.Status = store.AttemptStatus(status)
		a.StartedAt, a.FinishedAt = fromNanos(st), fromNanos(fin)
		out = append(out, a)
	}
	return out, mapErr("attempts", runID, rows.Err())
}

// RunApprovals returns the grants a run's intents name, whichever run each
// grant belongs to, and the run's other grants consumed (a quorum's
// concurring approvals), in one read.
func (s *Store) RunApprovals(ctx context.Context, runID string) ([]store.Approval, error) {
	rows, err := s.read(ctx, `SELECT a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by
FROM intents i JOIN approvals a ON a.approval_id = i.approval_id WHERE i.run_id = ?1
UNION ALL
SELECT a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by
FROM approvals a JOIN intents i ON i.intent_id = a.consumed_by WHERE a.run_id = ?1 AND `+store.ConcurringGrants+`
ORDER BY 1`, runID)
	if err != nil {
		return nil, mapErr("approvals", runID, err)
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, mapErr("approvals", runID, err)
		}
		out = append(out, a)
	}
	return out, mapErr("approvals", runID, rows.Err())
}

// Receipts implements store.Store.
func (s *Store) Receipts(ctx context.Context, runID string) ([]store.Receipt, error) {
	rows, err := s.read(ctx, `SELECT intent_id, outcome, body, digest FROM receipts WHERE run_id = ? ORDER BY commit_order`, runID)
	if err != nil {
		return nil, mapErr("receipts", runID, err)
	}
	defer rows.Close()
	var out []store.Receipt
	for rows.Next() {
		var r store.Receipt
		if err := rows.Scan(&r.IntentID, &r.Outcome, blob{&r.Body}, &r.Digest); err != nil {
			return nil, mapErr("receipts", runID, err)
		}
		out = append(out, r)
	}
	return out, mapErr("receipts", runID, rows.Err())
}

// Trace implements store.Store.
func (s *Store) Trace(ctx context.Context, runID string) ([]store.TraceRecord, error) {
	rows, err := s.read(ctx, `SELECT seq, last_seq, records FROM trace WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, mapErr("trace", runID, err)
	}
	defer rows.Close()
	var out []store.TraceRecord
	for rows.Next() {
		var seq, last int64
		var frame []byte
		if err := rows.Scan(&seq, &last, blob{&frame}); err != nil {
			return nil, mapErr("trace", runID, err)
		}
		recs, err := splitTrace(frame, last-seq+1)
		if err != nil {
			return nil, store.Errorf(store.CodeCorrupt, "trace", runID, err, "trace row at %d damaged", seq)
		}
		for i, r := range recs {
			body, err := store.OpenBody(s.sealer, "trace", store.SealRef{RunID: runID, Kind: store.SealTrace + "/" + r.kind, Seq: seq + int64(i)}, r.body)
			if err != nil {
				return nil, err
			}
			out = append(out, store.TraceRecord{Kind: r.kind, Body: body})
		}
	}
	return out, mapErr("trace", runID, rows.Err())
}
