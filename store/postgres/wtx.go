package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// wtx is one write transaction on one pooled connection. It saves two of a
// tick's four round trips: BEGIN travels in the same pipeline as the first
// statement (the run's row lock), and COMMIT in the same pipeline as the
// last batch (the append-only tail). The server runs a pipeline's
// statements in order and skips the rest after an error, so a failing
// statement never lets its COMMIT through.
type wtx struct {
	conn       *pgxpool.Conn
	begun      bool // BEGIN has been sent
	commitSent bool // COMMIT has been sent: a lost connection leaves the outcome unknown
	done       bool // COMMIT has succeeded
}

const beginSQL = `BEGIN ISOLATION LEVEL REPEATABLE READ`

// batch returns b with BEGIN in front if the transaction has not begun.
func (t *wtx) batch(b *pgx.Batch) *pgx.Batch {
	if t.begun {
		return b
	}
	t.begun = true
	nb := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+1)}
	nb.Queue(beginSQL)
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	return nb
}

// Exec runs one statement.
func (t *wtx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, t.batch(b))
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if err != nil {
		return tag, err
	}
	return tag, br.Close()
}

// QueryRow runs one query returning at most one row.
func (t *wtx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.begun {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, t.batch(b))
	if _, err := br.Exec(); err != nil {
		br.Close()
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// SendBatch runs b's statements in one round trip and returns the first
// error.
func (t *wtx) SendBatch(ctx context.Context, b *pgx.Batch) error {
	return t.conn.SendBatch(ctx, t.batch(b)).Close()
}

// commitWith runs b and COMMIT in one round trip.
func (t *wtx) commitWith(ctx context.Context, b *pgx.Batch) error {
	b = t.batch(b)
	n := len(b.QueuedQueries)
	b.Queue(`COMMIT`)
	t.commitSent = true
	br := t.conn.SendBatch(ctx, b)
	defer br.Close()
	for i := 0; i < n; i++ {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		// The server answers COMMIT of a failed transaction with ROLLBACK.
		return fmt.Errorf("transaction rolled back by the server (%s)", tag)
	}
	t.done = true
	return nil
}

// finish commits what fn left open, or rolls back after an error.
func (t *wtx) finish(ctx context.Context, fnErr error) error {
	if fnErr != nil || t.done || !t.begun {
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
	t.commitSent = true
	tag, err := t.conn.Exec(ctx, `COMMIT`)
	if err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("transaction rolled back by the server (%s)", tag)
	}
	t.done = true
	return nil
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
