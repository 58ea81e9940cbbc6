package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/panel"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// Inbox kinds: what people and programs may submit to a run.
const (
	KindInput     = "input"     // a domain input, accepted in INGEST
	KindChoice    = "choice"    // a person's choice among options: {"proposal_id": ..., "option": ...}, accepted in INGEST
	KindControl   = "mrp"       // a person's MRP transition: {"trigger": ..., "proposal_id"?: ..., "reason"?: ...}, accepted in INGEST
	KindApprove   = "approve"   // {"approval_id": ...}; the grant is already in the ledger
	KindDeny      = "deny"      // {"request_id": ..., "reason": ...}
	KindCancel    = "cancel"    // {"reason": ...}
	KindReconcile = "reconcile" // {"intent_id": ..., "resolution": "confirmed_success" | "confirmed_failure" | "abandon"}
)

// InboxKinds lists every inbox kind the runner reads; anything else in an
// inbox is never consumed.
var InboxKinds = []string{KindInput, KindChoice, KindControl, KindApprove, KindDeny, KindCancel, KindReconcile}

// Event kinds in a run's log, besides control records.
const (
	EventControl  = "control"          // an accepted control transition (a control.Record)
	EventRejected = "control.rejected" // a refused control event, audited
	EventAccepted = "accepted"         // an input the run accepted (replay starts here)
)

// ErrRuleBudget marks a workflow error as a rule-budget pathology (the L
// engine's typed budget errors wrap it); the run ends RULE_BUDGET_EXHAUSTED.
var ErrRuleBudget = errors.New("rule budget exhausted")

// tick is one pass over a run under one lease: the state loaded from the
// store, and everything decided since the last commit.
type tick struct {
	// offers are the proposals the inputs since the last commit left
	// waiting for a person's choice (Decision.Offered), for its notice.
	offers  []string
	run     store.Run
	lease   store.Lease
	wf      Workflow
	cp      *checkpoint
	pending store.Tick
	moved   bool
	inbox   []store.Inbound // pending inbox, read once per pass
	inboxOK bool
	// pre is the checkpoint read with the run's header (see takeUp),
	// until load takes it.
	pre *takenUp
	// fold is an input handed in by SubmitAdvance and not yet durable: it
	// waits at the end of the pending inbox, and the tick that accepts it
	// appends it to the store's inbox in its own commit. folded reports
	// that it is durable (that commit returned, or the store already held
	// it).
	fold   *store.Inbound
	folded bool
	// start is the run this pass creates with its first commit
	// (StartAdvance), nil on a pass of a run that exists.
	start *startRun
	// inbox0 is how the pass knows the inbox it started from: read from
	// the store, or taken as empty (as the last pass left it) until its
	// first commit confirms it.
	inbox0 inboxStart
	// settle is the last position of the inbox entries the pass leaves
	// pending, resting in a state that does not take them (leftPending);
	// the run is settled there (store.Settler) as the pass lets it go.
	settle int64
	// begun is the attempt each intent has in flight by this pass's own
	// commits (its number, and the lease generation it began under): the
	// pass sends it without reading the intent's attempts back.
	begun begunSet

	committed committedView    // what the last commit made durable, for the wires
	wire      []tripwire.Event // the pending tick's events as the wires see them
	// records holds the control records wire points at, so that a tick's
	// records take one allocation rather than one each. Records are never
	// changed once appended; a pointer into an array append has since
	// outgrown still reads its record. Dropped with wire.
	records []control.Record
	// inputs holds the accepted inputs wire points at, as records holds
	// its records. Dropped with wire.
	inputs []tripwire.Input
	// evMaps are the maps of evidence digests the pass has handed to the
	// machine (evd), which the records of the pending tick hold; evUsed of
	// them are held, the rest free since the last commit.
	evMaps []map[string]string
	evUsed int
	// bodies is where the pending tick's control records are written
	// (fireAs), each event's body a piece of it: handed to the store's
	// Commit, which keeps none of them once it returns
	// (store.Store.Commit), and written over by the next tick's records
	// once the tick has committed (dropRecords; decision 1724).
	bodies []byte
	// scratch is the pass's scratch (takeScratch), itself handed on to
	// the next pass with what t leaves in it (leaveScratch).
	scratch *passScratch
	// lists are the arrays of the wires' lists of the tick about to be
	// committed (commitBoundary), kept for the next tick's.
	lists boundaryLists
	obs   tickObs // logs, spans and metrics of the tick (observe.go)
}

// boundaryLists are the arrays commitBoundary fills for the wires: what
// the tick consumes, its intents, the approvals they consume, its
// attempts' results and its receipts. Nothing keeps them past the check
// and the commit (tripwire.AfterCommit reads the chain and the lease; a
// trip's report is written at once, and the trip drops them).
type boundaryLists struct {
	consumed  []tripwire.Inbound
	intents   []tripwire.Intent
	approvals []tripwire.Consumption
	results   []tripwire.Result
	receipts  []tripwire.Receipt
	// open is the array the next tick's open effects are written into:
	// never the one the last commit's view holds (tick.committed.open),
	// which the next check compares them with. Once a tick commits, the
	// view it replaces hands its array here (afterCommit).
	open []tripwire.Effect
}

// clear empties the lists, dropping what their arrays refer to.
func (l *boundaryLists) clear() {
	clear(l.consumed[:cap(l.consumed)])
	clear(l.intents[:cap(l.intents)])
	clear(l.approvals[:cap(l.approvals)])
	clear(l.results[:cap(l.results)])
	clear(l.receipts[:cap(l.receipts)])
	clear(l.open[:cap(l.open)])
	l.consumed, l.intents, l.approvals, l.results = l.consumed[:0], l.intents[:0], l.approvals[:0], l.results[:0]
	l.receipts, l.open = l.receipts[:0], l.open[:0]
}

// passScratch is what a pass's ticks hold only until each commits: the
// arrays of the wires' events and of the records they point at, and the
// maps of evidence digests those records hold. Nothing outside the pass
// keeps any of it (the store is handed the events' bytes, the logs and
// metrics copy strings, the wires keep nothing past the check), so a
// tick that commits frees it for the pass's next tick, and a pass that
// ends hands it to the runner's next pass (Runner.scratch) instead of
// each tick allocating its own.
type passScratch struct {
	records []control.Record
	wire    []tripwire.Event
	evMaps  []map[string]string
	bodies  []byte
	inputs  []tripwire.Input
	lists   boundaryLists
	tick    store.Tick // a committed tick's arrays of records, emptied (spareTick)
	// prover takes the digests of the pass's accepted control records
	// (fireAs): a digester the tick itself would make the tick escape
	// to the heap, where the pass otherwise keeps it on its stack.
	prover recordProver
	// fold is the pass's copy of the input SubmitAdvance handed it
	// (queueFold; tick.fold points here), and inbox the array of the
	// pending inbox a pass takes as empty and appends that input to.
	// Both are the pass's alone while it holds the scratch, and
	// leaveScratch empties them.
	fold  store.Inbound
	inbox []store.Inbound
	// begun is the array of the pass's begunSet (tick.begun), emptied.
	begun begunSet
	// outputs holds a receipt's one output digest while close hands it
	// to the receipt's check, which copies it: a list of its own moved to
	// the heap with the observation, one allocation a receipt. Empty
	// again once the receipt is made.
	outputs [1]string
}

// takeScratch gives t the scratch a finished pass left, if any.
func (r *Runner) takeScratch(t *tick) {
	s, _ := r.scratch.Get().(*passScratch)
	if s == nil {
		t.scratch = new(passScratch)
		return
	}
	t.records, t.wire, t.evMaps, t.evUsed, t.bodies = s.records[:0], s.wire[:0], s.evMaps, 0, s.bodies[:0]
	t.lists, t.pending, t.inputs, t.begun = s.lists, s.tick, s.inputs[:0], s.begun[:0]
	*s = passScratch{prover: recordProver{texts: s.prover.texts}, inbox: s.inbox} // t holds the rest
	t.scratch = s
}

// leaveScratch hands t's scratch to the runner's next pass; t holds none
// of it afterwards. Only at the end of t's pass: every record of its
// ticks is dropped by then.
func (r *Runner) leaveScratch(t *tick) {
	if t.records == nil && t.wire == nil && t.evMaps == nil && t.bodies == nil {
		return
	}
	clear(t.records[:cap(t.records)])
	clear(t.wire[:cap(t.wire)])
	clear(t.inputs[:cap(t.inputs)])
	t.lists.clear()
	s := t.scratch
	if s == nil {
		s = new(passScratch)
	}
	clear(s.inbox[:cap(s.inbox)])
	clear(t.begun[:cap(t.begun)])
	*s = passScratch{records: t.records[:0], wire: t.wire[:0], evMaps: t.evMaps, bodies: t.bodies[:0], inputs: t.inputs[:0], lists: t.lists,
		tick: spareTick(&t.pending), prover: recordProver{texts: s.prover.texts}, inbox: s.inbox[:0], begun: t.begun[:0]}
	r.scratch.Put(s)
	t.scratch = nil
	t.records, t.wire, t.evMaps, t.evUsed, t.bodies = nil, nil, nil, 0, nil
	t.lists, t.pending, t.inputs, t.begun = boundaryLists{}, store.Tick{}, nil, nil
}

// dropRecords forgets the pending tick's wires and records once it has
// committed, keeping their arrays, evidence maps and the records' bytes
// for the next tick to write over: nothing but the store read those
// bytes, and it keeps none of them.
func (t *tick) dropRecords() {
	t.wire, t.records, t.evUsed, t.bodies, t.inputs = t.wire[:0], t.records[:0], 0, t.bodies[:0], t.inputs[:0]
}

