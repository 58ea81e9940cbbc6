package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// Submit implements store.Store. It locks the run's row so that inbox
// order is the order submissions committed in, and notifies idle runners.
func (s *Store) Submit(ctx context.Context, in store.Inbound) error {
	const op = "submit"
	if in.ID == "" || in.Kind == "" || in.ActorRole == "" || len(in.Body) == 0 {
		return store.Errorf(store.CodeInvalidInput, op, in.RunID, nil, "id, kind, actor role and body are required")
	}
	if store.BodyDigest(in.Body) != in.Digest {
		return store.Errorf(store.CodeInvalidInput, op, in.RunID, nil, "digest does not match the body")
	}
	return s.write(ctx, op, in.RunID, func(tx *wtx) error {
		// The inbound id's earlier submission, if any, is read in the
		// lock's round trip, and the row, the notification and COMMIT
		// travel in the next: two round trips.
		var digest string
		found := false
		run, now, err := s.lockRun(ctx, tx, in.RunID, func(b *pgx.Batch) {
			b.Queue(`SELECT digest FROM inbox WHERE run_id = $1 AND inbound_id = $2`, in.RunID, in.ID).QueryRow(func(row pgx.Row) error {
				err := row.Scan(&digest)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				found = err == nil
				return err
			})
		})
		if err != nil {
			return err
		}
		switch {
		case found && digest == in.Digest:
			return nil // the same event submitted again: idempotent
		case found:
			return store.Errorf(store.CodeExists, op, in.RunID, nil, "inbound %s was submitted with other content", in.ID)
		}
		if run.Outcome != "" {
			return store.Errorf(store.CodeInvalidTransition, op, in.RunID, nil, "run ended with %s", run.Outcome)
		}
		tx.Queue(`INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE run_id = $1), $2, $3, $4, $5, $6, $7, $8, $9)`,
			in.RunID, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, nanos(now))
		tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), in.RunID)
		return nil
	})
}

// Inbox implements store.Store.
func (s *Store) Inbox(ctx context.Context, runID string, pendingOnly bool) ([]store.Inbound, error) {
	q := `SELECT inbound_id, run_id, kind, actor_role, actor, capability, body, digest, seq, consumed FROM inbox WHERE run_id = $1`
	if pendingOnly {
		q += ` AND NOT consumed`
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY seq`, runID)
	if err != nil {
		return nil, s.mapErr("inbox", runID, err)
	}
	defer rows.Close()
	var out []store.Inbound
	for rows.Next() {
		var in store.Inbound
		if err := rows.Scan(&in.ID, &in.RunID, &in.Kind, &in.ActorRole, &in.Actor, &in.Capability, &in.Body, &in.Digest, &in.Seq, &in.Consumed); err != nil {
			return nil, s.mapErr("inbox", runID, err)
		}
		out = append(out, in)
	}
	return out, s.mapErr("inbox", runID, rows.Err())
}
