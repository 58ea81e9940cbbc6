package postgres

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// ClaimNotices implements store.Noticeboard: the oldest due notices no
// one holds are locked, skipping those another claim has locked, and
// held, in one statement at the database's clock.
func (s *Store) ClaimNotices(ctx context.Context, holder string, hold time.Duration, limit int) ([]store.Notice, error) {
	const op = "claim notices"
	if err := store.ValidateClaim(holder, hold, limit); err != nil {
		return nil, err
	}
	type claimed struct {
		n         store.Notice
		next, ord int64
	}
	var got []claimed
	err := s.write(ctx, op, "", func(tx *wtx) error {
		got = got[:0]
		b := &pgx.Batch{}
		b.Queue(`WITH clock AS (SELECT `+nowParam(3)+` AS now),
due AS (SELECT ord FROM notices, clock WHERE next_at <= clock.now AND held_until <= clock.now ORDER BY next_at, ord LIMIT $4 FOR UPDATE OF notices SKIP LOCKED)
UPDATE notices n SET holder = $1, held_until = clock.now + $2::bigint, attempts = n.attempts + 1 FROM due, clock WHERE n.ord = due.ord
RETURNING n.notice_id, n.run_id, n.seq, n.kind, n.body, n.created_at, n.attempts, n.last_error, n.sent, n.waits, n.next_at, n.ord, clock.now`,
			holder, hold.Nanoseconds(), s.injected(), limit).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var c claimed
				var created, now int64
				var sent, waits string
				if err := rows.Scan(&c.n.ID, &c.n.RunID, &c.n.Seq, &c.n.Kind, &c.n.Body, &created, &c.n.Attempts, &c.n.LastError, &sent, &waits, &c.next, &c.ord, &now); err != nil {
					return err
				}
				c.n.CreatedAt, c.n.Sent, c.n.Waits = fromNanos(created), store.SplitSent(sent), store.SplitWaits(waits, time.Duration(now-c.next))
				got = append(got, c)
			}
			return rows.Err()
		})
		return tx.SendBatch(ctx, b)
	})
	if err != nil {
		return nil, err
	}
	// RETURNING follows no order: the claim's is the queue's.
	slices.SortFunc(got, func(a, b claimed) int { return cmp.Or(cmp.Compare(a.next, b.next), cmp.Compare(a.ord, b.ord)) })
	out := make([]store.Notice, len(got))
	for i, c := range got {
		out[i] = c.n
	}
	return out, nil
}

// NoticeDone implements store.Noticeboard.
func (s *Store) NoticeDone(ctx context.Context, id, holder string) error {
	return s.settleNotice(ctx, "notice done", id, holder,
		`DELETE FROM notices WHERE notice_id = $1 AND holder = $2 AND held_until > `+nowParam(3), s.injected())
}

// NoticeRetry implements store.Noticeboard.
func (s *Store) NoticeRetry(ctx context.Context, id, holder, reason string, sent []string, waits []store.RouteWait) error {
	if err := store.ValidateRetry(sent, waits); err != nil {
		return err
	}
	kept, after := store.JoinWaits(waits)
	return s.settleNotice(ctx, "notice retry", id, holder, `WITH clock AS (SELECT `+nowParam(3)+` AS now)
UPDATE notices SET holder = '', held_until = 0, next_at = clock.now + $4::bigint, last_error = $5, sent = $6, waits = $7
FROM clock WHERE notice_id = $1 AND holder = $2 AND held_until > clock.now`, s.injected(), after.Nanoseconds(), store.NoticeReason(reason), store.JoinSent(sent), kept)
}

// NoticeRelease implements store.Noticeboard, and wakes the store's
// notifiers, as a notice written does: one of them takes it at once.
func (s *Store) NoticeRelease(ctx context.Context, id, holder string) error {
	return s.settleNotice(ctx, "notice release", id, holder, `WITH clock AS (SELECT `+nowParam(3)+` AS now),
r AS (UPDATE notices SET holder = '', held_until = 0, attempts = GREATEST(attempts - 1, 0)
FROM clock WHERE notice_id = $1 AND holder = $2 AND held_until > clock.now RETURNING run_id)
SELECT pg_notify($4, run_id) FROM r`, s.injected(), s.noticeChannel())
}

// settleNotice runs query, which changes the notice $1 while $2 holds it,
// with the arguments after those two, and refuses when it changed
// nothing.
func (s *Store) settleNotice(ctx context.Context, op, id, holder, query string, args ...any) error {
	if id == "" || holder == "" {
		return store.Errorf(store.CodeInvalidInput, op, "", nil, "a notice's id and holder are required")
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		tag, err := tx.Exec(ctx, query, append([]any{id, holder}, args...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.Errorf(store.CodeFenced, op, "", nil, "notice %s is not held by %s", id, holder)
		}
		return nil
	})
}