// evd returns a map of evidence digests holding the name and digest
// pairs kv (name, digest, name, digest, ...), for fire: one of the pass's
// maps no record of the pending tick holds, emptied, or a new one.
func (t *tick) evd(kv ...string) map[string]string {
	var m map[string]string
	if t.evUsed < len(t.evMaps) {
		m = t.evMaps[t.evUsed]
		clear(m)
	} else {
		m = make(map[string]string, len(kv)/2)
		t.evMaps = append(t.evMaps, m)
	}
	t.evUsed++
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// appendEvent adds an event to the pending tick, and what the wires see
// of it. A tick's first event makes room for a tick's usual count at once
// (a governed step's ticks hold five to eight) rather than growing both
// slices by doubling up to it.
func (t *tick) appendEvent(ev store.Event, w tripwire.Event) {
	if t.pending.Events == nil {
		t.pending.Events = make([]store.Event, 0, tickEvents)
	}
	if t.wire == nil {
		t.wire = make([]tripwire.Event, 0, tickEvents)
	}
	t.pending.Events = append(t.pending.Events, ev)
	t.wire = append(t.wire, w)
}

const tickEvents = 8

// tickBodies is the room a pass makes at first for its ticks' control
// records: a governed step's ticks write 4 to 6 KB of them each.
const tickBodies = 8 << 10

type inboxStart int

const (
	inboxRead      inboxStart = iota // read from the store (or not needed)
	inboxAssumed                     // taken as empty, not yet confirmed
	inboxConfirmed                   // taken as empty; a commit expecting it empty went through
)

// Advance moves one run as far as it can go without outside input and
// reports whether it moved. It holds the run's lease for the pass; a run
// another runner holds is skipped, not waited for.
func (r *Runner) Advance(ctx context.Context, runID string) (moved bool, err error) {
	return r.advance(ctx, runID, nil)
}

// advance is Advance, with fold (when not nil) an input to accept as if it
// were pending in the run's inbox after everything there (see
// SubmitAdvance). Whatever becomes of the pass, fold is durable when
// advance returns without error: if no commit of the pass took it, it is
// submitted on its own.
func (r *Runner) advance(ctx context.Context, runID string, fold *store.Inbound) (moved bool, err error) {
	moved, folded, stale, err := r.pass(ctx, runID, fold, true, nil)
	if stale {
		// The pass started from what this runner's last pass left (the
		// run's header, an empty inbox) and the store says otherwise: it
		// took the lease away or parked the run, or something arrived in
		// the inbox. Nothing the pass decided on it was kept. Start again
		// from what the store says. (An input an earlier commit of the
		// pass made durable is not handed in again.)
		again := fold
		if folded {
			again = nil
		}
		var foldedAgain bool
		moved, foldedAgain, _, err = r.pass(ctx, runID, again, false, nil)
		folded = folded || foldedAgain
	}
	if fold == nil {
		return moved, err
	}
	if errors.Is(err, ErrDefinitionNotLoaded) {
		// The run is another definition's: the pass touched nothing, and
		// the input is submitted on its own below, as for a run another
		// runner holds, for a runner holding that definition to take.
		err = nil
	}
	// Not deferred: a pass that never returns (the process dies) leaves
	// nothing behind, and the caller was told nothing.
	if !folded {
		if serr := r.submitInbound(ctx, *fold); serr != nil && err == nil {
			err = serr
		}
	}
	return moved, err
}

// pass is one pass of advance; folded reports that fold (if any) is
// durable. With useCache the pass may start from what this runner's last
// pass of the run left instead of reading it (heldRun): the header, and,
// for a pass handed an input, an inbox that pass left empty. stale
// reports that the store proved such a start wrong before anything
// decided on it was kept, so the pass should be made again from the store.
//
// With st not nil the run does not exist yet: the pass starts from the new
// run st describes, leased to this runner, and its first commit creates
// it (StartAdvance).
func (r *Runner) pass(ctx context.Context, runID string, fold *store.Inbound, useCache bool, st *startRun) (moved, folded, stale bool, err error) {
	var t *tick
	var cached, inboxEmpty bool
	defer func() {
		r.endPass(t, err)
		if t != nil {
			r.leaveScratch(t)
		}
		folded = t != nil && t.folded
		switch c := store.CodeOf(err); {
		case !cached:
		case c == store.CodeFenced || c == store.CodeQuarantined:
			stale = true
		case t != nil && t.inbox0 == inboxAssumed && c == store.CodeHeadMismatch:
			stale = true // the tick that expected the inbox empty was refused
		case t != nil && t.inbox0 == inboxAssumed && err == nil:
			stale = true // nothing was committed on the assumption: read it
		}
	}()
	var run store.Run
	var pre *takenUp
	var pending []store.Inbound
	if useCache {
		run, inboxEmpty, cached = r.heldRun(runID)
	}
	if st != nil {
		run, pre, pending = st.taken()
	} else if !cached {
		if run, pre, pending, err = r.takeUp(ctx, runID); err != nil {
			return false, false, false, err
		}
	}
	if run.Outcome != "" || run.Quarantine != "" {
		return false, false, false, nil
	}
	wf, err := r.workflow(run)
	if err != nil {
		return false, false, false, err
	}
	var lease store.Lease
	if st != nil {
		lease = st.lease
	} else {
		lease, err = r.lease(ctx, runID)
	}
	if store.CodeOf(err) == store.CodeLeaseHeld {
		return false, false, false, nil
	} else if err != nil {
		return false, false, false, err
	}
	if fencedOut(run, lease) {
		// The lease this runner holds is older than the run's: by its
		// clock the lease had time to go, by the store's it lapsed and
		// another runner took the run. The run is that runner's; the
		// fencing wire would park it for everyone.
		r.forgetLease(lease)
		return false, false, false, nil
	}
	t = &tick{run: run, lease: lease, wf: wf, pre: pre, start: st}
	if pre != nil {
		t.inbox, t.inboxOK = pending, true
	}
	r.takeScratch(t)
	r.beginTick(t)
	defer func() { r.settleLease(ctx, t, err) }()
	r.mu.Lock()
	kept, ok := r.takeCached(runID) // a pass that fails leaves no cache behind
	r.mu.Unlock()
	if ok && kept.head == run.Head && kept.generation == lease.Generation {
		t.cp = kept.cp
	} else {
		build, err := r.observeLoad(ctx, t)
		if err != nil {
			return false, false, false, err
		}
		if t.cp != nil {
			if err := r.checkLoad(ctx, t, build); errors.Is(err, errTripped) {
				return false, false, false, nil
			} else if err != nil {
				return false, false, false, err
			}
		}
	}
	if t.cp == nil {
		return false, false, false, nil // quarantined while loading
	}
	t.committed = viewOf(t.cp)
	if fold != nil && cached && inboxEmpty {
		// The last pass left the inbox empty: the pass takes that as read,
		// and its first commit expects the inbox empty after what it
		// consumes (store.Tick.ExpectInboxEmpty), so that anything that
		// arrived meanwhile refuses it and the pass is made again.
		t.inbox, t.inboxOK, t.inbox0 = nil, true, inboxAssumed
	}
	if fold != nil {
		if err := r.queueFold(ctx, t, fold); err != nil {
			return false, false, false, err
		}
	}
	idle := false // the pass stopped because nothing more could move
	for i := 0; i < 10_000; i++ {
		progressed, err := r.step(ctx, t)
		if errors.Is(err, errTripped) {
			return true, false, false, nil // parked; other runs go on
		} else if err != nil {
			moved, err = r.parkIfStuck(ctx, t, err)
			return moved, false, false, err
		}
		if !progressed {
			idle = true
			break
		}
		t.moved = true
	}
	if err := r.flush(ctx, t); errors.Is(err, errTripped) {
		return true, false, false, nil
	} else if err != nil {
		moved, err = r.parkIfStuck(ctx, t, err)
		return moved, false, false, err
	}
	if err := r.checkIdle(ctx, t); errors.Is(err, errTripped) {
		return true, false, false, nil
	} else if err != nil {
		return t.moved, false, false, err
	}
	if idle && restingState(t.cp.Control.State) {
		t.settle = t.leftPending()
		if err := r.keepDue(ctx, t); err != nil {
			return t.moved, false, false, err
		}
	}
	r.mu.Lock()
	if _, held := r.leases[runID]; held {
		run := t.run
		run.State, run.Lease = t.cp.Control.State, t.lease
		r.putCached(runID, cachedCheckpoint{head: t.run.Head, generation: t.lease.Generation, cp: t.cp, run: run,
			inboxEmpty: t.inboxOK && len(t.inbox) == 0})
	}
	r.mu.Unlock()
	return t.moved, false, false, nil
}

// heldRun returns the run's header as this runner's last pass left it,
// when the pass may start from it without reading the store: the runner
// still holds the lease that pass ended under, comfortably unexpired by
// its clock (as lease does, which then writes nothing either). No other
// writer can have moved the run meanwhile — only a lease holder commits —
// and should the store have taken the lease away (a quarantine does), the
// pass's first commit is fenced and nothing it decided is kept.
func (r *Runner) heldRun(runID string) (run store.Run, inboxEmpty, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cps[runID]
	l, held := r.leases[runID]
	if !ok || !held || l.Generation != c.generation || !l.ExpiresAt.After(r.cfg.Clock().Add(r.cfg.LeaseTTL/2)) {
		return store.Run{}, false, false
	}
	return c.run, c.inboxEmpty, true
}

// takeCached removes the run's cached checkpoint, if any, and returns it.
// Its entry is kept for the next putCached (cpSpare): a cachedCheckpoint
// is larger than a map keeps in its own slots, and a pass's taking the
// entry and putting it back allocated one each time. Called with r.mu
// held.
func (r *Runner) takeCached(runID string) (cachedCheckpoint, bool) {
	c, ok := r.cps[runID]
	if !ok {
		return cachedCheckpoint{}, false
	}
	delete(r.cps, runID)
	kept := *c
	*c = cachedCheckpoint{} // the spare keeps no checkpoint
	r.cpSpare = append(r.cpSpare, c)
	return kept, true
}

// putCached caches the run's checkpoint in a spare entry if there is
// one. Called with r.mu held.
func (r *Runner) putCached(runID string, c cachedCheckpoint) {
	if p := r.cps[runID]; p != nil {
		*p = c
		return
	}
	var p *cachedCheckpoint
	if n := len(r.cpSpare); n > 0 {
		p, r.cpSpare = r.cpSpare[n-1], r.cpSpare[:n-1]
	} else {
		p = new(cachedCheckpoint)
	}
	*p = c
	r.cps[runID] = p
}

// parkIfStuck quarantines a run whose commit the store refuses for good —
// an intent whose identity another run already holds, a record that
// already exists — because retrying it every pass would never succeed and
// would hide the problem. Other errors (busy database, lost lease) are
// returned for the caller to retry.
func (r *Runner) parkIfStuck(ctx context.Context, t *tick, err error) (bool, error) {
	if t.fold != nil && !t.folded && slices.ContainsFunc(t.pending.Submit, func(in store.Inbound) bool { return in.ID == t.fold.ID }) {
		// The refusal may be the inbox's (the id is taken) rather than the
		// tick's: the input is submitted on its own, and the next pass
		// tells which.
		return t.moved, err
	}
	if t.start.pending() {
		// The run was not created: nothing to park (a run id taken is
		// another run's).
		return t.moved, err
	}
	switch store.CodeOf(err) {
	case store.CodeIdempotencyConflict, store.CodeExists:
		r.forget(t.run.ID)
		r.log.Error("parking run: commit refused for good", "run_id", t.run.ID, "err", err)
		if qerr := r.quarantine(context.WithoutCancel(ctx), t, "commit refused for good: "+err.Error()); qerr != nil {
			return t.moved, qerr
		}
		t.cp = nil
		return true, nil
	}
	return t.moved, err
}

// settleLease decides what happens to the lease after a pass: a run that
// ended needs none; a run that waits for a person is let go, so whoever
// acts for that person can advance it at once; a run that only waits for
// its next input stays leased, saving a write per step.
func (r *Runner) settleLease(ctx context.Context, t *tick, failed error) {
	r.mu.Lock()
	if l, ok := r.leases[t.run.ID]; ok && l.Generation == t.lease.Generation {
		r.leases[t.run.ID] = t.lease // renewed during the pass
	}
	r.mu.Unlock()
	if t.start.pending() {
		return // the run was not created: no lease to settle
	}
	if failed != nil {
		// What the pass decided last, an end or a wait, is not what the
		// store holds, and the lease is still the store's for this
		// runner (a fenced pass has forgotten it already): it stays known,
		// for the pass that retries the run under it or for Close to give
		// up. Forgotten, it stayed held until it lapsed, keeping every
		// other runner off the run.
		return
	}
	if t.cp == nil {
		r.forget(t.run.ID)
		return
	}
	switch state := t.cp.Control.State; {
	case r.machine.Final(state):
		r.forget(t.run.ID)
	case state == "WAIT_APPROVAL" || state == "HUMAN_RECONCILIATION", t.settle > 0 && r.cfg.Claimer != nil:
		// Resting for a person, or with entries it does not take in a
		// store whose runners claim work (the claiming runner would let
		// it go after the pass anyway): let go, settled if there are such
		// entries.
		r.letGoSettled(ctx, t.lease, t.settle)
	case t.settle > 0:
		r.settleHeld(ctx, t.lease, t.settle)
	}
}

// leftPending is the last position of the inbox entries the pass read
// from the store and left pending, or 0 if it left none. When the pass
// ends idle in a resting state those are entries the state does not take:
// each step of the pass offers the state every pending entry of each kind
// it takes. (An input handed in with SubmitAdvance and not taken is not
// the store's yet; it is submitted after the pass, after every entry.)
func (t *tick) leftPending() int64 {
	if !t.inboxOK {
		return 0
	}
	var last int64
	for _, in := range t.inbox {
		if in.Seq != math.MaxInt64 && in.Seq > last {
			last = in.Seq
		}
	}
	return last
}

// fencedOut reports whether run's header, read by a pass, shows a lease
// newer than the pass's own: another runner took the run over.
func fencedOut(run store.Run, l store.Lease) bool {
	return run.Lease.Generation > l.Generation
}

// load reads the run's checkpoint, or starts a fresh one. A checkpoint that
// cannot be trusted quarantines the run: it never resumes silently.
func (r *Runner) load(ctx context.Context, t *tick) (string, error) {
	var stored store.Checkpoint
	var err error
	if pre := t.pre; pre != nil {
		stored, err, t.pre = pre.cp, pre.cpErr, nil
	} else {
		stored, err = r.cfg.Store.Checkpoint(ctx, t.run.ID)
	}
	// A pass that took the lease afresh read the run's header before it
	// held it: a runner that held the lease until then may have committed
	// in between, and the header is behind the checkpoint read after. Every
	// commit that moves the head writes the checkpoint that follows it, so
	// a checkpoint that is not the header's is held to the header as it is
	// now, under this pass's lease, before anything is made of it: a run
	// that moved on is taken where it stands (or left, if it ended), and
	// only a disagreement that remains quarantines it.
	if err == nil && stored.Seq != t.run.Head {
		now, rerr := r.cfg.Store.Run(ctx, t.run.ID)
		if rerr != nil {
			return "", rerr
		}
		if fencedOut(now, t.lease) {
			// Another runner took the run since this pass took its
			// lease (by the store's clock the lease lapsed): the pass
			// is fenced, and leaves the run to that runner.
			r.forgetLease(t.lease)
			return "", store.Errorf(store.CodeFenced, "load", t.run.ID, nil,
				"lease generation %d of %q is stale; current is %d of %q", t.lease.Generation, t.lease.Owner, now.Lease.Generation, now.Lease.Owner)
		}
		if now.Head != t.run.Head {
			t.run = now
			if now.Outcome != "" || now.Quarantine != "" {
				return "", nil // nothing left to do; t.cp stays nil
			}
		}
	}
	if store.CodeOf(err) == store.CodeNotFound && t.run.Head == 0 {
		state, err := t.wf.Init(t.run.ID)
		if err != nil {
			return "", fmt.Errorf("workflow init: %w", err)
		}
		t.cp = &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, WorkflowID: t.wf.ID(), WorkflowDigest: t.wf.Digest(),
			Control: r.machine.Initial(), Completion: Continue, Open: []openEffect{}, Ingest: []pendingReceipt{}}
		if err := t.cp.setInitial(state); err != nil {
			return "", fmt.Errorf("workflow init state: %w", err)
		}
		t.cp.Budget = r.openLedger(t, false)
		return r.cfg.PlatformDigest, nil
	} else if err != nil && store.CodeOf(err) != store.CodeNotFound && store.CodeOf(err) != store.CodeCorrupt {
		// Unavailable, or encrypted under a key this runner lacks
		// (store.CodeSealed): nothing is known against the run.
		return "", err
	}
	reason := ""
	if store.CodeOf(err) == store.CodeCorrupt {
		// Stored bytes that fail their digest or their encryption's
		// authentication: never resume from them.
		reason = err.Error()
	} else if err != nil {
		reason = fmt.Sprintf("run has %d events but no checkpoint", t.run.Head)
	} else if stored.Seq != t.run.Head {
		reason = fmt.Sprintf("checkpoint follows event %d but the run is at %d", stored.Seq, t.run.Head)
	} else if cp, derr := decodeCheckpoint(stored, t.wf); derr != nil {
		reason = derr.Error()
	} else if cp.Control.Table != "" && cp.Control.Table != r.machine.Digest() {
		reason = fmt.Sprintf("checkpoint was written under FSM table %s, loaded %s", cp.Control.Table, r.machine.Digest())
	} else {
		t.cp = cp
		return stored.BuildDigest, nil
	}
	r.log.Error("quarantine", "run_id", t.run.ID, "reason", reason)
	return "", r.quarantine(ctx, t, reason)
}

