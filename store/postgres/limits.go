package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// The shared limits' transactions commit without waiting for the WAL's
// flush (as a tick that may lag does): they are not evidence, and a
// database crash that loses their last writes loses one burst's worth of
// spacing, where a flush on each would add two to every request a limited
// adapter sends.

// errRetryRate: two takers found no row for a rate limit and both
// inserted it; the one whose insert was not made reads again.
var errRetryRate = retryError{"rate limit first used concurrently"}

// TakeSlot implements store.SharedLimits. Each slot is a row, made once
// (all of a limit's slots the first time this store takes one, and again
// if the limit grows). A take reads, at the database's clock, the
// holder's place in the limit's queue and how many slots are held; when
// the holder may take one, it locks the lowest free row, skipping rows
// another take has locked, and holds it; otherwise, or when every free
// row is locked by racing takes, it joins the queue or keeps its place.
// Racing takes read the queue each in its own snapshot: the slots are
// never over-taken (their row locks see to that), but two takes at the
// same moment may both pass a waiter.
func (s *Store) TakeSlot(ctx context.Context, name string, max int, holder string, hold, queue time.Duration) (int, bool, error) {
	const op = "take slot"
	if err := store.ValidateSlot(true, name, 0, max, holder, hold, queue); err != nil {
		return 0, false, err
	}
	if made, _ := s.slotsMade.Load(name); made == nil || made.(int) < max {
		err := s.write(ctx, op, "", func(tx *wtx) error {
			tx.lazy = true
			_, err := tx.Exec(ctx, `INSERT INTO limit_slots (name, slot) SELECT $1, g FROM generate_series(0, $2::integer - 1) g ON CONFLICT DO NOTHING`, name, max)
			return err
		})
		if err != nil {
			return 0, false, err
		}
		s.slotsMade.Store(name, max)
	}
	slot, ok, allowed := 0, false, false
	err := s.write(ctx, op, "", func(tx *wtx) error {
		tx.lazy = true
		// Takes of one limit one at a time: each locks the limit's first
		// slot row before it reads, and reads at READ COMMITTED what the
		// take it waited for wrote. Two takes at one instant would
		// otherwise each count the queue and the slots held without the
		// other, and both pass a request waiting longer.
		tx.readCommitted = true
		tx.Queue(`SELECT 1 FROM limit_slots WHERE name = $1 AND slot = 0 FOR UPDATE`, name)
		ok, allowed = false, false
		var since, now int64
		var ahead, held, strictest int
		err := tx.QueryRow(ctx, `WITH clock AS (SELECT `+nowParam(3)+` AS now),
me AS (SELECT coalesce((SELECT q.since FROM limit_queue q, clock WHERE q.name = $1 AND q.holder = $2 AND q.seen_until > clock.now), (SELECT now FROM clock)) AS since)
SELECT me.since, clock.now,
	(SELECT count(*) FROM limit_queue q WHERE q.name = $1 AND q.seen_until > clock.now AND q.holder <> $2
		AND (q.since < me.since OR (q.since = me.since AND q.holder COLLATE "C" < $2 COLLATE "C"))),
	(SELECT count(*) FROM limit_slots l WHERE l.name = $1 AND l.held_until > clock.now),
	coalesce(least((SELECT min(l.bound) FROM limit_slots l WHERE l.name = $1 AND l.held_until > clock.now AND l.bound > 0),
		(SELECT min(q.bound) FROM limit_queue q WHERE q.name = $1 AND q.seen_until > clock.now AND q.bound > 0)), 0)
FROM me, clock`, name, holder, s.injected()).Scan(&since, &now, &ahead, &held, &strictest)
		if err != nil {
			return err
		}
		if bound := store.SlotBound(max, strictest); store.MayTakeSlot(bound, held, ahead, 0) {
			allowed = true
			err = tx.QueryRow(ctx, `WITH free AS (SELECT slot FROM limit_slots WHERE name = $1 AND slot < $2 AND held_until <= $5 ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE limit_slots l SET holder = $3, held_until = $5 + $4::bigint, bound = $6 FROM free WHERE l.name = $1 AND l.slot = free.slot
RETURNING l.slot`, name, bound, holder, hold.Nanoseconds(), now, max).Scan(&slot)
			switch {
			case err == nil:
				ok = true
				// Out of the queue, and with it any place whose holder
				// stopped asking a while ago: sent with COMMIT.
				tx.Queue(`DELETE FROM limit_queue WHERE name = $1 AND (holder = $2 OR seen_until <= $3)`, name, holder, now-time.Minute.Nanoseconds())
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		if queue == 0 {
			return nil
		}
		tx.Queue(`INSERT INTO limit_queue (name, holder, since, seen_until, bound) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (name, holder) DO UPDATE SET since = excluded.since, seen_until = excluded.seen_until, bound = excluded.bound`, name, holder, since, now+queue.Nanoseconds(), max)
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	if allowed && !ok {
		// Every slot held, or their rows gone (a database restored from
		// before they were made): the next take makes them again.
		s.slotsMade.Delete(name)
	}
	return slot, ok, nil
}

// LeaveQueue implements store.SharedLimits.
func (s *Store) LeaveQueue(ctx context.Context, name, holder string) error {
	const op = "leave queue"
	if err := store.ValidateSlot(false, name, 0, 0, holder, 0, 0); err != nil {
		return err
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		tx.lazy = true
		_, err := tx.Exec(ctx, `DELETE FROM limit_queue WHERE name = $1 AND holder = $2`, name, holder)
		return err
	})
}

// GiveSlot implements store.SharedLimits.
func (s *Store) GiveSlot(ctx context.Context, name string, slot int, holder string) error {
	const op = "give slot"
	if err := store.ValidateSlot(false, name, slot, 0, holder, 0, 0); err != nil {
		return err
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		tx.lazy = true
		_, err := tx.Exec(ctx, `UPDATE limit_slots SET holder = '', held_until = 0 WHERE name = $1 AND slot = $2 AND holder = $3`, name, slot, holder)
		return err
	})
}

// TakeToken implements store.SharedLimits: the limit's row is locked,
// decided on at the database's clock (store.NextArrival), and written, in
// one transaction.
func (s *Store) TakeToken(ctx context.Context, name string, perSecond int, maxWait time.Duration) (time.Duration, bool, error) {
	const op = "take token"
	if err := store.ValidateToken(name, perSecond, maxWait); err != nil {
		return 0, false, err
	}
	var wait time.Duration
	var booked bool
	err := s.write(ctx, op, "", func(tx *wtx) error {
		tx.lazy = true
		var at, clock, until int64
		var kept int
		var found bool
		err := tx.QueryRow(ctx, `SELECT coalesce(r.arrival, 0), coalesce(r.per_second, 0), coalesce(r.bound_until, 0), r.name IS NOT NULL, n.now
FROM (SELECT `+nowParam(2)+` AS now) n
LEFT JOIN (SELECT * FROM limit_rates WHERE name = $1 FOR UPDATE) r ON true`, name, s.injected()).Scan(&at, &kept, &until, &found, &clock)
		if err != nil {
			return err
		}
		rate, binds := store.RateBound(perSecond, kept, fromNanos(until), fromNanos(clock))
		var next time.Time
		if next, wait, booked = store.NextArrival(fromNanos(at), fromNanos(clock), rate, maxWait); !booked {
			return nil
		}
		if found {
			_, err = tx.Exec(ctx, `UPDATE limit_rates SET arrival = $2, per_second = $3, bound_until = $4 WHERE name = $1`, name, nanos(next), rate, nanos(binds))
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO limit_rates (name, arrival, per_second, bound_until) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING`,
			name, nanos(next), rate, nanos(binds))
		if err == nil && tag.RowsAffected() == 0 {
			return errRetryRate
		}
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return wait, booked, nil
}

// LimitsInUse implements store.SharedLimits, at the database's clock.
func (s *Store) LimitsInUse(ctx context.Context) ([]store.LimitUse, error) {
	const op = "limits in use"
	var b store.LimitUses
	rows, err := s.pool.Query(ctx, `WITH clock AS (SELECT `+nowParam(1)+` AS now)
SELECT name, slot, holder, held_until, bound FROM limit_slots, clock WHERE held_until > clock.now
UNION ALL SELECT name, -1, '', arrival, per_second FROM limit_rates, clock WHERE arrival > clock.now`, s.injected())
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, holder string
		var slot, bound int32
		var until int64
		if err := rows.Scan(&name, &slot, &holder, &until, &bound); err != nil {
			return nil, s.mapErr(op, "", err)
		}
		b.Row(name, int(slot), holder, fromNanos(until), int(bound))
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr(op, "", err)
	}
	rows.Close()
	waiting, err := s.pool.Query(ctx, `SELECT name, count(*), string_agg(DISTINCT bound::text, ',') FROM limit_queue WHERE seen_until > `+nowParam(1)+` GROUP BY name`, s.injected())
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	defer waiting.Close()
	for waiting.Next() {
		var name, bounds string
		var n int64
		if err := waiting.Scan(&name, &n, &bounds); err != nil {
			return nil, s.mapErr(op, "", err)
		}
		b.Waiting(name, int(n), store.SplitBounds(bounds)...)
	}
	return b.List(), s.mapErr(op, "", waiting.Err())
}
