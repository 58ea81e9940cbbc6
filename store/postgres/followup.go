package postgres

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
	now := s.injected()
	return s.write(ctx, op, f.RunID, func(tx *wtx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM follow_ups WHERE expires_at <= `+nowParam(1), now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO follow_ups (run_id, name, scheme, address, added_at, expires_at)
SELECT $1, $2, $3, $4, n, n + $6 FROM (SELECT `+nowParam(5)+` AS n) AS now ON CONFLICT (run_id, name) DO NOTHING`,
			f.RunID, f.Name, f.Scheme, addr, now, int64(ttl)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM follow_ups WHERE run_id = $1 AND name NOT IN
	(SELECT name FROM follow_ups WHERE run_id = $1 ORDER BY added_at DESC, name DESC LIMIT $2)`, f.RunID, store.MaxFollowUps)
		return err
	})
}

// FollowUps implements store.FollowUps.
func (s *Store) FollowUps(ctx context.Context, runID string) ([]store.FollowUp, error) {
	const op = "follow-ups"
	if err := store.ValidateFollowUpRun(op, runID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name, scheme, address, added_at, expires_at FROM follow_ups
WHERE run_id = $1 AND expires_at > `+nowParam(2)+` ORDER BY added_at, name`, runID, s.injected())
	if err != nil {
		return nil, s.mapErr(op, runID, err)
	}
	defer rows.Close()
	var out []store.FollowUp
	for rows.Next() {
		f := store.FollowUp{RunID: runID}
		var addr []byte
		var added, expires int64
		if err := rows.Scan(&f.Name, &f.Scheme, &addr, &added, &expires); err != nil {
			return nil, s.mapErr(op, runID, err)
		}
		if addr, err = store.OpenBody(s.sealer, op, store.FollowUpRef(runID, f.Name), addr); err != nil {
			return nil, err
		}
		f.Address, f.Added, f.Expires = string(addr), fromNanos(added), fromNanos(expires)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr(op, runID, err)
	}
	return out, nil
}

// DropFollowUp implements store.FollowUps.
func (s *Store) DropFollowUp(ctx context.Context, runID, name string) (bool, error) {
	const op = "drop follow-up"
	if err := store.ValidateFollowUpRun(op, runID); err != nil {
		return false, err
	}
	dropped := false
	err := s.write(ctx, op, runID, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM follow_ups WHERE run_id = $1 AND name = $2`, runID, name)
		dropped = err == nil && tag.RowsAffected() > 0
		return err
	})
	return dropped, err
}
