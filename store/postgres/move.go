package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

var _ store.RunImporter = (*Store)(nil)

// ImportRun implements store.RunImporter: the events go in one row for
// each stretch one lease generation wrote at one time, as ticks write
// them. The run counts no submissions and has settled nothing, so its
// first holder reads its inbox afresh; a live one wakes idle runners, as
// a new run does.
func (s *Store) ImportRun(ctx context.Context, r store.WholeRun) (bool, error) {
	const op = "import run"
	if err := store.ValidateWholeRun(op, r); err != nil {
		return false, err
	}
	run := r.Record.Run
	id := run.ID
	imported := false
	err := s.write(ctx, op, id, func(tx *wtx) error {
		imported = false
		var headHash string
		switch err := tx.QueryRow(ctx, `SELECT head_hash FROM runs WHERE run_id = $1`, id).Scan(&headHash); {
		case err == nil:
			return store.ImportedRunBefore(op, r, headHash) // nil: this very run, imported before
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := keysFree(ctx, tx, op, id, r.Record.Intents); err != nil {
			return err
		}
		for _, g := range r.Grants {
			var other string
			switch err := tx.QueryRow(ctx, `SELECT run_id FROM approvals WHERE approval_id = $1 OR nonce = $2 LIMIT 1`, g.ID, g.Nonce).Scan(&other); {
			case err == nil:
				return store.GrantTaken(op, id, g, other)
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		var now int64
		if err := tx.QueryRow(ctx, `SELECT `+nowParam(1), s.injected()).Scan(&now); err != nil {
			return err
		}
		gen := run.Lease.Generation
		tx.Queue(`INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, outcome, head_seq, head_hash,
	lease_generation, quarantine, created_at, updated_at, due_at, labels)
VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8, $9, $10, $11, $12, $13, $14)`,
			id, run.WorkflowID, run.WorkflowVersion, run.WorkflowDigest, run.State, run.Outcome, run.Head, run.HeadHash,
			gen, run.Quarantine, nanos(run.CreatedAt), nanos(run.UpdatedAt), nanos(run.DueAt), label.Encode(run.Labels))
		queueLabels(tx, run)
		evs := r.Record.Events
		for start := 0; start < len(evs); {
			end := start + 1
			for end < len(evs) && evs[end].Generation == evs[start].Generation && evs[end].RecordedAt.Equal(evs[start].RecordedAt) {
				end++
			}
			queueEventRow(tx, id, evs[start:end])
			start = end
		}
		if r.Record.HasCheckpoint {
			cp := r.Record.Checkpoint
			body, err := store.SealBody(s.sealer, op, store.SealRef{RunID: id, Kind: store.SealCheckpoint, Seq: 1}, cp.Body)
			if err != nil {
				return err
			}
			tx.Queue(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES ($1, 1, $2::bigint, $3, $4, $5, $6, $7, $8)`, id, cp.Seq, cp.FormatVersion, cp.BuildDigest, body, cp.Digest, gen, now)
		}
		for _, g := range r.Grants {
			tx.Queue(`INSERT INTO approvals (approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, consumed_by, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, g.ID, id, g.RequestDigest, g.Nonce, g.Body, g.Digest, nanos(g.ExpiresAt), string(g.Status), g.ConsumedBy, now)
		}
		for _, in := range r.Record.Intents {
			tx.Queue(`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				in.ID, id, in.Seq, in.EffectType, in.IdempotencyKey, in.ContentDigest, approvalArg(in.ApprovalID), in.Body, in.Digest, gen, now)
			tx.Queue(`INSERT INTO outbox (intent_id, run_id, status, route, attempts, updated_at) VALUES ($1, $2, $3::text, $4, $5, $6)`,
				in.ID, id, string(in.Outbox), in.Route, in.Attempts, now)
		}
		for _, a := range r.Record.Attempts {
			tx.Queue(`INSERT INTO attempts (intent_id, n, status, generation, detail, started_at, finished_at) VALUES ($1, $2::bigint, $3::text, $4, $5, $6, $7)`,
				a.IntentID, a.N, string(a.Status), a.Generation, a.Detail, nanos(a.StartedAt), nanos(a.FinishedAt))
		}
		for _, rc := range r.Record.Receipts {
			tx.Queue(`INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				rc.IntentID, id, rc.Outcome, rc.Body, rc.Digest, gen, now)
		}
		for _, in := range r.Inbox {
			tx.Queue(`INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, consumed, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, id, in.Seq, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, in.Consumed, now)
		}
		if n := len(r.Trace); n > 0 {
			kinds, bodies := make([]string, n), make([][]byte, n)
			for i, tr := range r.Trace {
				body, err := store.SealBody(s.sealer, op, store.SealRef{RunID: id, Kind: store.SealTrace + "/" + tr.Kind, Seq: int64(i) + 1}, tr.Body)
				if err != nil {
					return err
				}
				kinds[i], bodies[i] = tr.Kind, body
			}
			tx.Queue(`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ($1, 1, $2::bigint, $3::text[], $4::bytea[], $5)`,
				id, int64(n), kinds, bodies, now)
		}
		for _, n := range r.Notices {
			// Due at once, held by none; a notice of that id here already
			// (delivered from here before, and written again) is kept.
			tx.Queue(`INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, attempts, next_at, last_error, sent)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (notice_id) DO NOTHING`,
				n.ID, id, n.Seq, n.Kind, n.Body, nanos(n.CreatedAt), n.Attempts, now, n.LastError, store.JoinSent(n.Sent))
		}
		if run.Outcome == "" && run.Quarantine == "" {
			tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), id)
		}
		if len(r.Notices) > 0 {
			tx.Queue(`SELECT pg_notify($1, $2)`, s.noticeChannel(), id)
		}
		imported = true
		return nil
	})
	return imported && err == nil, err
}

// queueEventRow queues the row of a stretch of run's events written by
// one lease generation at one time: each hash as its sum, or as its text
// where it is not canonical (hashColumns).
func queueEventRow(tx *wtx, run string, evs []store.Event) {
	n := len(evs)
	kinds, bodies := make([]string, n), make([][]byte, n)
	digests, chains := newHashColumns(n), newHashColumns(n)
	for i, e := range evs {
		kinds[i], bodies[i] = e.Kind, e.Body
		digests.add(e.Digest)
		chains.add(e.ChainHash)
	}
	texts := func(c *hashColumns) any {
		if !c.anyText {
			return nil
		}
		return c.texts()
	}
	var prevSum any
	var prevHash any
	if sum := appendSum(nil, evs[0].PrevHash); len(sum) > 0 {
		prevSum = sum
	} else {
		prevHash = evs[0].PrevHash
	}
	tx.Queue(`INSERT INTO events (run_id, seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at)
VALUES ($1, $2::bigint, $3::bigint, $4::text[], $5::bytea[], $6::bytea[], $7::text[], $8::bytea, $9::text, $10::bytea[], $11::text[], $12, $13)`,
		run, evs[0].Seq, evs[n-1].Seq, kinds, bodies, digests.sums, texts(&digests), prevSum, prevHash, chains.sums, texts(&chains), evs[0].Generation, nanos(evs[0].RecordedAt))
}

// keysFree refuses, for an import of run id, the first of its intents
// whose id or idempotency key the store holds already (store.KeyTaken).
func keysFree(ctx context.Context, tx *wtx, op, id string, intents []store.Intent) error {
	for _, in := range intents {
		var other, digest string
		switch err := tx.QueryRow(ctx, `SELECT run_id, content_digest FROM intents WHERE idempotency_key = $1 OR intent_id = $2 LIMIT 1`, in.IdempotencyKey, in.ID).Scan(&other, &digest); {
		case err == nil:
			return store.KeyTaken(op, id, in, other, digest)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
	}
	return nil
}

var _ store.MoveFencer = (*Store)(nil)

// movingRun locks runID's header in tx and reads it with the database's
// clock after the lock, for MoveOut and CancelMove.
func (s *Store) movingRun(ctx context.Context, tx *wtx, op, runID string) (store.Run, int64, error) {
	var subs, clock int64
	r, err := scanRun(tx.QueryRow(ctx, lockedSQL+` SELECT c.* FROM c`, runID, s.injected()), &subs, &clock)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, 0, store.Errorf(store.CodeNotFound, op, runID, nil, "no such run")
	}
	return r, clock, err
}

// MoveOut implements store.MoveFencer, deciding on the run's row locked
// and the database's clock read after the lock (store.MoveOutOf).
func (s *Store) MoveOut(ctx context.Context, runID, to string) (store.Run, error) {
	const op = "move out"
	var r store.Run
	err := s.write(ctx, op, runID, func(tx *wtx) error {
		var clock int64
		var err error
		if r, clock, err = s.movingRun(ctx, tx, op, runID); err != nil {
			return err
		}
		q, err := store.MoveOutOf(op, r, to, fromNanos(clock))
		if err != nil || q == r.Quarantine {
			return err
		}
		r.Quarantine, r.Lease.Owner, r.Lease.ExpiresAt, r.UpdatedAt = q, "", time.Time{}, fromNanos(clock)
		tx.Queue(`UPDATE runs SET quarantine = $2, lease_owner = '', lease_expires_at = 0, updated_at = $3 WHERE run_id = $1`, runID, q, clock)
		return nil
	})
	s.heads.forget(runID)
	return r, err
}

// CancelMove implements store.MoveFencer (store.MoveCancelled).
func (s *Store) CancelMove(ctx context.Context, runID string) error {
	const op = "cancel move"
	err := s.write(ctx, op, runID, func(tx *wtx) error {
		r, clock, err := s.movingRun(ctx, tx, op, runID)
		if err != nil {
			return err
		}
		prev, err := store.MoveCancelled(op, r)
		if err != nil {
			return err
		}
		tx.Queue(`UPDATE runs SET quarantine = $2, updated_at = $3 WHERE run_id = $1`, runID, prev, clock)
		return nil
	})
	s.heads.forget(runID)
	return err
}
