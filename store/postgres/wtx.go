package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// wtx is one write transaction on one pooled connection, sent in as few
// round trips as its decisions allow. BEGIN travels in the same pipeline
// as the first statement (the run's row lock, with every read the
// transaction decides on), and the writes queued with Queue travel with
// COMMIT: a tick is two round trips however many rows it writes. The
// server runs a pipeline's statements in order and skips the rest after an
// error, so a failing statement never lets its COMMIT through; a write
// whose row count the transaction relies on is guarded (see expectOne) so
// that it fails, rather than commits, when it finds something else.
type wtx struct {
	conn       *pgxpool.Conn
	pending    []*pgx.QueuedQuery // writes queued for the next round trip
	begun      bool               // BEGIN has been sent
	commitSent bool               // COMMIT has been sent: a lost connection leaves the outcome unknown
	done       bool               // COMMIT has succeeded
	// lazy commits the transaction with synchronous_commit off
	// (store.Tick.MayLag): COMMIT returns without waiting for the WAL's
	// flush. lazySent says that one of its statements already set it;
	// otherwise commit sends the setting with COMMIT.
	lazy, lazySent bool
	// testSetting, when set (tests only), is told synchronous_commit as
	// the transaction has it just before COMMIT.
	testSetting func(string)
	// readCommitted begins the transaction at READ COMMITTED, each
	// statement reading what was committed before it began: for a
	// transaction that serializes itself with a row lock taken first and
	// must then see what the transaction it waited for wrote (a shared
	// limit's take; at REPEATABLE READ its snapshot would predate the
	// wait).
	readCommitted bool
	// implicit lets a transaction whose whole is its commit's one round
	// trip on the direct path go without BEGIN and COMMIT, as the
	// pipeline's implicit transaction at the session's isolation level
	// (see commitDirect); set only where READ COMMITTED is as safe as
	// REPEATABLE READ (the one-round-trip tick, its fence checking the
	// run on the row it locks).
	implicit bool
	// fence, on the one-round-trip tick, is the fence's parameters: the
	// fence is queued first, and queueAppends takes it out when it folds
	// it into the tick's appended statement; fenceInbox says the folded
	// fence checks the inbox (see fenceChecksInbox), against fenceSubs,
	// the submissions the store last knew the run's row to count.
	fence      []any
	fenceInbox bool
	fenceSubs  int64
	// fenceKnownEmpty says that the tick checks its inbox left empty and
	// the store knows it empty while the row counts fenceSubs: the folded
	// fence requires that count and is the check (fenceAheadKnownWrite).
	fenceKnownEmpty bool
	// failed, after a round trip the server refused, is the refused
	// statement's place (from 1) among the writes queued for it, when it
	// was one of them and the round trip went the direct way; else 0.
	failed int
	// queued and pendingBuf hold the transaction's first queued writes
	// and the list of them, so that a tick's few statements cost no
	// allocation of their own; used counts queued's entries handed out.
	queued     [4]pgx.QueuedQuery
	used       int
	pendingBuf [4]*pgx.QueuedQuery
	// ap is the record queueAppends builds the tick's appended
	// statement in, made afresh for each.
	ap appends
}

// errRolledBack is the error of a COMMIT the server answered ROLLBACK.
var errRolledBack = errors.New("transaction rolled back by the server")

const beginSQL = `BEGIN ISOLATION LEVEL REPEATABLE READ`

// beginReadCommittedSQL begins a transaction with readCommitted set.
const beginReadCommittedSQL = `BEGIN ISOLATION LEVEL READ COMMITTED`

// begin is the statement that begins t.
func (t *wtx) begin() string {
	if t.readCommitted {
		return beginReadCommittedSQL
	}
	return beginSQL
}

// lazySQL turns synchronous_commit off for the rest of the transaction.
// The one-round-trip commit sets it in its first statement instead
// (lazyExpr).
const lazySQL = `SELECT ` + lazyExpr

// lazyExpr is lazySQL's expression.
const lazyExpr = `set_config('synchronous_commit', 'off', true)`

// batch returns b with BEGIN (if the transaction has not begun) and the
// queued writes in front, in that order, so that statements reach the
// server in the order the transaction issued them.
func (t *wtx) batch(b *pgx.Batch) *pgx.Batch {
	if t.begun && len(t.pending) == 0 {
		return b
	}
	nb := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.pending)+len(b.QueuedQueries)+1)}
	if !t.begun {
		t.begun = true
		nb.Queue(t.begin())
	}
	nb.QueuedQueries = append(nb.QueuedQueries, t.pending...)
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	t.pending = nil
	return nb
}

