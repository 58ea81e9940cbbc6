package sqlite

import (
	"context"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// indexLabels writes a row of run_labels for each of a run's labels (none
// for a run without), the run's row written already in the same
// transaction: every path that inserts a run (created, moved in, imported
// pruned) calls it. One statement, as PostgreSQL's queueLabels.
func (s *Store) indexLabels(ctx context.Context, tx *wtx, run store.Run) error {
	if len(run.Labels) == 0 {
		return nil
	}
	_, err := s.exec(ctx, tx, `INSERT INTO run_labels (key, value, created_order)
SELECT j.key, j.value, r.created_order FROM runs r, json_each(?2) j WHERE r.run_id = ?1`, run.ID, label.Encode(run.Labels))
	return err
}
