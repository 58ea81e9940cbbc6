package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/store"
)

// Group commit of one-round-trip ticks.
//
// Runners of several runs in one process commit their ticks at the same
// time, each in its own transaction: a BEGIN, a COMMIT, a round trip and
// (for a durable tick) a flush of the server's WAL each. Instead, a tick
// on the one-round-trip path (commitAhead) whose caller finds a group
// already committing (Options.CommitGroups of them, when set) queues, and
// when a group is done the first caller queued leads the next one: every tick queued by then, each after its
// own fence, in one transaction, one round trip and one COMMIT. A lone
// tick commits alone, as before.
//
// Each tick keeps its own outcome. Its statements are those it would send
// alone, in one contiguous stretch of the transaction, so the statement the
// server refuses names the tick it belongs to: that tick is taken out and
// goes the two-round-trip way on its own (as a refused one-round-trip tick
// always does), which finds and reports exactly what is wrong (a fence, a
// moved head, a duplicate); the server has rolled the whole transaction
// back, so the others are committed again without it. Nothing of a group
// is written unless all of it is. A COMMIT whose answer is lost leaves
// every tick of the group unknown, as it leaves a lone one. The group
// commits with synchronous_commit off only when every tick in it may lag.

// aheadReq is one caller's tick waiting for, or in, a group.
type aheadReq struct {
	ctx   context.Context
	lease store.Lease
	tick  store.Tick
	h     runHead
	// The outcome, as commitAhead returns it.
	next runHead
	done bool
	err  error
	// wake receives true when this caller is to lead the next group (its
	// own tick first), false when its tick is decided.
	wake chan bool
}

// aheadGroup is the queue of ticks waiting for the next group.
type aheadGroup struct {
	mu      sync.Mutex
	queue   []*aheadReq
	leading int // groups being formed or committed
}

// maxGroup bounds the ticks of one group.
const maxGroup = 16

// commitGrouped is commitAhead, in a group with the ticks other callers
// commit meanwhile.
func (s *Store) commitGrouped(ctx context.Context, lease store.Lease, tick store.Tick, h runHead) (next runHead, done bool, err error) {
	if s.groups <= 0 {
		return s.commitAhead(ctx, lease, tick, h)
	}
	if s.ro {
		return h, false, nil
	}
	req := &aheadReq{ctx: ctx, lease: lease, tick: tick, h: h}
	g := &s.group
	g.mu.Lock()
	if g.leading < s.groups {
		g.leading++
		g.mu.Unlock()
		s.leadGroup(req)
	} else {
		req.wake = make(chan bool, 1)
		g.queue = append(g.queue, req)
		g.mu.Unlock()
		// Once queued, the tick may already be in a transaction: only the
		// group's outcome says whether it is in the database, so the
		// caller waits for it whatever its context says.
		if <-req.wake {
			s.leadGroup(req)
		}
	}
	return req.next, req.done, req.err
}

