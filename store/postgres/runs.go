package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

const runColumns = `run_id, workflow_id, workflow_version, state, outcome, head_seq, head_hash,
	lease_owner, lease_generation, lease_expires_at, quarantine, created_at, updated_at, workflow_digest, due_at, labels`

func scanRun(row pgx.Row, extra ...any) (store.Run, error) {
	var r store.Run
	var exp, created, updated, due int64
	var labels string
	dest := append([]any{&r.ID, &r.WorkflowID, &r.WorkflowVersion, &r.State, &r.Outcome, &r.Head, &r.HeadHash,
		&r.Lease.Owner, &r.Lease.Generation, &exp, &r.Quarantine, &created, &updated, &r.WorkflowDigest, &due, &labels}, extra...)
	if err := row.Scan(dest...); err != nil {
		return r, err
	}
	r.Lease.RunID = r.ID
	r.Lease.ExpiresAt = fromNanos(exp)
	r.CreatedAt, r.UpdatedAt, r.DueAt = fromNanos(created), fromNanos(updated), fromNanos(due)
	var err error
	r.Labels, err = label.Decode(labels)
	return r, err
}

// queueLabels queues the insert of a run's row of run_labels for each of
// its labels (none for a run without), the run's row queued before it in
// the same transaction: every path that inserts a run calls it.
func queueLabels(tx *wtx, run store.Run) {
	if len(run.Labels) == 0 {
		return
	}
	tx.Queue(`INSERT INTO run_labels (key, value, created_order)
SELECT j.key, j.value, r.created_order FROM runs r, jsonb_each_text($2::jsonb) j WHERE r.run_id = $1`, run.ID, label.Encode(run.Labels))
}

// lockSQL locks a run's header row and then reads the clock: the outer
// projection is evaluated on rows the locking CTE has already returned, so
// clock_timestamp() is read after the lock.
// It reads the submissions the row counts after the run's columns.
const lockSQL = `WITH r AS MATERIALIZED (
	SELECT ` + runColumns + `, submissions FROM runs WHERE run_id = $1 FOR NO KEY UPDATE)
SELECT r.*, ` + nowNanos + ` FROM r`

// lockRun locks a run's header row for the rest of tx and reads the clock
// after the lock is held, so "now" is ordered after every earlier writer
// of the run. Every write to a run goes through this row lock: it is what
// serializes a run's writers, on one machine or many.
//
// reads, when given, queue more reads on the same round trip: they run
// after the lock, on the transaction's one snapshot, exactly as if they
// were sent one by one after it, and their callbacks fill what the caller
// decides on. They do not run when the run does not exist. subs, when
// not nil, is set to the submissions the locked row counts.
func (s *Store) lockRun(ctx context.Context, tx *wtx, runID string, subs *int64, reads ...func(*pgx.Batch)) (store.Run, time.Time, error) {
	var r store.Run
	var clock, n int64
	if subs == nil {
		subs = &n
	}
	b := &pgx.Batch{}
	b.Queue(lockSQL, runID).QueryRow(func(row pgx.Row) error {
		var err error
		r, err = scanRun(row, subs, &clock)
		return err
	})
	for _, q := range reads {
		q(b)
	}
	if err := tx.SendBatch(ctx, b); err != nil {
		return r, time.Time{}, err
	}
	now := fromNanos(clock)
	if s.clock != nil {
		now = s.clock()
	}
	return r, now, nil
}

// fence locks the run and checks, inside tx, that lease is the run's
// current, unexpired lease and that the run is not quarantined. reads are
// lockRun's, and so is subs.
func (s *Store) fence(ctx context.Context, tx *wtx, op string, lease store.Lease, subs *int64, reads ...func(*pgx.Batch)) (store.Run, time.Time, error) {
	r, now, err := s.lockRun(ctx, tx, lease.RunID, subs, reads...)
	if err != nil {
		return r, now, err
	}
	return r, now, checkFence(op, lease, r, now)
}

