package sqlite

import (
	"context"

	"flrh.dev/flrh/store"
)

// indexLabels writes a row of run_labels for each of a run's labels, the
// run's row written already in the same transaction: every path that
// inserts a run (created, moved in, imported pruned) calls it.
func (s *Store) indexLabels(ctx context.Context, tx *wtx, run store.Run) error {
	for k, v := range run.Labels {
		if _, err := s.exec(ctx, tx, `INSERT INTO run_labels (key, value, created_order)
SELECT ?, ?, created_order FROM runs WHERE run_id = ?`, k, v, run.ID); err != nil {
			return err
		}
	}
	return nil
}
