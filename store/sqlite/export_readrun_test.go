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

// ReadRunRecordsInOne is ReadRunRecords' one-statement read of up to
// RecordBatch runs alone: ok[i] is false where ReadRunRecords would read
// run ids[i] by ReadRunRecord.
func (s *Store) ReadRunRecordsInOne(ctx context.Context, ids []string, all bool) ([]store.RunRecord, []bool) {
	recs := make([]store.RunRecord, len(ids))
	return recs, s.readRunRecords(ctx, ids, all, recs)
}

// RecordBatchQuery is the statement that reads a batch of runs.
var RecordBatchQuery = recordBatchAllQuery

// QueryPlan is queryPlan for the package's external tests.
var QueryPlan = queryPlan
