package sqlite

import (
	"context"

	"flrh.dev/flrh/store"
)

// ReadRunRecordInOne is ReadRunRecord's one-statement read alone: ok is
// false where ReadRunRecord would read by parts.
func (s *Store) ReadRunRecordInOne(ctx context.Context, runID string, all bool) (store.RunRecord, bool) {
	return s.readRunRecord(ctx, runID, all)
}
