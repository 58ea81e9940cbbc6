package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"flrh.dev/flrh/store"
)

// limitWrite runs a shared limit's write: committed at once, for other
// processes to see, but without waiting for the disk (as a tick that may
// lag is). The limits are not evidence: a crash of the machine that loses
// their last writes loses one burst's worth of spacing, where a log sync
// on each would multiply the cost of every request a limited adapter
// sends. Unlike a lagging tick's, the transaction is never left open for
// the next write to join (linger.go): other processes wait for the write
// lock meanwhile, and a joiner's refusal could not run these writes again.
func (s *Store) limitWrite(ctx context.Context, op string, fn func(ctx context.Context, tx *wtx, now time.Time) error) error {
	return s.enqueueWrite(&writeReq{ctx: ctx, op: op, fn: fn, lazy: true, prompt: true})
}

// TakeSlot implements store.SharedLimits: the limit's held slots and its
// queue are read, and the lowest free slot taken or the queue joined, in
// one write transaction, which no other writer of the file interleaves.
func (s *Store) TakeSlot(ctx context.Context, name string, max int, holder string, hold, queue time.Duration) (int, bool, error) {
	const op = "take slot"
	if err := store.ValidateSlot(true, name, 0, max, holder, hold, queue); err != nil {
		return 0, false, err
	}
	slot, ok := 0, false
	err := s.limitWrite(ctx, op, func(ctx context.Context, tx *wtx, now time.Time) error {
		ok = false
		at := now.UnixNano()
		// The slots held, the strictest bound declared by the requests
		// holding or waiting (0: none), and the holder's place in the
		// queue: the number of live waiters before it, since earlier, or
		// as early with a lesser name.
		var held, ahead, strictest int
		var since int64
		err := s.queryRow(ctx, tx, `SELECT
	(SELECT count(*) FROM limit_slots WHERE name = ?1 AND held_until > ?2),
	coalesce((SELECT min(b) FROM (SELECT bound AS b FROM limit_slots WHERE name = ?1 AND held_until > ?2 AND bound > 0
		UNION ALL SELECT bound FROM limit_queue WHERE name = ?1 AND seen_until > ?2 AND bound > 0)), 0),
	coalesce((SELECT since FROM limit_queue WHERE name = ?1 AND holder = ?3 AND seen_until > ?2), ?2)`, name, at, holder).Scan(&held, &strictest, &since)
		if err != nil {
			return err
		}
		// The lowest free slot is 0 or one past a held slot: the least of
		// those candidates no one holds, -1 when none is below the bound.
		if err := s.queryRow(ctx, tx, `SELECT coalesce((SELECT min(c.s) FROM (SELECT 0 AS s UNION ALL SELECT slot + 1 FROM limit_slots WHERE name = ?1 AND held_until > ?2) c
	WHERE c.s < ?3 AND NOT EXISTS (SELECT 1 FROM limit_slots l WHERE l.name = ?1 AND l.slot = c.s AND l.held_until > ?2)), -1)`,
			name, at, store.SlotBound(max, strictest)).Scan(&slot); err != nil {
			return err
		}
		if err := s.queryRow(ctx, tx, `SELECT count(*) FROM limit_queue WHERE name = ?1 AND seen_until > ?2 AND holder <> ?3
AND (since < ?4 OR (since = ?4 AND holder < ?3))`, name, at, holder, since).Scan(&ahead); err != nil {
			return err
		}
		if !store.MayTakeSlot(store.SlotBound(max, strictest), held, ahead, slot) {
			if queue == 0 {
				return nil
			}
			_, err := s.exec(ctx, tx, `INSERT INTO limit_queue (name, holder, since, seen_until, bound) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (name, holder) DO UPDATE SET since = excluded.since, seen_until = excluded.seen_until, bound = excluded.bound`, name, holder, since, now.Add(queue).UnixNano(), max)
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO limit_slots (name, slot, holder, held_until, bound) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (name, slot) DO UPDATE SET holder = excluded.holder, held_until = excluded.held_until, bound = excluded.bound`,
			name, slot, holder, now.Add(hold).UnixNano(), max); err != nil {
			return err
		}
		// Out of the queue, and with it any place whose holder stopped
		// asking a while ago.
		_, err = s.exec(ctx, tx, `DELETE FROM limit_queue WHERE name = ? AND (holder = ? OR seen_until <= ?)`, name, holder, now.Add(-time.Minute).UnixNano())
		ok = err == nil
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return slot, ok, nil
}

// LeaveQueue implements store.SharedLimits.
func (s *Store) LeaveQueue(ctx context.Context, name, holder string) error {
	const op = "leave queue"
	if err := store.ValidateSlot(false, name, 0, 0, holder, 0, 0); err != nil {
		return err
	}
	return s.limitWrite(ctx, op, func(ctx context.Context, tx *wtx, now time.Time) error {
		_, err := s.exec(ctx, tx, `DELETE FROM limit_queue WHERE name = ? AND holder = ?`, name, holder)
		return err
	})
}

// GiveSlot implements store.SharedLimits.
func (s *Store) GiveSlot(ctx context.Context, name string, slot int, holder string) error {
	const op = "give slot"
	if err := store.ValidateSlot(false, name, slot, 0, holder, 0, 0); err != nil {
		return err
	}
	return s.limitWrite(ctx, op, func(ctx context.Context, tx *wtx, now time.Time) error {
		_, err := s.exec(ctx, tx, `DELETE FROM limit_slots WHERE name = ? AND slot = ? AND holder = ?`, name, slot, holder)
		return err
	})
}

// TakeToken implements store.SharedLimits: the limit's arrival time is
// read, decided on (store.NextArrival) and written in one write
// transaction.
func (s *Store) TakeToken(ctx context.Context, name string, perSecond int, maxWait time.Duration) (time.Duration, bool, error) {
	const op = "take token"
	if err := store.ValidateToken(name, perSecond, maxWait); err != nil {
		return 0, false, err
	}
	var wait time.Duration
	var booked bool
	err := s.limitWrite(ctx, op, func(ctx context.Context, tx *wtx, now time.Time) error {
		var tat, boundUntil time.Time
		var at, until int64
		var kept int
		err := s.queryRow(ctx, tx, `SELECT arrival, per_second, bound_until FROM limit_rates WHERE name = ?`, name).Scan(&at, &kept, &until)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			tat, boundUntil = fromNanos(at), fromNanos(until)
		}
		rate, binds := store.RateBound(perSecond, kept, boundUntil, now)
		var next time.Time
		if next, wait, booked = store.NextArrival(tat, now, rate, maxWait); !booked {
			return nil
		}
		_, err = s.exec(ctx, tx, `INSERT INTO limit_rates (name, arrival, per_second, bound_until) VALUES (?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET arrival = excluded.arrival, per_second = excluded.per_second, bound_until = excluded.bound_until`,
			name, next.UnixNano(), rate, binds.UnixNano())
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return wait, booked, nil
}

// LimitsInUse implements store.SharedLimits.
func (s *Store) LimitsInUse(ctx context.Context) ([]store.LimitUse, error) {
	const op = "limits in use"
	now := s.clock().UnixNano()
	var b store.LimitUses
	rows, err := s.read(ctx, `SELECT name, slot, holder, held_until, bound FROM limit_slots WHERE held_until > ?1
UNION ALL SELECT name, -1, '', arrival, per_second FROM limit_rates WHERE arrival > ?1`, now)
	if err != nil {
		return nil, mapErr(op, "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, holder string
		var slot, bound int
		var until int64
		if err := rows.Scan(&name, &slot, &holder, &until, &bound); err != nil {
			return nil, mapErr(op, "", err)
		}
		b.Row(name, slot, holder, fromNanos(until), bound)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(op, "", err)
	}
	rows.Close()
	waiting, err := s.read(ctx, `SELECT name, count(*), group_concat(DISTINCT bound) FROM limit_queue WHERE seen_until > ? GROUP BY name`, now)
	if err != nil {
		return nil, mapErr(op, "", err)
	}
	defer waiting.Close()
	for waiting.Next() {
		var name, bounds string
		var n int
		if err := waiting.Scan(&name, &n, &bounds); err != nil {
			return nil, mapErr(op, "", err)
		}
		b.Waiting(name, n, store.SplitBounds(bounds)...)
	}
	return b.List(), mapErr(op, "", waiting.Err())
}