// flush commits everything decided since the last commit, with the
// checkpoint, in one transaction.
func (r *Runner) flush(ctx context.Context, t *tick) error {
	p := &t.pending
	if len(p.Events) == 0 && len(p.Results) == 0 && len(p.Receipts) == 0 && len(p.Consume) == 0 && len(p.Begin) == 0 {
		return nil
	}
	r.chargeClock(t)
	p.DueAt = r.dueAt(t)
	// Written into the run's own buffer, over the last flush's checkpoint:
	// the store kept none of it (store.Store.Commit).
	body, err := t.cp.encodeReused()
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	// A long pass renews its lease before it lapses; a renewal that fails
	// (the lease was taken over) fences this pass out at the commit below.
	// (A run this commit creates has no lease to renew yet.)
	if !t.start.pending() && r.cfg.Clock().Add(r.cfg.LeaseTTL/2).After(t.lease.ExpiresAt) {
		if l, err := r.cfg.Store.RenewLease(ctx, t.lease, r.cfg.LeaseTTL); err == nil {
			t.lease = l
		}
	}
	p.ExpectHead = t.run.Head
	p.ExpectInboxEmpty = t.inbox0 == inboxAssumed
	// The run's own, written over at its next flush: the store keeps
	// none of a tick's checkpoint once Commit returns.
	// Its digest comes with the proof of it, so that the store does not
	// hash the body again (store.DigestProof): nothing writes over the
	// body before the commit.
	digest, proof := t.prove(body)
	t.cp.stored = store.Checkpoint{FormatVersion: CheckpointFormat, BuildDigest: r.cfg.PlatformDigest, Body: body, Digest: digest, Proof: proof}
	p.Checkpoint = &t.cp.stored
	p.State = t.cp.Control.State
	if r.machine.Final(t.cp.Control.State) {
		p.Outcome = r.machine.Outcome(t.cp.Control)
	}
	p.MayLag = mayLag(p)
	b := r.commitBoundary(t, p)
	if trips := tripwire.Check(b); len(trips) > 0 {
		return r.trip(ctx, t, b, trips)
	}
	r.addNotices(ctx, t, p)
	if err := r.commit(ctx, t, p); err != nil {
		if store.CodeOf(err) == store.CodeFenced {
			r.forgetLease(t.lease)
		}
		return err
	}
	r.afterCommit(t, b) // before the head moves: the carry is keyed by the head it knew
	t.run.Head += int64(len(p.Events))
	t.run.DueAt = p.DueAt
	if t.inbox0 == inboxAssumed {
		t.inbox0 = inboxConfirmed
	}
	if len(p.Submit) > 0 {
		t.folded = true
	}
	r.noteBegun(t, p)
	if len(p.Consume) > 0 {
		kept := t.inbox[:0]
		for _, in := range t.inbox {
			if !slices.Contains(p.Consume, in.ID) {
				kept = append(kept, in)
			}
		}
		t.inbox = kept
	}
	// The next tick's records go where this one's were: the store kept
	// none of them.
	t.pending = spareTick(p)
	return nil
}

// spareTick is an empty pending tick holding p's arrays of records (the
// events, intents, approvals, results, receipts, consumed and begun
// ids, submitted inputs, trace records), emptied, for the next tick to
// append to. p has committed, or will not be: the store keeps none of
// its slices once Commit returns (store.Store.Commit), and nothing in the
// runner reads them again.
func spareTick(p *store.Tick) store.Tick {
	clear(p.Events)
	clear(p.Intents)
	clear(p.Approvals)
	clear(p.Results)
	clear(p.Receipts)
	clear(p.Consume)
	clear(p.Begin)
	clear(p.Submit)
	clear(p.Trace)
	return store.Tick{Events: p.Events[:0], Intents: p.Intents[:0], Approvals: p.Approvals[:0], Results: p.Results[:0],
		Receipts: p.Receipts[:0], Consume: p.Consume[:0], Begin: p.Begin[:0], Submit: p.Submit[:0], Trace: p.Trace[:0]}
}

// mayLag reports whether tick p may be committed without waiting for the
// disk (store.Tick.MayLag; decision 1174): whether every record in it can
// be derived again should a power loss take it, and nothing follows from
// it before the store's next durable commit. It is so for a tick that
// leaves the run in INGEST, waiting for its next input, and holds nothing
// but events, the checkpoint (and the due time it gives the header),
// attempt results, receipts and trace records: the events and checkpoint
// are the pure core's, derived again from the durable records before
// them; a receipt and its result are what the reconciler asks the
// destination for again by idempotency key when it finds the attempt
// started under an earlier lease (the state a process killed after the
// destination applied and before the receipt leaves).
//
// Anything else keeps the tick durable: an intent or an attempt's
// beginning (an effect is sent after the commit), an approval's
// consumption, an inbound event the tick submits or consumes (its sender
// was told it was accepted; a person's action among them), a final
// outcome (reported to people), a state that waits for a person. So does
// any member of store.Tick not named here, a new one included: the test
// of this rule lists every member.
func mayLag(p *store.Tick) bool {
	if p.State != "INGEST" || p.Outcome != "" {
		return false
	}
	rest := *p
	rest.ExpectHead, rest.ExpectInboxEmpty, rest.State, rest.MayLag, rest.DueAt = 0, false, "", false, time.Time{}
	rest.Events, rest.Checkpoint, rest.Results, rest.Receipts, rest.Trace = nil, nil, nil, nil, nil
	// An empty list holds nothing: a pending tick appends to the arrays
	// of the tick before it (spareTick).
	v := reflect.ValueOf(&rest).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() == 0 {
			f.SetZero()
		}
	}
	return v.IsZero()
}

// noteBegun records the attempts the committed tick p began: attempt 1 of
// an intent new in p, the next one of an intent whose attempt this pass
// began before; any other begun intent is read back when it is sent, and
// so is one whose attempt p ended without beginning another.
func (r *Runner) noteBegun(t *tick, p *store.Tick) {
	for _, id := range p.Begin {
		var n int64
		if slices.ContainsFunc(p.Intents, func(in store.Intent) bool { return in.ID == id }) {
			n = 1
		} else if prev, ok := t.begun.get(id); ok && prev.Generation == t.lease.Generation {
			n = prev.N + 1
		}
		if n == 0 {
			t.begun.del(id)
			continue
		}
		t.begun.set(store.Attempt{IntentID: id, N: n, Status: store.AttemptStarted, Generation: t.lease.Generation})
	}
	// An attempt whose end p records is no longer in flight.
	for _, res := range p.Results {
		if !slices.Contains(p.Begin, res.IntentID) {
			t.begun.del(res.IntentID)
		}
	}
}

// begunSet is the attempts a pass has in flight, at most one per intent,
// found by the intent's id: a list, not a map, for the one or few effects
// a pass has open (a map cost its buckets' kilobyte every pass).
type begunSet []store.Attempt

// get returns the attempt of intent id, if any.
func (b begunSet) get(id string) (store.Attempt, bool) {
	for _, a := range b {
		if a.IntentID == id {
			return a, true
		}
	}
	return store.Attempt{}, false
}

// set records a, replacing the attempt of its intent, if any.
func (b *begunSet) set(a store.Attempt) {
	for i := range *b {
		if (*b)[i].IntentID == a.IntentID {
			(*b)[i] = a
			return
		}
	}
	*b = append(*b, a)
}

// del forgets the attempt of intent id, if any.
func (b *begunSet) del(id string) {
	*b = slices.DeleteFunc(*b, func(a store.Attempt) bool { return a.IntentID == id })
}

// evidence builds the evidence of a control event: each named item is a
// digest of what the runner holds as that evidence. The machine reads it
// as the event's payload.evidence.
func evidence(items map[string]any) map[string]string {
	out := make(map[string]string, len(items))
	for name, v := range items {
		out[name] = evidenceItem(name, v)
	}
	return out
}

// evidenceItem is the digest evidence gives the item name = v.
func evidenceItem(name string, v any) string {
	if s, ok := v.(string); ok && cjson.ValidDigest(s) {
		return s
	}
	d, ok := plainEvidenceDigest(name, v)
	if !ok {
		var err error
		if d, err = cjson.DigestOf(map[string]any{"evidence": name, "value": v}); err != nil {
			d = store.BodyDigest([]byte(fmt.Sprint(v)))
		}
	}
	return d
}

// The evidence items the runner fires with on every step, digested from
// their typed values without a map of values or boxing: each is exactly
// evidenceItem of the same value (TestTypedEvidenceMatchesEvidence).

