package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// errRetryDuty: two holders found no row for a duty and both inserted it;
// the one whose insert was not made reads again.
var errRetryDuty = retryError{"duty first taken concurrently"}

// HoldDuty implements store.Duties: the duty's row is locked, decided on
// at the database's clock, and written, in one transaction.
func (s *Store) HoldDuty(ctx context.Context, name, holder string, ttl time.Duration) (store.Duty, error) {
	const op = "hold duty"
	if err := store.ValidateDutyRequest(name, holder, ttl); err != nil {
		return store.Duty{}, err
	}
	var out store.Duty
	err := s.write(ctx, op, "", func(tx *wtx) error {
		have := store.Duty{Name: name}
		var exp, clock int64
		err := tx.QueryRow(ctx, `SELECT coalesce(d.holder, ''), coalesce(d.generation, 0), coalesce(d.expires_at, 0), n.now FROM (SELECT `+nowNanos+` AS now) n
LEFT JOIN (SELECT * FROM duties WHERE name = $1 FOR UPDATE) d ON true`, name).Scan(&have.Holder, &have.Generation, &exp, &clock)
		if err != nil {
			return err
		}
		found := have.Generation > 0
		have.ExpiresAt = fromNanos(exp)
		now := fromNanos(clock)
		if s.clock != nil {
			now = s.clock()
		}
		next, held := store.NextDuty(have, holder, ttl, now)
		out = next
		switch {
		case !held:
			return nil
		case found:
			_, err = tx.Exec(ctx, `UPDATE duties SET holder = $2, generation = $3, expires_at = $4 WHERE name = $1`,
				name, next.Holder, next.Generation, nanos(next.ExpiresAt))
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO duties (name, holder, generation, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING`,
			name, next.Holder, next.Generation, nanos(next.ExpiresAt))
		if err == nil && tag.RowsAffected() == 0 {
			return errRetryDuty
		}
		return err
	})
	if err != nil {
		return store.Duty{}, err
	}
	return out, nil
}

// ReleaseDuty implements store.Duties.
func (s *Store) ReleaseDuty(ctx context.Context, d store.Duty) error {
	const op = "release duty"
	if d.Name == "" || d.Holder == "" {
		return store.Errorf(store.CodeInvalidInput, op, "", nil, "a duty's name and holder are required")
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		_, err := tx.Exec(ctx, `UPDATE duties SET holder = '', expires_at = 0 WHERE name = $1 AND holder = $2 AND generation = $3`,
			d.Name, d.Holder, d.Generation)
		return err
	})
}

// Duty implements store.Duties.
func (s *Store) Duty(ctx context.Context, name string) (store.Duty, error) {
	d := store.Duty{Name: name}
	var exp int64
	err := s.pool.QueryRow(ctx, `SELECT holder, generation, expires_at FROM duties WHERE name = $1`, name).Scan(&d.Holder, &d.Generation, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Duty{}, store.Errorf(store.CodeNotFound, "duty", "", nil, "no one ever held duty %q", name)
	}
	if err != nil {
		return store.Duty{}, s.mapErr("duty", "", err)
	}
	d.ExpiresAt = fromNanos(exp)
	return d, nil
}
