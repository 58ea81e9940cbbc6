package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

// PauseSchedule implements store.SchedulePausing.
func (s *Store) PauseSchedule(ctx context.Context, p store.PausedSchedule) error {
	const op = "pause schedule"
	if err := store.ValidatePause(p); err != nil {
		return err
	}
	return s.write(ctx, op, "", func(ctx context.Context, tx *wtx, now time.Time) error {
		_, err := s.exec(ctx, tx, `INSERT INTO paused_schedules (name, paused_by, reason, since, until_at, from_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (name) DO UPDATE SET paused_by = excluded.paused_by, reason = excluded.reason, since = excluded.since, until_at = excluded.until_at, from_at = excluded.from_at
	WHERE paused_schedules.until_at != 0 AND paused_schedules.until_at <= ?4`,
			p.Name, p.By, p.Reason, now.UnixNano(), nanos(p.Until), nanos(p.From))
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
	err := s.write(ctx, op, "", func(ctx context.Context, tx *wtx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `DELETE FROM paused_schedules WHERE name = ?`, name)
		resumed = err == nil && res.n > 0
		return err
	})
	return resumed, err
}

// PausedSchedules implements store.SchedulePausing.
func (s *Store) PausedSchedules(ctx context.Context) ([]store.PausedSchedule, error) {
	const op = "paused schedules"
	rows, err := s.read(ctx, `SELECT name, paused_by, reason, since, until_at, from_at FROM paused_schedules ORDER BY name`)
	if err != nil {
		return nil, mapErr(op, "", err)
	}
	defer rows.Close()
	var out []store.PausedSchedule
	for rows.Next() {
		var p store.PausedSchedule
		var since, until, from int64
		if err := rows.Scan(&p.Name, &p.By, &p.Reason, &since, &until, &from); err != nil {
			return nil, mapErr(op, "", err)
		}
		p.Since, p.Until, p.From = time.Unix(0, since).UTC(), fromNanos(until), fromNanos(from)
		out = append(out, p)
	}
	return out, mapErr(op, "", rows.Err())
}

// SetScheduleHead implements store.ScheduleHeads.
func (s *Store) SetScheduleHead(ctx context.Context, h store.ScheduleHead) error {
	const op = "set schedule head"
	if err := store.ValidateScheduleHead(h); err != nil {
		return err
	}
	return s.write(ctx, op, "", func(ctx context.Context, tx *wtx, _ time.Time) error {
		_, err := s.exec(ctx, tx, `INSERT INTO schedule_heads (name, run_id, due_at) VALUES (?1, ?2, ?3)
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
	rows, err := s.read(ctx, `SELECT run_id, due_at FROM schedule_heads WHERE name = ?`, name)
	if err != nil {
		return store.ScheduleHead{}, false, mapErr(op, "", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return store.ScheduleHead{}, false, mapErr(op, "", rows.Err())
	}
	h := store.ScheduleHead{Name: name}
	var due int64
	if err := rows.Scan(&h.RunID, &due); err != nil {
		return store.ScheduleHead{}, false, mapErr(op, "", err)
	}
	h.Due = time.Unix(0, due).UTC()
	return h, true, nil
}