// evidenceHead starts the bytes of an item whose name is plain.
func evidenceHead(b []byte, name string) []byte {
	b = append(b, `{"evidence":`...)
	b = cjson.AppendString(b, name)
	return append(b, `,"value":`...)
}

// evInt is evidenceItem(name, n).
func evInt(name string, n int64) string { return evIntIn(nil, name, n) }

// evIntIn is evInt, its text spelled in d (digestText).
func evIntIn(d *store.DigestTexts, name string, n int64) string {
	if !cjson.Plain(name) {
		return evidenceItem(name, n)
	}
	var buf [128]byte
	b := cjson.AppendInt(evidenceHead(buf[:0], name), n)
	return digestText(d, append(b, '}'))
}

// evCursor is evidenceItem(name, map[string]any{"accepted": n}).
func evCursor(name string, n int64) string { return evCursorIn(nil, name, n) }

// evCursorIn is evCursor, its text spelled in d (digestText).
func evCursorIn(d *store.DigestTexts, name string, n int64) string {
	if !cjson.Plain(name) {
		return evidenceItem(name, map[string]any{"accepted": n})
	}
	var buf [128]byte
	b := append(evidenceHead(buf[:0], name), `{"accepted":`...)
	b = cjson.AppendInt(b, n)
	return digestText(d, append(b, '}', '}'))
}

// evText is evidenceItem(name, s).
func evText(name, s string) string { return evTextIn(nil, name, s) }

// evTextIn is evText, its text spelled in d (digestText).
func evTextIn(d *store.DigestTexts, name, s string) string {
	if cjson.ValidDigest(s) {
		return s
	}
	if !cjson.Plain(name) || !cjson.Plain(s) {
		return evidenceItem(name, s)
	}
	var buf [256]byte
	b := cjson.AppendString(evidenceHead(buf[:0], name), s)
	return digestText(d, append(b, '}'))
}

// nilIfEmpty is l, or nil when it holds nothing: a list gathered in a
// buffer on the caller's stack, handed to evTexts as the list appended
// to nil would have been (nil, not empty, when nothing was appended).
func nilIfEmpty(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	return l
}

// evTexts is evidenceItem(name, l). It keeps nothing of l (a list it
// cannot write as plain text is handed on as a copy), so that its callers
// may gather the list on their stacks.
func evTexts(name string, l []string) string { return evTextsIn(nil, name, l) }

