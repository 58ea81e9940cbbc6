package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/store"
)

// Commit implements store.Store: one REPEATABLE READ transaction that locks
// the run's row, checks the fence and the head, revalidates and consumes
// approvals, appends events to the hash chain, writes intents with their
// outbox rows, attempt results, new attempts, receipts, inbox consumption,
// the checkpoint, the run header and the trace — or nothing.
//
// It takes two round trips whatever the tick holds. The first carries
// BEGIN, the row lock and every read the tick is decided on (approvals,
// idempotency keys, attempts, outbox rows, inbox entries, the last
// checkpoint and trace numbers), all on the one snapshot with the row held.
// The store then decides in memory, in the order the checks have always
// run, and the second round trip carries every write and COMMIT; events
// and trace records go as one multi-row INSERT each. A write whose row
// count the decision relies on is guarded, so that a mismatch fails the
// transaction instead of committing it.
func (s *Store) Commit(ctx context.Context, lease store.Lease, tick store.Tick) error {
	const op = "commit"
	if err := store.ValidateTick(lease.RunID, tick); err != nil {
		return err
	}
	return s.write(ctx, op, lease.RunID, func(tx *wtx) error {
		var rd tickReads
		run, now, err := s.fence(ctx, tx, op, lease, rd.queue(lease.RunID, tick))
		if err != nil {
			return err
		}
		if run.Head != tick.ExpectHead {
			return store.Errorf(store.CodeHeadMismatch, op, lease.RunID, nil, "writer computed from event %d, the run is at %d", tick.ExpectHead, run.Head)
		}
		if run.Outcome != "" {
			return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "run already ended with %s", run.Outcome)
		}
		ts := nanos(now)
		head := run.Head + int64(len(tick.Events))

		// Approvals: revalidated against the grant as stored, at this
		// transaction's clock reading, then consumed once.
		var consumedBy map[string]string
		if len(tick.Approvals) > 0 {
			consumedBy = map[string]string{}
		}
		for i, use := range tick.Approvals {
			if err := s.consumeApproval(tx, lease.RunID, use, rd.approvals[i], consumedBy, now); err != nil {
				return err
			}
		}

		// Intents, each with its outbox row. A reused idempotency key with the
		// same content is the same intent committed twice: refused as a
		// duplicate. With other content it is a conflict, never a reuse.
		var keys map[string]string // idempotency key → content digest, of this tick's intents
		if len(tick.Intents) > 0 {
			keys = map[string]string{}
		}
		for i, in := range tick.Intents {
			existing, found := rd.keys[i].digest, rd.keys[i].found
			if d, ok := keys[in.IdempotencyKey]; ok {
				existing, found = d, true
			}
			switch {
			case found && existing != in.ContentDigest:
				return store.Errorf(store.CodeIdempotencyConflict, op, lease.RunID, nil, "idempotency key %s is bound to other content", in.IdempotencyKey)
			case found:
				return store.Errorf(store.CodeExists, op, lease.RunID, nil, "intent with idempotency key %s already committed", in.IdempotencyKey)
			}
			keys[in.IdempotencyKey] = in.ContentDigest
			var approval any
			if in.ApprovalID != "" {
				approval = in.ApprovalID
			}
			tx.Queue(`INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				in.ID, lease.RunID, head, in.EffectType, in.IdempotencyKey, in.ContentDigest, approval, in.Body, in.Digest, lease.Generation, ts)
			tx.Queue(`INSERT INTO outbox (intent_id, run_id, status, updated_at) VALUES ($1, $2, 'pending', $3)`, in.ID, lease.RunID, ts)
			rd.outbox[in.ID] = &outboxRow{status: string(store.OutboxPending)}
		}

		// Attempt results move their intent's outbox. (Results come before
		// new attempts so that a retry can finish the last attempt and begin
		// the next one in one tick.)
		for i, r := range tick.Results {
			if !rd.attempts[i] {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "no attempt %d of intent %s in this run", r.N, r.IntentID)
			}
			tx.Queue(expectOne(`UPDATE attempts SET status = $1, detail = $2, finished_at = $3
WHERE intent_id = $4 AND n = $5 AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = $6)`, "attempt result"),
				string(r.Status), r.Detail, ts, r.IntentID, r.N, lease.RunID)
			tx.Queue(`UPDATE outbox SET status = $1, route = $2, updated_at = $3 WHERE intent_id = $4`,
				string(r.Outbox), r.Route, ts, r.IntentID)
			if o := rd.outbox[r.IntentID]; o != nil {
				o.status = string(r.Outbox)
			}
		}

		for _, id := range tick.Begin {
			if _, err := beginAttempt(tx, lease, id, rd.outbox[id], now); err != nil {
				return err
			}
		}

		// Receipts close their intents.
		for _, rc := range tick.Receipts {
			o := rd.outbox[rc.IntentID]
			if o == nil {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "receipt for unknown intent %s", rc.IntentID)
			}
			tx.Queue(`INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, rc.IntentID, lease.RunID, rc.Outcome, rc.Body, rc.Digest, lease.Generation, ts)
			tx.Queue(`UPDATE outbox SET status = 'done', updated_at = $1 WHERE intent_id = $2`, ts, rc.IntentID)
			o.status = string(store.OutboxDone)
		}

		var consumed map[string]bool
		if len(tick.Consume) > 0 {
			consumed = map[string]bool{}
		}
		for i, id := range tick.Consume {
			if !rd.inbox[i] || consumed[id] {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "inbound %s is not pending in this run", id)
			}
			consumed[id] = true
			tx.Queue(expectOne(`UPDATE inbox SET consumed = true WHERE run_id = $1 AND inbound_id = $2 AND NOT consumed`, "inbound consumption"),
				lease.RunID, id)
		}

		// The rest only appends and cannot be refused by what it finds:
		// events extending the hash chain, the checkpoint, the run header
		// and the trace.
		cpBody, traceBodies, err := s.sealTick(op, lease.RunID, tick, rd.checkpoints, rd.trace)
		if err != nil {
			return err
		}
		if n := len(tick.Events); n > 0 {
			seqs, kinds, bodies, digests, prevs, chains := make([]int64, n), make([]string, n), make([][]byte, n), make([]string, n), make([]string, n), make([]string, n)
			seq, hash := run.Head, run.HeadHash
			for i, ev := range tick.Events {
				seq++
				next := store.ChainHash(hash, seq, ev.Digest)
				seqs[i], kinds[i], bodies[i], digests[i], prevs[i], chains[i] = seq, ev.Kind, ev.Body, ev.Digest, hash, next
				hash = next
			}
			run.HeadHash = hash
			tx.Queue(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at)
SELECT $1, e.seq, e.kind, e.body, e.digest, e.prev_hash, e.chain_hash, $8, $9
FROM unnest($2::bigint[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::text[]) AS e(seq, kind, body, digest, prev_hash, chain_hash)`,
				lease.RunID, seqs, kinds, bodies, digests, prevs, chains, lease.Generation, ts)
		}
		if cp := tick.Checkpoint; cp != nil {
			tx.Queue(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				lease.RunID, rd.checkpoints+1, head, cp.FormatVersion, cp.BuildDigest, cpBody, cp.Digest, lease.Generation, ts)
		}
		state := run.State
		if tick.State != "" {
			state = tick.State
		}
		tx.Queue(`UPDATE runs SET head_seq = $1, head_hash = $2, state = $3, outcome = $4, updated_at = $5 WHERE run_id = $6`,
			head, run.HeadHash, state, tick.Outcome, ts, lease.RunID)
		if n := len(tick.Trace); n > 0 {
			seqs, kinds := make([]int64, n), make([]string, n)
			for i, tr := range tick.Trace {
				seqs[i], kinds[i] = rd.trace+int64(i)+1, tr.Kind
			}
			tx.Queue(`INSERT INTO trace (run_id, seq, kind, body, recorded_at)
SELECT $1, t.seq, t.kind, t.body, $5 FROM unnest($2::bigint[], $3::text[], $4::bytea[]) AS t(seq, kind, body)`,
				lease.RunID, seqs, kinds, traceBodies, ts)
		}
		err = tx.commit(ctx)
		if err != nil && isDuplicate(err) && pgConstraint(err) == "intents_idempotency_key" {
			// Another run committed this key after our snapshot was
			// taken; run again to report exactly what it is.
			return errRetryKey
		}
		return err
	})
}

// tickReads is what a tick is decided on, read in the round trip that
// locks the run: one entry per approval use, intent, attempt result and
// inbox consumption of the tick, in the tick's order.
type tickReads struct {
	approvals []*store.Approval // nil: never granted
	keys      []keyRead
	attempts  []bool                // the result's attempt exists in this run
	outbox    map[string]*outboxRow // by intent id, for the run's intents the tick names
	inbox     []bool                // the inbound event is pending in this run
	// The run's last checkpoint number and trace sequence number: the
	// tick's records take the next ones.
	checkpoints, trace int64
}

type keyRead struct {
	digest string
	found  bool
}

// outboxRow is an intent's outbox as the tick's checks see it: as read,
// then as the tick's own earlier writes leave it.
type outboxRow struct {
	status   string
	attempts int64
}

// queue returns the reads for tick, to travel after the run's row lock.
func (rd *tickReads) queue(runID string, tick store.Tick) func(*pgx.Batch) {
	return func(b *pgx.Batch) {
		rd.approvals = make([]*store.Approval, len(tick.Approvals))
		for i, use := range tick.Approvals {
			b.Queue(`SELECT `+approvalColumns+` FROM approvals WHERE approval_id = $1`, use.ApprovalID).QueryRow(func(row pgx.Row) error {
				a, err := scanApproval(row)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				rd.approvals[i] = &a
				return err
			})
		}
		rd.keys = make([]keyRead, len(tick.Intents))
		for i, in := range tick.Intents {
			b.Queue(`SELECT content_digest FROM intents WHERE idempotency_key = $1`, in.IdempotencyKey).QueryRow(func(row pgx.Row) error {
				err := row.Scan(&rd.keys[i].digest)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				rd.keys[i].found = err == nil
				return err
			})
		}
		rd.attempts = make([]bool, len(tick.Results))
		for i, r := range tick.Results {
			b.Queue(`SELECT EXISTS (SELECT 1 FROM attempts
WHERE intent_id = $1 AND n = $2 AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = $3))`,
				r.IntentID, r.N, runID).QueryRow(func(row pgx.Row) error { return row.Scan(&rd.attempts[i]) })
		}
		if len(tick.Intents)+len(tick.Begin)+len(tick.Receipts) > 0 {
			rd.outbox = map[string]*outboxRow{}
		}
		for _, ids := range [][]string{tick.Begin, receiptIntents(tick.Receipts)} {
			for _, id := range ids {
				if _, ok := rd.outbox[id]; ok {
					continue
				}
				rd.outbox[id] = nil
				queueOutboxRead(b, runID, id, rd.outbox)
			}
		}
		rd.inbox = make([]bool, len(tick.Consume))
		for i, id := range tick.Consume {
			b.Queue(`SELECT EXISTS (SELECT 1 FROM inbox WHERE run_id = $1 AND inbound_id = $2 AND NOT consumed)`, runID, id).
				QueryRow(func(row pgx.Row) error { return row.Scan(&rd.inbox[i]) })
		}
		if tick.Checkpoint != nil || len(tick.Trace) > 0 {
			b.Queue(`SELECT (SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = $1),
	(SELECT COALESCE(MAX(seq), 0) FROM trace WHERE run_id = $1)`, runID).
				QueryRow(func(row pgx.Row) error { return row.Scan(&rd.checkpoints, &rd.trace) })
		}
	}
}

func receiptIntents(rcs []store.Receipt) []string {
	ids := make([]string, len(rcs))
	for i, rc := range rcs {
		ids[i] = rc.IntentID
	}
	return ids
}

// queueOutboxRead reads the outbox of intent id, if the intent is this
// run's, into into[id].
func queueOutboxRead(b *pgx.Batch, runID, id string, into map[string]*outboxRow) {
	b.Queue(`SELECT o.status, o.attempts FROM outbox o JOIN intents i ON i.intent_id = o.intent_id
WHERE o.intent_id = $1 AND i.run_id = $2`, id, runID).QueryRow(func(row pgx.Row) error {
		var o outboxRow
		err := row.Scan(&o.status, &o.attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err == nil {
			into[id] = &o
		}
		return err
	})
}

// errRetryKey makes write run a transaction again: a concurrent commit
// claimed an idempotency key first, and only a fresh snapshot can tell
// a duplicate from a conflict.
var errRetryKey = retryError{}

type retryError struct{}

func (retryError) Error() string { return "idempotency key claimed concurrently" }

func pgConstraint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

// consumeApproval revalidates a grant as read (a, nil if it was never
// granted, as this tick's earlier uses left it), at the transaction's clock
// reading, and queues its consumption.
func (s *Store) consumeApproval(tx *wtx, runID string, use store.ApprovalUse, a *store.Approval, consumedBy map[string]string, now time.Time) error {
	const op = "commit"
	if a == nil {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s was never granted", use.ApprovalID)
	}
	g := *a
	if by, ok := consumedBy[use.ApprovalID]; ok {
		g.Status, g.ConsumedBy = store.ApprovalConsumed, by
	}
	if g.Status != store.ApprovalGranted {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s is %s", use.ApprovalID, g.Status)
	}
	if g.RunID != runID {
		return store.Errorf(store.CodeApprovalRejected, op, runID, nil, "approval %s belongs to run %s", use.ApprovalID, g.RunID)
	}
	if !now.Before(g.ExpiresAt) {
		return store.Errorf(store.CodeApprovalRejected, op, runID, nil, "approval %s expired at %s", use.ApprovalID, g.ExpiresAt.Format(time.RFC3339Nano))
	}
	if use.Check != nil {
		if err := use.Check(g, now); err != nil {
			return store.Errorf(store.CodeApprovalRejected, op, runID, err, "approval %s", use.ApprovalID)
		}
	}
	consumedBy[use.ApprovalID] = use.IntentID
	tx.Queue(expectOne(`UPDATE approvals SET status = 'consumed', consumed_by = $1 WHERE approval_id = $2 AND status = 'granted'`, "approval consumption"),
		use.IntentID, use.ApprovalID)
	return nil
}

// BeginAttempt implements store.Store, in two round trips: the lock with
// the intent's outbox, then the attempt with COMMIT.
func (s *Store) BeginAttempt(ctx context.Context, lease store.Lease, intentID string) (store.Attempt, error) {
	const op = "begin attempt"
	var at store.Attempt
	err := s.write(ctx, op, lease.RunID, func(tx *wtx) error {
		outbox := map[string]*outboxRow{}
		_, now, err := s.fence(ctx, tx, op, lease, func(b *pgx.Batch) { queueOutboxRead(b, lease.RunID, intentID, outbox) })
		if err != nil {
			return err
		}
		at, err = beginAttempt(tx, lease, intentID, outbox[intentID], now)
		return err
	})
	return at, err
}

// beginAttempt queues attempt n+1 of an intent inside tx (already fenced),
// given its outbox as the transaction sees it (nil: no such intent in this
// run), and moves that outbox in flight.
func beginAttempt(tx *wtx, lease store.Lease, intentID string, o *outboxRow, now time.Time) (store.Attempt, error) {
	const op = "begin attempt"
	if o == nil {
		return store.Attempt{}, store.Errorf(store.CodeNotFound, op, lease.RunID, nil, "no intent %s in this run", intentID)
	}
	// Only a pending intent or one whose last attempt failed transiently
	// may be attempted; in-flight and unknown outcomes reconcile first.
	if o.status != string(store.OutboxPending) && o.status != string(store.OutboxRetry) {
		return store.Attempt{}, store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "intent %s is %s, not attemptable", intentID, o.status)
	}
	at := store.Attempt{IntentID: intentID, N: o.attempts + 1, Status: store.AttemptStarted, Generation: lease.Generation, StartedAt: now.UTC()}
	tx.Queue(`INSERT INTO attempts (intent_id, n, status, generation, started_at) VALUES ($1, $2, 'started', $3, $4)`,
		intentID, at.N, lease.Generation, nanos(now))
	tx.Queue(expectOne(`UPDATE outbox SET status = 'in_flight', attempts = $1, updated_at = $2
WHERE intent_id = $3 AND attempts = $1 - 1 AND status IN ('pending', 'retry')`, "attempt start"), at.N, nanos(now), intentID)
	o.status, o.attempts = string(store.OutboxInFlight), at.N
	return at, nil
}

// sealTick returns the bodies the tick's checkpoint and trace records are
// stored with: as they are without a sealer, else sealed for the positions
// they will take after the run's last checkpoint (checkpoints) and trace
// record (trace). The run's row is locked, so no other commit of this run
// can take those positions first. The tick itself is left alone: a
// transaction run again seals afresh.
func (s *Store) sealTick(op, runID string, tick store.Tick, checkpoints, trace int64) (cp []byte, bodies [][]byte, err error) {
	bodies = make([][]byte, len(tick.Trace))
	if tick.Checkpoint != nil {
		cp = tick.Checkpoint.Body
	}
	for i, tr := range tick.Trace {
		bodies[i] = tr.Body
	}
	if s.sealer == nil {
		return cp, bodies, nil
	}
	if cp != nil {
		if cp, err = store.SealBody(s.sealer, op, store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: checkpoints + 1}, cp); err != nil {
			return nil, nil, err
		}
	}
	for i, tr := range tick.Trace {
		if bodies[i], err = store.SealBody(s.sealer, op, store.SealRef{RunID: runID, Kind: store.SealTrace + "/" + tr.Kind, Seq: trace + int64(i) + 1}, tr.Body); err != nil {
			return nil, nil, err
		}
	}
	return cp, bodies, nil
}
