package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"flrh.dev/flrh/store"
)

// insertNotice writes a tick's notice; a second of the same ID (the same
// tick's, committed again after a lost answer) changes nothing.
const insertNotice = `INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, next_at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (notice_id) DO NOTHING`

// insertNotices writes notices of run runID outside a tick (a
// quarantine's, a run told of), at its head and trace position, as the
// tick that left it there would have.
func (s *Store) insertNotices(ctx context.Context, tx *wtx, runID string, head, traceSeq int64, now time.Time, notices []store.Notice) error {
	for _, n := range notices {
		if _, err := s.exec(ctx, tx, insertNotice, store.NoticeID(runID, head, traceSeq, n.Kind), runID, head, n.Kind, n.Body, nanos(now), nanos(now)); err != nil {
			return err
		}
	}
	return nil
}

// ClaimNotices implements store.Noticeboard: in one write transaction,
// the oldest due notice not held is held, up to limit times.
func (s *Store) ClaimNotices(ctx context.Context, holder string, hold time.Duration, limit int) ([]store.Notice, error) {
	if err := store.ValidateClaim(holder, hold, limit); err != nil {
		return nil, err
	}
	var out []store.Notice
	err := s.write(ctx, "claim notices", "", func(ctx context.Context, tx *wtx, now time.Time) error {
		out = out[:0]
		at, until := now.UnixNano(), now.Add(hold).UnixNano()
		for range limit {
			var n store.Notice
			var created int64
			var sent, waits string
			var due int64
			err := s.queryRow(ctx, tx, `UPDATE notices SET holder = ?, held_until = ?, attempts = attempts + 1
WHERE rowid = (SELECT rowid FROM notices WHERE next_at <= ? AND held_until <= ? ORDER BY next_at, rowid LIMIT 1)
RETURNING notice_id, run_id, seq, kind, body, created_at, attempts, last_error, sent, waits, next_at`, holder, until, at, at).
				Scan(&n.ID, &n.RunID, &n.Seq, &n.Kind, blob{&n.Body}, &created, &n.Attempts, &n.LastError, &sent, &waits, &due)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			n.CreatedAt, n.Sent, n.Waits = fromNanos(created), store.SplitSent(sent), store.SplitWaits(waits, time.Duration(at-due))
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NoticeDone implements store.Noticeboard.
func (s *Store) NoticeDone(ctx context.Context, id, holder string) error {
	return s.settleNotice(ctx, "notice done", id, holder, func(now time.Time) (string, []any) {
		return `DELETE FROM notices WHERE notice_id = ? AND holder = ? AND held_until > ?`, []any{id, holder, now.UnixNano()}
	})
}

// NoticeRetry implements store.Noticeboard.
func (s *Store) NoticeRetry(ctx context.Context, id, holder, reason string, sent []string, waits []store.RouteWait) error {
	if err := store.ValidateRetry(sent, waits); err != nil {
		return err
	}
	kept, after := store.JoinWaits(waits)
	return s.settleNotice(ctx, "notice retry", id, holder, func(now time.Time) (string, []any) {
		return `UPDATE notices SET holder = '', held_until = 0, next_at = ?, last_error = ?, sent = ?, waits = ?
WHERE notice_id = ? AND holder = ? AND held_until > ?`, []any{now.Add(after).UnixNano(), store.NoticeReason(reason), store.JoinSent(sent), kept, id, holder, now.UnixNano()}
	})
}

// NoticeRelease implements store.Noticeboard.
func (s *Store) NoticeRelease(ctx context.Context, id, holder string) error {
	return s.settleNotice(ctx, "notice release", id, holder, func(now time.Time) (string, []any) {
		return `UPDATE notices SET holder = '', held_until = 0, attempts = max(attempts - 1, 0)
WHERE notice_id = ? AND holder = ? AND held_until > ?`, []any{id, holder, now.UnixNano()}
	})
}

// settleNotice runs the statement stmt makes at the transaction's time,
// which changes the notice id while holder holds it, and refuses when it
// changed nothing.
func (s *Store) settleNotice(ctx context.Context, op, id, holder string, stmt func(now time.Time) (string, []any)) error {
	if id == "" || holder == "" {
		return store.Errorf(store.CodeInvalidInput, op, "", nil, "a notice's id and holder are required")
	}
	return s.write(ctx, op, "", func(ctx context.Context, tx *wtx, now time.Time) error {
		query, args := stmt(now)
		res, err := s.exec(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		if res.n == 0 {
			return store.Errorf(store.CodeFenced, op, "", nil, "notice %s is not held by %s", id, holder)
		}
		return nil
	})
}

// TellRun implements store.Noticeboard.
func (s *Store) TellRun(ctx context.Context, runID string, head int64, notices ...store.Notice) (bool, error) {
	const op = "tell run"
	if err := store.ValidateTell(runID, head, notices); err != nil {
		return false, err
	}
	told := false
	err := s.write(ctx, op, runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		told = false
		var at, traceSeq int64
		err := s.queryRow(ctx, tx, `SELECT head_seq, trace_seq FROM runs WHERE run_id = ?`, runID).Scan(&at, &traceSeq)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.Errorf(store.CodeNotFound, op, runID, nil, "no such run")
		case err != nil:
			return err
		case at != head:
			return nil // moved on
		}
		told = true
		return s.insertNotices(ctx, tx, runID, head, traceSeq, now, notices)
	})
	return told && err == nil, err
}

// RunNotices implements store.Noticeboard.
func (s *Store) RunNotices(ctx context.Context, runID string) ([]store.Notice, error) {
	const op = "run notices"
	rows, err := s.read(ctx, `SELECT notice_id, run_id, seq, kind, body, created_at, attempts, last_error, sent
FROM notices WHERE run_id = ? ORDER BY created_at, rowid`, runID)
	if err != nil {
		return nil, mapErr(op, runID, err)
	}
	defer rows.Close()
	var out []store.Notice
	for rows.Next() {
		var n store.Notice
		var created int64
		var sent string
		if err := rows.Scan(&n.ID, &n.RunID, &n.Seq, &n.Kind, blob{&n.Body}, &created, &n.Attempts, &n.LastError, &sent); err != nil {
			return nil, mapErr(op, runID, err)
		}
		n.CreatedAt, n.Sent = fromNanos(created), store.SplitSent(sent)
		out = append(out, n)
	}
	return out, mapErr(op, runID, rows.Err())
}

// NoticeBacklog implements store.Noticeboard.
func (s *Store) NoticeBacklog(ctx context.Context) (store.Backlog, error) {
	const op = "notice backlog"
	var b store.Backlog
	now := s.clock().UnixNano()
	// The counts and the oldest notice not held (Backlog.Held), in one
	// statement: one state of the table.
	rows, err := s.read(ctx, `WITH h AS (SELECT *, rowid AS r, (last_error = '' AND waits <> '' AND next_at > ?) AS held FROM notices)
SELECT c.n, c.held, o.notice_id, o.run_id, o.seq, o.kind, o.created_at, o.attempts, o.last_error, o.sent, o.waits, o.next_at
FROM (SELECT count(*) AS n, coalesce(sum(held), 0) AS held FROM h) AS c
LEFT JOIN (SELECT * FROM h WHERE NOT held ORDER BY created_at, r LIMIT 1) AS o ON true`, now)
	if err != nil {
		return b, mapErr(op, "", err)
	}
	defer rows.Close()
	if rows.Next() {
		o := &b.Oldest
		var id, runID, kind, lastError, sent, waits sql.NullString
		var seq, created, due, attempts sql.NullInt64
		if err := rows.Scan(&b.Count, &b.Held, &id, &runID, &seq, &kind, &created, &attempts, &lastError, &sent, &waits, &due); err != nil {
			return store.Backlog{}, mapErr(op, "", err)
		}
		if !id.Valid {
			return b, mapErr(op, "", rows.Err())
		}
		o.ID, o.RunID, o.Seq, o.Kind, o.Attempts, o.LastError = id.String, runID.String, seq.Int64, kind.String, int(attempts.Int64), lastError.String
		// Read before its due time, a wait has that much more left.
		o.CreatedAt, o.Sent, o.Waits = fromNanos(created.Int64), store.SplitSent(sent.String), store.SplitWaits(waits.String, time.Duration(now-due.Int64))
	}
	return b, mapErr(op, "", rows.Err())
}
