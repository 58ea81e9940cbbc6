package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// Several runs' records read at once. A verifier reading a run by parts
// pays a round trip per table (the header, events, latest checkpoint,
// intents, receipts, attempts, grants), and most of a small run's read is
// those round trips. ReadRunRecords reads up to RecordBatch runs with one
// batch of statements, one per table, each selecting the rows of every run
// of the batch (run_id = ANY($1)), sent together and answered in one round
// trip. The rows each statement returns are filed by run, in the order
// the run's own read returns them (the same ORDER BY after the run).

// errNoRun is a row of a run the batch did not ask for.
var errNoRun = errors.New("a row of a run not asked for")

// RecordBatch is how many runs ReadRunRecords reads with one round trip.
const RecordBatch = 16

const (
	recordsRunSQL = `SELECT ` + runColumns + ` FROM runs WHERE run_id = ANY($1)`

	recordsCheckpointSQL = `SELECT DISTINCT ON (run_id) run_id, n, seq, format_version, build_digest, body, digest
FROM checkpoints WHERE run_id = ANY($1) ORDER BY run_id, n DESC`

	recordsIntentsSQL = `SELECT i.intent_id, i.run_id, i.seq, i.effect_type, i.idempotency_key, i.content_digest,
	COALESCE(i.approval_id, ''), i.body, i.digest, o.status, o.route, o.attempts
FROM intents i JOIN outbox o ON o.intent_id = i.intent_id WHERE i.run_id = ANY($1) ORDER BY i.run_id, i.commit_order`

	recordsReceiptsSQL = `SELECT run_id, intent_id, outcome, body, digest FROM receipts
WHERE run_id = ANY($1) ORDER BY run_id, commit_order`

	recordsAttemptsSQL = `SELECT i.run_id, a.intent_id, a.n, a.status, a.generation, a.detail, a.started_at, a.finished_at
FROM intents i JOIN attempts a ON a.intent_id = i.intent_id WHERE i.run_id = ANY($1) ORDER BY i.run_id, a.intent_id, a.n`

	recordsApprovalsSQL = `SELECT i.run_id, a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by
FROM intents i JOIN approvals a ON a.approval_id = i.approval_id WHERE i.run_id = ANY($1)
UNION ALL
SELECT a.run_id, a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by
FROM approvals a JOIN intents i ON i.intent_id = a.consumed_by WHERE a.run_id = ANY($1) AND ` + store.ConcurringGrants + `
ORDER BY 1, 2`
)

const recordsEventsSQL = `SELECT run_id, ` + eventRowColumns + ` FROM events WHERE run_id = ANY($1) ORDER BY run_id, last_seq`

// ReadRunRecords reads the records of the runs runIDs: recs[i] and
// errs[i] are what reading run runIDs[i] by parts returns (its header
// with all, events, latest checkpoint, intents, and with all its
// receipts, RunAttempts and RunApprovals), errors included. Up to
// RecordBatch runs are read with one round trip; a run that read does not
// give plainly (no such run, a repeated id, a sealed checkpoint that does
// not open, any database error) is read by parts instead.
func (s *Store) ReadRunRecords(ctx context.Context, runIDs []string, all bool) ([]store.RunRecord, []error) {
	return store.ReadRunRecordsInBatches(ctx, runIDs, all, RecordBatch, s.readRunRecords, func(ctx context.Context, id string, all bool) (store.RunRecord, error) {
		return store.ReadRunRecordByParts(ctx, s, id, all)
	})
}

// ReadRunRecord reads run runID's record as ReadRunRecords reads it: one
// round trip, one snapshot of the run, whatever runners commit meanwhile.
func (s *Store) ReadRunRecord(ctx context.Context, runID string, all bool) (store.RunRecord, error) {
	recs, errs := s.ReadRunRecords(ctx, []string{runID}, all)
	return recs[0], errs[0]
}

// readRunRecords reads up to RecordBatch runs with one round trip into
// recs; ok[i] is false where run ids[i] is to be read by parts (and for
// every run when the batch fails).
func (s *Store) readRunRecords(ctx context.Context, ids []string, all bool, recs []store.RunRecord) []bool {
	ok := make([]bool, len(ids))
	if len(ids) > RecordBatch {
		return ok
	}
	at := make(map[string]int, len(ids))
	var distinct []string
	for i, id := range ids {
		if _, seen := at[id]; !seen {
			at[id] = i
			distinct = append(distinct, id)
		}
	}
	got := make([]store.RunRecord, len(ids))
	found := make([]bool, len(ids))
	cpN := make([]int64, len(ids))
	if err := s.readRecordsBatch(ctx, distinct, all, at, got, found, cpN); err != nil {
		return ok
	}
	for id, i := range at { //flrh:orderfree each run's record is filed at its own position
		rec := got[i]
		if all && !found[i] {
			continue // no such run: its read by parts says so
		}
		if rec.HasCheckpoint {
			body, err := store.OpenBody(s.sealer, "checkpoint", store.SealRef{RunID: id, Kind: store.SealCheckpoint, Seq: cpN[i]}, rec.Checkpoint.Body)
			if err != nil {
				continue
			}
			rec.Checkpoint.Body = body
		}
		if !all {
			rec.Run, rec.Receipts, rec.Attempts, rec.Approvals = store.Run{}, nil, nil, nil
		}
		recs[i], ok[i] = rec, true
	}
	return ok
}

