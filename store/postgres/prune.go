package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// runIntents selects the ids of a run's intents ($1), the key its outbox
// rows and attempts are found by.
const runIntents = `SELECT intent_id FROM intents WHERE run_id = $1`

// pruneCounts counts what Prune removes of a run, record by record (an
// events or trace row holds the records seq..last_seq), then its open
// outbox entries and whether it was pruned already.
const pruneCounts = `SELECT
	(SELECT coalesce(sum(last_seq - seq + 1), 0)::bigint FROM events WHERE run_id = $1),
	(SELECT count(*) FROM intents WHERE run_id = $1),
	(SELECT count(*) FROM attempts WHERE intent_id IN (` + runIntents + `)),
	(SELECT count(*) FROM receipts WHERE run_id = $1),
	(SELECT count(*) FROM approvals WHERE run_id = $1),
	(SELECT count(*) FROM inbox WHERE run_id = $1),
	(SELECT coalesce(sum(last_seq - seq + 1), 0)::bigint FROM trace WHERE run_id = $1),
	(SELECT count(*) FROM outbox WHERE intent_id IN (` + runIntents + `) AND status <> 'done'),
	(SELECT count(*) FROM pruned WHERE run_id = $1)`

// pruneDeletes remove a run's record, children before the rows they
// name, and strip its intents to their keys (see store.Pruner). The
// evidence tables' triggers let a row go, or an intent be stripped, only
// once pruned names its run, which Prune inserts first.
var pruneDeletes = []string{
	`DELETE FROM attempts WHERE intent_id IN (` + runIntents + `)`,
	`DELETE FROM outbox WHERE intent_id IN (` + runIntents + `)`,
	`DELETE FROM receipts WHERE run_id = $1`,
	`UPDATE intents SET approval_id = NULL, body = ''::bytea, digest = '' WHERE run_id = $1`,
	`DELETE FROM approvals WHERE run_id = $1`,
	`DELETE FROM events WHERE run_id = $1`,
	`DELETE FROM checkpoints WHERE run_id = $1`,
	`DELETE FROM inbox WHERE run_id = $1`,
	`DELETE FROM trace WHERE run_id = $1`,
}

// Prune implements store.Pruner. The run's row lock, which every write to
// the run takes, is held from the counts to the deletions: what is
// counted is what is removed.
func (s *Store) Prune(ctx context.Context, p store.Pruning) error {
	const op = "prune"
	if err := store.ValidatePruning(op, p); err != nil {
		return err
	}
	err := s.write(ctx, op, p.RunID, func(tx *wtx) error {
		var have store.RecordCounts
		var open, pruned int64
		r, now, err := s.lockRun(ctx, tx, p.RunID, nil, func(b *pgx.Batch) {
			b.Queue(pruneCounts, p.RunID).QueryRow(func(row pgx.Row) error {
				return row.Scan(&have.Events, &have.Intents, &have.Attempts, &have.Receipts, &have.Grants, &have.Inbox, &have.Trace, &open, &pruned)
			})
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, op, p.RunID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		if err := store.CheckPrunable(op, r, pruned > 0, open, p.Open); err != nil {
			return err
		}
		if err := store.CheckKept(op, p, r.HeadHash, have, open); err != nil {
			return err
		}
		tx.Queue(insertPruned, prunedRow(p, now)...)
		for _, q := range pruneDeletes {
			tx.Queue(q, p.RunID)
		}
		return nil
	})
	if store.CodeOf(err) == store.CodeExists {
		// Two prunings at once: the transaction's snapshot is taken before
		// it waits for the run's row lock, so the one that waited counted
		// the run as it was, and its record of the pruning collided with
		// the other's, which committed meanwhile. Nothing was written; the
		// run was pruned, as a later pruning would be told.
		if _, perr := s.Pruning(ctx, p.RunID); perr == nil {
			return store.Errorf(store.CodeInvalidTransition, op, p.RunID, nil, "the run was pruned already, by a pruning at the same time")
		}
	}
	return err
}

// insertPruned records a pruning; prunedRow gives its values.
const insertPruned = `INSERT INTO pruned (run_id, head_hash, archive, events, intents, attempts, receipts, grants, inbox, trace, pruned_at, open_effects)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// prunedRow is insertPruned's values for p, made at at.
func prunedRow(p store.Pruning, at time.Time) []any {
	k := p.Kept
	return []any{p.RunID, p.HeadHash, p.Archive, k.Events, k.Intents, k.Attempts, k.Receipts, k.Grants, k.Inbox, k.Trace, nanos(at), p.Open}
}

// Pruning implements store.Pruner.
func (s *Store) Pruning(ctx context.Context, runID string) (store.Pruning, error) {
	p := store.Pruning{RunID: runID}
	var at int64
	k := &p.Kept
	err := s.pool.QueryRow(ctx, `SELECT head_hash, archive, events, intents, attempts, receipts, grants, inbox, trace, pruned_at, open_effects FROM pruned WHERE run_id = $1`, runID).
		Scan(&p.HeadHash, &p.Archive, &k.Events, &k.Intents, &k.Attempts, &k.Receipts, &k.Grants, &k.Inbox, &k.Trace, &at, &p.Open)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Pruning{}, store.Errorf(store.CodeNotFound, "pruning", runID, nil, "the run was not pruned")
	}
	if err != nil {
		return store.Pruning{}, s.mapErr("pruning", runID, err)
	}
	p.At = fromNanos(at)
	return p, nil
}

// Grants implements store.Pruner.
func (s *Store) Grants(ctx context.Context, runID string) ([]store.Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE run_id = $1 ORDER BY approval_id`, runID)
	if err != nil {
		return nil, s.mapErr("grants", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Approval, error) { return scanApproval(row) })
	return out, s.mapErr("grants", runID, err)
}

