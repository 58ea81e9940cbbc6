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
// SQLite has one writer at a time, and every durable COMMIT waits for a
// sync of the write-ahead log. Writers that arrive while a
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
// without savepoints, as before, unless it joins the transaction a batch
// of lagging ticks left open (linger.go). When the leader is done it hands the lead
// to the first caller queued meanwhile, so no caller keeps working for
// others indefinitely.

// writeReq is one caller's write waiting for, or running in, a batch.
type writeReq struct {
	ctx       context.Context
	op, runID string
	fn        func(ctx context.Context, tx *wtx, now time.Time) error
	// lazy is a tick's store.Tick.MayLag: its COMMIT need not wait for
	// the disk. A batch is committed so only when all of its writes are.
	lazy bool
	// prompt, with lazy, commits the write's batch at once, still without
	// waiting for the disk, instead of leaving it open (linger.go): a
	// write that is not a tick, which a refused joiner could not run
	// again, and which other processes must see at once (a shared
	// limit's slot).
	prompt bool
	// flush asks for a lagging batch's open transaction to be committed
	// (linger.go); such a request has no work of its own.
	flush bool
	// commit marks a tick's commit (Commit), whose work is commitTick
	// with lease and tick, not fn. A lagging one is run again on the
	// writer's own copy of the tick after its caller has returned, if a
	// write that joins its transaction is refused (linger.go).
	commit bool
	lease  store.Lease
	tick   store.Tick
	// now is the clock reading fn ran with: a lagging tick left in an
	// open transaction is run again with it if a write that joins the
	// transaction is refused (linger.go).
	now      time.Time
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
	return s.enqueueWrite(&writeReq{ctx: ctx, op: op, runID: runID, fn: fn, lazy: lazy})
}

// enqueueWrite is enqueue for a request made by its caller.
func (s *Store) enqueueWrite(req *writeReq) error {
	if s.ro {
		return store.Errorf(store.CodeInvalidInput, req.op, req.runID, nil, "store opened read-only")
	}
	if err := req.ctx.Err(); err != nil {
		return mapErr(req.op, req.runID, err)
	}
	return s.enqueueReq(req)
}

// enqueueReq queues req for the next batch, leading it if no batch is
// under way, and returns req's outcome.
func (s *Store) enqueueReq(req *writeReq) error {
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
	if hook := s.testBatch.Load(); hook != nil {
		var ctxs []context.Context // the callers' writes; a flush is none
		for _, r := range batch {
			if !r.flush {
				ctxs = append(ctxs, r.ctx)
			}
		}
		if len(ctxs) > 0 {
			(*hook)(ctxs)
		}
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
	bctx := uncancelled(batch[0].ctx)
	lazy := true
	for _, r := range batch {
		lazy = lazy && r.lazy
	}
	if err := s.withWriter(bctx, func(tx *wtx) { s.runBatchIn(bctx, tx, batch, lazy, failAll) }); err != nil {
		failAll(err)
	}
}

// uncancelled is ctx without its cancellation: ctx itself when it can
// never be cancelled (its Done is nil, so it has no deadline either and
// its Err is always nil), sparing context.WithoutCancel's allocation;
// its values are the same either way.
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// runBatchIn is runBatch on the writing connection. The transaction is
// the one a lagging batch left open, if any (linger.go), or one begun now.
// A batch whose every write is a lagging tick and was accepted leaves it
// open; any other commits it, and syncs the log if a write that must be
// durable landed in it. The writing connection is at synchronous=NORMAL, so a COMMIT
// itself never waits for the disk.
func (s *Store) runBatchIn(bctx context.Context, tx *wtx, batch []*writeReq, lazy bool, failAll func(error)) {
	w := tx.w
	held := w.linger
	work, flush := 0, false
	for _, r := range batch {
		if r.flush {
			flush = true
		} else {
			work++
		}
	}
	if !held {
		if work == 0 {
			return // a flush with nothing open: done
		}
		if err := s.begin(bctx, tx); err != nil {
			failAll(err)
			return
		}
	}
	keep := false
	defer func() {
		if keep {
			return
		}
		s.rollback(tx) // no transaction left open unless kept lingering
		s.endLinger(w, !tx.open && tx.committed)
	}()

	if work == 1 && len(batch) == 1 && !held {
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
		if lazy && !r.prompt && w.logSync && !s.closing.Load() {
			keep = true
			s.beginLinger(tx, batch)
			return
		}
		r.err = mapErr(r.op, r.runID, s.commitTx(bctx, tx, !lazy))
		return
	}

	// One write joining a lagging batch's open transaction runs without a
	// savepoint: if it is refused, the transaction is rolled back whole
	// and the lagging ticks are run again in it (replayLinger), which
	// leaves what its savepoint's rollback would have left. That is a
	// governed step's input commit, which follows its previous step's
	// receipt commit; the savepoint's journal of the pages it changes
	// was most of what joining cost.
	alone := held && work == 1 && !s.testSavepoints && s.canReplay()
	landed, durable, prompt := 0, false, false
	for _, r := range batch {
		if r.flush {
			continue
		}
		prompt = prompt || r.prompt
		if err := r.ctx.Err(); err != nil {
			r.err = mapErr(r.op, r.runID, err)
			continue
		}
		if alone {
			if err := s.runOne(uncancelled(r.ctx), tx, r); err != nil {
				r.err = mapErr(r.op, r.runID, err)
				if rerr := s.replayLinger(bctx, tx); rerr != nil {
					failAll(fmt.Errorf("lagging ticks run again after %s: %w", r.op, errors.Join(err, rerr)))
					return
				}
			} else {
				landed++
				durable = durable || !r.lazy
			}
			continue
		}
		if _, err := s.exec(bctx, tx, savepointBegin); err != nil {
			failAll(err)
			return
		}
		if err := s.runOne(uncancelled(r.ctx), tx, r); err != nil {
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
			durable = durable || !r.lazy
		}
		if _, err := s.exec(bctx, tx, savepointRelease); err != nil {
			failAll(err)
			return
		}
	}
	if landed == 0 && !held {
		return // every caller was refused; nothing to commit
	}
	if lazy && !flush && !prompt && landed == work && w.logSync && !s.closing.Load() {
		// Every write lags and was accepted: they join the open
		// transaction and wait for the next batch's COMMIT.
		keep = true
		s.beginLinger(tx, batch)
		return
	}
	// A refusal is decided on the writes before it, lagging ones included;
	// it stands only if they are committed: a failed COMMIT fails every
	// caller of the batch.
	if err := s.commitTx(bctx, tx, durable); err != nil {
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
	r.now = s.clock()
	// The row the write before left known is this write's alone.
	tx.known, tx.w.known = tx.w.known, knownRun{}
	defer func() { tx.known = knownRun{} }()
	if r.commit {
		return s.commitTick(ctx, tx, r.now, r.lease, &r.tick)
	}
	return r.fn(ctx, tx, r.now)
}

// commitTx commits tx and, when durable, syncs the log: the caller is
// told only once the commit is on stable storage, as with
// synchronous=FULL. A sync that fails leaves the commit's durability
// unknown; it is reported as the commit's failure.
func (s *Store) commitTx(ctx context.Context, tx *wtx, durable bool) error {
	if s.testCommit != nil {
		if err := s.testCommit(); err != nil {
			return err
		}
	}
	if err := s.commit(ctx, tx); err != nil {
		return err
	}
	tx.committed = true
	if durable && tx.w.logSync {
		if err := s.syncLog(); err != nil {
			tx.w.carried = knownRun{} // a commit reported failed leaves nothing known
			return err
		}
	}
	return nil
}
