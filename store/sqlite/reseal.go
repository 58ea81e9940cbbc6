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
// checkpoint and each trace row is read, its records resealed where the
// pass says, written back, and resealing forgets the run. A dry run
// writes nothing.
func (s *Store) Reseal(ctx context.Context, runID string, opts store.ResealOptions) (store.Resealed, error) {
	var counts store.Resealed
	err := s.write(ctx, "reseal", runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		pass, err := store.NewResealPass(runID, s.sealer, opts)
		if err != nil {
			return err
		}
		var checkpoints int64
		err = s.queryRow(ctx, tx, `SELECT checkpoint_n FROM runs WHERE run_id = ?`, runID).Scan(&checkpoints)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, "reseal", runID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		write := func(query string, args ...any) error {
			if opts.DryRun {
				return nil
			}
			_, err := s.exec(ctx, tx, query, args...)
			return err
		}
		if err := write(`INSERT INTO resealing (run_id, started_at) VALUES (?, ?)`, runID, now.UnixNano()); err != nil {
			return err
		}
		if !opts.DryRun {
			off, err := s.secureDelete(ctx, tx)
			if err != nil {
				return err
			}
			defer off()
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
			out, changed, err := pass.Checkpoint(cn, body)
			if err == nil && changed {
				err = write(`UPDATE checkpoints SET body = ? WHERE run_id = ? AND n = ?`, out, runID, cn)
			}
			if err != nil {
				return err
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
				return store.Errorf(store.CodeCorrupt, "reseal", runID, err, "trace row at %d damaged", seq)
			}
			var rebuilt []byte
			changed := false
			for i, r := range recs {
				out, c, err := pass.Trace(r.kind, seq+int64(i), r.body)
				if err != nil {
					return err
				}
				changed = changed || c
				rebuilt = appendTraceRecord(rebuilt, r.kind, out)
			}
			if changed {
				if err := write(`UPDATE trace SET records = ? WHERE run_id = ? AND seq = ?`, rebuilt, runID, seq); err != nil {
					return err
				}
			}
		}
		counts = pass.Counts
		return write(`DELETE FROM resealing WHERE run_id = ?`, runID)
	})
	if err != nil {
		return store.Resealed{}, err
	}
	return counts, nil
}
