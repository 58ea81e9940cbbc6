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

// ReadRunRecordInOneDriver is ReadRunRecordInOne run through the driver's
// own statement on a connection of the readers' pool (the way a read goes
// when no held connection is free).
func (s *Store) ReadRunRecordInOneDriver(ctx context.Context, runID string, all bool) (store.RunRecord, bool) {
	return s.readRunRecordBy(ctx, runID, all, s.queryRecordsDriver)
}

// ReadRunRecordsInOneDriver is ReadRunRecordsInOne run through the
// driver's own statement on a connection of the readers' pool.
func (s *Store) ReadRunRecordsInOneDriver(ctx context.Context, ids []string, all bool) ([]store.RunRecord, []bool) {
	recs := make([]store.RunRecord, len(ids))
	return recs, s.readRunRecordsBy(ctx, ids, all, recs, s.queryRecordsDriver)
}

// HeldRecordConns is how many reading connections the store holds for the
// records' reads, opened through SQLite's interface.
func (s *Store) HeldRecordConns() int {
	s.rrecs.mu.Lock()
	defer s.rrecs.mu.Unlock()
	return s.rrecs.held
}
