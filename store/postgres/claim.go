package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// Claimer is store.Claimer, kept under this package's name for callers
// that already use it.
type Claimer = store.Claimer

var (
	_ store.Claimer           = (*Store)(nil)
	_ store.DefinitionClaimer = (*Store)(nil)
	_ store.WorkWatcher       = (*Store)(nil)
)

// ClaimReady implements Claimer with one statement: SELECT … FOR NO KEY
// UPDATE SKIP LOCKED picks the runs, and the UPDATE that leases them raises
// each generation, fencing any earlier holder. It runs at READ COMMITTED on
// purpose: a row that another claimer leased and committed while this one
// looked is re-checked against the latest version and dropped, rather than
// failing the whole claim as REPEATABLE READ would. A run resting with an
// empty inbox is not claimed before its due time, so that runners do not
// take turns leasing runs that wait for a person or for input.
func (s *Store) ClaimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, due time.Time) ([]store.Lease, error) {
	return s.claimReady(ctx, owner, ttl, limit, resting, nil, due)
}

// ClaimReadyOf implements store.DefinitionClaimer: ClaimReady's statement,
// with the runs' recorded definition digests filtered in the same scan.
func (s *Store) ClaimReadyOf(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, definitions []string, due time.Time) ([]store.Lease, error) {
	if definitions == nil {
		definitions = []string{}
	}
	return s.claimReady(ctx, owner, ttl, limit, resting, definitions, due)
}

// claimReady is ClaimReady, limited to definitions when not nil.
func (s *Store) claimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, definitions []string, due time.Time) ([]store.Lease, error) {
	const op = "claim"
	if owner == "" || ttl <= 0 || limit <= 0 {
		return nil, store.Errorf(store.CodeInvalidInput, op, "", nil, "owner, a positive ttl and a positive limit are required")
	}
	if s.ro {
		return nil, store.Errorf(store.CodeInvalidInput, op, "", nil, "store opened read-only")
	}
	if resting == nil {
		resting = []string{}
	}
	rows, err := s.pool.Query(ctx, `WITH clock AS MATERIALIZED (SELECT `+nowParam(4)+` AS now),
picked AS MATERIALIZED (
	SELECT run_id, created_order FROM runs r, clock
	WHERE outcome = '' AND quarantine = '' AND (lease_owner = '' OR lease_expires_at <= clock.now)
		AND (NOT (state = ANY($5)) OR `+dueSQL("$7")+` OR `+unsettledSQL+`)
		AND ($6::text[] IS NULL OR workflow_digest = '' OR workflow_digest = ANY($6))
	ORDER BY created_order LIMIT $3
	FOR NO KEY UPDATE OF r SKIP LOCKED)
UPDATE runs SET lease_owner = $1, lease_generation = runs.lease_generation + 1,
	lease_expires_at = clock.now + $2, updated_at = clock.now
FROM picked, clock
WHERE runs.run_id = picked.run_id
RETURNING runs.run_id, runs.lease_generation, runs.lease_expires_at, picked.created_order`,
		owner, ttl.Nanoseconds(), limit, s.injected(), resting, definitions, nanos(due))
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	type claimed struct {
		lease store.Lease
		order int64
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
		var c claimed
		var exp int64
		err := row.Scan(&c.lease.RunID, &c.lease.Generation, &exp, &c.order)
		c.lease.Owner, c.lease.ExpiresAt = owner, fromNanos(exp)
		return c, err
	})
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	// RETURNING has no order of its own; hand runs out oldest first.
	for i := 1; i < len(got); i++ {
		for j := i; j > 0 && got[j].order < got[j-1].order; j-- {
			got[j], got[j-1] = got[j-1], got[j]
		}
	}
	out := make([]store.Lease, len(got))
	for i, c := range got {
		out[i] = c.lease
	}
	return out, nil
}

// channel is the NOTIFY channel of this store's schema: several flrh
// stores in one database (one per schema) do not wake each other.
func (s *Store) channel() string { return "flrh_work:" + s.schema }

// noticeChannel is the NOTIFY channel on which the schema's writes of
// notices wake notifiers, of this process or another.
func (s *Store) noticeChannel() string { return "flrh_note:" + s.schema }

// Watcher wakes a runner when there may be new work: a run created, an
// inbound event submitted, a lease released. It listens on a dedicated
// connection; when that connection is lost it falls back to polling and
// reconnects on a later wait, so a runner never depends on a notification
// arriving (notifications sent while it was disconnected are lost).
type Watcher struct {
	s       *Store
	channel string
	conn    *pgx.Conn
}

// Watch starts a Watcher. It does not fail when the database is briefly
// unreachable: the first Wait then polls.
func (s *Store) Watch(ctx context.Context) *Watcher {
	w := &Watcher{s: s, channel: s.channel()}
	w.connect(ctx)
	return w
}

// WatchNotices implements store.NoticeWatcher: a Watcher of the channel
// on which every write of a notice to the schema, by any process, wakes
// notifiers (the payload is the run's id).
func (s *Store) WatchNotices(ctx context.Context) store.WorkWaiter {
	w := &Watcher{s: s, channel: s.noticeChannel()}
	w.connect(ctx)
	return w
}

func (w *Watcher) connect(ctx context.Context) {
	conn, err := pgx.ConnectConfig(ctx, w.s.pool.Config().ConnConfig)
	if err != nil {
		return
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{w.channel}.Sanitize()); err != nil {
		conn.Close(ctx)
		return
	}
	w.conn = conn
}

// Listening reports whether notifications are being received (false while
// the Watcher polls).
func (w *Watcher) Listening() bool { return w.conn != nil && !w.conn.IsClosed() }

// Wait blocks until a notification arrives, poll elapses, or ctx ends. It
// returns the run id a notification names, or "" when the caller should
// poll (the interval elapsed or the listening connection was lost). Only
// ctx's end is an error.
func (w *Watcher) Wait(ctx context.Context, poll time.Duration) (string, error) {
	if !w.Listening() {
		w.connect(ctx)
		if !w.Listening() {
			t := time.NewTimer(poll)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-t.C:
				return "", nil
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, poll)
	defer cancel()
	n, err := w.conn.WaitForNotification(wctx)
	switch {
	case err == nil:
		return n.Payload, nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || wctx.Err() != nil:
		// pgx closes the connection when a wait is interrupted.
		if w.conn.IsClosed() {
			w.conn = nil
		}
		return "", nil
	default:
		w.conn.Close(context.Background())
		w.conn = nil
		return "", nil
	}
}

// WatchWork implements store.WorkWatcher with a Watcher.
func (s *Store) WatchWork(ctx context.Context) store.WorkWaiter { return s.Watch(ctx) }

// Close stops listening.
func (w *Watcher) Close() error {
	if w.conn != nil {
		err := w.conn.Close(context.Background())
		w.conn = nil
		return err
	}
	return nil
}