// TellRun implements store.Noticeboard, in one statement: the run's
// head read under a share lock (a tick moving it waits, or is waited
// for), the notices written only where it stands at head.
func (s *Store) TellRun(ctx context.Context, runID string, head int64, notices ...store.Notice) (bool, error) {
	const op = "tell run"
	if err := store.ValidateTell(runID, head, notices); err != nil {
		return false, err
	}
	kinds, bodies := noticeArrays(notices)
	var at *int64
	err := s.write(ctx, op, runID, func(tx *wtx) error {
		at = nil
		b := &pgx.Batch{}
		b.Queue(`WITH r AS MATERIALIZED (SELECT run_id, head_seq FROM runs WHERE run_id = $1 FOR SHARE),
c AS (SELECT `+nowParam(5)+` AS now),
`+noticesInsertCTE("r", "(SELECT now FROM c)", "$3", "$4", "r.head_seq = $2")+`,
woken AS (SELECT pg_notify($6, $1) FROM r WHERE r.head_seq = $2)
SELECT (SELECT head_seq FROM r) + 0 * (SELECT count(*) FROM woken)`, runID, head, kinds, bodies, s.injected(), s.noticeChannel()).QueryRow(func(row pgx.Row) error { return row.Scan(&at) })
		return tx.SendBatch(ctx, b)
	})
	switch {
	case err != nil:
		return false, err
	case at == nil:
		return false, store.Errorf(store.CodeNotFound, op, runID, nil, "no such run")
	}
	return *at == head, nil
}

// noticesInsertCTE is the part of a statement (the CTEs t and n) that
// writes notices outside a tick (a quarantine's, a run told of) for the
// run row named run (run_id $1, head_seq) where cond holds, at the time
// now, from the arrays of their kinds and bodies (noticeArrays) in the
// parameters kinds and bodies: each ID made from the run's head and last
// trace record, as the tick that left it there would have made it.
func noticesInsertCTE(run, now, kinds, bodies, cond string) string {
	return `t AS (SELECT ` + lastTraceSQL + ` AS last),
n AS (INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, next_at)
	SELECT ` + run + `.run_id || '/' || ` + run + `.head_seq || '/' || t.last || '/' || k.kind, ` + run + `.run_id, ` + run + `.head_seq, k.kind, k.body, ` + now + `, ` + now + `
	FROM ` + run + `, t, unnest(` + kinds + `::text[], ` + bodies + `::bytea[]) AS k(kind, body) WHERE ` + cond + `
	ON CONFLICT (notice_id) DO NOTHING)`
}

// lastTraceSQL is the position of run $1's last trace record, 0 with
// none.
const lastTraceSQL = `COALESCE((SELECT last_seq FROM trace WHERE run_id = $1 ORDER BY seq DESC LIMIT 1), 0)`

// noticeArrays are notices' kinds and bodies as two arrays, for
// noticesInsertCTE.
func noticeArrays(notices []store.Notice) ([]string, [][]byte) {
	kinds, bodies := make([]string, len(notices)), make([][]byte, len(notices))
	for i, n := range notices {
		kinds[i], bodies[i] = n.Kind, n.Body
	}
	return kinds, bodies
}

// RunNotices implements store.Noticeboard.
func (s *Store) RunNotices(ctx context.Context, runID string) ([]store.Notice, error) {
	rows, err := s.pool.Query(ctx, `SELECT notice_id, run_id, seq, kind, body, created_at, attempts, last_error, sent
FROM notices WHERE run_id = $1 ORDER BY created_at, ord`, runID)
	if err != nil {
		return nil, s.mapErr("run notices", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Notice, error) {
		var n store.Notice
		var created int64
		var sent string
		err := row.Scan(&n.ID, &n.RunID, &n.Seq, &n.Kind, &n.Body, &created, &n.Attempts, &n.LastError, &sent)
		n.CreatedAt, n.Sent = fromNanos(created), store.SplitSent(sent)
		return n, err
	})
	if err != nil {
		return nil, s.mapErr("run notices", runID, err)
	}
	return out, nil
}

// NoticeBacklog implements store.Noticeboard.
func (s *Store) NoticeBacklog(ctx context.Context) (store.Backlog, error) {
	var b store.Backlog
	o := &b.Oldest
	var id, runID, kind, lastError, sent, waits *string
	var seq, created, due, attempts *int64
	var now int64
	// The counts and the oldest notice not held (Backlog.Held), in one
	// statement: one snapshot of the table.
	err := s.pool.QueryRow(ctx, `WITH t AS (SELECT `+nowParam(1)+` AS now),
h AS (SELECT notices.*, (last_error = '' AND waits <> '' AND next_at > t.now) AS held FROM notices, t)
SELECT c.n, c.held, o.notice_id, o.run_id, o.seq, o.kind, o.created_at, o.attempts::bigint, o.last_error, o.sent, o.waits, o.next_at, t.now
FROM t, (SELECT count(*) AS n, count(*) FILTER (WHERE held) AS held FROM h) AS c
LEFT JOIN (SELECT * FROM h WHERE NOT held ORDER BY created_at, ord LIMIT 1) AS o ON true`, s.injected()).
		Scan(&b.Count, &b.Held, &id, &runID, &seq, &kind, &created, &attempts, &lastError, &sent, &waits, &due, &now)
	if err != nil {
		return store.Backlog{}, s.mapErr("notice backlog", "", err)
	}
	if id == nil {
		return b, nil
	}
	o.ID, o.RunID, o.Seq, o.Kind, o.Attempts, o.LastError = *id, *runID, *seq, *kind, int(*attempts), *lastError
	// Read before its due time, a wait has that much more left.
	o.CreatedAt, o.Sent, o.Waits = fromNanos(*created), store.SplitSent(*sent), store.SplitWaits(*waits, time.Duration(now-*due))
	return b, nil
}
