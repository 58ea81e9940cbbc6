package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"flrh.dev/flrh/store"
)

// HoldDuty implements store.Duties: the duty's row is read and written in
// one write transaction, which no other writer of the file interleaves.
func (s *Store) HoldDuty(ctx context.Context, name, holder string, ttl time.Duration) (store.Duty, error) {
	const op = "hold duty"
	if err := store.ValidateDutyRequest(name, holder, ttl); err != nil {
		return store.Duty{}, err
	}
	var out store.Duty
	err := s.write(ctx, op, "", func(ctx context.Context, tx *wtx, now time.Time) error {
		have := store.Duty{Name: name}
		var exp int64
		err := s.queryRow(ctx, tx, `SELECT holder, generation, expires_at FROM duties WHERE name = ?`, name).Scan(&have.Holder, &have.Generation, &exp)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			have.ExpiresAt = fromNanos(exp)
		}
		next, held := store.NextDuty(have, holder, ttl, now)
		out = next
		if !held {
			return nil
		}
		_, err = s.exec(ctx, tx, `INSERT INTO duties (name, holder, generation, expires_at) VALUES (?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, generation = excluded.generation, expires_at = excluded.expires_at`,
			name, next.Holder, next.Generation, nanos(next.ExpiresAt))
		return err
	})
	if err != nil {
		return store.Duty{}, err
	}
	return out, nil
}

// ReleaseDuty implements store.Duties.
func (s *Store) ReleaseDuty(ctx context.Context, d store.Duty) error {
	if d.Name == "" || d.Holder == "" {
		return store.Errorf(store.CodeInvalidInput, "release duty", "", nil, "a duty's name and holder are required")
	}
	return s.write(ctx, "release duty", "", func(ctx context.Context, tx *wtx, now time.Time) error {
		_, err := s.exec(ctx, tx, `UPDATE duties SET holder = '', expires_at = 0 WHERE name = ? AND holder = ? AND generation = ?`,
			d.Name, d.Holder, d.Generation)
		return err
	})
}

// Duty implements store.Duties.
func (s *Store) Duty(ctx context.Context, name string) (store.Duty, error) {
	rows, err := s.read(ctx, `SELECT holder, generation, expires_at FROM duties WHERE name = ?`, name)
	if err != nil {
		return store.Duty{}, mapErr("duty", "", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.Duty{}, mapErr("duty", "", err)
		}
		return store.Duty{}, store.Errorf(store.CodeNotFound, "duty", "", nil, "no one ever held duty %q", name)
	}
	d := store.Duty{Name: name}
	var exp int64
	if err := rows.Scan(&d.Holder, &d.Generation, &exp); err != nil {
		return store.Duty{}, mapErr("duty", "", err)
	}
	d.ExpiresAt = fromNanos(exp)
	return d, mapErr("duty", "", rows.Err())
}
