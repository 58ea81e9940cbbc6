package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// Submit implements store.Store. It locks the run's row so that inbox
// order is the order submissions committed in, and notifies idle runners.
func (s *Store) Submit(ctx context.Context, in store.Inbound) error {
	const op = "submit"
	if err := store.ValidateInbound(op, in); err != nil {
		return err
	}
	// One round trip: BEGIN, one statement that locks the run's row, reads
	// the earlier submission of this id and appends the event only when
	// there is none and the run has not ended (waking idle runners and
	// counting the submission on the run's row if it did), and COMMIT.
	// What it found decides the answer; when it appended nothing, the
	// transaction commits nothing.
	//
	// The count changes the run's row, where a lock alone would leave it
	// as it was: a tick at REPEATABLE READ whose snapshot was taken before
	// this commit (its fence waited for the row this holds) fails to lock
	// the row with a serialization failure, is run again on a snapshot
	// that holds the input, and its check that the inbox is left empty
	// sees it. The lock alone let the tick lock the row and read the inbox
	// as it was before the input. A one-round-trip tick whose fence is
	// folded into its one statement compares the count on the row it
	// locked with its snapshot's (see fenceChecksInbox).
	var found, pending int64
	var outcome, quarantine, unseen *string
	var same *bool // an entry with the id: whether it is this one
	var seen, kinds []string
	if in.Seen != nil {
		seen, kinds = in.Seen.IDs, in.Seen.KindsOf(in.Kind)
	}
	q, args := submitEntrySQL, []any{in.RunID, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, s.channel(), s.injected(),
		in.Seen != nil, seen, kinds}
	if a := in.Grant; a != nil {
		// The grant is written only with the entry: the data-modifying
		// CTE inserts one row for each row ins returned.
		q = submitEntryGrantSQL
		args = append(args, a.ID, a.RequestDigest, a.Nonce, a.Body, a.Digest, nanos(a.ExpiresAt))
	}
	err := s.write(ctx, op, in.RunID, func(tx *wtx) error {
		tx.Queue(q, args...).
			QueryRow(func(row pgx.Row) error { return row.Scan(&found, &outcome, &quarantine, &same, &unseen, &pending) })
		err := tx.commit(ctx)
		if c := pgConstraint(err); isDuplicate(err) && (c == "inbox_pkey" || c == "inbox_inbound_id") {
			return errRetryInbox
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case found == 0:
		return store.Errorf(store.CodeNotFound, op, in.RunID, nil, "not found")
	case same != nil && *same:
		return nil // the same event submitted again: idempotent
	case same != nil:
		return store.Errorf(store.CodeExists, op, in.RunID, nil, "inbound %s was submitted with other content", in.ID)
	case outcome != nil && *outcome != "":
		return store.Errorf(store.CodeInvalidTransition, op, in.RunID, nil, "run ended with %s", *outcome)
	}
	if quarantine != nil {
		if err := store.RefuseMoved(op, in.RunID, *quarantine); err != nil {
			return err // the statement appended nothing: see submitEntryHead
		}
	}
	if unseen != nil {
		return store.UnseenError(op, in, *unseen)
	}
	if pending != 1 {
		return store.Errorf(store.CodeUnavailable, op, in.RunID, nil, "inbound %s was not appended", in.ID)
	}
	return nil
}

// submitEntrySQL is Submit's one statement (see Submit); submitEntryGrantSQL
// is it with the grant an approval hands over, inserted with the entry.
const (
	submitEntryHead = `WITH r AS MATERIALIZED (SELECT run_id, outcome, quarantine FROM runs WHERE run_id = $1 FOR NO KEY UPDATE),
c AS MATERIALIZED (SELECT r.run_id, r.outcome, r.quarantine, COALESCE($10::bigint, ` + nowNanos + `) AS now FROM r),
prior AS MATERIALIZED (SELECT digest = $8 AND kind = $3 AND actor_role = $4 AND actor = $5 AND capability = $6 AS same
	FROM inbox WHERE run_id = $1 AND inbound_id = $2),
unseen AS MATERIALIZED (SELECT inbound_id FROM inbox WHERE $11::boolean AND run_id = $1 AND kind = ANY($13::text[]) AND NOT consumed
	AND inbound_id <> ALL(COALESCE($12::text[], '{}')) ORDER BY seq LIMIT 1),
ins AS (INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
	SELECT $1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE run_id = $1), $2, $3, $4, $5, $6, $7, $8, c.now
	FROM c WHERE c.outcome = '' AND NOT starts_with(c.quarantine, '` + store.MovedToPrefix + `') AND NOT EXISTS (SELECT 1 FROM prior)
	AND NOT EXISTS (SELECT 1 FROM unseen)
	RETURNING 1),
woken AS (SELECT pg_notify($9, $1) FROM ins),
counted AS (UPDATE runs SET submissions = runs.submissions + 1 FROM ins WHERE runs.run_id = $1)`
	submitEntryTail     = `SELECT (SELECT count(*) FROM c), (SELECT outcome FROM c), (SELECT quarantine FROM c), (SELECT same FROM prior), (SELECT inbound_id FROM unseen), (SELECT count(*) FROM ins) + 0 * (SELECT count(*) FROM woken)`
	submitEntrySQL      = submitEntryHead + "\n" + submitEntryTail
	submitEntryGrantSQL = submitEntryHead + `,
granted AS (INSERT INTO approvals (approval_id, run_id, request_digest, nonce, body, digest, expires_at, status, recorded_at)
	SELECT $14, $1, $15, $16, $17, $18, $19, 'granted', c.now FROM c, ins)
` + submitEntryTail
)

// Inbox implements store.Store.
func (s *Store) Inbox(ctx context.Context, runID string, pendingOnly bool) ([]store.Inbound, error) {
	q := inboxSQL
	if pendingOnly {
		q = inboxPendingSQL
	}
	rows, err := s.pool.Query(ctx, q, runID)
	if err != nil {
		return nil, s.mapErr("inbox", runID, err)
	}
	return s.scanInbox(runID, rows)
}

// inboxSQL reads a run's inbox in order, inboxPendingSQL its pending
// entries, as scanInbox takes them.
const (
	inboxSQL        = `SELECT inbound_id, run_id, kind, actor_role, actor, capability, body, digest, seq, consumed FROM inbox WHERE run_id = $1 ORDER BY seq`
	inboxPendingSQL = `SELECT inbound_id, run_id, kind, actor_role, actor, capability, body, digest, seq, consumed FROM inbox WHERE run_id = $1 AND NOT consumed ORDER BY seq`
)

// scanInbox returns rows' entries and closes rows.
func (s *Store) scanInbox(runID string, rows pgx.Rows) ([]store.Inbound, error) {
	defer rows.Close()
	var out []store.Inbound
	for rows.Next() {
		var in store.Inbound
		if err := rows.Scan(&in.ID, &in.RunID, &in.Kind, &in.ActorRole, &in.Actor, &in.Capability, &in.Body, &in.Digest, &in.Seq, &in.Consumed); err != nil {
			return nil, s.mapErr("inbox", runID, err)
		}
		out = append(out, in)
	}
	return out, s.mapErr("inbox", runID, rows.Err())
}