// leadGroup commits own and the ticks queued now as one group, then hands
// the lead to the first caller queued since, or gives it up.
func (s *Store) leadGroup(own *aheadReq) {
	g := &s.group
	if s.testGroupWait > 0 {
		// Tests: wait (a little) for that many ticks to queue.
		for i := 0; i < 2000; i++ {
			g.mu.Lock()
			n := len(g.queue)
			g.mu.Unlock()
			if n >= s.testGroupWait {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	g.mu.Lock()
	var batch []*aheadReq
	if n := min(len(g.queue), maxGroup-1); n > 0 {
		batch = make([]*aheadReq, 0, n+1)
		batch = append(append(batch, own), g.queue[:n]...)
		g.queue = append(g.queue[:0], g.queue[n:]...)
	}
	g.mu.Unlock()

	defer func() {
		p := recover()
		for _, r := range batch[min(1, len(batch)):] {
			if p != nil {
				r.next, r.done, r.err = r.h, false, nil
			}
			r.wake <- false
		}
		g.mu.Lock()
		var next *aheadReq
		if len(g.queue) > 0 {
			next = g.queue[0]
			g.queue = append(g.queue[:0], g.queue[1:]...)
		} else {
			g.leading--
		}
		g.mu.Unlock()
		if next != nil {
			next.wake <- true
		}
		if p != nil {
			panic(p)
		}
	}()
	if batch == nil {
		// Alone: as before grouping.
		own.next, own.done, own.err = s.commitAhead(own.ctx, own.lease, own.tick, own.h)
		return
	}
	s.commitBatch(batch)
}

// commitBatch decides every tick of batch: committed together, or taken
// out of the group (done false) to go the two-round-trip way.
func (s *Store) commitBatch(batch []*aheadReq) {
	left := make([]*aheadReq, 0, len(batch))
	for _, r := range batch {
		r.next = r.h
		if r.ctx.Err() != nil {
			continue // its own way reports the context's end
		}
		left = append(left, r)
	}
	if mergeableGroup(left) && s.commitMerged(left) {
		return
	}
	for len(left) > 1 {
		out, all := s.commitTogether(left)
		if all {
			return // every tick done, or every one out
		}
		left = append(left[:out], left[out+1:]...)
	}
	if len(left) == 1 {
		r := left[0]
		r.next, r.done, r.err = s.commitAhead(r.ctx, r.lease, r.tick, r.h)
	}
}

// commitTogether commits ticks (more than one) in one transaction. all
// is true when that decided every tick: each done with the transaction's
// outcome, or each out of the group. Otherwise the server refused one
// tick's statement, ticks[out], and nothing of the group was written: the
// tick is out of the group and the caller tries again without it.
func (s *Store) commitTogether(ticks []*aheadReq) (out int, all bool) {
	// The transaction outlives any one caller's context: a caller that
	// gives up must not abort the others' ticks.
	ctx := context.WithoutCancel(ticks[0].ctx)
	lazy := true
	for _, r := range ticks {
		lazy = lazy && r.tick.MayLag
	}
	ends := make([]int, len(ticks)) // each tick's statements end here in the transaction's queue
	var tx *wtx
	commitSent, err := s.once(ctx, func(t *wtx) error {
		tx = t
		t.lazy, t.lazySent, t.testSetting = lazy, lazy, testSetting
		t.implicit = implicitTick
		for i, r := range ticks {
			r.next = r.h
			chains := chainOf(r.h.hash, r.h.head, r.tick.Events)
			t.Queue(fenceGroupSQL, aheadFenceArgs(s, r.lease, r.tick, r.h, &chains, lazy)...)
			err := s.queueTick(t, r.lease, r.tick, &r.next, chains, "", aheadBegin(r.tick), nil)
			ends[i] = len(t.pending)
			if err != nil {
				t.failed = ends[i] // refused here, before anything was sent
				return err
			}
		}
		return t.commit(ctx)
	})
	if s.testGroup != nil {
		s.testGroup(len(ticks), err == nil)
	}
	switch {
	case err == nil:
		for _, r := range ticks {
			r.done, r.err = true, nil
		}
		return 0, true
	case commitSent && !rolledBack(err):
		// COMMIT was sent and its answer lost: every tick's outcome is
		// unknown, as a lone tick's would be.
		for _, r := range ticks {
			r.done, r.err = true, err
		}
		return 0, true
	}
	if tx != nil && tx.failed > 0 {
		for i, end := range ends {
			if tx.failed <= end {
				ticks[i].next, ticks[i].done, ticks[i].err = ticks[i].h, false, nil
				return i, false
			}
		}
	}
	// Refused before any tick's statement or at COMMIT, or on a path that
	// cannot tell which statement: each tick goes its own way.
	for _, r := range ticks {
		r.next, r.done, r.err = r.h, false, nil
	}
	return 0, true
}

// rolledBack reports whether err, from a COMMIT that was sent, is the
// server's answer that it rolled the transaction back (nothing written),
// rather than a loss that leaves the outcome unknown.
func rolledBack(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || errors.Is(err, errRolledBack)
}

// fenceGroupSQL is fenceAheadSQL for a tick in a group, with its
// parameters: it locks the run's row first and does not wait for one
// that another transaction holds (SQLSTATE 55P03 then takes the tick out
// of the group, and it waits alone), so that one run's lock holds up no
// other run's tick.
var fenceGroupSQL = expectOne(strings.Replace(fenceLocked(), " FOR NO KEY UPDATE)", " FOR NO KEY UPDATE NOWAIT)", 1), "fence")

// aheadFenceArgs are fenceAheadSQL's parameters for tick after h, whose
// events' chain hashes are chains; lazy turns synchronous_commit off for
// the transaction.
//
// The list and its values share one allocation: each value goes as a
// pointer into it (a pointer goes into an interface without an
// allocation of its own, and is sent as what it points to; see
// encodeOne), where boxing each took one.
func aheadFenceArgs(s *Store, lease store.Lease, tick store.Tick, h runHead, chains *chain, lazy bool) []any {
	f := &fenceArgs{run: lease.RunID, owner: lease.Owner, prev: h.hash, state: tick.State, outcome: tick.Outcome,
		gen: lease.Generation, head: h.head, last: h.head + int64(len(tick.Events)), due: nanos(tick.DueAt)}
	hash := &f.prev
	if chains.len() > 0 {
		hash = &chains.last // sent as the string is, without a copy
	}
	f.vals = [...]any{&f.run, &f.owner, &f.gen, &f.head, &f.prev, &f.last, hash, &f.state, s.injected(), &f.outcome, lazy, &f.due}
	return f.vals[:]
}

// fenceArgs holds aheadFenceArgs' list and the values it points to.
type fenceArgs struct {
	vals                             [12]any
	run, owner, prev, state, outcome string
	gen, head, last, due             int64
}

// aheadBegin numbers the one-round-trip path's begun attempts: only
// intents new in the tick are begun there, each with its first.
func aheadBegin(tick store.Tick) []int64 {
	begin := make([]int64, len(tick.Begin))
	for i := range begin {
		begin[i] = 1
	}
	return begin
}
