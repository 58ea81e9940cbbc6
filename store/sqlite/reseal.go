package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"flrh.dev/flrh/store"
)

// Reseal implements store.Resealer: in one write transaction, resealing
// names the run (the append-only triggers let a checkpoint's or trace
// row's body change, and nothing else of it, only while it does), each
// checkpoint and each trace row is read, its records resealed where
// store.ResealBody says, written back, and resealing forgets the run.
func (s *Store) Reseal(ctx context.Context, runID string, opts store.ResealOptions) (store.Resealed, error) {
	const op = "reseal"
	primary, err := store.CheckResealer(op, runID, s.sealer)
	if err != nil {
		return store.Resealed{}, err
	}
	var total store.Resealed
	err = s.write(ctx, op, runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		var n store.Resealed
		var checkpoints int64
		err := s.queryRow(ctx, tx, `SELECT checkpoint_n FROM runs WHERE run_id = ?`, runID).Scan(&checkpoints)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, op, runID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		// A dry run counts as a pass counts and writes nothing.
		if !opts.DryRun {
			if _, err := s.exec(ctx, tx, `INSERT INTO resealing (run_id, started_at) VALUES (?, ?)`, runID, now.UnixNano()); err != nil {
				return err
			}
		}
		for cn := int64(1); cn <= checkpoints; cn++ {
			var body []byte
			err := s.queryRow(ctx, tx, `SELECT body FROM checkpoints WHERE run_id = ? AND n = ?`, runID, cn).Scan(blob{&body})
			if errors.Is(err, sql.ErrNoRows) {
				continue // none under this number (a run moved in keeps its own numbering)
			}
			if err != nil {
				return err
			}
			out, changed, err := store.ResealBody(s.sealer, primary, op, store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: cn}, body, opts.Clear, &n)
			if err != nil {
				return err
			}
			if changed && !opts.DryRun {
				if _, err := s.exec(ctx, tx, `UPDATE checkpoints SET body = ? WHERE run_id = ? AND n = ?`, out, runID, cn); err != nil {
					return err
				}
			}
		}
		for after := int64(0); ; {
			var seq, last int64
			var frame []byte
			err := s.queryRow(ctx, tx, `SELECT seq, last_seq, records FROM trace WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT 1`, runID, after).
				Scan(&seq, &last, blob{&frame})
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return err
			}
			after = last
			recs, err := splitTrace(frame, last-seq+1)
			if err != nil {
				return store.Errorf(store.CodeCorrupt, op, runID, err, "trace row at %d damaged", seq)
			}
			var rebuilt []byte
			changed := false
			for i, r := range recs {
				out, c, err := store.ResealBody(s.sealer, primary, op, store.SealRef{RunID: runID, Kind: store.SealTrace + "/" + r.kind, Seq: seq + int64(i)}, r.body, opts.Clear, &n)
				if err != nil {
					return err
				}
				changed = changed || c
				rebuilt = appendTraceRecord(rebuilt, r.kind, out)
			}
			if changed && !opts.DryRun {
				if _, err := s.exec(ctx, tx, `UPDATE trace SET records = ? WHERE run_id = ? AND seq = ?`, rebuilt, runID, seq); err != nil {
					return err
				}
			}
		}
		if !opts.DryRun {
			if _, err := s.exec(ctx, tx, `DELETE FROM resealing WHERE run_id = ?`, runID); err != nil {
				return err
			}
		}
		total = n
		return nil
	})
	if err != nil {
		return store.Resealed{}, err
	}
	return total, nil
}