// readRecordsBatch sends the batch's statements for the runs ids and files
// each row in got at its run's position (at); found marks the runs whose
// header was read, cpN the number of each run's latest checkpoint.
func (s *Store) readRecordsBatch(ctx context.Context, ids []string, all bool, at map[string]int,
	got []store.RunRecord, found []bool, cpN []int64) error {
	// The statements read one snapshot: at the pool's READ COMMITTED each
	// would read the tables as of its own start, and a run a runner
	// commits to meanwhile would read as a header behind its log and a
	// checkpoint ahead of both, a record that never was. The transaction
	// is begun and ended in the batch itself, so the read stays one round
	// trip.
	var b pgx.Batch
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`)
	if all {
		b.Queue(recordsRunSQL, ids)
	}
	b.Queue(recordsEventsSQL, ids)
	b.Queue(recordsCheckpointSQL, ids)
	b.Queue(recordsIntentsSQL, ids)
	if all {
		b.Queue(recordsReceiptsSQL, ids)
		b.Queue(recordsAttemptsSQL, ids)
		b.Queue(recordsApprovalsSQL, ids)
	}
	b.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil { // BEGIN
		return err
	}
	// each reads one statement's rows, scanning a row with scan, which
	// returns the run the row belongs to.
	each := func(scan func(pgx.Rows) (string, error)) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if _, err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	pos := func(id string) (int, error) {
		i, ok := at[id]
		if !ok {
			return 0, errNoRun
		}
		return i, nil
	}
	if all {
		if err := each(func(rows pgx.Rows) (string, error) {
			r, err := scanRun(rows)
			if err != nil {
				return "", err
			}
			i, err := pos(r.ID)
			if err != nil {
				return "", err
			}
			got[i].Run, found[i] = r, true
			return r.ID, nil
		}); err != nil {
			return err
		}
	}
	var ev eventRow
	evDest := append([]any{nil}, ev.dest()...)
	if err := each(func(rows pgx.Rows) (string, error) {
		var id string
		evDest[0] = &id
		if err := rows.Scan(evDest...); err != nil {
			return "", err
		}
		i, err := pos(id)
		if err != nil {
			return "", err
		}
		got[i].Events, err = ev.appendTo(got[i].Events, 0)
		return id, err
	}); err != nil {
		return err
	}
	if err := each(func(rows pgx.Rows) (string, error) {
		var id string
		var c store.Checkpoint
		var n int64
		if err := rows.Scan(&id, &n, &c.Seq, &c.FormatVersion, &c.BuildDigest, &c.Body, &c.Digest); err != nil {
			return "", err
		}
		i, err := pos(id)
		if err != nil {
			return "", err
		}
		got[i].Checkpoint, got[i].HasCheckpoint, cpN[i] = c, true, n
		return id, nil
	}); err != nil {
		return err
	}
	if err := each(func(rows pgx.Rows) (string, error) {
		var in store.Intent
		var status string
		if err := rows.Scan(&in.ID, &in.RunID, &in.Seq, &in.EffectType, &in.IdempotencyKey, &in.ContentDigest,
			&in.ApprovalID, &in.Body, &in.Digest, &status, &in.Route, &in.Attempts); err != nil {
			return "", err
		}
		in.Outbox = store.OutboxStatus(status)
		i, err := pos(in.RunID)
		if err != nil {
			return "", err
		}
		got[i].Intents = append(got[i].Intents, in)
		return in.RunID, nil
	}); err != nil {
		return err
	}
	if !all {
		if _, err := br.Exec(); err != nil { // COMMIT
			return err
		}
		return br.Close()
	}
	if err := each(func(rows pgx.Rows) (string, error) {
		var id string
		var r store.Receipt
		if err := rows.Scan(&id, &r.IntentID, &r.Outcome, &r.Body, &r.Digest); err != nil {
			return "", err
		}
		i, err := pos(id)
		if err != nil {
			return "", err
		}
		got[i].Receipts = append(got[i].Receipts, r)
		return id, nil
	}); err != nil {
		return err
	}
	if err := each(func(rows pgx.Rows) (string, error) {
		var id string
		var a store.Attempt
		var status string
		var st, fin int64
		if err := rows.Scan(&id, &a.IntentID, &a.N, &status, &a.Generation, &a.Detail, &st, &fin); err != nil {
			return "", err
		}
		a.Status = store.AttemptStatus(status)
		a.StartedAt, a.FinishedAt = fromNanos(st), fromNanos(fin)
		i, err := pos(id)
		if err != nil {
			return "", err
		}
		got[i].Attempts = append(got[i].Attempts, a)
		return id, nil
	}); err != nil {
		return err
	}
	if err := each(func(rows pgx.Rows) (string, error) {
		var id string
		var a store.Approval
		var exp int64
		var status string
		if err := rows.Scan(&id, &a.ID, &a.RunID, &a.RequestDigest, &a.Nonce, &a.Body, &a.Digest, &exp, &status, &a.ConsumedBy); err != nil {
			return "", err
		}
		a.ExpiresAt = fromNanos(exp)
		a.Status = store.ApprovalStatus(status)
		i, err := pos(id)
		if err != nil {
			return "", err
		}
		got[i].Approvals = append(got[i].Approvals, a)
		return id, nil
	}); err != nil {
		return err
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		return err
	}
	return br.Close()
}