// Queue queues a write for the transaction's next round trip (at the
// latest, the one that commits). Its failure fails that round trip; a
// callback set on the returned query runs when its result arrives.
func (t *wtx) Queue(sql string, args ...any) *pgx.QueuedQuery {
	var q *pgx.QueuedQuery
	if t.used < len(t.queued) {
		q = &t.queued[t.used]
		t.used++
		*q = pgx.QueuedQuery{SQL: sql, Arguments: args}
	} else {
		q = &pgx.QueuedQuery{SQL: sql, Arguments: args}
	}
	if t.pending == nil {
		// batch and commitDirect copy the list before they drop it, so
		// the buffer is free again once pending is nil.
		t.pending = t.pendingBuf[:0]
	}
	t.pending = append(t.pending, q)
	return q
}

// Exec runs one statement (after anything queued).
func (t *wtx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	b := &pgx.Batch{}
	b.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	return tag, t.SendBatch(ctx, b)
}

// QueryRow runs one query returning at most one row (after anything
// queued).
func (t *wtx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.begun && len(t.pending) == 0 {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b = t.batch(b)
	br := t.conn.SendBatch(ctx, b)
	for _, q := range b.QueuedQueries[:len(b.QueuedQueries)-1] {
		var err error
		if q.Fn != nil {
			err = q.Fn(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			br.Close()
			return errRow{err}
		}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// SendBatch runs b's statements (after anything queued) in one round trip,
// calling their callbacks in order, and returns the first error.
func (t *wtx) SendBatch(ctx context.Context, b *pgx.Batch) error {
	return t.conn.SendBatch(ctx, t.batch(b)).Close()
}

// commit sends what is queued and COMMIT in one round trip.
func (t *wtx) commit(ctx context.Context) error {
	if handled, err := t.commitDirect(ctx); handled {
		return err
	}
	b := t.batch(&pgx.Batch{})
	if t.lazy && !t.lazySent {
		// Local to the transaction: the session's own setting is back
		// once it ends, whatever became of it.
		b.Queue(lazySQL)
	}
	if t.testSetting != nil {
		b.Queue(testSettingSQL).QueryRow(func(row pgx.Row) error {
			var v string
			err := row.Scan(&v)
			t.testSetting(v)
			return err
		})
	}
	var tag pgconn.CommandTag
	reached := false // COMMIT's answer was awaited
	q := b.Queue(`COMMIT`)
	q.Fn = func(br pgx.BatchResults) error {
		reached = true
		var err error
		tag, err = br.Exec()
		return err
	}
	t.commitSent = true
	if err := t.conn.SendBatch(ctx, b).Close(); err != nil {
		// The server answers in order and, after an error, skips the
		// rest of the pipeline or ends the session: an error it sent for
		// a statement before COMMIT means COMMIT never ran, as does a
		// pipeline that never left this process. Only a loss while
		// COMMIT's answer was awaited leaves the outcome unknown.
		var pe *pgconn.PgError
		if !reached && (errors.As(err, &pe) || pgconn.SafeToRetry(err)) {
			t.commitSent = false
		}
		return err
	}
	if tag.String() != "COMMIT" {
		// The server answers COMMIT of a failed transaction with ROLLBACK.
		return fmt.Errorf("%w (%s)", errRolledBack, tag)
	}
	t.done = true
	return nil
}

// finish commits what fn left open, or rolls back after an error.
func (t *wtx) finish(ctx context.Context, fnErr error) error {
	if fnErr != nil || t.done || (!t.begun && len(t.pending) == 0) {
		if fnErr != nil && t.begun && !t.done {
			// A connection whose rollback fails is closed, and the pool
			// then discards it rather than reuse a session in an
			// unknown state.
			if _, err := t.conn.Exec(context.Background(), `ROLLBACK`); err != nil {
				t.conn.Conn().Close(context.Background())
			}
		}
		return fnErr
	}
	return t.commit(ctx)
}

type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// expectOne wraps a data-modifying statement (one without RETURNING) so
// that it fails the transaction with pgGuard unless it touched exactly one
// row. what names the write in the error; it is a constant of this
// package, never input.
func expectOne(stmt, what string) string {
	return `WITH w AS (` + stmt + ` RETURNING 1) SELECT ` + guardOne(`count(*)`, what) + ` FROM w`
}

// guardOne is a guard that fails the statement, as flrh_expect_one does,
// unless count is one; the function is called only then. A PL/pgSQL call
// costs the server about 7,000 instructions, made at every execution when
// the guard was the call itself. count appears twice, so it must be
// computed once whatever its uses: an aggregate of the statement's query
// (its copies are one aggregate), never a subquery, which would be set up
// twice.
func guardOne(count, what string) string {
	return `CASE WHEN ` + count + ` <> 1 THEN flrh_expect_one(` + count + `, '` + what + `') END`
}