// checkFence is the fence's verdict on run r at clock reading now. Its
// SQL form is fenceSQL.
func checkFence(op string, lease store.Lease, r store.Run, now time.Time) error {
	if r.Quarantine != "" {
		return store.Errorf(store.CodeQuarantined, op, lease.RunID, nil, "%s", r.Quarantine)
	}
	if r.Lease.Generation != lease.Generation || r.Lease.Owner != lease.Owner {
		return store.Errorf(store.CodeFenced, op, lease.RunID, nil,
			"lease generation %d of %q is stale; current is %d of %q", lease.Generation, lease.Owner, r.Lease.Generation, r.Lease.Owner)
	}
	if !r.Lease.ExpiresAt.After(now) {
		return store.Errorf(store.CodeFenced, op, lease.RunID, nil, "lease generation %d expired at %s", lease.Generation, r.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

// lockedSQL begins a statement that locks a run's row ($1) and reads it
// (the run's columns and then the submissions it counts) and then the
// clock ($2 when injected) after the lock, as c.
const lockedSQL = `WITH r AS MATERIALIZED (SELECT ` + runColumns + `, submissions FROM runs WHERE run_id = $1 FOR NO KEY UPDATE),
c AS MATERIALIZED (SELECT r.*, ` + `COALESCE($2::bigint, ` + nowNanos + `) AS now FROM r)`

// fenceSQL is checkFence in SQL, on c, for the lease owner $3 and
// generation $4.
const fenceSQL = `c.quarantine = '' AND c.lease_owner = $3 AND c.lease_generation = $4 AND c.lease_expires_at > c.now`

// leaseWrite runs, in one round trip, one statement made of lockedSQL and
// then more (which updates the run as u only where its condition holds
// and selects c.*, the clock and how many rows u updated), and returns the
// run as it was locked, the clock reading, and whether u updated it;
// subs, when not nil, is set to the submissions the locked row counts.
// The database decides; the caller only explains a refusal.
func (s *Store) leaseWrite(ctx context.Context, op, runID string, subs *int64, more string, args ...any) (r store.Run, now time.Time, updated bool, err error) {
	var clock, n, count int64
	if subs == nil {
		subs = &count
	}
	found := false
	err = s.write(ctx, op, runID, func(tx *wtx) error {
		found, n = false, 0
		tx.Queue(lockedSQL+more, append([]any{runID, s.injected()}, args...)...).QueryRow(func(row pgx.Row) error {
			var err error
			r, err = scanRun(row, subs, &clock, &n)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			found = err == nil
			return err
		})
		return nil
	})
	if err == nil && !found {
		err = store.Errorf(store.CodeNotFound, op, runID, nil, "not found")
	}
	return r, fromNanos(clock), n == 1, err
}

// changed explains a refused lease write whose reasons the run as read
// does not show; it cannot happen while the row is locked, and nothing was
// written.
func changed(op, runID string) error {
	return store.Errorf(store.CodeUnavailable, op, runID, nil, "the run changed under the statement; nothing was written")
}

// queueFirstInbox queues the inserts of a new run's first inbox entries:
// its inbox is empty, so they take positions 1, 2, ... in the order given.
func (s *Store) queueFirstInbox(tx *wtx, runID string, first []store.Inbound) {
	for i, in := range first {
		tx.Queue(`INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, `+nowParam(10)+`)`,
			runID, i+1, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, s.injected())
	}
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, run store.Run, first ...store.Inbound) error {
	if err := store.ValidateNewRun(run, first); err != nil {
		return err
	}
	return s.write(ctx, "create run", run.ID, func(tx *wtx) error {
		// One round trip: BEGIN, the row, its first inbox entries, the
		// notification and COMMIT.
		tx.Queue(`INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, head_hash, created_at, updated_at, labels)
VALUES ($1, $2, $3, $7, $4, $5, `+nowParam(6)+`, `+nowParam(6)+`, $8)`,
			run.ID, run.WorkflowID, run.WorkflowVersion, run.State, store.GenesisHash, s.injected(), run.WorkflowDigest, label.Encode(run.Labels))
		queueLabels(tx, run)
		s.queueFirstInbox(tx, run.ID, first)
		// A new run is new work: wake idle runners (delivered on commit).
		tx.Queue(`SELECT pg_notify($1, $2)`, s.channel(), run.ID)
		return nil
	})
}

// Run implements store.Store.
func (s *Store) Run(ctx context.Context, runID string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, runSQL, runID))
	return r, s.mapErr("run", runID, err)
}

// runSQL reads a run's row, as scanRun takes it.
const runSQL = `SELECT ` + runColumns + ` FROM runs WHERE run_id = $1`

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, after string, limit int) ([]store.Run, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = $1), 0)
ORDER BY created_order LIMIT $2`, after, limit)
	if err != nil {
		return nil, s.mapErr("runs", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.mapErr("runs", "", err)
		}
		out = append(out, r)
	}
	return out, s.mapErr("runs", "", rows.Err())
}

// AcquireLease implements store.Store, in one round trip.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if err := store.ValidateLeaseRequest(runID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	var subs int64
	r, now, ok, err := s.leaseWrite(ctx, op, runID, &subs, `,
