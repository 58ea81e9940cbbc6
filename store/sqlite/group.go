package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"flrh.dev/flrh/store"
)

// Group commit.
//
// SQLite has one writer at a time, and with synchronous=FULL every COMMIT
// waits for an fsync of the write-ahead log. Writers that arrive while a
// transaction is committing would each wait for the lock and then pay their
// own fsync; instead they queue, and whoever finds no transaction under way
// becomes the leader: it takes everything queued at that moment, runs each
// caller's work in one IMMEDIATE transaction, each inside its own
// SAVEPOINT, and commits once. A caller whose work is refused (fenced, head
// moved, invalid) is rolled back to its savepoint alone and gets its own
// error; the others are unaffected, exactly as if they had committed one by
// one in the batch's order, since each runs after the ones before it, sees
// their writes and reads the clock after them. Every caller returns only
// once the batch's COMMIT has succeeded; if it fails, every caller of the
// batch gets that error (a refusal decided on writes that were then lost
// is no answer) and nothing of the batch is in the database.
//
// The leader never waits for a batch to fill: a lone writer runs alone,
// without savepoints, as before. When the leader is done it hands the lead
// to the first caller queued meanwhile, so no caller keeps working for
// others indefinitely.

// writeReq is one caller's write waiting for, or running in, a batch.
type writeReq struct {
	ctx       context.Context
	op, runID string
	fn        func(ctx context.Context, tx *wtx, now time.Time) error
	// lazy is a tick's store.Tick.MayLag: its COMMIT need not wait for
	// the disk. A batch is committed so only when all of its writes are.
	lazy     bool
	err      error
	panicked any // what fn panicked with, re-raised in the caller
	didPanic bool
	// wake receives true when this caller is to lead the next batch
	// (itself included), false when its write is decided.
	// A leader's own write has none.
	wake chan bool
}

// group is the queue of writes waiting for the next batch.
type group struct {
	mu      sync.Mutex
	queue   []*writeReq
	spare   []*writeReq // the last batch's slice, reused for the next queue
	leading bool        // a batch is being formed or committed
}

// savepoint frames each caller's work inside a batch of more than one.
const (
	savepointBegin    = `SAVEPOINT w`
	savepointRelease  = `RELEASE w`
	savepointRollback = `ROLLBACK TO w`
)

// write runs fn in an IMMEDIATE transaction, shared with the writes that
// are queued with it, with the store's clock read after the write lock is
// held and after every write ordered before it, so "now" is ordered with
// every other write.
func (s *Store) write(ctx context.Context, op, runID string, fn func(ctx context.Context, tx *wtx, now time.Time) error) error {
	return s.enqueue(ctx, op, runID, false, fn)
}

// enqueue is write, with lazy saying whether the write may be committed
// without waiting for the disk (store.Tick.MayLag).
func (s *Store) enqueue(ctx context.Context, op, runID string, lazy bool, fn func(ctx context.Context, tx *wtx, now time.Time) error) error {
	if s.ro {
		return store.Errorf(store.CodeInvalidInput, op, runID, nil, "store opened read-only")
	}
	if err := ctx.Err(); err != nil {
		return mapErr(op, runID, err)
	}
	req := &writeReq{ctx: ctx, op: op, runID: runID, fn: fn, lazy: lazy}
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, req)
	lead := !g.leading
	g.leading = true
	if !lead {
		req.wake = make(chan bool, 1) // only a follower is woken
	}
	g.mu.Unlock()
	if !lead {
		// A follower waits without regard to its context: once queued, its
		// work may already be running in the leader's transaction, and only
		// the batch's outcome says whether it is in the database. The
		// leader skips a caller whose context ended before its turn.
		lead = <-req.wake
	}
	if lead {
		s.lead()
	}
	if req.didPanic {
		panic(req.panicked)
	}
	return req.err
}

// lead runs one batch: everything queued now, the caller's own write
// among it. Then it hands the lead on to the first caller queued since, or
// gives it up. The caller's own write is decided when lead returns.
func (s *Store) lead() {
	g := &s.group
	g.mu.Lock()
	batch := g.queue
	g.queue, g.spare = g.spare[:0], nil
	g.mu.Unlock()

	s.runBatch(batch)

	for _, r := range batch {
		if r.wake != nil {
			r.wake <- false
		}
	}
	clear(batch) // the callers' requests are theirs again
	g.mu.Lock()
	var next *writeReq
	if len(g.queue) > 0 {
		next = g.queue[0]
	} else {
		g.leading = false
	}
	g.spare = batch[:0]
	g.mu.Unlock()
	if next != nil {
		next.wake <- true
	}
}

