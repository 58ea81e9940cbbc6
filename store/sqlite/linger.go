package sqlite

import (
	"context"
	"fmt"
	"os"
	"time"

	"flrh.dev/flrh/store"
)

// A lagging batch's transaction left open (decision 1186).
//
// A batch whose every write is a lagging tick (store.Tick.MayLag) runs its
// statements, so that its callers learn at once whether it was refused,
// but is not committed: its transaction stays open on the writing
// connection for at most lingerFor, and the next batch runs inside it,
// each of its writes in its own savepoint, so that a refused write does
// not undo the lagging ticks before it. One COMMIT then covers both, and
// every page both wrote (page 1, the runs' rows and index pages, the ends
// of the events', checkpoints' and trace's b-trees) goes to the log once.
// A governed step's receipt commit is such a tick and the next step's
// input commit follows it: two commits per step become one.
//
// The transaction is committed, whichever comes first:
//   - with the next batch that is not wholly lagging ticks all accepted
//     (a durable write, a refusal, a flush);
//   - when lingerFor has passed since it was left open (a timer);
//   - before any read of the store (read, readRow, DB), so a reader in
//     this process sees every write whose caller has returned;
//   - at Close.
//
// A lagging batch is committed at synchronous=NORMAL (no fsync), as
// decision 1174 has it; a batch with a durable write is committed and then
// the log is synced (syncLog): the writing connection stays at NORMAL and
// the store syncs the write-ahead log itself after a durable COMMIT, which
// is what synchronous=FULL does in WAL mode, since SQLite cannot change
// the level inside a transaction and the lagging ticks' transaction is the
// one the durable write joins.
//
// A read commits through the write queue, so a write's own work (and an
// approval's Check, which runs inside it) must not read through the
// store's read methods; it reads through its transaction.
//
// If the COMMIT fails, the lagging ticks in it are lost, as decision 1174
// allows (reconciliation recovers them). Their runs are remembered
// (writer.lost) and each run's next tick is refused (CodeHeadMismatch),
// so that nothing is built on a state that is not in the database.

// lingerFor bounds how long a lagging batch's transaction stays open: how
// long other processes' writers wait for the write lock (inside their
// busy_timeout) and see the lagging ticks late (this process's readers
// commit it first; a run page's stream, woken by the commit, reads and so
// commits it at once). A governed step's next input usually arrives within
// a few milliseconds of its receipt commit at C=1 (1–5 ms measured on a
// loaded machine, a few above 5 ms), so 20 ms rarely lets one go by.
const lingerFor = 20 * time.Millisecond

// syncLog makes the write-ahead log durable after a COMMIT, as SQLite's
// synchronous=FULL does at each COMMIT in WAL mode (fdatasync where SQLite
// itself would use it). The log is opened once for the writing
// connection's life; SQLite deletes it only when the last connection
// closes, and this one is open.
func (s *Store) syncLog() error {
	if s.testLogSync != nil {
		s.testLogSync()
	}
	w := &s.w
	if w.log == nil {
		f, err := os.OpenFile(s.path+"-wal", os.O_RDWR, 0)
		if err != nil {
			return err
		}
		w.log = f
	}
	return datasync(w.log)
}

// closeLog closes the writing connection's handle on the log.
func (w *writer) closeLog() {
	if w.log != nil {
		w.log.Close()
		w.log = nil
	}
}

// lingering reports whether a lagging batch's transaction is open.
func (s *Store) lingering() bool { return s.lingerOpen.Load() }

// settle commits a lagging batch's open transaction, if any, so that what
// follows reads every write whose caller has returned. Its error is not
// the reader's: a COMMIT that fails loses the lagging ticks, which the
// reader then does not see, and their runs' next ticks are refused.
func (s *Store) settle(ctx context.Context) {
	if s.lingering() {
		s.enqueueReq(&writeReq{ctx: uncancelled(ctx), op: "flush", lazy: true, flush: true})
	}
}

// lingered is a lagging tick that ran in the open transaction: what is
// needed to run it again there (replayLinger). Its work runs on the
// writer's copy of the tick (writer.cloneTick), so running it again with
// the same clock reading, on the database as it was before it, writes the
// same rows. A write that cannot be run again has neither fn nor commit.
type lingered struct {
	ctx       context.Context
	op, runID string
	fn        func(ctx context.Context, tx *wtx, now time.Time) error
	// commit marks a lagging tick's commit, run again as commitTick with
	// lease and the writer's copy of the tick.
	commit bool
	lease  store.Lease
	tick   store.Tick
	now    time.Time
	lazy   bool
}

