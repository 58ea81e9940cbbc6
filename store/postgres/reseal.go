package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// Reseal implements store.Resealer: in one transaction holding the run's
// row lock (which every write to the run takes), the run's checkpoints
// and trace rows are read with the lock, resealed where the pass says,
// and written back while resealing names the run (the triggers let a body
// change, and nothing else of a row, only then). A dry run queues no
// write.
func (s *Store) Reseal(ctx context.Context, runID string, opts store.ResealOptions) (store.Resealed, error) {
	type traceRow struct {
		seq    int64
		kinds  []string
		bodies [][]byte
	}
	var counts store.Resealed
	err := s.write(ctx, "reseal", runID, func(tx *wtx) error {
		pass, err := store.NewResealPass(runID, s.sealer, opts)
		if err != nil {
			return err
		}
		var cpN []int64
		var cpBodies [][]byte
		var rows []traceRow
		_, now, err := s.lockRun(ctx, tx, runID, nil, func(b *pgx.Batch) {
			b.Queue(`SELECT n, body FROM checkpoints WHERE run_id = $1 ORDER BY n`, runID).Query(func(r pgx.Rows) error {
				for r.Next() {
					var n int64
					var body []byte
					if err := r.Scan(&n, &body); err != nil {
						return err
					}
					cpN, cpBodies = append(cpN, n), append(cpBodies, body)
				}
				return r.Err()
			})
			b.Queue(`SELECT seq, kinds, bodies FROM trace WHERE run_id = $1 ORDER BY seq`, runID).Query(func(r pgx.Rows) error {
				for r.Next() {
					var t traceRow
					if err := r.Scan(&t.seq, &t.kinds, &t.bodies); err != nil {
						return err
					}
					rows = append(rows, t)
				}
				return r.Err()
			})
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, "reseal", runID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		// Queued statements are sent with the commit: a record that fails
		// the pass ends the transaction before any is.
		queue := func(sql string, args ...any) {
			if !opts.DryRun {
				tx.Queue(sql, args...)
			}
		}
		queue(`INSERT INTO resealing (run_id, started_at) VALUES ($1, $2)`, runID, nanos(now))
		for i, cn := range cpN {
			out, changed, err := pass.Checkpoint(cn, cpBodies[i])
			if err != nil {
				return err
			}
			if changed {
				queue(`UPDATE checkpoints SET body = $3 WHERE run_id = $1 AND n = $2`, runID, cn, out)
			}
		}
		for _, t := range rows {
			if len(t.kinds) != len(t.bodies) {
				return store.Errorf(store.CodeCorrupt, "reseal", runID, nil, "trace row at %d holds %d kinds for %d bodies", t.seq, len(t.kinds), len(t.bodies))
			}
			changed := false
			out := make([][]byte, len(t.bodies))
			for i, body := range t.bodies {
				b, c, err := pass.Trace(t.kinds[i], t.seq+int64(i), body)
				if err != nil {
					return err
				}
				out[i], changed = b, changed || c
			}
			if changed {
				queue(`UPDATE trace SET bodies = $3 WHERE run_id = $1 AND seq = $2`, runID, t.seq, out)
			}
		}
		queue(`DELETE FROM resealing WHERE run_id = $1`, runID)
		counts = pass.Counts
		return nil
	})
	if err != nil {
		return store.Resealed{}, err
	}
	return counts, nil
}
