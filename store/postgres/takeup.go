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
func (s *Store) TakeUp(ctx context.Context, runID string) (store.Run, store.Checkpoint, error, []store.Inbound, error) {
	t := &takeUp{s: s, runID: runID}
	b := &pgx.Batch{}
	b.Queue(runSQL, runID).QueryRow(t.scanRun)
	b.Queue(checkpointSQL, runID).QueryRow(t.scanCheckpoint)
	b.Queue(inboxPendingSQL, runID).Query(t.scanInbox)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return store.Run{}, store.Checkpoint{}, nil, nil, s.mapErr("run", runID, err)
	}
	cp, cpErr := s.openCheckpoint(runID, t.cp, t.n, t.cpErr)
	return t.run, cp, cpErr, t.pending, nil
}

// takeUp is what TakeUp reads, filled as each result arrives.
type takeUp struct {
	s       *Store
	runID   string
	run     store.Run
	cp      store.Checkpoint
	n       int64
	cpErr   error
	pending []store.Inbound
}

func (t *takeUp) scanRun(row pgx.Row) error {
	var err error
	t.run, err = scanRun(row)
	return t.s.mapErr("run", t.runID, err)
}

func (t *takeUp) scanCheckpoint(row pgx.Row) error {
	t.cpErr = scanCheckpoint(row, &t.cp, &t.n)
	return nil
}

func (t *takeUp) scanInbox(rows pgx.Rows) error {
	var err error
	t.pending, err = t.s.scanInbox(t.runID, rows)
	return err
}
