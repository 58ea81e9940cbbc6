package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"flrh.dev/flrh/store"
)

// Submit implements store.Store.
func (s *Store) Submit(ctx context.Context, in store.Inbound) error {
	const op = "submit"
	if err := store.ValidateInbound(op, in); err != nil {
		return err
	}
	return s.write(ctx, op, in.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		var outcome, quarantine string
		if err := s.queryRow(ctx, tx, `SELECT outcome, quarantine FROM runs WHERE run_id = ?`, in.RunID).Scan(&outcome, &quarantine); err != nil {
			return err
		}
		var prior store.Inbound
		err := s.queryRow(ctx, tx, `SELECT digest, kind, actor_role, actor, capability FROM inbox WHERE run_id = ? AND inbound_id = ?`, in.RunID, in.ID).
			Scan(&prior.Digest, &prior.Kind, &prior.ActorRole, &prior.Actor, &prior.Capability)
		switch {
		case err == nil && prior.Digest == in.Digest && prior.Kind == in.Kind && prior.ActorRole == in.ActorRole && prior.Actor == in.Actor && prior.Capability == in.Capability:
			return nil // the same event submitted again: idempotent
		case err == nil:
			return store.Errorf(store.CodeExists, op, in.RunID, nil, "inbound %s was submitted with other content", in.ID)
		case err != sql.ErrNoRows:
			return err
		}
		if outcome != "" {
			return store.Errorf(store.CodeInvalidTransition, op, in.RunID, nil, "run ended with %s", outcome)
		}
		if err := store.RefuseMoved(op, in.RunID, quarantine); err != nil {
			return err
		}
		if err := s.refuseUnseen(ctx, tx, op, in); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE run_id = ?), ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.RunID, in.RunID, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, nanos(now))
		if err != nil || in.Grant == nil {
			return err
		}
		return s.insertGrant(ctx, tx, *in.Grant, now)
	})
}

// refuseUnseen refuses in, guarded by in.Seen, when the run holds a
// pending entry of its kind not among those its writer read.
func (s *Store) refuseUnseen(ctx context.Context, tx *wtx, op string, in store.Inbound) error {
	if in.Seen == nil {
		return nil
	}
	// An array even when empty: json_each of null is one row, of null,
	// which NOT IN would never pass.
	seen, err := json.Marshal(append([]string{}, in.Seen.IDs...))
	if err != nil {
		return err
	}
	kinds, err := json.Marshal(in.Seen.KindsOf(in.Kind))
	if err != nil {
		return err
	}
	var id string
	err = s.queryRow(ctx, tx, `SELECT inbound_id FROM inbox WHERE run_id = ? AND kind IN (SELECT value FROM json_each(?)) AND consumed = 0
AND inbound_id NOT IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT 1`, in.RunID, string(kinds), string(seen)).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return store.UnseenError(op, in, id)
}

// Inbox implements store.Store.
func (s *Store) Inbox(ctx context.Context, runID string, pendingOnly bool) ([]store.Inbound, error) {
	q := `SELECT inbound_id, run_id, kind, actor_role, actor, capability, body, digest, seq, consumed FROM inbox WHERE run_id = ?`
	if pendingOnly {
		q += ` AND consumed = 0`
	}
	rows, err := s.read(ctx, q+` ORDER BY seq`, runID)
	if err != nil {
		return nil, mapErr("inbox", runID, err)
	}
	defer rows.Close()
	var out []store.Inbound
	for rows.Next() {
		var in store.Inbound
		if err := rows.Scan(&in.ID, &in.RunID, &in.Kind, &in.ActorRole, &in.Actor, &in.Capability, &in.Body, &in.Digest, &in.Seq, &in.Consumed); err != nil {
			return nil, mapErr("inbox", runID, err)
		}
		out = append(out, in)
	}
	return out, mapErr("inbox", runID, rows.Err())
}