u AS (UPDATE runs SET lease_owner = $3, lease_generation = c.lease_generation + 1, lease_expires_at = c.now + $4, updated_at = c.now
	FROM c WHERE runs.run_id = $1 AND runs.run_id = c.run_id AND c.quarantine = '' AND (c.lease_owner IN ('', $3) OR c.lease_expires_at <= c.now)
	RETURNING 1)
SELECT c.*, (SELECT count(*) FROM u) FROM c`, owner, ttl.Nanoseconds())
	switch {
	case err != nil:
		return store.Lease{}, err
	case ok:
		l := store.Lease{RunID: runID, Owner: owner, Generation: r.Lease.Generation + 1, ExpiresAt: now.Add(ttl).UTC()}
		s.seedHead(l, r, subs)
		return l, nil
	case r.Quarantine != "":
		return store.Lease{}, store.Errorf(store.CodeQuarantined, op, runID, nil, "%s", r.Quarantine)
	case r.Lease.Owner != "" && r.Lease.Owner != owner && r.Lease.ExpiresAt.After(now):
		return store.Lease{}, store.Errorf(store.CodeLeaseHeld, op, runID, nil,
			"held by %s (generation %d) until %s", r.Lease.Owner, r.Lease.Generation, r.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	return store.Lease{}, changed(op, runID)
}

// seedHead lets the first tick under a lease just taken on a run without
// events take the one-round-trip path, as every later tick does, from the
// run's row the lease was taken on (r, locked): its head and hash, and no
// checkpoint or trace row yet. Those two are a guess only (a tick without
// events may have written a checkpoint, Release a trace row), and a guess
// no higher than the truth: the tick's first checkpoint and trace row
// then take position 1, which an existing one holds, its key refuses the
// attempt, and the tick goes the two-round-trip way, which reads them. A
// run with events has positions only a read tells. subs is the
// submissions the row counted (see runHead).
func (s *Store) seedHead(l store.Lease, r store.Run, subs int64) {
	if r.Head != 0 || r.Outcome != "" || r.Quarantine != "" {
		return
	}
	s.heads.set(l, store.Tick{}, runHead{owner: l.Owner, generation: l.Generation, hash: r.HeadHash, submissions: subs})
}

// RenewLease implements store.Store, in one round trip.
func (s *Store) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	const op = "renew lease"
	if ttl <= 0 {
		return store.Lease{}, store.Errorf(store.CodeInvalidInput, op, lease.RunID, nil, "a positive ttl is required")
	}
	r, now, ok, err := s.leaseWrite(ctx, op, lease.RunID, nil, `,
u AS (UPDATE runs SET lease_expires_at = c.now + $5, updated_at = c.now
	FROM c WHERE runs.run_id = $1 AND runs.run_id = c.run_id AND `+fenceSQL+`
	RETURNING 1)
SELECT c.*, (SELECT count(*) FROM u) FROM c`, lease.Owner, lease.Generation, ttl.Nanoseconds())
	// A refused renewal hands the lease back as it was, as it always has.
	switch {
	case err != nil:
		return lease, err
	case ok:
		out := lease
		out.ExpiresAt = now.Add(ttl).UTC()
		return out, nil
	}
	if err := checkFence(op, lease, r, now); err != nil {
		return lease, err
	}
	return lease, changed(op, lease.RunID)
}

// ReleaseLease implements store.Store, in one round trip.
func (s *Store) ReleaseLease(ctx context.Context, lease store.Lease) error {
	const op = "release lease"
	s.heads.forget(lease.RunID)
	// A released live run may be claimed by another runner at once:
	// notify, when released.
	r, now, ok, err := s.leaseWrite(ctx, op, lease.RunID, nil, `,
