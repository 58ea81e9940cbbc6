package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// TakeUp reads what a runner reads of a run as it takes it up (see
// runner.TakeUpReader) in one round trip: the three statements Run,
// Checkpoint and Inbox(ctx, runID, true) send, pipelined, each read and
// returned as those calls return it.
func (s *Store) TakeUp(ctx context.Context, runID string) (run store.Run, cp store.Checkpoint, cpErr error, pending []store.Inbound, err error) {
	var n int64
	b := &pgx.Batch{}
	b.Queue(`SELECT `+runColumns+` FROM runs WHERE run_id = $1`, runID).QueryRow(func(row pgx.Row) error {
		var err error
		run, err = scanRun(row)
		return s.mapErr("run", runID, err)
	})
	b.Queue(checkpointSQL, runID).QueryRow(func(row pgx.Row) error {
		cpErr = row.Scan(&n, &cp.Seq, &cp.FormatVersion, &cp.BuildDigest, &cp.Body, &cp.Digest)
		return nil
	})
	b.Queue(inboxPendingSQL, runID).Query(func(rows pgx.Rows) error {
		var err error
		pending, err = s.scanInbox(runID, rows)
		return err
	})
	if err = s.pool.SendBatch(ctx, b).Close(); err != nil {
		return store.Run{}, store.Checkpoint{}, nil, nil, s.mapErr("run", runID, err)
	}
	cp, cpErr = s.openCheckpoint(runID, cp, n, cpErr)
	return run, cp, cpErr, pending, nil
}
