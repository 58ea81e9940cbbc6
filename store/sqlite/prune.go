package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// runIntentOrders selects the commit orders of a run's intents (the
// parameter), the key its outbox rows and attempts are found by.
const runIntentOrders = `SELECT commit_order FROM intents WHERE run_id = ?`

// pruneCounts counts what Prune removes of a run, record by record: a
// trace row holds the records seq..last_seq.
const pruneCounts = `SELECT
	(SELECT count(*) FROM events WHERE run_id = ?1),
	(SELECT count(*) FROM intents WHERE run_id = ?1),
	(SELECT count(*) FROM attempts WHERE intent_order IN (SELECT commit_order FROM intents WHERE run_id = ?1)),
	(SELECT count(*) FROM receipts WHERE run_id = ?1),
	(SELECT count(*) FROM approvals WHERE run_id = ?1),
	(SELECT count(*) FROM inbox WHERE run_id = ?1),
	(SELECT coalesce(sum(last_seq - seq + 1), 0) FROM trace WHERE run_id = ?1),
	(SELECT count(*) FROM outbox WHERE intent_order IN (SELECT commit_order FROM intents WHERE run_id = ?1) AND status <> 'done'),
	(SELECT count(*) FROM pruned WHERE run_id = ?1)`

// pruneDeletes remove a run's record, children before the rows they
// name, and strip its intents to their keys (see store.Pruner). The
// triggers that keep the evidence tables append-only let a row go, or an
// intent be stripped, only once pruned names its run, which Prune inserts
// first.
var pruneDeletes = []string{
	`DELETE FROM attempts WHERE intent_order IN (` + runIntentOrders + `)`,
	`DELETE FROM outbox WHERE intent_order IN (` + runIntentOrders + `)`,
	`DELETE FROM receipts WHERE run_id = ?`,
	`UPDATE intents SET approval_id = NULL, body = x'', digest = '' WHERE run_id = ?`,
	`DELETE FROM approvals WHERE run_id = ?`,
	`DELETE FROM events WHERE run_id = ?`,
	`DELETE FROM checkpoints WHERE run_id = ?`,
	`DELETE FROM inbox WHERE run_id = ?`,
	`DELETE FROM trace WHERE run_id = ?`,
}

// Prune implements store.Pruner: one write transaction checks the run
// and the records it holds, records the pruning and removes them.
func (s *Store) Prune(ctx context.Context, p store.Pruning) error {
	const op = "prune"
	if err := store.ValidatePruning(op, p); err != nil {
		return err
	}
	return s.write(ctx, op, p.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		var r store.Run
		err := s.queryRow(ctx, tx, `SELECT run_id, state, outcome, quarantine, head_hash FROM runs WHERE run_id = ?`, p.RunID).
			Scan(&r.ID, &r.State, &r.Outcome, &r.Quarantine, &r.HeadHash)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, op, p.RunID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		var have store.RecordCounts
		var open, pruned int64
		if err := s.queryRow(ctx, tx, pruneCounts, p.RunID).Scan(&have.Events, &have.Intents, &have.Attempts, &have.Receipts,
			&have.Grants, &have.Inbox, &have.Trace, &open, &pruned); err != nil {
			return err
		}
		if err := store.CheckPrunable(op, r, pruned > 0, open, p.Open); err != nil {
			return err
		}
		if err := store.CheckKept(op, p, r.HeadHash, have, open); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, insertPruned, prunedRow(p, now)...); err != nil {
			return err
		}
		off, err := s.secureDelete(ctx, tx)
		if err != nil {
			return err
		}
		defer off()
		for _, q := range pruneDeletes {
			if _, err := s.exec(ctx, tx, q, p.RunID); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertPruned records a pruning; prunedRow gives its values.
const insertPruned = `INSERT INTO pruned (run_id, head_hash, archive, events, intents, attempts, receipts, grants, inbox, trace, pruned_at, open_effects)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// prunedRow is insertPruned's values for p, made at at.
func prunedRow(p store.Pruning, at time.Time) []any {
	k := p.Kept
	return []any{p.RunID, p.HeadHash, p.Archive, k.Events, k.Intents, k.Attempts, k.Receipts, k.Grants, k.Inbox, k.Trace, nanos(at), p.Open}
}

// Pruning implements store.Pruner.
func (s *Store) Pruning(ctx context.Context, runID string) (store.Pruning, error) {
	rows, err := s.read(ctx, `SELECT head_hash, archive, events, intents, attempts, receipts, grants, inbox, trace, pruned_at, open_effects FROM pruned WHERE run_id = ?`, runID)
	if err != nil {
		return store.Pruning{}, mapErr("pruning", runID, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.Pruning{}, mapErr("pruning", runID, err)
		}
		return store.Pruning{}, store.Errorf(store.CodeNotFound, "pruning", runID, nil, "the run was not pruned")
	}
	p := store.Pruning{RunID: runID}
	var at int64
	k := &p.Kept
	if err := rows.Scan(&p.HeadHash, &p.Archive, &k.Events, &k.Intents, &k.Attempts, &k.Receipts, &k.Grants, &k.Inbox, &k.Trace, &at, &p.Open); err != nil {
		return store.Pruning{}, mapErr("pruning", runID, err)
	}
	p.At = fromNanos(at)
	return p, mapErr("pruning", runID, rows.Err())
}

// Grants implements store.Pruner.
func (s *Store) Grants(ctx context.Context, runID string) ([]store.Approval, error) {
	rows, err := s.read(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE run_id = ? ORDER BY approval_id`, runID)
	if err != nil {
		return nil, mapErr("grants", runID, err)
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, mapErr("grants", runID, err)
		}
		out = append(out, a)
	}
	return out, mapErr("grants", runID, rows.Err())
}