// Prunable implements store.PrunableLister: the runs in creation order,
// each ended one probed in pruned by its key.
func (s *Store) Prunable(ctx context.Context, before time.Time, after string, limit int) ([]store.Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM runs r
WHERE r.created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = $1), 0)
  AND r.outcome <> '' AND r.quarantine = '' AND r.updated_at < $2
  AND NOT EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = r.run_id)
ORDER BY r.created_order LIMIT $3`, after, nanos(before), limit)
	if err != nil {
		return nil, s.mapErr("prunable", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.mapErr("prunable", "", err)
		}
		out = append(out, r)
	}
	return out, s.mapErr("prunable", "", rows.Err())
}

// PrunedKeys implements store.PrunedMover.
func (s *Store) PrunedKeys(ctx context.Context, runID string) ([]store.Intent, error) {
	rows, err := s.pool.Query(ctx, `SELECT intent_id, seq, effect_type, idempotency_key, content_digest FROM intents WHERE run_id = $1 ORDER BY commit_order`, runID)
	if err != nil {
		return nil, s.mapErr("pruned keys", runID, err)
	}
	defer rows.Close()
	var out []store.Intent
	for rows.Next() {
		k := store.Intent{RunID: runID}
		if err := rows.Scan(&k.ID, &k.Seq, &k.EffectType, &k.IdempotencyKey, &k.ContentDigest); err != nil {
			return nil, s.mapErr("pruned keys", runID, err)
		}
		out = append(out, k)
	}
	return out, s.mapErr("pruned keys", runID, rows.Err())
}

// ImportPruned implements store.PrunedMover.
func (s *Store) ImportPruned(ctx context.Context, r store.PrunedRun) (bool, error) {
	const op = "import pruned"
	if err := store.ValidatePrunedRun(op, r); err != nil {
		return false, err
	}
	id := r.Run.ID
	imported := false
	err := s.write(ctx, op, id, func(tx *wtx) error {
		imported = false
		var headHash string
		var archive *string
		switch err := tx.QueryRow(ctx, `SELECT r.head_hash, p.archive FROM runs r LEFT JOIN pruned p ON p.run_id = r.run_id WHERE r.run_id = $1`, id).Scan(&headHash, &archive); {
		case err == nil:
			return store.ImportedBefore(op, r, headHash, archive) // nil: this very run, imported before
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := keysFree(ctx, tx, op, id, r.Keys); err != nil {
			return err
		}
		tx.Queue(`INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, outcome, head_seq, head_hash, created_at, updated_at, labels)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			id, r.Run.WorkflowID, r.Run.WorkflowVersion, r.Run.WorkflowDigest, r.Run.State, r.Run.Outcome, r.Run.Head, r.Run.HeadHash,
			nanos(r.Run.CreatedAt), nanos(r.Run.UpdatedAt), label.Encode(r.Run.Labels))
		queueLabels(tx, r.Run)
		p := r.Pruning
		tx.Queue(insertPruned, prunedRow(p, p.At)...)
		for _, in := range r.Keys {
			tx.Queue(`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, NULL, ''::bytea, '', 0, $7)`, in.ID, id, in.Seq, in.EffectType, in.IdempotencyKey, in.ContentDigest, nanos(p.At))
		}
		imported = true
		return nil
	})
	return imported && err == nil, err
}