// evTextsIn is evTexts, its text spelled in d (digestText).
func evTextsIn(d *store.DigestTexts, name string, l []string) string {
	if l == nil || !cjson.Plain(name) {
		return evidenceItem(name, slices.Clone(l))
	}
	var buf [512]byte
	b := append(evidenceHead(buf[:0], name), '[')
	for i, s := range l {
		if !cjson.Plain(s) {
			return evidenceItem(name, slices.Clone(l))
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = cjson.AppendString(b, s)
	}
	return digestText(d, append(b, ']', '}'))
}

// The guard inputs of the events that carry them: read by the machine,
// never written.
var (
	guardFrontierPassed = map[string]bool{"frontier_passed": true}
	guardIntentDurable  = map[string]bool{"intent_durable": true}
	guardVerified       = map[string]bool{"independent_receipt_closed": true, "no_unknown_effects": true}
)

// plainEvidenceDigest is the digest evidence gives an item whose value is
// an integer, a plain string, a list of plain strings, or a list or an
// object (with plain keys) of such values a few levels deep (most of what
// the runner fires with: attempt numbers, intent ids, cursors), written
// directly instead of through the encoder's reflection: the same bytes
// cjson.Marshal writes for {"evidence": name, "value": v}. ok is false for
// anything else.
func plainEvidenceDigest(name string, v any) (string, bool) {
	if !cjson.Plain(name) {
		return "", false
	}
	var buf [256]byte
	b := append(buf[:0], `{"evidence":`...)
	b = cjson.AppendString(b, name)
	b = append(b, `,"value":`...)
	b, ok := cjson.AppendPlain(b, v)
	if !ok {
		return "", false
	}
	return cjson.Digest(append(b, '}')), true
}

// fire steps the FSM with an event the runner itself issues, under the
// first (role, capability) pair the table grants for it. A refusal is a
// runner defect: it is audited and returned.
func (r *Runner) fire(t *tick, typ string, guards map[string]bool, evd map[string]string) error {
	role, capability := r.authority(typ)
	return r.fireAs(t, typ, role, capability, guards, evd)
}

// authority is the first authority pair the machine declares for an
// event, or none.
func (r *Runner) authority(typ string) (string, string) {
	a := r.authorities[typ]
	return a.Role, a.Capability
}

// fireAs steps the FSM with an event under the given authority; it appends
// the control record to the pending tick either way.
func (r *Runner) fireAs(t *tick, typ, role, capability string, guards map[string]bool, evd map[string]string) error {
	cfg := t.cp.Control
	cfg.Context = guards
	t.cp.Transitions++
	e := control.Event{Type: typ, ActorRole: role, Capability: capability, EventID: t.cp.ids.id(t.run.ID, t.cp.Transitions)}
	// The machine writes the record as it steps, after the tick's records
	// before it (t.bodies), where the records of the pass's committed ticks
	// were: no allocation once the pass's buffer has grown to a tick's
	// records. An accepted record's digest is the next configuration's
	// Head, which the machine took of these very bytes. A buffer that
	// grows leaves the records before in the old one, which nothing
	// writes again.
	if t.bodies == nil {
		t.bodies = make([]byte, 0, tickBodies)
	}
	start := len(t.bodies)
	if t.scratch == nil {
		t.scratch = new(passScratch)
	}
	prover := &t.scratch.prover
	res, b, err := r.machine.StepEvidenceDigested(t.bodies, cfg, e, evd, prover)
	if err != nil {
		return fmt.Errorf("encode control record: %w", err)
	}
	body := b[start:len(b):len(b)]
	t.bodies = b
	rec := t.keepRecord(res.Record)
	if res.Rejection != nil {
		d, proof := t.prove(body)
		t.appendEvent(store.Event{Kind: EventRejected, Body: body, Digest: d, Proof: proof}, tripwire.Event{Kind: EventRejected, Digest: d, Record: rec})
		return &RefusedError{Event: typ, Reason: string(res.Record.Reason), Detail: res.Record.Detail}
	}
	d, proof := res.Next.Head, prover.proof
	prover.proof = store.DigestProof{}
	t.appendEvent(store.Event{Kind: EventControl, Body: body, Digest: d, Proof: proof}, tripwire.Event{Kind: EventControl, Digest: d, Record: rec})
	next := res.Next
	next.Context = nil
	t.cp.Control = next
	return nil
}

// recordProver is the control machine's digester for the runner's
// control records: it takes an accepted record's digest with the store's
// ProveDigest as the machine steps (fireAs) and keeps the proof, which
// the record's event carries to the store: the record is hashed once, not
// again by the store (decision 1747).
type recordProver struct {
	proof store.DigestProof // of the record last digested
	// texts spells the pass's digests (the records', the other bodies'
	// it proves, its evidence items'), a block of them at a time.
	texts store.DigestTexts
}

// DigestRecord is control.Digester's: store.ProveDigest's digest, whose
// proof p keeps.
func (p *recordProver) DigestRecord(canonical []byte) string {
	d, proof := p.texts.Prove(canonical)
	p.proof = proof
	return d
}

// texts is where the pass spells its digests' texts (store.DigestTexts).
func (t *tick) texts() *store.DigestTexts {
	if t.scratch == nil {
		t.scratch = new(passScratch)
	}
	return &t.scratch.prover.texts
}

// prove is store.ProveDigest(body), its text spelled with the pass's
// others.
func (t *tick) prove(body []byte) (string, store.DigestProof) {
	return t.texts().Prove(body)
}

// digestText is cjson.Digest(b), spelled in d when there is one.
func digestText(d *store.DigestTexts, b []byte) string {
	if d == nil {
		return cjson.Digest(b)
	}
	return d.Digest(b)
}

// eventID is a runner-issued control event's id: the run's id, a colon and
// the transition's number, in one allocation. fireAs cuts it from a batch
// (eventIDs); this is what the batch must spell.
func eventID(runID string, n int64) string {
	var buf [128]byte
	b := append(append(buf[:0], runID...), ':')
	return string(strconv.AppendInt(b, n, 10))
}

// eventIDs are the ids of a run's next transitions (eventID), spelled
// one after another in one string and cut from it: one allocation for
// idBatch transitions, where each id was one of its own.
type eventIDs struct {
	run  string
	s    string
	from int64        // the transition the first id is of
	ends [idBatch]int // where each id ends in s
}

const idBatch = 16

// id is eventID(runID, n).
func (e *eventIDs) id(runID string, n int64) string {
	// n before from wraps past idBatch, but for a batch spelled from
	// near math.MaxInt64, which an n near math.MinInt64 wraps back into:
	// n < from is asked first.
	i := uint64(n) - uint64(e.from)
	if e.s == "" || e.run != runID || n < e.from || i >= idBatch {
		e.fill(runID, n)
		i = 0
	}
	start := 0
	if i > 0 {
		start = e.ends[i-1]
	}
	return e.s[start:e.ends[i]]
}

// fill spells the ids of transitions n to n+idBatch-1 of run runID (as
// far as an int64 goes).
func (e *eventIDs) fill(runID string, n int64) {
	var buf [idBatch * 48]byte
	b := buf[:0]
	for i := range idBatch {
		b = append(append(b, runID...), ':')
		b = strconv.AppendInt(b, n+int64(i), 10)
		e.ends[i] = len(b)
		if n+int64(i) == math.MaxInt64 {
			for j := i + 1; j < idBatch; j++ {
				e.ends[j] = len(b) // not read: no transition follows
			}
			break
		}
	}
	e.run, e.s, e.from = runID, string(b), n
}

// keepRecord keeps a copy of rec for the pending tick's wires and returns
// where it is.
func (t *tick) keepRecord(rec control.Record) *control.Record {
	if t.records == nil {
		t.records = make([]control.Record, 0, tickEvents)
	}
	t.records = append(t.records, rec)
	return &t.records[len(t.records)-1]
}

// keepInput keeps a copy of in for the pending tick's wires, as
// keepRecord keeps records, and returns where it is.
func (t *tick) keepInput(in tripwire.Input) *tripwire.Input {
	if t.inputs == nil {
		t.inputs = make([]tripwire.Input, 0, 2)
	}
	t.inputs = append(t.inputs, in)
	return &t.inputs[len(t.inputs)-1]
}

// RefusedError reports a control event the FSM refused.
type RefusedError struct {
	Event, Reason, Detail string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("control refused %s: %s: %s", e.Event, e.Reason, e.Detail)
}

// accept records an input the run accepted and hands it to the workflow.
// inbound is the digest of the inbox entry it came from ("": in.Digest),
// which differs when the entry wrapped the input with a usage report. An
// outside input's report is charged here, with its record; a receipt's was
// charged when its attempts were recorded and is only repeated here.
// proof, when kept, is the runner's own proof that in.Body is canonical.
func (r *Runner) accept(t *tick, in Accepted, inbound string, proof canonJSON) error {
	t.cp.Accepted++
	in.Seq = t.cp.Accepted
	if inbound == "" {
		inbound = in.Digest
	}
	if in.Usage != nil && in.Kind != "receipt" {
		l := r.ledger(t)
		l.Tokens += in.Usage.Tokens
		l.CostMicros += in.Usage.CostMicros
	}
	// Written after the tick's records before it (t.bodies), as fireAs
	// writes control records.
	if t.bodies == nil {
		t.bodies = make([]byte, 0, tickBodies)
	}
	var body []byte
	var err error
	start := len(t.bodies)
	if b, ok := appendAccepted(t.bodies, in, proof); ok {
		body, t.bodies = b[start:len(b):len(b)], b
	} else if body, err = encodeAcceptedValue(in); err != nil {
		return err
	}
	digest, held := t.prove(body)
	t.appendEvent(store.Event{Kind: EventAccepted, Body: body, Digest: digest, Proof: held}, tripwire.Event{Kind: EventAccepted, Digest: digest, Input: t.keepInput(tripwire.Input{Seq: in.Seq, Kind: in.Kind, Digest: inbound})})
	if in.Kind == "receipt" {
		t.cp.RoundReceipts++
	}
	r.ledger(t).Steps++
	if err := r.fire(t, "EVENT_ACCEPTED", nil, t.evd("accepted_event_digest", evTextIn(t.texts(), "accepted_event_digest", in.Digest), "cursor", evCursorIn(t.texts(), "cursor", in.Seq))); err != nil {
		return err
	}
	state, err := t.cp.stateBytes()
	if err != nil {
		return err
	}
	d, err := r.decide(t, state, in)
	if errors.Is(err, ErrRuleBudget) {
		return r.fire(t, "RULE_BUDGET_EXHAUSTED", nil, evidence(map[string]any{"rule_budget_ledger": err.Error()}))
	} else if err != nil {
		return fmt.Errorf("workflow decide: %w", err)
	}
	t.pending.Trace = append(t.pending.Trace, d.Trace...)
	if (r.cfg.Notices || r.cfg.NoticesWhenDelivered) && d.Refusal == "" {
		t.offers = append(t.offers, d.Offered...)
	}
	if in.Kind == KindControl && d.Refusal == "" {
		t.cp.RoundSteered = true
	}
	if d.Refusal == "" {
		if !d.StateCanonical || !t.cp.setCanonical(d.State) {
			sv, err := canonValue(d.State)
			if err != nil {
				return fmt.Errorf("workflow state: %w", err)
			}
			t.cp.setState(sv)
		}
		t.cp.Completion = d.Completion
		for _, e := range d.Effects {
			oe, err := planned(e)
			if err != nil {
				return err
			}
			t.cp.Open = append(t.cp.Open, oe)
		}
	} else {
		refusal, _ := cjson.Marshal(map[string]any{"kind": "input_refused", "seq": in.Seq, "reason": d.Refusal})
		t.pending.Trace = append(t.pending.Trace, store.TraceRecord{Kind: "refusal", Body: refusal})
	}
	stateDigest := ""
	if d, err := t.cp.stateDigestIn(t.texts()); err == nil {
		stateDigest = d
	}
	return r.fire(t, "EPOCH_STABLE", guardFrontierPassed,
		t.evd("frontier_receipt", evCursorIn(t.texts(), "frontier_receipt", in.Seq), "state_digest", evTextIn(t.texts(), "state_digest", stateDigest), "support_digest", evTextIn(t.texts(), "support_digest", in.Digest)))
}

func planned(e EffectPlan) (openEffect, error) {
	if e.Intent.IntentID == "" || e.Intent.IdempotencyKey == "" || e.ContentDigest == "" {
		return openEffect{}, errors.New("workflow planned an effect without intent id, idempotency key or content digest")
	}
	iv, err := intentJSON(&e.Intent)
	if err != nil {
		return openEffect{}, fmt.Errorf("effect intent: %w", err)
	}
	// The payload is only ever encoded again (in checkpoints, and to be
	// sent): kept as its bytes when they are canonical, which are then
	// also its canonical bytes.
	payload, err := keptValue(e.Payload)
	if err != nil {
		return openEffect{}, fmt.Errorf("effect payload: %w", err)
	}
	pb, _ := asKept(payload)
	// iv is cjson's own encoding of the intent, which encoding its decoded
	// value gives back byte for byte: the intent is kept as those bytes,
	// and decoded only where its members are read or edited
	// (intentObject).
	// The intent as decoding iv gives it back is kept too, so that binding
	// it need not decode the bytes planned just wrote.
	oe := openEffect{IntentID: e.Intent.IntentID, Stage: stagePlanned, Intent: iv, Payload: payload, ContentDigest: e.ContentDigest,
		Approval: e.Approval, intentBytes: iv, payloadBytes: pb}
	if kept, ok := asDecoded(e.Intent); ok {
		oe.committed = &kept
	}
	return oe, nil
}

// asDecoded is pi as decoding cjson's encoding of it gives it back (for a
// pi cjson encodes): sharing nothing with pi, its precondition set in the
// order the encoding writes a set (by the elements' encoded bytes), and
// never nil (the encoding writes nil as an empty set). ok is false for an
// intent of another kind (whose preconditions are no set), left to be
// decoded. TestAsDecodedMatchesDecoding holds it to decodeIntent.
func asDecoded(pi protocol.EffectIntent) (protocol.EffectIntent, bool) {
	if pi.Kind != protocol.KindEffectIntent {
		return protocol.EffectIntent{}, false
	}
	pi = cloneIntent(pi)
	if pi.Preconditions == nil {
		pi.Preconditions = protocol.IDSet{}
	}
	slices.SortFunc(pi.Preconditions, func(a, b string) int {
		var ab, bb [128]byte
		return bytes.Compare(cjson.AppendString(ab[:0], a), cjson.AppendString(bb[:0], b))
	})
	return pi, true
}

// step advances the run by one control decision. It returns false when the
// run must wait for outside input (or has ended).
func (r *Runner) step(ctx context.Context, t *tick) (bool, error) {
	state := t.cp.Control.State
	if r.machine.Final(state) {
		return false, nil
	}
	// Interrupts are honoured in any state; inside the effect-critical
	// states the FSM defers them until the effect is reconciled.
	if moved, err := r.interrupts(ctx, t); moved || err != nil {
		return moved, err
	}
	if moved, err := r.checkTime(t); moved || err != nil {
		return moved, err
	}
	switch state {
	case "INIT":
		return true, r.fire(t, "START", nil, evidence(map[string]any{"version_envelope_digest": t.wf.Version(), "workflow_digest": t.wf.Digest()}))
	case "INGEST":
		return r.ingest(ctx, t)
	case "PLAN_EFFECTS":
		return true, r.plan(ctx, t)
	case "WAIT_APPROVAL":
		return r.waitApproval(ctx, t)
	case "COMMIT_INTENT":
		return true, r.commitIntents(ctx, t)
	case "EXECUTE":
		return true, r.execute(ctx, t)
	case "RECONCILE":
		return true, r.reconcile(t)
	case "HUMAN_RECONCILIATION":
		return r.humanReconcile(ctx, t)
	case "HONOR_PENDING_INTERRUPT":
		return true, r.honor(t)
	case "VERIFY_COMPLETION":
		return true, r.verify(t)
	}
	return false, fmt.Errorf("runner: no driver for state %s", state)
}

// firstPending returns the first of the run's unconsumed inbound events
// of one kind, leaving out those this pass already consumed; ok is false
// when there is none. Every caller takes the first alone, and a list of
// them would be an allocation each time a pass looks.
//
// The inbox is read once per pass: what arrives during a pass waits for the
// next one (submitters wake the runner).
func (r *Runner) firstPending(ctx context.Context, t *tick, kind string) (store.Inbound, bool, error) {
	if err := r.readInbox(ctx, t); err != nil {
		return store.Inbound{}, false, err
	}
	for i := range t.inbox {
		in := &t.inbox[i]
		if in.Kind != kind {
			continue
		}
		consumed := false
		for _, id := range t.pending.Consume {
			consumed = consumed || id == in.ID
		}
		if !consumed {
			return *in, true, nil
		}
	}
	return store.Inbound{}, false, nil
}

func (r *Runner) readInbox(ctx context.Context, t *tick) error {
	if t.inboxOK {
		return nil
	}
	all, err := r.cfg.Store.Inbox(ctx, t.run.ID, true)
	if err != nil {
		return err
	}
	t.inbox, t.inboxOK = all, true
	return nil
}

// queueFold puts an input handed in with SubmitAdvance at the end of the
// pass's pending inbox, after everything submitted before it, as Submit
// would have: it is accepted in its turn, and the commit that accepts it
// appends it to the store's inbox (see consume). An inbox that already
// holds its id holds it durably: the pass then takes that entry.
func (r *Runner) queueFold(ctx context.Context, t *tick, fold *store.Inbound) error {
	if err := r.readInbox(ctx, t); err != nil {
		return err
	}
	for _, in := range t.inbox {
		if in.ID == fold.ID {
			t.folded = true
			return nil
		}
	}
	if t.scratch == nil {
		t.scratch = new(passScratch)
	}
	// Held in the pass's scratch, as is the inbox the pass takes as
	// empty: each would be an allocation of its own a pass.
	s := t.scratch
	s.fold = *fold
	s.fold.Seq = math.MaxInt64 // after every entry the store holds
	t.fold = &s.fold
	if t.inbox == nil {
		s.inbox = append(s.inbox[:0], s.fold)
		t.inbox = s.inbox
	} else {
		t.inbox = append(t.inbox, s.fold)
	}
	return nil
}

// consume marks an inbox entry consumed by the pending tick; the input
// SubmitAdvance handed in is appended to the store's inbox by that tick.
func (r *Runner) consume(t *tick, in store.Inbound) {
	t.pending.Consume = append(t.pending.Consume, in.ID)
	if t.fold != nil && !t.folded && in.ID == t.fold.ID {
		f := *t.fold
		f.Seq = 0
		t.pending.Submit = append(t.pending.Submit, f)
	}
}

func (r *Runner) interrupts(ctx context.Context, t *tick) (bool, error) {
	in, ok, err := r.firstPending(ctx, t, KindCancel)
	if err != nil || !ok {
		return false, err
	}
	t.pending.Consume = append(t.pending.Consume, in.ID)
	if r.cfg.Cut != nil && r.machine.Final(t.cp.Control.State) == false && isDeferred(r.machine, t.cp.Control.State) {
		r.cfg.Cut("during-interrupt")
	}
	err = r.fireAs(t, "CANCEL", in.ActorRole, in.Capability, nil, evidence(map[string]any{"cancel": in.Digest}))
	var refused *RefusedError
	if errors.As(err, &refused) {
		return true, nil // audited; an unauthorised cancel changes nothing
	}
	return true, err
}

func isDeferred(m *control.Machine, state string) bool {
	for _, s := range m.DeferredIn() {
		if s == state {
			return true
		}
	}
	return false
}

func (r *Runner) ingest(ctx context.Context, t *tick) (bool, error) {
	if moved, err := r.checkRetries(t); moved || err != nil {
		return moved, err
	}
	if t.cp.Transitions >= r.cfg.MaxTransitions && r.ledger(t).Breach == nil {
		l := t.cp.Budget
		return true, r.breach(t, budgetBreach{Dimension: DimTransitions, Limit: l.MaxTransitions, Used: t.cp.Transitions, Requested: 1, Event: "BUDGET_EXHAUSTED"})
	}
	if len(t.cp.Ingest) > 0 {
		next := t.cp.Ingest[0]
		if len(t.cp.Ingest) == 1 {
			// The last: its array is kept for the next receipt (emptied,
			// not nil, which the checkpoint would write as null).
			t.cp.Ingest[0] = pendingReceipt{}
			t.cp.Ingest = t.cp.Ingest[:0]
		} else {
			t.cp.Ingest = t.cp.Ingest[1:]
		}
		body, err := keptBytes(next.Receipt)
		if err != nil {
			return true, err
		}
		proof, _ := asKept(next.Receipt)
		return true, r.accept(t, Accepted{Kind: "receipt", Body: body, Digest: next.Digest, Usage: next.Usage}, "", proof)
	}
	// Inputs, choices and controls are accepted in the order they arrived.
	var in store.Inbound
	for _, kind := range [...]string{KindInput, KindChoice, KindControl} {
		q, ok, err := r.firstPending(ctx, t, kind)
		if err != nil {
			return false, err
		}
		if ok && (in.ID == "" || q.Seq < in.Seq) {
			in = q
		}
	}
	if in.ID == "" {
		return false, nil
	}
	if moved, err := r.checkStep(t); moved || err != nil {
		return moved, err
	}
	a := Accepted{Kind: in.Kind, Body: in.Body, Digest: in.Digest, Actor: in.Actor, ActorRole: in.ActorRole, Capability: in.Capability}
	if in.Kind == KindInput {
		if body, u, ok := splitReported(in.Body); ok {
			if moved, err := r.reserveReport(t, u); moved || err != nil {
				return moved, err
			}
			// A copy of its own: u's address, taken, would move u to
			// the heap on every input, reported or not.
			report := u
			a.Body, a.Digest, a.Usage = body, store.BodyDigest(body), &report
		}
	}
	r.consume(t, in)
	return true, r.accept(t, a, in.Digest, canonJSON{})
}

func (r *Runner) plan(ctx context.Context, t *tick) error {
	var todo, needApproval []int
	for i, e := range t.cp.Open {
		if e.Stage == stagePlanned {
			todo = append(todo, i)
			if e.Approval != nil && e.ApprovalID == "" {
				needApproval = append(needApproval, i)
			}
		}
	}
	if len(todo) == 0 {
		return r.fire(t, "NO_EFFECTS", nil, t.evd("empty_stable_proposal_batch", evCursorIn(t.texts(), "empty_stable_proposal_batch", t.cp.Accepted)))
	}
	if !r.fitsCalls(t, int64(len(todo))) {
		return r.refuseCalls(t, int64(len(todo)))
	}
	if len(needApproval) > 0 {
		var digests []string
		for _, i := range needApproval {
			t.cp.Open[i].Stage = stageAwaitingApproval
			digests = append(digests, t.cp.Open[i].Approval.RequestDigest)
		}
		return r.fire(t, "APPROVAL_REQUIRED", nil, evidence(map[string]any{"action_digest": digests, "risk_classification": "approval_required"}))
	}
	return r.fire(t, "EFFECT_AUTHORIZED", nil, t.evd("capability_digest", intentsEvidenceIn(t.texts(), "capability_digest", t.cp.Open, todo), "policy_verdict", evTextIn(t.texts(), "policy_verdict", "authorized")))
}

type approveBody struct {
	ApprovalID string `json:"approval_id"`
}

func (r *Runner) waitApproval(ctx context.Context, t *tick) (bool, error) {
	if in, ok, err := r.firstPending(ctx, t, KindDeny); err != nil {
		return false, err
	} else if ok {
		t.pending.Consume = append(t.pending.Consume, in.ID)
		err := r.fireAs(t, "APPROVAL_DENIED", in.ActorRole, in.Capability, nil, evidence(map[string]any{"approval_rejection": in.Digest}))
		var refused *RefusedError
		if errors.As(err, &refused) {
			return true, nil
		}
		return true, err
	}
	in, ok, err := r.firstPending(ctx, t, KindApprove)
	if err != nil || !ok {
		return false, err
	}
	t.pending.Consume = append(t.pending.Consume, in.ID)
	var body approveBody
	if err := decodeInto(in.Body, &body); err != nil || body.ApprovalID == "" {
		r.traceNote(t, "approval_ignored", in.ID, "malformed approve event")
		return true, nil
	}
	// A grant handed in after a person's EXIT is refused: the action was
	// decided before deliberation ended, and is never carried out.
	if ex, ok := exitBefore(t.inbox, in.Seq); ok {
		r.traceNote(t, "approval_refused", in.ID, "not carried out: "+exitRefusal(body.ApprovalID, ex))
		return true, nil
	}
	grant, err := r.cfg.Store.Approval(ctx, body.ApprovalID)
	if err != nil {
		r.traceNote(t, "approval_ignored", in.ID, err.Error())
		return true, nil
	}
	// The ledger's columns are what the match below reads; a row whose
	// body says otherwise was changed behind the store's back.
	if err := CheckGrant(grant); err != nil {
		r.traceNote(t, "approval_refused", in.ID, err.Error())
		return true, nil
	}
	now := r.cfg.Clock()
	matched := false
	for i := range t.cp.Open {
		e := &t.cp.Open[i]
		if e.Stage != stageAwaitingApproval || e.ApprovalID != "" || e.Approval.RequestDigest != grant.RequestDigest {
			continue
		}
		if !live(grant, now) {
			r.traceNote(t, "approval_refused", in.ID, fmt.Sprintf("approval %s is %s, expires %s", grant.ID, grant.Status, grant.ExpiresAt))
			return true, nil
		}
		if err := t.wf.CheckApproval(*e.Approval, grant, now); err != nil {
			r.traceNote(t, "approval_refused", in.ID, err.Error())
			return true, nil
		}
		if why, err := r.dutyRefusal(ctx, t.wf, t.run.ID, GrantActor(grant), t.inbox); err != nil {
			return true, err
		} else if why != "" {
			r.traceNote(t, "approval_refused", in.ID, why)
			return true, nil
		}
		if q := QuorumOf(t.wf, *e.Approval); q > 1 {
			done, err := r.concur(ctx, t, e, in, grant, q, now)
			if err != nil || !done {
				return true, err
			}
		}
		if aa, ok := t.wf.(ApprovalAuthorizer); ok {
			state, err := t.cp.stateBytes()
			if err != nil {
				return true, err
			}
			plan, err := r.reauthorize(t, aa, state, *e.Approval, grant)
			if err != nil {
				r.traceNote(t, "approval_refused", in.ID, err.Error())
				return true, nil
			}
			if plan.Intent.IntentID != e.IntentID {
				return true, fmt.Errorf("workflow re-authorized %s as %s", e.IntentID, plan.Intent.IntentID)
			}
			approved, err := planned(plan)
			if err != nil {
				return true, err
			}
			approved.Stage, approved.Approval, approved.Concurring = e.Stage, e.Approval, e.Concurring
			*e = approved
		}
		e.ApprovalID = grant.ID
		// The intent names the exact grant it rests on; its action digest
		// (what was approved) is unchanged.
		if m := e.intentObject(); m != nil && m["approval_digest"] == nil {
			m["approval_digest"] = grant.Digest
			e.committed, e.intentBytes, e.prepared = nil, canonJSON{}, keptPrepared{}
		}
		matched = true
	}
	if !matched {
		r.traceNote(t, "approval_ignored", in.ID, "no waiting request matches "+grant.RequestDigest)
		return true, nil
	}
	for _, e := range t.cp.Open {
		if e.Stage == stageAwaitingApproval && e.ApprovalID == "" {
			return true, nil // more approvals to come
		}
	}
	err = r.fireAs(t, "APPROVAL_GRANTED", in.ActorRole, in.Capability, map[string]bool{"approval_matches": true},
		evidence(map[string]any{"exact_hash_approval_digest": grant.Digest}))
	var refused *RefusedError
	if errors.As(err, &refused) {
		// Not a person with the approver capability: audited, and every
		// match this event made is undone.
		for i := range t.cp.Open {
			if t.cp.Open[i].ApprovalID == grant.ID {
				t.cp.Open[i].ApprovalID = ""
				if m := t.cp.Open[i].intentObject(); m != nil {
					m["approval_digest"] = nil
					t.cp.Open[i].committed, t.cp.Open[i].intentBytes, t.cp.Open[i].prepared = nil, canonJSON{}, keptPrepared{}
				}
			}
		}
		return true, nil
	}
	if err != nil {
		return true, err
	}
	for i := range t.cp.Open {
		if t.cp.Open[i].Stage == stageAwaitingApproval {
			t.cp.Open[i].Stage = stagePlanned
		}
	}
	return true, nil
}

// concur counts grant, from the entry in, toward e's quorum of q people.
// The grants taken before that no longer stand (expired, revoked) are
// dropped first. A second grant by one person is ignored; one that leaves
// the quorum short is kept in e.Concurring. It reports whether grant
// completes the quorum, and is then the grant e's intent names.
func (r *Runner) concur(ctx context.Context, t *tick, e *openEffect, in store.Inbound, grant store.Approval, q int, now time.Time) (bool, error) {
	kept := e.Concurring[:0:0]
	for _, c := range e.Concurring {
		why, err := r.lapsed(ctx, c.ApprovalID, now)
		if err != nil {
			return false, err
		}
		if why != "" {
			r.traceNote(t, "approval_lapsed", in.ID, fmt.Sprintf("%s's approval %s of %s no longer stands (%s): it counts no more toward the quorum of %d",
				c.Actor, c.ApprovalID, e.Approval.RequestID, why, q))
			continue
		}
		kept = append(kept, c)
	}
	e.Concurring = kept
	if len(e.Concurring) == 0 {
		e.Concurring = nil
	}
	actor := GrantActor(grant)
	if slices.ContainsFunc(kept, func(c concurrence) bool { return c.Actor == actor }) {
		r.traceNote(t, "approval_ignored", in.ID, fmt.Sprintf("%s has approved %s already: a quorum of %d needs other people", actor, e.Approval.RequestID, q))
		return false, nil
	}
	people := make([]string, len(kept))
	for i, c := range kept {
		people[i] = c.Actor
	}
	// How far the request is from approval before and with this grant:
	// one that brings it no closer is ignored, one that leaves nothing
	// short completes it.
	groups := PanelOf(t.wf, *e.Approval)
	short, after := panel.Short(groups, q, people), panel.Short(groups, q, append(people, actor))
	if after >= short {
		r.traceNote(t, "approval_ignored", in.ID, fmt.Sprintf("%s's approval of %s adds nothing to those the run holds (%s): it waits for %s",
			actor, e.Approval.RequestID, strings.Join(people, ", "), panel.Awaited(panel.Unanswered(groups, people))))
		return false, nil
	}
	if after == 0 {
		return true, nil
	}
	// The grant that completes the quorum fires APPROVAL_GRANTED, which
	// the machine refuses from anyone but a person holding the approver's
	// capability; the ones before it are held to the same rule here.
	if !r.machine.Authorized("APPROVAL_GRANTED", in.ActorRole, in.Capability) {
		r.traceNote(t, "approval_refused", in.ID, fmt.Sprintf("(%s, %s) may not approve", in.ActorRole, in.Capability))
		return false, nil
	}
	e.Concurring = append(kept, concurrence{ApprovalID: grant.ID, Actor: actor})
	detail := fmt.Sprintf("%s approved %s (%d of %d)", actor, e.Approval.RequestID, len(e.Concurring), q)
	if waits := panel.Unanswered(groups, append(people, actor)); len(waits) > 0 {
		detail += ": it waits for " + panel.Awaited(waits)
	}
	r.traceNote(t, "approval_concurred", in.ID, detail)
	return false, nil
}

// lapsed says why grant id, taken toward a quorum, no longer stands at
// now: "" while it does.
func (r *Runner) lapsed(ctx context.Context, id string, now time.Time) (string, error) {
	g, err := r.cfg.Store.Approval(ctx, id)
	switch {
	case store.CodeOf(err) == store.CodeNotFound:
		return "gone from the ledger", nil
	case err != nil:
		return "", err
	case g.Status != store.ApprovalGranted:
		return string(g.Status), nil
	case !live(g, now):
		return "expired at " + g.ExpiresAt.UTC().Format(time.RFC3339), nil
	}
	return "", nil
}

func (r *Runner) traceNote(t *tick, kind, inbound, detail string) {
	b, _ := cjson.Marshal(map[string]any{"kind": kind, "inbound": inbound, "detail": detail})
	t.pending.Trace = append(t.pending.Trace, store.TraceRecord{Kind: kind, Body: b})
}

// commitIntents makes the authorized effects durable: intents, outbox rows,
// approval consumption and the first attempt of each, in the same
// transaction as the checkpoint. Nothing is sent before this commit.
func (r *Runner) commitIntents(ctx context.Context, t *tick) error {
	// Every planned intent is bound before any is marked committed, so
	// that an intent its adapter can never encode trips the run with the
	// open effects exactly as they stand.
	bodies := make([][]byte, len(t.cp.Open))
	for i := range t.cp.Open {
		e := &t.cp.Open[i]
		if e.Stage != stagePlanned {
			continue
		}
		body, err := r.bindContent(e)
		if err != nil {
			var never *unsendableError
			if errors.As(err, &never) {
				return r.tripUnsendable(ctx, t, i, never)
			}
			return err
		}
		bodies[i] = body
	}
	var committedBuf [4]string
	committed := committedBuf[:0]
	for i := range t.cp.Open {
		e := &t.cp.Open[i]
		if e.Stage != stagePlanned {
			continue
		}
		body := bodies[i]
		digest, proof := t.prove(body)
		in := store.Intent{ID: e.IntentID, RunID: t.run.ID, EffectType: e.effectType(), IdempotencyKey: e.idempotencyKey(),
			ContentDigest: e.ContentDigest, ApprovalID: e.ApprovalID, Body: body, Digest: digest, Proof: proof}
		t.pending.Intents = append(t.pending.Intents, in)
		if e.ApprovalID != "" {
			need, wf := *e.Approval, t.wf
			check := func(g store.Approval, now time.Time) error { return wf.CheckApproval(need, g, now) }
			t.pending.Approvals = append(t.pending.Approvals, store.ApprovalUse{ApprovalID: e.ApprovalID, IntentID: e.IntentID, Check: check})
			for _, c := range e.Concurring {
				t.pending.Approvals = append(t.pending.Approvals, store.ApprovalUse{ApprovalID: c.ApprovalID, IntentID: e.IntentID, Check: check, Concurs: true})
			}
		}
		r.begin(t, e.IntentID)
		e.Stage = stageCommitted
		committed = append(committed, in.Digest)
	}
	if r.cfg.Cut != nil {
		r.cfg.Cut("before-intent-commit")
	}
	if err := r.fire(t, "INTENT_COMMITTED", guardIntentDurable,
		t.evd("atomic_intent_checkpoint_outbox_receipt", evTextsIn(t.texts(), "atomic_intent_checkpoint_outbox_receipt", nilIfEmpty(committed)))); err != nil {
		return err
	}
	if err := r.flush(ctx, t); err != nil {
		return err
	}
	if r.cfg.Cut != nil {
		r.cfg.Cut("after-intent-commit")
	}
	return nil
}

// bindContent binds the idempotency key to the digest of exactly what the
// adapter will send, when the adapter can say (effect.ContentDigester): an
// HTTP adapter wraps the payload in a request envelope. It returns the
// intent's canonical bytes, which it encodes on the way (binding changes
// the open effect's content digest, never its intent).
func (r *Runner) bindContent(e *openEffect) ([]byte, error) {
	body, err := e.intentCanonical()
	if err != nil {
		return nil, fmt.Errorf("intent %s: %w", e.IntentID, err)
	}
	var intent protocol.EffectIntent
	if c := e.keptIntent(); c != nil {
		// Planned's own, as decoding body gives it.
		intent = cloneIntent(*c)
	} else {
		if intent, err = decodeIntent(body); err != nil {
			return nil, fmt.Errorf("intent %s: %w", e.IntentID, err)
		}
		kept := cloneIntent(intent)
		e.committed = &kept
	}
	a, err := r.cfg.Adapters.For(intent)
	if err != nil {
		return nil, err
	}
	cd, ok := a.(effect.ContentDigester)
	if !ok {
		return body, nil
	}
	payload, err := e.payloadCanonical()
	if err != nil {
		return nil, err
	}
	in := effect.Intent{Effect: intent, Payload: payload}
	var d string
	if pr, ok := a.(effect.Preparer); ok {
		// The request it prepares is kept for sending it.
		var p effect.Prepared
		if p, err = pr.Prepare(in); err == nil {
			d, e.prepared = p.ContentDigest, keptPrepared{p: p, ok: true}
		}
	} else {
		d, err = cd.ContentDigest(in)
	}
	if err != nil {
		// ContentDigest does no I/O: it encodes the intent, and its
		// refusal is a property of the content, which every later pass
		// would present again unchanged.
		return nil, &unsendableError{IntentID: e.IntentID, Err: err}
	}
	e.ContentDigest = d
	return body, nil
}

// effectType is the intent's effect_type member.
func (e *openEffect) effectType() string {
	if c := e.keptIntent(); c != nil {
		return c.EffectType
	}
	s, _ := e.intentObject()["effect_type"].(string)
	return s
}

// idempotencyKey is the intent's idempotency_key member.
func (e *openEffect) idempotencyKey() string {
	if c := e.keptIntent(); c != nil {
		return c.IdempotencyKey
	}
	s, _ := e.intentObject()["idempotency_key"].(string)
	return s
}

func protocolIntent(v any) (protocol.EffectIntent, error) {
	b, err := canonBytes(v)
	if err != nil {
		return protocol.EffectIntent{}, err
	}
	return decodeIntent(b)
}

// execute sends every committed effect whose attempt is in flight, one at a
// time, and records each outcome. A transient failure is retried with the
// same idempotency key after its result and the next attempt are durable;
// an unknown outcome is reconciled by asking the destination, never by
// sending again.
func (r *Runner) execute(ctx context.Context, t *tick) error {
	var attemptsBuf [4]string
	attempts := attemptsBuf[:0]
	for i := range t.cp.Open {
		e := &t.cp.Open[i]
		if e.Stage != stageCommitted {
			continue
		}
		if err := r.executeOne(ctx, t, e); err != nil {
			return err
		}
		attempts = append(attempts, e.IntentID)
	}
	attempts = nilIfEmpty(attempts)
	return r.fire(t, "ATTEMPT_RECORDED", nil, t.evd("attempt_id", evTextsIn(t.texts(), "attempt_id", attempts), "idempotency_key", evTextsIn(t.texts(), "idempotency_key", attempts),
		"response_hash", evIntIn(t.texts(), "response_hash", int64(len(t.pending.Receipts)))))
}

func (r *Runner) executeOne(ctx context.Context, t *tick, e *openEffect) error {
	intent, err := e.protocolIntent()
	if err != nil {
		return fmt.Errorf("intent %s: %w", e.IntentID, err)
	}
	payload, err := e.payloadCanonical()
	if err != nil {
		return err
	}
	adapter, err := r.cfg.Adapters.For(intent)
	if err != nil {
		return err
	}
	for {
		last, ok := t.begun.get(e.IntentID)
		if !ok {
			attempts, err := r.cfg.Store.Attempts(ctx, e.IntentID)
			if err != nil {
				return err
			}
			if len(attempts) == 0 {
				return fmt.Errorf("intent %s has no recorded attempt; refusing to send", e.IntentID)
			}
			last = attempts[len(attempts)-1]
		}
		if last.Status != store.AttemptStarted || last.Generation != t.lease.Generation {
			// The attempt began under an earlier lease (a crash or a
			// takeover): it may have reached the destination. Ask first.
			if last.Status == store.AttemptStarted {
				return r.resolveUnknown(ctx, t, e, intent, adapter, last, "attempt started before a restart")
			}
			return fmt.Errorf("intent %s: last attempt is %s, nothing in flight", e.IntentID, last.Status)
		}
		if err := r.fenceDispatch(ctx, t); err != nil {
			return err
		}
		rec, used, err := r.dispatch(ctx, t, e, adapter, effect.Intent{Effect: intent, Payload: payload}, last.N)
		if err != nil {
			rec = effect.Receipt{Outcome: effect.Unknown, Code: "ADAPTER_ERROR", Detail: err.Error()}
		}
		if err := r.chargeEffect(t, e, used); err != nil {
			return err
		}
		if r.cfg.Cut != nil {
			r.cfg.Cut("after-apply-before-receipt")
		}
		switch rec.Outcome {
		case effect.Succeeded, effect.FailedPermanent:
			status := store.AttemptSucceeded
			if rec.Outcome == effect.FailedPermanent {
				status = store.AttemptFailedPermanent
			}
			outcome, _ := rec.ProtocolOutcome()
			return r.close(t, e, intent, last.N, status, outcome, rec.EvidenceDigest, rec.Code)
		case effect.FailedTransient:
			if v, err := r.retryAllowed(t, last.N); err != nil {
				return err
			} else if v != retryGo {
				// Out of retries (or of tool calls): the destination is
				// asked before any failure is minted.
				t.pending.Results = append(t.pending.Results, store.AttemptResult{IntentID: e.IntentID, N: last.N, Status: store.AttemptFailedTransient,
					Outbox: store.OutboxReconcile, Route: "retry_exhausted", Detail: rec.Code})
				return r.lookupAndClose(ctx, t, e, intent, adapter, last.N, "retries exhausted")
			}
			delay, err := r.retryDelay(t, e, last.N, rec.RetryAfter)
			if err != nil {
				return err
			}
			t.pending.Results = append(t.pending.Results, store.AttemptResult{IntentID: e.IntentID, N: last.N, Status: store.AttemptFailedTransient,
				Outbox: store.OutboxRetry, Route: "transient", Detail: rec.Code})
			r.begin(t, e.IntentID)
			if err := r.flush(ctx, t); err != nil {
				return err
			}
			if err := r.wait(ctx, t, delay); err != nil {
				return err
			}
		default:
			t.pending.Results = append(t.pending.Results, store.AttemptResult{IntentID: e.IntentID, N: last.N, Status: store.AttemptUnknown,
				Outbox: store.OutboxReconcile, Route: "outcome_unknown", Detail: rec.Code})
			return r.lookupAndClose(ctx, t, e, intent, adapter, last.N, rec.Code)
		}
	}
}

// resolveUnknown handles an attempt found in flight at load: its outcome is
// unknown, so the destination is asked before anything else happens.
func (r *Runner) resolveUnknown(ctx context.Context, t *tick, e *openEffect, intent protocol.EffectIntent, a effect.Adapter, last store.Attempt, why string) error {
	t.pending.Results = append(t.pending.Results, store.AttemptResult{IntentID: e.IntentID, N: last.N, Status: store.AttemptUnknown,
		Outbox: store.OutboxReconcile, Route: "recovered_in_flight", Detail: why})
	return r.lookupAndClose(ctx, t, e, intent, a, last.N, why)
}

// lookupAndClose asks the destination what became of an attempt and closes
// the effect on its evidence; without evidence the effect is marked unknown
// and handed to a person. A destination that confirms nothing was applied
// allows one more attempt, with the same key.
func (r *Runner) lookupAndClose(ctx context.Context, t *tick, e *openEffect, intent protocol.EffectIntent, a effect.Adapter, n int64, why string) error {
	if r.cfg.Cut != nil {
		r.cfg.Cut("during-reconcile")
	}
	res, err := r.lookup(ctx, t, e, a, intent.IdempotencyKey, why)
	if err != nil {
		return err
	}
	var evidenceDigest string
	if len(res.Lookups) > 0 {
		evidenceDigest = res.Lookups[len(res.Lookups)-1].EvidenceDigest
	}
	switch res.Status {
	case effect.ConfirmedSuccess:
		return r.close(t, e, intent, n, store.AttemptReconciledApplied, "confirmed_success", evidenceDigest, "reconciled: "+why)
	case effect.ConfirmedFailure:
		v, err := r.retryAllowed(t, n)
		if err != nil {
			return err
		}
		if v == retryGo {
			delay, err := r.retryDelay(t, e, n, 0)
			if err != nil {
				return err
			}
			t.pending.Results = append(t.pending.Results, store.AttemptResult{IntentID: e.IntentID, N: n, Status: store.AttemptReconciledNotApplied,
				Outbox: store.OutboxRetry, Route: "reconciled_not_applied"})
			r.begin(t, e.IntentID)
			if err := r.flush(ctx, t); err != nil {
				return err
			}
			if err := r.wait(ctx, t, delay); err != nil {
				return err
			}
			return r.executeOne(ctx, t, e)
		}
		if v == retrySpent {
			// Every allowed attempt failed and the destination vouches that
			// none applied: the retry controller's evidence.
			if err := r.spendRetries(ctx, t, e, n, store.AttemptReconciledNotApplied); err != nil {
				return err
			}
		}
		return r.close(t, e, intent, n, store.AttemptReconciledNotApplied, "confirmed_failure", evidenceDigest, RetryExhaustedDetail)
	default:
		t.pending.Results = append(t.pending.Results, store.AttemptResult{IntentID: e.IntentID, N: n, Status: store.AttemptUnknown,
			Outbox: store.OutboxHuman, Route: "human_reconciliation", Detail: why})
		e.Stage = stageUnknown
		return nil
	}
}

// close records an attempt's final status and the effect's receipt, and
// queues the receipt to be accepted as the run's next input.
func (r *Runner) close(t *tick, e *openEffect, intent protocol.EffectIntent, n int64, status store.AttemptStatus, outcome, evidenceDigest, detail string) error {
	// A result for this attempt may already be pending (unknown, then
	// reconciled): the later one wins.
	results := t.pending.Results[:0]
	for _, res := range t.pending.Results {
		if !(res.IntentID == e.IntentID && res.N == n) {
			results = append(results, res)
		}
	}
	t.pending.Results = append(results, store.AttemptResult{IntentID: e.IntentID, N: n, Status: status, Outbox: store.OutboxDone, Detail: detail})
	var outputs []string
	if evidenceDigest != "" {
		t.texts() // the pass's scratch, made if the pass has none yet
		outputs = t.scratch.outputs[:1:1]
		outputs[0] = evidenceDigest
	}
	// The receipt's check encodes it and validates the bytes as text: they
	// are the record's and, until the run accepts the receipt, the
	// checkpoint's. It copies the output digests (the receipt shares no
	// list of its caller's), so the scratch's array is free again after.
	attempt, at := attemptAndTime(e.IntentID, n, r.cfg.Clock())
	checked, err := effect.NewCanonicalActionReceipt(intent, effect.ReceiptBinding{CommandDigest: intent.ActionDigest, InputRootDigest: e.ContentDigest,
		PlatformDigest: r.cfg.PlatformDigest}, effect.Observation{AttemptID: attempt, Outcome: outcome,
		OutputDigests: outputs, RecordedAt: at})
	if outputs != nil {
		outputs[0] = ""
	}
	if err != nil {
		return fmt.Errorf("receipt for %s: %w", e.IntentID, err)
	}
	kept := receiptJSON(checked)
	body := kept.b
	digest, proof := t.prove(body)
	t.pending.Receipts = append(t.pending.Receipts, store.Receipt{IntentID: e.IntentID, Outcome: outcome, Body: body, Digest: digest, Proof: proof})
	// The receipt waits in the checkpoint, not in memory, until the run
	// accepts it: a pass that commits it and then stops (to wait for a
	// person, say) must not lose it.
	// Kept as its canonical bytes, not as the value they decode to: the
	// checkpoint writes them as it would the value, and accepting the
	// receipt takes them as they are.
	t.cp.Ingest = append(t.cp.Ingest, pendingReceipt{IntentID: e.IntentID, Digest: digest, Receipt: kept, Usage: e.Usage})
	e.Stage = "closed"
	return nil
}

// attemptID is the id a receipt gives attempt n of an intent: the
// intent's id, "/attempt/" and n, in one allocation.
func attemptID(intentID string, n int64) string {
	var buf [160]byte
	b := append(append(buf[:0], intentID...), "/attempt/"...)
	return string(strconv.AppendInt(b, n, 10))
}

// attemptAndTime are a receipt's attempt id (attemptID) and its time,
// now in UTC as RFC 3339 writes it, spelled in one string and cut from
// it: one allocation where each was one of its own. The receipt's check
// reads both and keeps neither past its bytes.
func attemptAndTime(intentID string, n int64, now time.Time) (string, string) {
	var buf [192]byte
	b := append(append(buf[:0], intentID...), "/attempt/"...)
	b = strconv.AppendInt(b, n, 10)
	cut := len(b)
	s := string(now.UTC().AppendFormat(b, time.RFC3339))
	return s[:cut], s[cut:]
}

func (r *Runner) reconcile(t *tick) error {
	for _, e := range t.cp.Open {
		if e.Stage == stageUnknown {
			return r.fire(t, "OUTCOME_UNKNOWN", nil, evidence(map[string]any{"ambiguous_external_state": e.IntentID, "bounded_query_log": e.ContentDigest}))
		}
	}
	r.dropClosed(t)
	var receiptsBuf [4]string
	receipts := receiptsBuf[:0]
	for _, rc := range t.pending.Receipts {
		receipts = append(receipts, rc.Digest)
	}
	return r.fire(t, "EFFECT_RESULT_CONFIRMED", nil, t.evd("independent_action_receipt", evTextsIn(t.texts(), "independent_action_receipt", nilIfEmpty(receipts))))
}

func (r *Runner) dropClosed(t *tick) {
	open := t.cp.Open[:0]
	for _, e := range t.cp.Open {
		if e.Stage != "closed" {
			open = append(open, e)
		}
	}
	t.cp.Open = open
}

type reconcileBody struct {
	IntentID   string `json:"intent_id"`
	Resolution string `json:"resolution"`
}

func (r *Runner) humanReconcile(ctx context.Context, t *tick) (bool, error) {
	in, ok, err := r.firstPending(ctx, t, KindReconcile)
	if err != nil || !ok {
		return false, err
	}
	t.pending.Consume = append(t.pending.Consume, in.ID)
	var body reconcileBody
	if err := decodeInto(in.Body, &body); err != nil {
		r.traceNote(t, "reconcile_ignored", in.ID, "malformed reconcile event")
		return true, nil
	}
	var target *openEffect
	for i := range t.cp.Open {
		if t.cp.Open[i].IntentID == body.IntentID && t.cp.Open[i].Stage == stageUnknown {
			target = &t.cp.Open[i]
		}
	}
	if target == nil {
		r.traceNote(t, "reconcile_ignored", in.ID, "no unknown effect "+body.IntentID)
		return true, nil
	}
	// The resolution's own event decides who may give it: a person who may
	// confirm an outcome may not abandon one for that, nor the other way
	// round. Someone who may not is refused by the FSM and audited before
	// anything is closed, and the effect stays unknown.
	event := "HUMAN_RECEIPT_CONFIRMED"
	if body.Resolution == "abandon" {
		event = "ABANDON"
	}
	if !r.machine.Authorized(event, in.ActorRole, in.Capability) {
		err := r.fireAs(t, event, in.ActorRole, in.Capability, nil, evidence(nil))
		var refused *RefusedError
		if errors.As(err, &refused) {
			return true, nil
		}
		return true, err
	}
	switch body.Resolution {
	case "abandon":
		return true, r.fireAs(t, "ABANDON", in.ActorRole, in.Capability, nil, evidence(map[string]any{"typed_unresolved_outcome_disposition": in.Digest}))
	case "confirmed_success", "confirmed_failure":
		intent, err := target.protocolIntent()
		if err != nil {
			return true, err
		}
		attempts, err := r.cfg.Store.Attempts(ctx, target.IntentID)
		if err != nil || len(attempts) == 0 {
			return true, fmt.Errorf("attempts of %s: %v", target.IntentID, err)
		}
		status := store.AttemptReconciledApplied
		if body.Resolution == "confirmed_failure" {
			status = store.AttemptReconciledNotApplied
		}
		if err := r.close(t, target, intent, attempts[len(attempts)-1].N, status, body.Resolution, in.Digest, "reconciled by "+in.Actor); err != nil {
			return true, err
		}
		for _, e := range t.cp.Open {
			if e.Stage == stageUnknown {
				return true, nil
			}
		}
		r.dropClosed(t)
		return true, r.fireAs(t, "HUMAN_RECEIPT_CONFIRMED", in.ActorRole, in.Capability, nil, evidence(map[string]any{"independently_checked_external_receipt": in.Digest}))
	default:
		r.traceNote(t, "reconcile_ignored", in.ID, "unknown resolution "+body.Resolution)
		return true, nil
	}
}

func (r *Runner) honor(t *tick) error {
	for _, p := range t.cp.Control.Pending {
		for _, in := range r.machine.Interrupts() {
			if in.Event == p {
				return r.fire(t, in.HonoredBy, nil, evidence(map[string]any{"durable_pending_" + pendingName(p): p, "reconciled_effect": t.cp.Accepted}))
			}
		}
	}
	return r.fire(t, "NO_PENDING_INTERRUPT", nil, t.evd("accepted_receipt_event", evIntIn(t.texts(), "accepted_receipt_event", t.cp.Accepted),
		"empty_pending_interrupt_ledger", evTextsIn(t.texts(), "empty_pending_interrupt_ledger", t.cp.Control.Pending)))
}

func pendingName(event string) string {
	switch event {
	case "CANCEL":
		return "cancel"
	case "TIMEOUT":
		return "timeout"
	case "BUDGET_EXHAUSTED":
		return "budget_exhaustion"
	}
	return event
}

func (r *Runner) verify(t *tick) error {
	unknown := false
	for _, e := range t.cp.Open {
		unknown = unknown || e.Stage == stageUnknown
	}
	closed := len(t.cp.Open) == 0
	switch {
	case t.cp.Completion == Complete && closed && !unknown:
		return r.fire(t, "VERIFIED_COMPLETE", guardVerified,
			t.evd("empty_unknown_effect_ledger", evidenceItem("empty_unknown_effect_ledger", t.cp.Open), "independent_closure_receipt", evIntIn(t.texts(), "independent_closure_receipt", t.cp.Accepted)))
	case t.cp.Completion == Fail:
		return r.fire(t, "VERIFIED_FAILURE", nil, evidence(map[string]any{"typed_failed_completion_gate": t.cp.Accepted}))
	case t.cp.RoundSteered:
		t.cp.RoundSteered = false
		return r.fire(t, "MORE_WORK", nil, t.evd("typed_residual_work", evIntIn(t.texts(), "typed_residual_work", t.cp.Accepted)))
	default:
		stalled, err := r.observeRound(t)
		if err != nil {
			return err
		}
		if stalled {
			return r.fire(t, "NO_PROGRESS", nil, evidence(map[string]any{"unchanged_fingerprint_window": t.cp.Progress}))
		}
		return r.fire(t, "MORE_WORK", nil, t.evd("typed_residual_work", evIntIn(t.texts(), "typed_residual_work", t.cp.Accepted)))
	}
}

// observeRound records one round of the loop with the loop contract's
// no-progress detector and reports whether the window shows a plateau:
// rounds that accepted no receipt, with nothing owed to the world. A run that
// keeps taking inputs and never gets anything done ends NO_PROGRESS instead
// of looping forever.
func (r *Runner) observeRound(t *tick) (bool, error) {
	state, err := t.cp.stateDigestIn(t.texts())
	if err != nil {
		return false, err
	}
	open, err := openDigestIn(t.texts(), t.cp.Open)
	if err != nil {
		return false, err
	}
	fp, err := control.Fingerprint(control.FingerprintInput{Cursor: t.cp.Accepted, FState: state, LSupports: state, RFrontier: state,
		PendingEffects: open, Evidence: open})
	if err != nil {
		return false, err
	}
	owed := int64(0)
	for _, e := range t.cp.Open {
		if e.Stage == stageCommitted || e.Stage == stageUnknown {
			owed++
		}
	}
	w, v, err := r.contractFor(t.wf).NoProgress.Observe(t.cp.Progress, control.Round{Fingerprint: fp,
		Gain: control.Gain{VerifiedReceipts: t.cp.RoundReceipts}, PendingEffects: owed})
	if err != nil {
		return false, err
	}
	t.cp.Progress, t.cp.RoundReceipts = w, 0
	if v.NoProgress {
		// Proposals kept for a person, or offered for a person to choose
		// among options, are work owed, as an open effect is: the plateau
		// holds the run rather than ending it (decisions 0612, 1957).
		sb, _ := t.cp.stateBytes() // cached by stateDigest
		if k, ok := t.wf.(Keeper); ok {
			if n, err := k.Kept(sb); err == nil && n > 0 {
				return false, nil
			}
		}
		if o, ok := t.wf.(Offerer); ok {
			if ids, err := o.Offered(sb); err == nil && len(ids) > 0 {
				return false, nil
			}
		}
	}
	return v.NoProgress, nil
}