u AS (UPDATE runs SET lease_owner = '', lease_expires_at = 0, updated_at = c.now
	FROM c WHERE runs.run_id = $1 AND runs.run_id = c.run_id AND `+fenceSQL+`
	RETURNING 1),
woken AS (SELECT pg_notify($5, $1) FROM u)
SELECT c.*, (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM woken) FROM c`, lease.Owner, lease.Generation, s.channel())
	if done, err := fenceVerdict(op, lease, r, now, ok, err); done {
		return err
	}
	return changed(op, lease.RunID)
}

// fenceVerdict answers a fenced lease write (leaseWrite): done, with the
// error that stopped it or nil, when it was made, failed, or was refused
// by the fence; not done when the fence would have let it through and the
// caller has something else to explain.
func fenceVerdict(op string, lease store.Lease, r store.Run, now time.Time, made bool, err error) (bool, error) {
	switch {
	case err != nil:
		return true, err
	case made:
		return true, nil
	}
	if err := checkFence(op, lease, r, now); err != nil {
		return true, err
	}
	return false, nil
}

// Quarantine implements store.Store, in one round trip.
func (s *Store) Quarantine(ctx context.Context, runID, reason string, notices ...store.Notice) error {
	const op = "quarantine"
	if err := store.ValidateQuarantine(runID, reason, notices); err != nil {
		return err
	}
	s.heads.forget(runID)
	// The notices go in the statement, each ID made from the locked run's
	// head and last trace record, as a tick's: $4 their kinds, $5 their
	// bodies.
	kinds, bodies := noticeArrays(notices)
	_, _, ok, err := s.leaseWrite(ctx, op, runID, nil, `,
u AS (UPDATE runs SET quarantine = $3, lease_owner = '', lease_expires_at = 0, updated_at = c.now
	FROM c WHERE runs.run_id = $1 AND runs.run_id = c.run_id
	RETURNING 1),
