package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

var _ store.RunImporter = (*Store)(nil)

// ImportRun implements store.RunImporter, one insert a row: the trace
// as one row, the checkpoint as the run's first (the next is its
// second). The run has settled nothing (Settle), so its first holder
// looks at its inbox afresh.
func (s *Store) ImportRun(ctx context.Context, r store.WholeRun) (bool, error) {
	const op = "import run"
	if err := store.ValidateWholeRun(op, r); err != nil {
		return false, err
	}
	run := r.Record.Run
	id := run.ID
	imported := false
	err := s.write(ctx, op, id, func(ctx context.Context, tx *wtx, now time.Time) error {
		imported = false
		var headHash string
		switch err := s.queryRow(ctx, tx, `SELECT head_hash FROM runs WHERE run_id = ?`, id).Scan(&headHash); {
		case err == nil:
			return store.ImportedRunBefore(op, r, headHash) // nil: this very run, imported before
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := s.keysFree(ctx, tx, op, id, r.Record.Intents); err != nil {
			return err
		}
		for _, g := range r.Grants {
			var other string
			switch err := s.queryRow(ctx, tx, `SELECT run_id FROM approvals WHERE approval_id = ? OR nonce = ?`, g.ID, g.Nonce).Scan(&other); {
			case err == nil:
				return store.GrantTaken(op, id, g, other)
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		ts := nanos(now)
		gen := run.Lease.Generation
		var checkpointN int64
		if r.Record.HasCheckpoint {
			checkpointN = 1
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, outcome, head_seq, head_hash,
	lease_generation, quarantine, created_at, updated_at, created_order, trace_seq, checkpoint_n, due_at, labels)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(created_order), 0) + 1 FROM runs), ?, ?, ?, ?)`,
			id, run.WorkflowID, run.WorkflowVersion, run.WorkflowDigest, run.State, run.Outcome, run.Head, run.HeadHash,
			gen, run.Quarantine, nanos(run.CreatedAt), nanos(run.UpdatedAt), int64(len(r.Trace)), checkpointN, nanos(run.DueAt), label.Encode(run.Labels)); err != nil {
			return err
		}
		if err := s.indexLabels(ctx, tx, run); err != nil {
			return err
		}
		for _, e := range r.Record.Events {
			if _, err := s.exec(ctx, tx, insertEvents(1), id, e.Seq, e.Kind, e.Body, packHash(e.Digest), packHash(e.PrevHash), packHash(e.ChainHash),
				e.Generation, nanos(e.RecordedAt)); err != nil {
				return err
			}
		}
		if r.Record.HasCheckpoint {
			cp := r.Record.Checkpoint
			body, err := store.PackSealBody(s.sealer, &tx.w.packer, op, store.SealRef{RunID: id, Kind: store.SealCheckpoint, Seq: checkpointN}, cp.Body)
			if err != nil {
				return err
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, checkpointN, cp.Seq, cp.FormatVersion, cp.BuildDigest, body, cp.Digest, gen, ts); err != nil {
				return err
			}
		}
		for _, g := range r.Grants {
			if _, err := s.exec(ctx, tx, `INSERT INTO approvals (approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, consumed_by, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.ID, id, g.RequestDigest, g.Nonce, g.Body, g.Digest, nanos(g.ExpiresAt), string(g.Status), g.ConsumedBy, ts); err != nil {
				return err
			}
		}
		for _, in := range r.Record.Intents {
			var approval any
			if in.ApprovalID != "" {
				approval = in.ApprovalID
			}
			if _, err := s.exec(ctx, tx, insertIntent,
				in.ID, id, in.Seq, in.EffectType, in.IdempotencyKey, in.ContentDigest, approval, in.Body, in.Digest, gen, ts); err != nil {
				return err
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO outbox (intent_order, intent_id, run_id, status, route, attempts, updated_at)
VALUES (last_insert_rowid(), ?, ?, ?, ?, ?, ?)`, in.ID, id, string(in.Outbox), in.Route, in.Attempts, ts); err != nil {
				return err
			}
		}
		for _, a := range r.Record.Attempts {
			if _, err := s.exec(ctx, tx, `INSERT INTO attempts (intent_order, intent_id, n, status, generation, detail, started_at, finished_at)
VALUES ((SELECT commit_order FROM intents WHERE intent_id = ?), ?, ?, ?, ?, ?, ?, ?)`,
				a.IntentID, a.IntentID, a.N, string(a.Status), a.Generation, a.Detail, nanos(a.StartedAt), nanos(a.FinishedAt)); err != nil {
				return err
			}
		}
		for _, rc := range r.Record.Receipts {
			if _, err := s.exec(ctx, tx, insertReceipt, rc.IntentID, id, rc.Outcome, rc.Body, rc.Digest, gen, ts); err != nil {
				return err
			}
		}
		for _, in := range r.Inbox {
			if _, err := s.exec(ctx, tx, `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, consumed, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, in.Seq, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, in.Consumed, ts); err != nil {
				return err
			}
		}
		if len(r.Trace) > 0 {
			var frame []byte
			for i, tr := range r.Trace {
				body, err := store.SealBody(s.sealer, op, store.SealRef{RunID: id, Kind: store.SealTrace + "/" + tr.Kind, Seq: int64(i) + 1}, tr.Body)
				if err != nil {
					return err
				}
				frame = appendTraceRecord(frame, tr.Kind, body)
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO trace (run_id, seq, last_seq, records, recorded_at) VALUES (?, 1, ?, ?, ?)`,
				id, int64(len(r.Trace)), slices.Clip(frame), ts); err != nil {
				return err
			}
		}
		for _, n := range r.Notices {
			// Due at once, held by none; a notice of that id here already
			// (delivered from here before, and written again) is kept.
			if _, err := s.exec(ctx, tx, `INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, last_error, sent)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (notice_id) DO NOTHING`,
				n.ID, id, n.Seq, n.Kind, n.Body, nanos(n.CreatedAt), n.Attempts, ts, n.LastError, store.JoinSent(n.Sent)); err != nil {
				return err
			}
		}
		imported = true
		return nil
	})
	return imported && err == nil, err
}

// keysFree refuses, for an import of run id, the first of its intents
// whose id or idempotency key the store holds already (store.KeyTaken).
func (s *Store) keysFree(ctx context.Context, tx *wtx, op, id string, intents []store.Intent) error {
	for _, in := range intents {
		var other, digest string
		switch err := s.queryRow(ctx, tx, `SELECT run_id, content_digest FROM intents WHERE idempotency_key = ? OR intent_id = ?`, in.IdempotencyKey, in.ID).Scan(&other, &digest); {
		case err == nil:
			return store.KeyTaken(op, id, in, other, digest)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	return nil
}

var _ store.MoveFencer = (*Store)(nil)

// movingRun reads runID's header in tx, for MoveOut and CancelMove.
func (s *Store) movingRun(ctx context.Context, tx *wtx, op, runID string) (store.Run, error) {
	r, err := scanRun(s.queryRow(ctx, tx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.Errorf(store.CodeNotFound, op, runID, nil, "no such run")
	}
	return r, err
}

// MoveOut implements store.MoveFencer (store.MoveOutOf), in one write
// transaction at the store's clock.
func (s *Store) MoveOut(ctx context.Context, runID, to string) (store.Run, error) {
	const op = "move out"
	var r store.Run
	err := s.write(ctx, op, runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		var err error
		if r, err = s.movingRun(ctx, tx, op, runID); err != nil {
			return err
		}
		q, err := store.MoveOutOf(op, r, to, now)
		if err != nil || q == r.Quarantine {
			return err
		}
		r.Quarantine, r.Lease.Owner, r.Lease.ExpiresAt, r.UpdatedAt = q, "", time.Time{}, fromNanos(nanos(now))
		_, err = s.exec(ctx, tx, `UPDATE runs SET quarantine = ?, lease_owner = '', lease_expires_at = 0, updated_at = ? WHERE run_id = ?`,
			q, nanos(now), runID)
		return err
	})
	return r, err
}

// CancelMove implements store.MoveFencer (store.MoveCancelled).
func (s *Store) CancelMove(ctx context.Context, runID string) error {
	const op = "cancel move"
	return s.write(ctx, op, runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		r, err := s.movingRun(ctx, tx, op, runID)
		if err != nil {
			return err
		}
		prev, err := store.MoveCancelled(op, r)
		if err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE runs SET quarantine = ?, updated_at = ? WHERE run_id = ?`, prev, nanos(now), runID)
		return err
	})
}