// runBatch runs a batch's writes in one transaction and decides each
// caller's outcome.
func (s *Store) runBatch(batch []*writeReq) {
	if s.testBatch != nil {
		ctxs := make([]context.Context, len(batch))
		for i, r := range batch {
			ctxs[i] = r.ctx
		}
		s.testBatch(ctxs)
	}
	failAll := func(err error) {
		for _, r := range batch {
			if !r.didPanic {
				r.err = mapErr(r.op, r.runID, err)
			}
		}
	}
	// The transaction outlives any one caller's context: a caller that
	// gives up must not abort the others' writes (an interrupted statement
	// can roll the whole transaction back). Each caller's context is
	// checked before its turn instead.
	bctx := context.WithoutCancel(batch[0].ctx)
	lazy := true
	for _, r := range batch {
		lazy = lazy && r.lazy
	}
	if err := s.withWriter(bctx, func(tx *wtx) { s.runBatchIn(bctx, tx, batch, lazy, failAll) }); err != nil {
		failAll(err)
	}
}

// runBatchIn is runBatch on the writing connection. A lazy batch is
// committed with synchronous=NORMAL: in WAL mode its COMMIT appends to the
// log without an fsync, and the next COMMIT at FULL syncs the log with it.
// SQLite refuses to change the level inside a transaction, so it is set
// before BEGIN and set back to FULL once the transaction is over, whatever
// became of it; a connection that cannot be set back is dropped.
func (s *Store) runBatchIn(bctx context.Context, tx *wtx, batch []*writeReq, lazy bool, failAll func(error)) {
	if lazy {
		defer s.restoreSync(tx)
		if err := tx.pragma(bctx, syncNormal); err != nil {
			failAll(err)
			return
		}
	}
	if err := s.begin(bctx, tx); err != nil {
		failAll(err)
		return
	}
	defer s.rollback(tx)

	if len(batch) == 1 {
		// Alone: the transaction is the caller's, as with no batching.
		r := batch[0]
		if err := r.ctx.Err(); err != nil {
			r.err = mapErr(r.op, r.runID, err)
			return
		}
		if err := s.runOne(bctx, tx, r); err != nil {
			r.err = mapErr(r.op, r.runID, err)
			return
		}
		r.err = mapErr(r.op, r.runID, s.commitTx(bctx, tx))
		return
	}

	landed := 0
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = mapErr(r.op, r.runID, err)
			continue
		}
		if _, err := s.exec(bctx, tx, savepointBegin); err != nil {
			failAll(err)
			return
		}
		if err := s.runOne(context.WithoutCancel(r.ctx), tx, r); err != nil {
			r.err = mapErr(r.op, r.runID, err)
			// Undo this caller's writes alone. If the savepoint is gone,
			// SQLite rolled the whole transaction back (an I/O error, a
			// full disk): every write of the batch is lost.
			if _, rerr := s.exec(bctx, tx, savepointRollback); rerr != nil {
				failAll(fmt.Errorf("batch rolled back after %s: %w", r.op, errors.Join(err, rerr)))
				return
			}
		} else {
			landed++
		}
		if _, err := s.exec(bctx, tx, savepointRelease); err != nil {
			failAll(err)
			return
		}
	}
	if landed == 0 {
		return // every caller was refused; nothing to commit
	}
	if err := s.commitTx(bctx, tx); err != nil {
		failAll(err)
	}
}

// runOne runs one caller's work inside tx under ctx (the caller's context
// without its cancellation), catching a panic (an approval
// check's, say) so that it rolls back that caller's work only and is
// raised again in the caller's own goroutine.
func (s *Store) runOne(ctx context.Context, tx *wtx, r *writeReq) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked, r.didPanic = p, true
			err = fmt.Errorf("%s panicked: %v", r.op, p)
		}
	}()
	return r.fn(ctx, tx, s.clock())
}

func (s *Store) commitTx(ctx context.Context, tx *wtx) error {
	if s.testCommit != nil {
		if err := s.testCommit(); err != nil {
			return err
		}
	}
	if s.testSync != nil {
		level, err := tx.synchronous(ctx)
		if err != nil {
			return err
		}
		s.testSync(level)
	}
	return s.commit(ctx, tx)
}

// The synchronous levels a batch commits at: FULL, the store's own (set
// when a connection opens), and NORMAL for a lazy batch.
const (
	syncFull   = `PRAGMA synchronous = FULL`
	syncNormal = `PRAGMA synchronous = NORMAL`
)

// restoreSync sets the writing connection back to synchronous=FULL after
// a lazy batch. Should that fail, the connection is dropped (withWriter
// closes it), so that no later batch commits on it without an fsync.
func (s *Store) restoreSync(tx *wtx) {
	err := tx.pragma(context.Background(), syncFull)
	if s.testRestore != nil {
		err = s.testRestore(err)
	}
	if err != nil {
		tx.w.drop = true
	}
}