`+noticesInsertCTE("c", "c.now", "$4", "$5", "EXISTS (SELECT 1 FROM u)")+`,
woken AS (SELECT pg_notify($6, $1) FROM u WHERE cardinality($4::text[]) > 0)
SELECT c.*, (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM woken) FROM c`, reason, kinds, bodies, s.noticeChannel())
	if err == nil && !ok {
		err = changed(op, runID)
	}
	return err
}

// Live implements store.Store.
func (s *Store) Live(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM runs WHERE outcome = '' AND quarantine = '' ORDER BY created_order`)
	if err != nil {
		return nil, s.mapErr("live", "", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, s.mapErr("live", "", err)
}

// Ready implements store.ReadyLister.
func (s *Store) Ready(ctx context.Context, resting []string, due time.Time) ([]string, error) {
	if resting == nil {
		resting = []string{}
	}
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM runs r WHERE outcome = '' AND quarantine = '' AND (
	`+unsettledSQL+` OR NOT (state = ANY($1)) OR `+dueSQL("$2")+`)
ORDER BY created_order`, resting, nanos(due))
	if err != nil {
		return nil, s.mapErr("ready", "", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, s.mapErr("ready", "", err)
}

// unsettledSQL holds for a run r with a pending inbox entry it has not
// settled (Settle): one numbered after what it settled, or any while its
// head or state is no longer what it settled at.
const unsettledSQL = `EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = r.run_id AND NOT i.consumed
		AND i.seq > CASE WHEN r.settled_head = r.head_seq AND r.settled_state = r.state THEN r.settled_seq ELSE 0 END)`

// dueSQL holds for a run r whose due time has come by the caller's clock
// reading, the parameter param (0: never).
func dueSQL(param string) string { return `r.due_at BETWEEN 1 AND ` + param + `::bigint` }

// SetDue implements store.DueSetter, in one round trip.
func (s *Store) SetDue(ctx context.Context, lease store.Lease, due time.Time, release bool) error {
	const op = "set due"
	if release {
		s.heads.forget(lease.RunID)
	}
	r, now, ok, err := s.leaseWrite(ctx, op, lease.RunID, nil, `,
u AS (UPDATE runs SET due_at = $5,
	lease_owner = CASE WHEN $6 THEN '' ELSE c.lease_owner END,
	lease_expires_at = CASE WHEN $6 THEN 0 ELSE c.lease_expires_at END, updated_at = c.now
	FROM c WHERE runs.run_id = $1 AND runs.run_id = c.run_id AND `+fenceSQL+`
	RETURNING 1),
woken AS (SELECT pg_notify($7, $1) FROM u WHERE $6)
SELECT c.*, (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM woken) FROM c`, lease.Owner, lease.Generation, nanos(due), release, s.channel())
	if done, err := fenceVerdict(op, lease, r, now, ok, err); done {
		return err
	}
	return changed(op, lease.RunID)
}

// Settle implements store.Settler, in one round trip.
func (s *Store) Settle(ctx context.Context, lease store.Lease, seq int64, release bool) error {
	const op = "settle"
	if seq < 0 {
		return store.Errorf(store.CodeInvalidInput, op, lease.RunID, nil, "inbox position %d is negative", seq)
	}
	if release {
		s.heads.forget(lease.RunID)
	}
	// The head and state are the row's own: under the fence no other
	// writer can have moved them since the holder read them. A released
	// live run may be claimed by another runner at once (for entries
	// after seq): notify, when released.
	r, now, ok, err := s.leaseWrite(ctx, op, lease.RunID, nil, `,
l AS MATERIALIZED (SELECT COALESCE(MAX(seq), 0) AS seq FROM inbox WHERE run_id = $1),
u AS (UPDATE runs SET settled_seq = $5, settled_head = c.head_seq, settled_state = c.state,
	lease_owner = CASE WHEN $6 THEN '' ELSE c.lease_owner END,
	lease_expires_at = CASE WHEN $6 THEN 0 ELSE c.lease_expires_at END, updated_at = c.now
	FROM c, l WHERE runs.run_id = $1 AND runs.run_id = c.run_id AND `+fenceSQL+` AND $5 <= l.seq
	RETURNING 1),
woken AS (SELECT pg_notify($7, $1) FROM u WHERE $6)
SELECT c.*, (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM woken) FROM c`, lease.Owner, lease.Generation, seq, release, s.channel())
	if done, err := fenceVerdict(op, lease, r, now, ok, err); done {
		return err
	}
	var last int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM inbox WHERE run_id = $1`, lease.RunID).Scan(&last); err != nil {
		return s.mapErr(op, lease.RunID, err)
	}
	if seq > last {
		return store.Errorf(store.CodeInvalidInput, op, lease.RunID, nil, "inbox position %d is after the run's last entry, %d", seq, last)
	}
	return changed(op, lease.RunID)
}

// Release implements store.Store: the run is locked, its park checked,
// lifted and recorded in its trace in one transaction.
func (s *Store) Release(ctx context.Context, rel store.Release) error {
	const op = "release"
	if err := store.CheckRelease(op, rel); err != nil {
		return err
	}
	s.heads.forget(rel.RunID) // the trace grows outside a tick
	return s.write(ctx, op, rel.RunID, func(tx *wtx) error {
		var trace int64
		r, now, err := s.lockRun(ctx, tx, rel.RunID, nil, func(b *pgx.Batch) {
			b.Queue(`SELECT `+lastTraceSQL, rel.RunID).
				QueryRow(func(row pgx.Row) error { return row.Scan(&trace) })
		})
		if err != nil {
			return err
		}
		seq := trace + 1
		body, err := store.ReleaseBody(op, r, rel, now, seq, s.sealer)
		if err != nil {
			return err
		}
		tx.Queue(`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ($1, $2::bigint, $2, $3::text[], $4::bytea[], $5)`,
			rel.RunID, seq, []string{store.ReleaseKind}, [][]byte{body}, nanos(now))
		tx.Queue(`UPDATE runs SET quarantine = '', lease_owner = '', lease_expires_at = 0, settled_seq = 0, updated_at = $2 WHERE run_id = $1`,
			rel.RunID, nanos(now))
		return nil
	})
}