// Prunable implements store.PrunableLister: the runs in creation order,
// each ended one probed in pruned by its key.
func (s *Store) Prunable(ctx context.Context, before time.Time, after string, limit int) ([]store.Run, error) {
	rows, err := s.read(ctx, `SELECT `+runColumns+` FROM runs r
WHERE r.created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = ?), 0)
  AND r.outcome <> '' AND r.quarantine = '' AND r.updated_at < ?
  AND NOT EXISTS (SELECT 1 FROM pruned p WHERE p.run_id = r.run_id)
ORDER BY r.created_order LIMIT ?`, after, nanos(before), limit)
	if err != nil {
		return nil, mapErr("prunable", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, mapErr("prunable", "", err)
		}
		out = append(out, r)
	}
	return out, mapErr("prunable", "", rows.Err())
}

// PrunedKeys implements store.PrunedMover.
func (s *Store) PrunedKeys(ctx context.Context, runID string) ([]store.Intent, error) {
	rows, err := s.read(ctx, `SELECT intent_id, seq, effect_type, idempotency_key, content_digest FROM intents WHERE run_id = ? ORDER BY commit_order`, runID)
	if err != nil {
		return nil, mapErr("pruned keys", runID, err)
	}
	defer rows.Close()
	var out []store.Intent
	for rows.Next() {
		k := store.Intent{RunID: runID}
		if err := rows.Scan(&k.ID, &k.Seq, &k.EffectType, &k.IdempotencyKey, &k.ContentDigest); err != nil {
			return nil, mapErr("pruned keys", runID, err)
		}
		out = append(out, k)
	}
	return out, mapErr("pruned keys", runID, rows.Err())
}

// ImportPruned implements store.PrunedMover.
func (s *Store) ImportPruned(ctx context.Context, r store.PrunedRun) (bool, error) {
	const op = "import pruned"
	if err := store.ValidatePrunedRun(op, r); err != nil {
		return false, err
	}
	id := r.Run.ID
	imported := false
	err := s.write(ctx, op, id, func(ctx context.Context, tx *wtx, _ time.Time) error {
		imported = false
		var headHash string
		var archive sql.NullString
		switch err := s.queryRow(ctx, tx, `SELECT r.head_hash, p.archive FROM runs r LEFT JOIN pruned p ON p.run_id = r.run_id WHERE r.run_id = ?`, id).Scan(&headHash, &archive); {
		case err == nil && archive.Valid:
			return store.ImportedBefore(op, r, headHash, &archive.String) // nil: this very run, imported before
		case err == nil:
			return store.ImportedBefore(op, r, headHash, nil)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := s.keysFree(ctx, tx, op, id, r.Keys); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, outcome, head_seq, head_hash,
	created_at, updated_at, created_order, labels)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(created_order), 0) + 1 FROM runs), ?)`,
			id, r.Run.WorkflowID, r.Run.WorkflowVersion, r.Run.WorkflowDigest, r.Run.State, r.Run.Outcome, r.Run.Head, r.Run.HeadHash,
			nanos(r.Run.CreatedAt), nanos(r.Run.UpdatedAt), label.Encode(r.Run.Labels)); err != nil {
			return err
		}
		if err := s.indexLabels(ctx, tx, r.Run); err != nil {
			return err
		}
		p := r.Pruning
		if _, err := s.exec(ctx, tx, insertPruned, prunedRow(p, p.At)...); err != nil {
			return err
		}
		for _, in := range r.Keys {
			if _, err := s.exec(ctx, tx, `INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, NULL, x'', '', 0, ?)`, in.ID, id, in.Seq, in.EffectType, in.IdempotencyKey, in.ContentDigest, nanos(p.At)); err != nil {
				return err
			}
		}
		imported = true
		return nil
	})
	return imported && err == nil, err
}

// secureDelete has SQLite zero what the transaction's writes remove, the
// cells deleted or rewritten and the pages freed, until the function it
// returns turns it off again (the writing connection's other writes do
// not pay for it): pruning and resealing leave nothing of what they
// removed in the database's pages, and once the log is emptied
// (EmptyLog), in neither file.
func (s *Store) secureDelete(ctx context.Context, tx *wtx) (func(), error) {
	if s.testNoZeroing {
		return func() {}, nil
	}
	if _, err := s.exec(ctx, tx, `PRAGMA secure_delete = ON`); err != nil {
		return nil, err
	}
	return func() { s.exec(context.WithoutCancel(ctx), tx, `PRAGMA secure_delete = FAST`) }, nil
}
