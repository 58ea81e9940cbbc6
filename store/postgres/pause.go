package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// PauseSchedule implements store.SchedulePausing.
func (s *Store) PauseSchedule(ctx context.Context, p store.PausedSchedule) error {
	const op = "pause schedule"
	if err := store.ValidatePause(p); err != nil {
		return err
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		_, err := tx.Exec(ctx, `INSERT INTO paused_schedules (name, paused_by, reason, since, until_at, from_at)
SELECT $1, $2, $3, n, $5, $6 FROM (SELECT `+nowParam(4)+` AS n) AS now
ON CONFLICT (name) DO UPDATE SET paused_by = excluded.paused_by, reason = excluded.reason, since = excluded.since, until_at = excluded.until_at, from_at = excluded.from_at
	WHERE paused_schedules.until_at != 0 AND paused_schedules.until_at <= excluded.since`,
			p.Name, p.By, p.Reason, s.injected(), nanos(p.Until), nanos(p.From))
		return err
	})
}

// ResumeSchedule implements store.SchedulePausing.
func (s *Store) ResumeSchedule(ctx context.Context, name string) (bool, error) {
	const op = "resume schedule"
	if err := store.ValidateResume(name); err != nil {
		return false, err
	}
	resumed := false
	err := s.write(ctx, op, "", func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM paused_schedules WHERE name = $1`, name)
		resumed = err == nil && tag.RowsAffected() > 0
		return err
	})
	return resumed, err
}

// PausedSchedules implements store.SchedulePausing.
func (s *Store) PausedSchedules(ctx context.Context) ([]store.PausedSchedule, error) {
	const op = "paused schedules"
	rows, err := s.pool.Query(ctx, `SELECT name, paused_by, reason, since, until_at, from_at FROM paused_schedules ORDER BY name`)
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	defer rows.Close()
	var out []store.PausedSchedule
	for rows.Next() {
		var p store.PausedSchedule
		var since, until, from int64
		if err := rows.Scan(&p.Name, &p.By, &p.Reason, &since, &until, &from); err != nil {
			return nil, s.mapErr(op, "", err)
		}
		p.Since, p.Until, p.From = fromNanos(since), fromNanos(until), fromNanos(from)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr(op, "", err)
	}
	return out, nil
}

// SetScheduleHead implements store.ScheduleHeads.
func (s *Store) SetScheduleHead(ctx context.Context, h store.ScheduleHead) error {
	const op = "set schedule head"
	if err := store.ValidateScheduleHead(h); err != nil {
		return err
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		_, err := tx.Exec(ctx, `INSERT INTO schedule_heads (name, run_id, due_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET run_id = excluded.run_id, due_at = excluded.due_at WHERE excluded.due_at >= schedule_heads.due_at`,
			h.Name, h.RunID, h.Due.UnixNano())
		return err
	})
}

// ScheduleHead implements store.ScheduleHeads.
func (s *Store) ScheduleHead(ctx context.Context, name string) (store.ScheduleHead, bool, error) {
	const op = "schedule head"
	if err := store.ValidateScheduleName(op, name); err != nil {
		return store.ScheduleHead{}, false, err
	}
	h := store.ScheduleHead{Name: name}
	var due int64
	err := s.pool.QueryRow(ctx, `SELECT run_id, due_at FROM schedule_heads WHERE name = $1`, name).Scan(&h.RunID, &due)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ScheduleHead{}, false, nil
	}
	if err != nil {
		return store.ScheduleHead{}, false, s.mapErr(op, "", err)
	}
	h.Due = time.Unix(0, due).UTC()
	return h, true, nil
}