// Live implements store.Store.
func (s *Store) Live(ctx context.Context) ([]string, error) {
	rows, err := s.read(ctx, `SELECT run_id FROM runs WHERE outcome = '' AND quarantine = '' ORDER BY created_order`)
	if err != nil {
		return nil, mapErr("live", "", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapErr("live", "", err)
		}
		out = append(out, id)
	}
	return out, mapErr("live", "", rows.Err())
}

// submitInTick appends a tick's own inbound events to the inbox, consumed:
// the rows Submit and a consuming tick would leave, in one transaction.
func (s *Store) submitInTick(ctx context.Context, tx *wtx, runID string, ins []store.Inbound, ts int64) error {
	// (run_id, inbound_id) is UNIQUE: an entry already there refuses the
	// INSERT, which leaves the transaction as it was, and only then is it
	// looked up to be reported as such.
	for _, in := range ins {
		if _, err := s.exec(ctx, tx, `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, consumed, recorded_at)
VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE run_id = ?), ?, ?, ?, ?, ?, ?, ?, 1, ?)`,
			runID, runID, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, ts); err != nil {
			var one int
			if s.queryRow(ctx, tx, `SELECT 1 FROM inbox WHERE run_id = ? AND inbound_id = ?`, runID, in.ID).Scan(&one) == nil {
				return store.Errorf(store.CodeExists, "commit", runID, nil, "inbound %s is already in the inbox", in.ID)
			}
			return err
		}
	}
	return nil
}

// consume marks inbox entries consumed inside a commit.
func (s *Store) consume(ctx context.Context, tx *wtx, runID string, ids []string) error {
	for _, id := range ids {
		res, err := s.exec(ctx, tx, `UPDATE inbox SET consumed = 1 WHERE run_id = ? AND inbound_id = ? AND consumed = 0`, runID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return store.Errorf(store.CodeInvalidTransition, "commit", runID, nil, "inbound %s is not pending in this run", id)
		}
	}
	return nil
}

// Ready implements store.ReadyLister. The two halves are read from the
// partial indexes of live runs and of pending inbox entries (named, so the
// planner cannot prefer walking every run in creation order); their union
// is sorted, oldest run first.
func (s *Store) Ready(ctx context.Context, resting []string, due time.Time) ([]string, error) {
	args := make([]any, 0, len(resting)+1)
	for _, st := range resting {
		args = append(args, st)
	}
	withDue := !due.IsZero() && len(resting) > 0 // with no resting state every live run is ready
	if withDue {
		args = append(args, nanos(due))
	}
	q := readyQuery(len(resting), withDue)
	rows, err := s.read(ctx, q, args...)
	if err != nil {
		return nil, mapErr("ready", "", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var order int64
		if err := rows.Scan(&id, &order); err != nil {
			return nil, mapErr("ready", "", err)
		}
		out = append(out, id)
	}
	return out, mapErr("ready", "", rows.Err())
}

// readyQuery is the ready listing for that many resting states, with a
// resting run's due time compared with the last argument when due. The
// due times are read in the scan of the live runs the first half makes
// anyway: no index of their own, which every tick would write.
func readyQuery(resting int, due bool) string {
	notResting := `1`
	if resting > 0 {
		notResting = `state NOT IN (` + strings.TrimSuffix(strings.Repeat("?, ", resting), ", ") + `)`
		if due {
			notResting = `(` + notResting + ` OR due_at BETWEEN 1 AND ?)`
		}
	}
	return `SELECT run_id, created_order FROM runs INDEXED BY runs_live WHERE outcome = '' AND quarantine = '' AND ` + notResting + `
UNION
SELECT r.run_id, r.created_order FROM inbox i INDEXED BY inbox_pending CROSS JOIN runs r ON r.run_id = i.run_id
WHERE i.consumed = 0 AND r.outcome = '' AND r.quarantine = ''
	AND i.seq > CASE WHEN r.settled_head = r.head_seq AND r.settled_state = r.state THEN r.settled_seq ELSE 0 END
ORDER BY 2`
}