// beginLinger leaves tx open after a lagging batch, whose writes all ran
// in it, in order: a timer commits it once lingerFor has passed, if
// nothing else has.
func (s *Store) beginLinger(tx *wtx, batch []*writeReq) {
	w := tx.w
	for _, r := range batch {
		if r.flush {
			continue
		}
		w.lingerRuns = append(w.lingerRuns, r.runID)
		l := lingered{ctx: uncancelled(r.ctx), op: r.op, runID: r.runID, now: r.now, lazy: r.lazy}
		if r.commit && r.tick.MayLag {
			// Copied now: its caller returns once this batch is done.
			l.commit, l.lease, l.tick = true, r.lease, w.cloneTick(r.tick)
		}
		w.lingered = append(w.lingered, l)
	}
	if w.linger {
		return
	}
	s.lingerOpen.Store(true)
	w.linger = true
	// One timer serves every open transaction, set again each time: a
	// timer and its function were two allocations a lagging batch. Should
	// it fire for a transaction already committed as the next one is left
	// open, that one is committed early, as a read would commit it.
	if w.lingerTimer == nil {
		w.lingerTimer = time.AfterFunc(s.lingerFor, func() { s.settle(context.Background()) })
	} else {
		w.lingerTimer.Reset(s.lingerFor)
	}
}

// endLinger records that tx, open since a lagging batch, was committed
// (committed) or is gone: then the lagging ticks in it are lost and their
// runs' next ticks will be refused.
func (s *Store) endLinger(w *writer, committed bool) {
	if !w.linger {
		return
	}
	w.lingerTimer.Stop()
	w.linger = false
	if !committed {
		if w.lost == nil {
			w.lost = map[string]bool{}
		}
		for _, id := range w.lingerRuns {
			w.lost[id] = true
		}
	}
	clear(w.lingerRuns)
	w.lingerRuns = w.lingerRuns[:0]
	clear(w.lingered)
	w.lingered = w.lingered[:0]
	w.arena = w.arena[:0] // nothing refers to the copies any more
	w.tickArenas.reset()
	s.lingerOpen.Store(false)
}

// canReplay says whether every write in the open transaction can be run
// again (replayLinger): each is a lagging tick, which Commit made safe to
// run again.
func (s *Store) canReplay() bool {
	for _, l := range s.w.lingered {
		if !l.lazy || (l.fn == nil && !l.commit) {
			return false
		}
	}
	return len(s.w.lingered) > 0
}

// replayLinger undoes a refused write that ran without a savepoint in the
// open transaction of lagging ticks: it rolls the transaction back whole
// and runs the lagging ticks again in a new one, in their order, each with
// the clock reading it first ran with. Each reads what it read the first
// time (the database before the transaction, then the ticks before it)
// and so writes what it wrote, and is accepted as it was; the transaction
// is then what a rollback to the refused write's savepoint would have
// left. If one of them fails now (an I/O error), the lagging ticks are
// lost, as with a failed COMMIT: the caller fails the batch, and the
// runs' next ticks are refused.
func (s *Store) replayLinger(ctx context.Context, tx *wtx) error {
	s.rollback(tx)
	if err := s.begin(ctx, tx); err != nil {
		return err
	}
	for i := range tx.w.lingered {
		l := &tx.w.lingered[i]
		if err := s.replayOne(l, tx); err != nil {
			return fmt.Errorf("%s of run %s: %w", l.op, l.runID, err)
		}
	}
	return nil
}

// replayOne runs a lagging tick again, a panic (which it did not raise
// the first time) being its error.
func (s *Store) replayOne(l *lingered, tx *wtx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	tx.forget() // run again reading every row
	if l.commit {
		return s.commitTick(l.ctx, tx, l.now, l.lease, &l.tick)
	}
	return l.fn(l.ctx, tx, l.now)
}

// refuseLost refuses a run's tick when a lagging tick of the run was lost
// with its COMMIT: the tick was computed from a state the database does
// not hold. The refusal is given once; the writer computes again from the
// store.
func (s *Store) refuseLost(tx *wtx, op, runID string) error {
	if len(tx.w.lost) == 0 || !tx.w.lost[runID] {
		return nil
	}
	delete(tx.w.lost, runID)
	return store.Errorf(store.CodeHeadMismatch, op, runID, nil, "a lagging commit of this run was lost; its state is the database's")
}
