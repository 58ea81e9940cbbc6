package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

// AddFollowUp implements store.FollowUps: the follow-up is kept, the
// expired dropped and the run's oldest beyond store.MaxFollowUps
// dropped, in one transaction.
func (s *Store) AddFollowUp(ctx context.Context, f store.FollowUp, ttl time.Duration) error {
	const op = "add follow-up"
	f, err := store.ValidateFollowUp(f, ttl)
	if err != nil {
		return err
	}
	addr, err := store.SealBody(s.sealer, op, store.FollowUpRef(f.RunID, f.Name), []byte(f.Address))
	if err != nil {
		return err
	}
	return s.write(ctx, op, f.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		at := now.UnixNano()
		if _, err := s.exec(ctx, tx, `DELETE FROM follow_ups WHERE expires_at <= ?`, at); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO follow_ups (run_id, name, scheme, address, added_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, name) DO NOTHING`, f.RunID, f.Name, f.Scheme, addr, at, at+int64(ttl)); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `DELETE FROM follow_ups WHERE run_id = ?1 AND name NOT IN
	(SELECT name FROM follow_ups WHERE run_id = ?1 ORDER BY added_at DESC, name DESC LIMIT ?2)`, f.RunID, store.MaxFollowUps)
		return err
	})
}

// FollowUps implements store.FollowUps.
func (s *Store) FollowUps(ctx context.Context, runID string) ([]store.FollowUp, error) {
	const op = "follow-ups"
	if err := store.ValidateFollowUpRun(op, runID); err != nil {
		return nil, err
	}
	rows, err := s.read(ctx, `SELECT name, scheme, address, added_at, expires_at FROM follow_ups WHERE run_id = ? AND expires_at > ?
ORDER BY added_at, name`, runID, s.clock().UnixNano())
	if err != nil {
		return nil, mapErr(op, runID, err)
	}
	defer rows.Close()
	var out []store.FollowUp
	for rows.Next() {
		f := store.FollowUp{RunID: runID}
		var addr []byte
		var added, expires int64
		if err := rows.Scan(&f.Name, &f.Scheme, &addr, &added, &expires); err != nil {
			return nil, mapErr(op, runID, err)
		}
		if addr, err = store.OpenBody(s.sealer, op, store.FollowUpRef(runID, f.Name), addr); err != nil {
			return nil, err
		}
		f.Address, f.Added, f.Expires = string(addr), time.Unix(0, added).UTC(), time.Unix(0, expires).UTC()
		out = append(out, f)
	}
	return out, mapErr(op, runID, rows.Err())
}

// DropFollowUp implements store.FollowUps.
func (s *Store) DropFollowUp(ctx context.Context, runID, name string) (bool, error) {
	const op = "drop follow-up"
	if err := store.ValidateFollowUpRun(op, runID); err != nil {
		return false, err
	}
	dropped := false
	err := s.write(ctx, op, runID, func(ctx context.Context, tx *wtx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `DELETE FROM follow_ups WHERE run_id = ? AND name = ?`, runID, name)
		dropped = err == nil && res.n > 0
		return err
	})
	return dropped, err
}
