package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/store"
)

// Commit implements store.Store: one REPEATABLE READ transaction that locks
// the run's row, checks the fence and the head, revalidates and consumes
// approvals, appends events to the hash chain, writes intents with their
// outbox rows, attempt results, new attempts, receipts, inbox consumption,
// the checkpoint, the run header and the trace — or nothing.
//
// It takes two round trips whatever the tick holds. The first carries
// BEGIN, the row lock and every read the tick is decided on (approvals,
// idempotency keys, attempts, outbox rows, inbox entries, the last
// checkpoint and trace numbers), all on the one snapshot with the row held.
// The store then decides in memory, in the order the checks have always
// run, and the second round trip carries every write and COMMIT; events
// go as one multi-row INSERT, the tick's trace records as one row. A
// write whose row count the decision relies on is guarded, so that a
// mismatch fails the transaction instead of committing it.
//
// A tick that follows this store's own last commit of the run under the
// same lease takes one round trip instead (see commitAhead): everything it
// would read first is either known from that commit or checked by a
// guarded write. When that attempt fails for any reason the server
// reported, nothing of it was written, and the tick goes the two-round-trip
// way, which reports exactly what is wrong.
func (s *Store) Commit(ctx context.Context, lease store.Lease, tick store.Tick) error {
	const op = "commit"
	if err := store.ValidateTick(lease.RunID, tick); err != nil {
		return err
	}
	if h, ok := s.heads.ahead(lease, tick); ok {
		next, done, err := s.commitGrouped(ctx, lease, tick, h)
		if done {
			if err != nil {
				s.heads.forget(lease.RunID)
				return s.mapErr(op, lease.RunID, err)
			}
			s.heads.set(lease, tick, next)
			return nil
		}
	}
	var next runHead
	err := s.write(ctx, op, lease.RunID, func(tx *wtx) error {
		tx.lazy, tx.testSetting = tick.MayLag, testSetting
		var rd tickReads
		var subs int64
		run, now, err := s.fence(ctx, tx, op, lease, &subs, rd.queue(lease.RunID, tick))
		if err != nil {
			return err
		}
		if run.Head != tick.ExpectHead {
			return store.Errorf(store.CodeHeadMismatch, op, lease.RunID, nil, "writer computed from event %d, the run is at %d", tick.ExpectHead, run.Head)
		}
		if run.Outcome != "" {
			return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "run already ended with %s", run.Outcome)
		}
		// Approvals: revalidated against the grant as stored, at this
		// transaction's clock reading, then consumed once.
		var consumedBy map[string]string
		if len(tick.Approvals) > 0 {
			consumedBy = map[string]string{}
		}
		for i, use := range tick.Approvals {
			if err := s.consumeApproval(tx, lease.RunID, use, rd.approvals[i], consumedBy, now); err != nil {
				return err
			}
		}

		// Intents, each with its outbox row. A reused idempotency key with the
		// same content is the same intent committed twice: refused as a
		// duplicate. With other content it is a conflict, never a reuse.
		var keys map[string]string // idempotency key → content digest, of this tick's intents
		if len(tick.Intents) > 0 {
			keys = map[string]string{}
		}
		for i, in := range tick.Intents {
			existing, found := rd.keys[i].digest, rd.keys[i].found
			if d, ok := keys[in.IdempotencyKey]; ok {
				existing, found = d, true
			}
			switch {
			case found && existing != in.ContentDigest:
				return store.Errorf(store.CodeIdempotencyConflict, op, lease.RunID, nil, "idempotency key %s is bound to other content", in.IdempotencyKey)
			case found:
				return store.Errorf(store.CodeExists, op, lease.RunID, nil, "intent with idempotency key %s already committed", in.IdempotencyKey)
			}
			keys[in.IdempotencyKey] = in.ContentDigest
			rd.outbox[in.ID] = &outboxRow{status: string(store.OutboxPending)}
		}

		// Attempt results move their intent's outbox. (Results come before
		// new attempts so that a retry can finish the last attempt and begin
		// the next one in one tick.)
		for i, r := range tick.Results {
			if !rd.attempts[i] {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "no attempt %d of intent %s in this run", r.N, r.IntentID)
			}
			if o := rd.outbox[r.IntentID]; o != nil {
				o.status = string(r.Outbox)
			}
		}

		begin := make([]int64, len(tick.Begin))
		for i, id := range tick.Begin {
			if begin[i], err = nextAttempt(lease, id, rd.outbox[id]); err != nil {
				return err
			}
		}

		// Receipts close their intents.
		for _, rc := range tick.Receipts {
			o := rd.outbox[rc.IntentID]
			if o == nil {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "receipt for unknown intent %s", rc.IntentID)
			}
			o.status = string(store.OutboxDone)
		}

		for i, in := range tick.Submit {
			if rd.submitted[i] {
				return store.Errorf(store.CodeExists, op, lease.RunID, nil, "inbound %s is already in the inbox", in.ID)
			}
		}
		var consumed map[string]bool
		if len(tick.Consume) > 0 {
			consumed = map[string]bool{}
		}
		for i, id := range store.FromInbox(tick) {
			if !rd.inbox[i] || consumed[id] {
				return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "inbound %s is not pending in this run", id)
			}
			consumed[id] = true
		}
		if tick.ExpectInboxEmpty && rd.pending > int64(len(consumed)) {
			return store.Errorf(store.CodeHeadMismatch, op, lease.RunID, nil, "the run's inbox holds entries the writer did not see")
		}

		next = runHead{owner: lease.Owner, generation: lease.Generation, head: run.Head, hash: run.HeadHash,
			checkpoints: rd.checkpoints, trace: rd.trace, submissions: subs}
		if err := s.queueTick(tx, lease, tick, &next, chainOf(run.HeadHash, run.Head, tick.Events), run.State, begin, nanos(now)); err != nil {
			return err
		}
		err = tx.commit(ctx)
		if err != nil && isDuplicate(err) && pgConstraint(err) == "intents_idempotency_key" {
			// Another run committed this key after our snapshot was
			// taken; run again to report exactly what it is.
			return errRetryKey
		}
		if c := pgConstraint(err); len(tick.Submit) > 0 && isDuplicate(err) && (c == "inbox_pkey" || c == "inbox_inbound_id") {
			// A submission to the run committed after our snapshot was
			// taken and took the inbox position computed here (or the
			// same id): a fresh snapshot sees it.
			return errRetryInbox
		}
		return err
	})
	if err != nil {
		s.heads.forget(lease.RunID)
		return err
	}
	s.heads.set(lease, tick, next)
	return nil
}

// commitAhead commits tick in one round trip, on what this store knows of
// the run from its own last commit (h): BEGIN, a statement that updates
// the run's row, its condition reading the clock on the row it locks, and
// moves the header on only if the lease, the head and its hash are still
// what h says (guarded; see fenceAhead), the
// tick's writes — each check the two-round-trip path makes by reading
// first made here by a guard or a constraint — and COMMIT. done is false
// when the server refused the attempt before COMMIT: nothing of it was
// written, and the caller takes the two-round-trip path. When done, err is
// the outcome (a connection lost while COMMIT was answered leaves it
// unknown, as anywhere).
func (s *Store) commitAhead(ctx context.Context, lease store.Lease, tick store.Tick, h runHead) (next runHead, done bool, err error) {
	if s.ro {
		return h, false, nil
	}
	next = h
	begin := aheadBegin(tick)
	chains := chainOf(h.hash, h.head, tick.Events)
	commitSent, err := s.once(ctx, func(tx *wtx) error {
		next = h
		// A tick that may lag turns synchronous_commit off in this
		// statement, not in one of its own.
		tx.lazy, tx.lazySent, tx.testSetting = tick.MayLag, tick.MayLag, testSetting
		tx.implicit = implicitTick
		if err := s.queueAhead(tx, lease, tick, h, &next, chains, begin, tick.MayLag); err != nil {
			return err
		}
		return tx.commit(ctx)
	})
	if err != nil && !commitSent {
		return h, false, nil
	}
	if err == nil && tick.ExpectInboxEmpty {
		// Checked, by its read or by the fence on a count for which it
		// was known empty (see runHead.inboxEmpty).
		next.inboxEmpty = true
	}
	return next, true, err
}

// queueAhead queues a tick as the one-round-trip commit sends it under a
// lease whose run's head the store knows to be h: the guarded fence
// (fenceAheadSQL; lazy as aheadFenceArgs takes it), then the tick's
// writes, next moving on as they do.
func (s *Store) queueAhead(tx *wtx, lease store.Lease, tick store.Tick, h runHead, next *runHead, chains chain, begin []int64, lazy bool) error {
	fence := aheadFenceArgs(s, lease, tick, h, &chains, lazy)
	tx.Queue(fenceAheadSQL, fence...)
	tx.fence, tx.fenceInbox, tx.fenceSubs = fence, fenceChecksInbox(tick), h.submissions
	tx.fenceKnownEmpty = tick.ExpectInboxEmpty && h.inboxEmpty
	return s.queueTick(tx, lease, tick, next, chains, "", begin, nil)
}

// fenceChecksInbox reports whether the one-round-trip commit of tick, when
// it sends its fence as the first part of the tick's appended statement
// rather than as a statement of its own (see queueAppends), folds the
// fence that also checks that no input was submitted to the run while the
// fence waited for its row (fenceAheadInboxWrite).
//
// One statement has one snapshot, taken before the fence waits for the
// run's row; as two, the appended statement's is taken after the fence
// has locked it. Every part of the appended statement runs after the
// fence (the statement's query counts the fence's rows first, the parts
// it does not read run after that query) and finds its rows by their
// keys, an update re-reading a row changed since the snapshot, but two
// parts read what they check from the snapshot: the check that the inbox
// is left empty and the position of the tick's own input. An input
// submitted while the fence waited would be missed by both. Submit
// changes the run's row whenever it appends (runs.submissions, decision
// 1730), and every other write that appends to a run's inbox is a tick of
// the run, which moves its head: so the snapshot holds every input
// committed before the fence locked the row exactly when the row the
// fence locked (the newest version, read again after the wait) counts
// the submissions the snapshot's row counts. The fence that checks the
// inbox compares the two and refuses the tick when they differ, and the
// tick goes the two-round-trip way, which reads the inbox after the lock.
func fenceChecksInbox(tick store.Tick) bool {
	return tick.ExpectInboxEmpty || len(tick.Submit) > 0
}

// testSetting, when set (by this package's tests, which do not run in
// parallel), is told synchronous_commit as each tick's transaction has it
// just before COMMIT.
var testSetting func(string)

// runHead is what a store knows of a run after its own last commit of it:
// the lease it wrote under, the head and its hash, the number of the last
// checkpoint and trace record, and the submissions the run's row counted
// (runs.submissions) when a read under the row's lock last told it.
//
// submissions is never more than the row counted at the store's last
// commit of the run: it is read from the row locked (the two-round-trip
// commit, a lease taken), or 0 for a run just created, and carried
// unchanged by the one-round-trip commits, which do not read it; the
// count only grows. So a row that, locked, still counts submissions has
// taken no submission since that commit, whose every input a later
// snapshot holds (see fenceAheadInboxWrite).
type runHead struct {
	owner              string
	generation         int64
	head               int64
	hash               string
	checkpoints, trace int64
	submissions        int64
	// inboxEmpty says that the run's inbox holds no pending entry while
	// its row counts submissions and this head: a one-round-trip commit
	// in this chain checked the inbox left empty (the row then counted at
	// least submissions, the count only grows, and Submit moves it), and
	// every later commit in it only appended inputs consumed or consumed
	// them; any other writer's tick of the run moves its head. A tick
	// that checks its inbox then needs no read of it: its fence requiring
	// the row to count exactly submissions is the check (see
	// fenceAheadKnownWrite).
	inboxEmpty bool
}

// heads remembers, for the runs this store has lately committed, what the
// next commit under the same lease may assume. It is only ever a guess:
// the one-round-trip commit checks every part of it in the database
// (the header by a guarded update, the positions by primary keys).
type heads struct {
	mu sync.Mutex
	m  map[string]runHead
}

// maxHeads bounds the memory: past it the map starts again empty, and the
// next tick of each run takes two round trips.
const maxHeads = 4096

func (h *heads) ahead(lease store.Lease, tick store.Tick) (runHead, bool) {
	// Approvals are revalidated by the caller's check at the
	// transaction's clock, and an intent begun in a later tick than its
	// own has an attempt number only the database knows: such ticks read
	// first.
	if len(tick.Approvals) > 0 {
		return runHead{}, false
	}
	for _, id := range tick.Begin {
		if !newIntent(tick, id) {
			return runHead{}, false
		}
	}
	// A result for an intent this tick creates names an attempt that did
	// not exist before the tick: the tick is refused, as SQLite refuses it
	// (results are applied before the tick's attempts begin). The one
	// statement would begin the new intent's attempt first and accept it;
	// the reading path refuses it with the same error SQLite gives.
	for _, r := range tick.Results {
		if newIntent(tick, r.IntentID) {
			return runHead{}, false
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.m[lease.RunID]
	return r, ok && r.owner == lease.Owner && r.generation == lease.Generation && r.head == tick.ExpectHead
}

func newIntent(tick store.Tick, id string) bool {
	for _, in := range tick.Intents {
		if in.ID == id {
			return true
		}
	}
	return false
}

func (h *heads) set(lease store.Lease, tick store.Tick, r runHead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if tick.Outcome != "" {
		delete(h.m, lease.RunID) // an ended run takes no more ticks
		return
	}
	if h.m == nil || len(h.m) >= maxHeads {
		h.m = map[string]runHead{}
	}
	h.m[lease.RunID] = r
}

func (h *heads) forget(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, runID)
}

// tsParam is the tick's time in its writes: $n when the caller knows it,
// else the clock reading the one-round-trip commit's first statement took
// after the lock and left in the transaction's tickAt setting (the run
// header's updated_at). A setting, not a read of the header: every write
// would otherwise start an index scan of runs for it.
func tsParam(n int) string {
	return `COALESCE($` + itoa(n) + `::bigint, current_setting('` + tickAt + `')::bigint)`
}

// tickAt is the transaction-local setting that holds the tick's time on
// the one-round-trip path (see tsParam); it ends with the transaction.
const tickAt = "flrh.tick_at"

func itoa(n int) string { return strconv.Itoa(n) }

// queueTick queues a tick's writes, in the order the checks visited them:
// intents with their outbox rows, attempt results, new attempts (numbered
// begin), receipts, inbox consumption, the events (chains: their chain
// hashes from next's head, as chainOf computes them),
// the checkpoint and trace records after next's positions, and — when
// state is not "" (the two-round-trip path; the other has moved the header
// already) — the run header. ts is the tick's time, or nil to read it back
// from the header. It leaves next at the run as the tick leaves it.
func (s *Store) queueTick(tx *wtx, lease store.Lease, tick store.Tick, next *runHead, chains chain, state string, begin []int64, ts any) error {
	const op = "commit"
	runID := lease.RunID
	head := next.head + int64(len(tick.Events))
	// An intent new in this tick that the tick also begins takes its
	// first attempt in the statement that writes it: its outbox row is
	// written in flight, never pending and then moved. (Any further begin
	// of it goes the usual way, and its guard refuses it.)
	// The ids so begun are few: a slice on the stack, where a map took
	// two allocations.
	var begunRoom [4]string
	begunNew := begunRoom[:0]
	skip := make([]bool, len(tick.Begin))
	for i, id := range tick.Begin {
		if begin[i] == 1 && newIntent(tick, id) && !slices.Contains(begunNew, id) {
			begunNew = append(begunNew, id)
			skip[i] = true
		}
	}
	var closedRoom [4]*store.Receipt
	closed := closedWithResult(tick, closedRoom[:0])
	merge := mergeable(tick, skip, closed)
	for _, in := range tick.Intents {
		if merge {
			break // in the appended statement
		}
		// A second intent of the same id fails on the key.
		begun := false
		if j := slices.Index(begunNew, in.ID); j >= 0 {
			begun, begunNew = true, slices.Delete(begunNew, j, j+1)
		}
		sql := intentSQL
		if begun {
			sql = intentBegunSQL
		}
		tx.Queue(sql, in.ID, runID, head, in.EffectType, in.IdempotencyKey, in.ContentDigest, approvalArg(in.ApprovalID), in.Body, in.Digest, lease.Generation, ts)
	}
	for _, r := range tick.Results {
		if _, ok := closed.get(r.IntentID); ok && merge {
			continue // in the appended statement
		}
		if rc, ok := closed.get(r.IntentID); ok {
			// The intent's only result and only receipt in this tick, and
			// nothing begins it in between: one statement leaves what the
			// two would (the outbox done, on the result's route), guarded
			// on the attempt and on the intent being this run's.
			tx.Queue(resultClosedSQL,
				string(r.Status), r.Detail, ts, runID, r.IntentID, r.N, r.Route, rc.Outcome, rc.Body, rc.Digest, lease.Generation)
			continue
		}
		// The attempt's row and its intent's outbox in one statement; the
		// guard is on the attempt.
		tx.Queue(resultSQL,
			string(r.Status), r.Detail, ts, runID, r.IntentID, r.N, string(r.Outbox), r.Route)
	}
	for i, id := range tick.Begin {
		if !skip[i] {
			queueAttempt(tx, lease, id, begin[i], ts)
		}
	}
	for _, rc := range tick.Receipts {
		if _, ok := closed.get(rc.IntentID); ok {
			continue // written with its result
		}
		// The guard is the check that the intent is this run's; the
		// receipt is written only beside the outbox row it closes.
		tx.Queue(receiptSQL,
			ts, runID, rc.IntentID, rc.Outcome, rc.Body, rc.Digest, lease.Generation)
	}
	// The rest goes as one statement (a data-modifying WITH for each part
	// but the last): the tick's own input, appended consumed, the events
	// extending the hash chain, the checkpoint, the trace row and the
	// check that the inbox is left empty.
	for _, in := range tick.Submit {
		// Appended consumed, at the next inbox position: what Submit and
		// then consuming it would leave. The run's row is locked, so
		// submissions to the run are serialized with this tick. Parts of
		// one statement share its snapshot, so only a single input goes
		// with the rest; more go one statement each, each numbered after
		// the last.
		if len(tick.Submit) == 1 {
			break // in the appended statement
		}
		tx.Queue(submitSQL,
			runID, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, ts)
	}
	// Inputs consumed from the inbox go in the appended statement (see
	// appends.consume), unless the tick checks that its inbox is left
	// empty: that check reads the statement's snapshot, which a part of
	// the same statement does not change.
	fromInbox := store.FromInbox(tick)
	consumeMerged := !tick.ExpectInboxEmpty
	for _, id := range fromInbox {
		if consumeMerged {
			break // in the appended statement
		}
		tx.Queue(consumeSQL, runID, id)
	}

	cpBody, traceBodies, err := s.sealTick(op, runID, tick, next.checkpoints, next.trace)
	if err != nil {
		return err
	}
	// The rows' columns and numbers go as pointers into one allocation
	// (see aheadFenceArgs), where boxing each took one.
	cols := &tickColumns{head: head, traceBodies: traceBodies, cpBody: cpBody}
	ev := &cols.ev
	// The events' kinds, their hash columns' texts and the trace's kinds
	// share one allocation of strings, the events' bodies and their hash
	// columns' sums one of byte slices; each part is capped at its end.
	n, m := len(tick.Events), len(tick.Trace)
	var strs []string
	if k := 3*n + m; k > 0 {
		strs = make([]string, k)
	}
	if n > 0 {
		var room []byte
		bs := make([][]byte, 3*n)
		*ev = eventColumns{kinds: strs[:n:n], bodies: bs[:n:n], prev: next.hash}
		ev.digests, ev.chains, room = newHashColumns2(n, strs[n:3*n], bs[n:3*n])
		if sum := appendSum(room, next.hash); len(sum) > 0 {
			ev.prevSum = sum
		}
		for i, e := range tick.Events {
			ev.kinds[i], ev.bodies[i] = e.Kind, e.Body
			ev.digests.add(e.Digest)
			ev.chains.addSum(chains.sum(i))
		}
		next.hash = chains.last
	}
	cols.first = next.head + 1
	next.head = head
	if tick.Checkpoint != nil {
		next.checkpoints++
		cols.checkpoint = next.checkpoints
	}
	cols.firstTrace = next.trace + 1
	if m > 0 {
		// One row for the tick's records (see the schema's "trace records
		// per tick").
		cols.traceKinds = strs[3*n : 3*n+m : 3*n+m]
		for i, tr := range tick.Trace {
			cols.traceKinds[i] = tr.Kind
		}
		next.trace += int64(m)
	}
	cols.lastTrace = next.trace
	// The appended statement, built by build in one pass or two (see
	// appends): each part adds its parameters, then (when ap.text) its
	// text from their placeholders.
	// The run and the lease generation go in several parts: as pointers
	// into cols, as its numbers and columns do.
	// The tick's own strings go as pointers to its fields, which outlive
	// the commit: a pointer goes into an interface without an allocation
	// of its own, and a *string is sent as its string is (encodeOne, and
	// pgx alike).
	cols.run, cols.gen = runID, lease.Generation
	runV, genV := any(&cols.run), any(&cols.gen)
	build := func(ap *appends) {
		if merge {
			for i := range tick.Intents {
				in := &tick.Intents[i]
				// A second intent of the same id fails on the key.
				begun := slices.Contains(begunNew, in.ID) && firstIntent(tick, i)
				ap.intent(i, begun, &in.ID, runV, &cols.head, &in.EffectType, &in.IdempotencyKey, &in.ContentDigest, approvalArg(in.ApprovalID), in.Body, &in.Digest, genV, ts)
			}
			for i := range tick.Results {
				r := &tick.Results[i]
				if rc, ok := closed.get(r.IntentID); ok {
					ap.closed(i, string(r.Status), &r.Detail, runV, &r.IntentID, r.N, &r.Route, rc.Outcome, rc.Body, rc.Digest, genV, ts)
				}
			}
		}
		if consumeMerged {
			for i := range fromInbox {
				ap.consume(i, runV, &fromInbox[i])
			}
		}
		if len(tick.Submit) == 1 {
			// The tick's one input (see above).
			in := &tick.Submit[0]
			run := ap.arg(runV)
			vals := ap.args(&in.ID, &in.Kind, &in.ActorRole, &in.Actor, &in.Capability, in.Body, &in.Digest)
			at := ap.ts(ts)
			ap.shape.submit = true
			if ap.text {
				ap.add(submitInsert + run + `, ` + nextInboxSeq(run) + `, ` + vals + `, true, ` + at)
			} else {
				ap.add("")
			}
		}
		if len(tick.Events) > 0 {
			// One row for the tick's events (see the schema's "events
			// per tick").
			run, first, last := ap.arg(runV), ap.arg(&cols.first), ap.arg(&cols.head)
			kinds, bodies := ap.arg(&ev.kinds), ap.arg(&ev.bodies)
			hashes := func(j int, c *hashColumns) string {
				sums := ap.arg(&c.sums)
				if !c.anyText {
					if !ap.text {
						return ""
					}
					return sums + "::bytea[], NULL"
				}
				ap.shape.texts |= 1 << j
				texts := ap.arg(c.texts())
				if !ap.text {
					return ""
				}
				return sums + "::bytea[], " + texts + "::text[]"
			}
			d := hashes(0, &ev.digests)
			var p string
			if ev.prevSum != nil {
				p = ap.arg(&ev.prevSum)
				if ap.text {
					p += "::bytea, NULL"
				}
			} else {
				ap.shape.texts |= 1 << 1
				p = ap.arg(&ev.prev)
				if ap.text {
					p = "NULL, " + p + "::text"
				}
			}
			c := hashes(2, &ev.chains)
			gen, at := ap.arg(genV), ap.ts(ts)
			ap.shape.events = true
			if ap.text {
				ap.add(`INSERT INTO events (run_id, seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at)
VALUES (` + run + `, ` + first + `::bigint, ` + last + `::bigint, ` + kinds + `::text[], ` + bodies + `::bytea[], ` + d + `, ` + p + `, ` + c + `, ` + gen + `, ` + at + `)`)
			} else {
				ap.add("")
			}
		}
		if cp := tick.Checkpoint; cp != nil {
			run, n := ap.arg(runV), ap.arg(&cols.checkpoint)
			vals := ap.args(&cols.head, cp.FormatVersion, &cp.BuildDigest, &cols.cpBody, &cp.Digest, genV)
			at := ap.ts(ts)
			ap.shape.checkpoint = true
			if ap.text {
				ap.add(`INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES (` + run + `, ` + n + `::bigint, ` + vals + `, ` + at + `)`)
			} else {
				ap.add("")
			}
		}
		if len(tick.Trace) > 0 {
			run, first, last := ap.arg(runV), ap.arg(&cols.firstTrace), ap.arg(&cols.lastTrace)
			kinds, bodies, at := ap.arg(&cols.traceKinds), ap.arg(&cols.traceBodies), ap.ts(ts)
			ap.shape.trace = true
			if ap.text {
				ap.add(`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at)
VALUES (` + run + `, ` + first + `::bigint, ` + last + `, ` + kinds + `::text[], ` + bodies + `::bytea[], ` + at + `)`)
			} else {
				ap.add("")
			}
		}
		if tick.ExpectInboxEmpty && !ap.shape.fenceKnown {
			// (With fenceKnown the folded fence is the check: see
			// fenceAheadKnownWrite.)
			// Checked here on the one-round-trip path, which reads nothing
			// first (the other decided on its read, under the run's lock),
			// after the consumption above; the tick's own input is appended
			// consumed. Last, so that it is the statement's own query: the
			// server runs a WITH that only reads when it is read.
			run := ap.arg(runV)
			ap.shape.inboxEmpty = true
			if ap.text {
				ap.guard(`CASE WHEN EXISTS (SELECT 1 FROM inbox WHERE run_id = ` + run + ` AND NOT consumed) THEN flrh_expect_one(0, 'empty inbox') END`)
			} else {
				ap.guard("")
			}
		}
	}
	s.queueAppends(tx, build)
	for _, n := range tick.Notices {
		tx.Queue(`INSERT INTO notices (notice_id, run_id, seq, kind, body, created_at, next_at) VALUES ($1, $2, $3, $4, $5, `+tsParam(6)+`, `+tsParam(6)+`)
ON CONFLICT (notice_id) DO NOTHING`, store.NoticeID(runID, head, cols.lastTrace, n.Kind), runID, head, n.Kind, n.Body, ts)
	}
	if len(tick.Notices) > 0 {
		// Notifiers of every process wake at the commit, not at their next
		// look.
		tx.Queue(`SELECT pg_notify($1, $2)`, s.noticeChannel(), runID)
	}
	if state != "" {
		if tick.State != "" {
			state = tick.State
		}
		tx.Queue(`UPDATE runs SET head_seq = $1::bigint, head_hash = $2, state = $3, outcome = $4, updated_at = $5, due_at = $7 WHERE run_id = $6`,
			head, next.hash, state, tick.Outcome, ts, runID, nanos(tick.DueAt))
	}
	return nil
}

// mergeable reports whether the tick's intents, or its attempt results
// with their receipts, go in the appended statement instead of one
// statement each (one statement's executor start-up and round of the
// protocol fewer each). Parts of one statement share its snapshot and do
// not see each other's rows, so they are merged only when no other write
// of the tick touches their rows: intents when nothing else in the tick
// names an intent (a begin of a new intent is written with it), results
// when every one is closed by its receipt (closed) and the tick writes or
// begins no intent. The appended statement must exist: the tick appends
// something of its own.
func mergeable(tick store.Tick, skip []bool, closed closedReceipts) bool {
	if len(tick.Submit) != 1 && len(tick.Events) == 0 && tick.Checkpoint == nil && len(tick.Trace) == 0 && !tick.ExpectInboxEmpty {
		return false
	}
	for _, s := range skip {
		if !s {
			return false
		}
	}
	switch {
	case len(tick.Intents) > 0:
		return len(tick.Results) == 0 && len(tick.Receipts) == 0
	case len(tick.Results) > 0:
		return len(tick.Begin) == 0 && len(closed) == len(tick.Results) && len(closed) == len(tick.Receipts)
	}
	return false
}

// closedReceipts are a tick's receipts that closedWithResult finds, in
// the tick's order: few, so looked up by a scan.
type closedReceipts []*store.Receipt

// get returns the receipt of intent id, if it is one of c.
func (c closedReceipts) get(id string) (store.Receipt, bool) {
	for _, rc := range c {
		if rc.IntentID == id {
			return *rc, true
		}
	}
	return store.Receipt{}, false
}

// closedWithResult returns, appended to room, the receipts of tick that
// may be written with the intent's attempt result: the intent has exactly
// one result and one receipt in the tick, and the tick neither begins nor
// writes it (a begin comes between results and receipts). A caller's room
// on its stack, and counts held by value, take no allocation where a map
// of pointers returned took three.
func closedWithResult(tick store.Tick, room closedReceipts) closedReceipts {
	if len(tick.Results) == 0 || len(tick.Receipts) == 0 {
		return nil
	}
	type uses struct{ results, receipts, other int }
	count := map[string]uses{}
	for _, r := range tick.Results {
		u := count[r.IntentID]
		u.results++
		count[r.IntentID] = u
	}
	for _, rc := range tick.Receipts {
		u := count[rc.IntentID]
		u.receipts++
		count[rc.IntentID] = u
	}
	for _, id := range tick.Begin {
		u := count[id]
		u.other++
		count[id] = u
	}
	for _, in := range tick.Intents {
		u := count[in.ID]
		u.other++
		count[in.ID] = u
	}
	out := room[:0]
	for i := range tick.Receipts {
		rc := &tick.Receipts[i]
		if u := count[rc.IntentID]; u.results == 1 && u.receipts == 1 && u.other == 0 {
			out = append(out, rc)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// The fixed statements of a tick, built once.
var (
	// fenceAheadSQL is the one-round-trip commit's first statement (see
	// commitAhead); fenceAheadWrite is its write, which a tick's appended
	// statement may take as its first part instead (see queueAppends).
	fenceAheadSQL   = `WITH w AS (` + fenceAheadWrite + ` RETURNING ` + fenceReturning + `) SELECT ` + guardOne(`count(*)`, "fence") + ` FROM w`
	fenceAheadWrite = fenceAhead(false)
	// fenceAheadInboxWrite is fenceAheadWrite that also requires the
	// submissions counted on the row it locks (its newest version, read
	// again after any wait) to be those the store knew the row to count
	// ($13, runHead.submissions) or those counted on the run's row in the
	// statement's snapshot (see fenceChecksInbox). Either holds only when
	// the snapshot holds every input submitted before the lock: the
	// first, because the count known is never more than the row's at the
	// store's last commit of the run, which the snapshot follows, and the
	// count only grows; the second as its own check. The update finds the
	// row it moves as the snapshot holds it, and goes on to its newest
	// version only when that one matches its condition (READ COMMITTED):
	// the condition compares the row's count with the one known and then
	// with the snapshot's, read once (an InitPlan) and kept when the
	// condition is evaluated again on the newest version. An InitPlan is
	// run when its value is first needed: when the first comparison
	// holds, as it does on every tick but those after an input was
	// submitted meanwhile, the snapshot's row is not read at all.
	fenceAheadInboxWrite = fenceAhead(true)
	// fenceAheadKnownWrite is fenceAheadWrite that also requires the row
	// it locks (its newest version) to count exactly the submissions the
	// store knows ($13), for a tick that checks its inbox left empty when
	// the store knows it empty at that count (runHead.inboxEmpty): no
	// input was submitted since, no other writer's tick appended one (the
	// head would have moved), so none is pending, and the inbox is not
	// read. Any other count refuses the tick, which goes the
	// two-round-trip way and reads the inbox under the row's lock.
	fenceAheadKnownWrite = fenceAheadKnown()
	// resultClosedSQL writes an attempt result with the receipt that
	// closes its intent; resultSQL an attempt result alone; receiptSQL a
	// receipt alone; attemptSQL an attempt begun (see queueAttempt).
	resultClosedSQL = `WITH a AS (UPDATE attempts SET status = $1::text, detail = $2, finished_at = ` + tsParam(3) + `
	WHERE intent_id = $5 AND n = $6 AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = $4) RETURNING 1),
o AS (UPDATE outbox SET status = 'done', route = $7, updated_at = ` + tsParam(3) + ` WHERE intent_id = $5 AND run_id = $4 RETURNING 1),
r AS (INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
	SELECT $5, $4, $8, $9, $10, $11, ` + tsParam(3) + ` FROM o)
SELECT flrh_expect_one((SELECT count(*) FROM a), 'attempt result'), flrh_expect_one((SELECT count(*) FROM o), 'receipt')`
	resultSQL = `WITH a AS (UPDATE attempts SET status = $1::text, detail = $2, finished_at = ` + tsParam(3) + `
	WHERE intent_id = $5 AND n = $6 AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = $4) RETURNING 1),
o AS (UPDATE outbox SET status = $7::text, route = $8, updated_at = ` + tsParam(3) + ` WHERE intent_id = $5)
SELECT flrh_expect_one((SELECT count(*) FROM a), 'attempt result')`
	receiptSQL = `WITH o AS (UPDATE outbox SET status = 'done', updated_at = ` + tsParam(1) + ` WHERE intent_id = $3 AND run_id = $2 RETURNING 1),
r AS (INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
	SELECT $3, $2, $4, $5, $6, $7, ` + tsParam(1) + ` FROM o)
SELECT flrh_expect_one((SELECT count(*) FROM o), 'receipt')`
	attemptSQL = `WITH o AS (UPDATE outbox SET status = 'in_flight', attempts = $1, updated_at = ` + tsParam(2) + `
	WHERE intent_id = $3 AND attempts = $1 - 1 AND status IN ('pending', 'retry') RETURNING intent_id),
a AS (INSERT INTO attempts (intent_id, n, status, generation, started_at) SELECT intent_id, $1, 'started', $4, ` + tsParam(2) + ` FROM o)
SELECT flrh_expect_one((SELECT count(*) FROM o), 'attempt start')`
	// submitSQL appends an input consumed; consumeSQL consumes one.
	submitSQL  = submitInsert + `$1, ` + nextInboxSeq("$1") + `, $2, $3, $4, $5, $6, $7, $8, true, ` + tsParam(9)
	consumeSQL = expectOne(`UPDATE inbox SET consumed = true WHERE run_id = $1 AND inbound_id = $2 AND NOT consumed`, "inbound consumption")
)

// fenceAhead is the one-round-trip commit's fence (see commitAhead): one
// UPDATE of the run's row, by its key, that moves the header on (its due
// time $12 included) only if
// the lease, the head and its hash are still what the store knows; with
// inbox, only if the submissions the row counts are also those the
// store knows it to count ($13) or the statement's snapshot counts (see
// fenceAheadInboxWrite). Its rows are to
// be returned as fenceReturning.
//
// At READ COMMITTED (the implicit transaction) an UPDATE that finds its
// row changed by a transaction committed since its snapshot, or waits for
// one that then commits a change, locks the row's newest version and
// evaluates its whole condition again on it, the clock and the tick's
// time (flrh.tick_at, set by the condition) included; at REPEATABLE READ
// it fails with a serialization failure. So every check is made on the
// row as it is locked, as when a SELECT … FOR NO KEY UPDATE locked it
// first (fenceLocked), with two plan nodes where that took seven. What
// differs is the clock's reading when the row was locked by a
// transaction that then changed nothing: read before the wait, not after
// it. Nothing changes a lease without changing the row, so that reading
// decides no lease differently than one the commit itself outlasts.
//
// The tick's time is set in the condition, last of it, for the row found
// by its key: the new header's updated_at and every part of the statement
// after the fence read it. The runs' partial index runs_live (outcome and
// quarantine empty) must not be the plan's way to the row: the two
// checks are made as one, on the concatenation, which no index
// predicate matches, so the plan reads the row by the run's key.
// The inbox check's snapshot count is an InitPlan, evaluated once from
// the statement's snapshot, and kept when the condition is evaluated
// again on the newest row.
func fenceAhead(inbox bool) string {
	if !inbox {
		return fenceAheadAnd(``)
	}
	return fenceAheadAnd(`
	AND (submissions = $13::bigint OR submissions = (SELECT s.submissions FROM runs s WHERE s.run_id = $1))`)
}

// fenceAheadAnd is the fence's update with the condition and among its
// checks, before the clock is read.
func fenceAheadAnd(and string) string {
	return `UPDATE runs SET head_seq = $6::bigint, head_hash = $7, state = CASE WHEN $8 = '' THEN state ELSE $8 END, outcome = $10,
	due_at = $12::bigint, updated_at = current_setting('` + tickAt + `')::bigint
WHERE run_id = $1 AND lease_owner = $2 AND lease_generation = $3 AND quarantine || outcome = '' AND head_seq = $4 AND head_hash = $5` + and + `
	AND lease_expires_at > set_config('` + tickAt + `', (` + nowParam(9) + `)::text, true)::bigint`
}

// fenceAheadKnown is fenceAhead with the submissions the row counts
// required to be those the store knows (see fenceAheadKnownWrite).
func fenceAheadKnown() string {
	return fenceAheadAnd(`
	AND submissions = $13::bigint`)
}

// fenceReturning is what the fence's update returns for its row: the
// lazy setting turned on ($11) once the row is updated.
const fenceReturning = `CASE WHEN $11 THEN ` + lazyExpr + ` END`

// fenceLocked is the fence as a tick in a group sends it (fenceGroupSQL):
// it locks the run's row first (NOWAIT there), reads the clock after the
// lock and moves the header on only if the lease, the head and its hash
// are still what the store knows. No inbox check: a group's tick does
// not fold its fence.
func fenceLocked() string {
	return `WITH r AS MATERIALIZED (SELECT run_id, lease_owner, lease_generation, quarantine, outcome, head_seq, head_hash
	FROM runs WHERE run_id = $1 FOR NO KEY UPDATE),
c AS MATERIALIZED (SELECT r.run_id, set_config('` + tickAt + `', (` + nowParam(9) + `)::text, true)::bigint AS now,
	CASE WHEN $11 THEN ` + lazyExpr + ` END FROM r WHERE r.lease_owner = $2 AND r.lease_generation = $3
	AND r.quarantine = '' AND r.outcome = '' AND r.head_seq = $4 AND r.head_hash = $5)
UPDATE runs SET head_seq = $6::bigint, head_hash = $7, state = CASE WHEN $8 = '' THEN runs.state ELSE $8 END, outcome = $10, updated_at = c.now,
	due_at = $12::bigint
FROM c WHERE runs.run_id = $1 AND runs.run_id = c.run_id AND runs.lease_expires_at > c.now`
}

// nextInboxSeq is the position of the next input of the run whose id is
// the parameter run: one past its last, read backwards from the inbox's
// key (what MAX(seq) reads, in a plan of two nodes where the aggregate's
// took four).
func nextInboxSeq(run string) string {
	return `COALESCE((SELECT seq FROM inbox WHERE run_id = ` + run + ` ORDER BY seq DESC LIMIT 1), 0) + 1`
}

// submitInsert begins the statement that appends an input consumed.
const submitInsert = `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, consumed, recorded_at)
SELECT `

// approvalArg is an intent's approval id as its parameter: NULL when it
// has none.
func approvalArg(id string) any {
	if id == "" {
		return nil
	}
	return id
}

// firstIntent reports whether the tick's i-th intent is the first of its
// id.
func firstIntent(tick store.Tick, i int) bool {
	for _, in := range tick.Intents[:i] {
		if in.ID == tick.Intents[i].ID {
			return false
		}
	}
	return true
}

// tickColumns are the columns and numbers of a tick's appended
// statement that go as pointers (see queueTick).
type tickColumns struct {
	ev                      eventColumns
	traceKinds              []string
	traceBodies             [][]byte
	cpBody                  []byte
	run                     string
	gen                     int64
	head, first, checkpoint int64
	firstTrace, lastTrace   int64
}

// eventColumns are a tick's events as the columns of their row: the
// first event's previous hash (prevSum its sum, nil when it is kept as
// its text) stands for every event's, each later one's being the chain
// hash before it.
type eventColumns struct {
	kinds           []string
	bodies          [][]byte
	digests, chains hashColumns
	prev            string
	prevSum         []byte
}

// appendsParams is the room an appended statement's parameter list starts
// with: a governed step's ticks take 53 (the decision) and 43 (the
// receipt) with their fences folded in, and a list regrown past its room
// is copied into one twice its size.
const appendsParams = 56

// queueAppends queues the tick's appended statement, if it has anything
// to append, as build adds it: the parameters in one pass, the text from
// a tick of the same shape or, the first time, from a second pass.
//
// When the transaction's only queued statement is the fence of a tick that
// may fold it (tx.fence), the fence becomes the appended statement's
// first part, checking the inbox when tx.fenceInbox (see
// fenceChecksInbox), and is taken out of the queue: the tick is one
// statement.
func (s *Store) queueAppends(tx *wtx, build func(*appends)) {
	// The record is the transaction's (it outlives no call of build): one
	// allocation fewer a tick than its own.
	tx.ap = appends{vals: make([]any, 0, appendsParams)}
	ap := &tx.ap
	fence := tx.fence
	if len(tx.pending) != 1 {
		fence = nil // other statements of the tick come between
	}
	if fence != nil {
		ap.foldFence(fence, tx.fenceInbox, tx.fenceKnownEmpty, tx.fenceSubs)
	}
	build(ap)
	if ap.shape.parts == 0 || fence != nil && ap.shape.parts == 1 {
		return // nothing appended: the fence, if queued, stays on its own
	}
	if fence != nil {
		tx.pending, tx.used = nil, 0
	}
	if !ap.shape.wide {
		if sql, ok := s.shapes.get(ap.shape); ok {
			tx.Queue(sql, ap.vals...)
			return
		}
	}
	k := ap.shape
	ap.reset(true)
	if fence != nil {
		ap.foldFence(fence, tx.fenceInbox, tx.fenceKnownEmpty, tx.fenceSubs)
	}
	build(ap)
	sql := ap.sql()
	if !k.wide {
		s.shapes.put(k, sql)
	}
	tx.Queue(sql, ap.vals...)
}

// intentSQL writes an intent ($1 … $10, at time $11: see tsParam) and its
// pending outbox row in one statement; intentBegunSQL writes it with its
// outbox in flight and its first attempt begun.
const (
	intentSQL = `WITH i AS (INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ` + tsParam11 + `) RETURNING intent_id, run_id, recorded_at)
INSERT INTO outbox (intent_id, run_id, status, updated_at) SELECT intent_id, run_id, 'pending', recorded_at FROM i`
	intentBegunSQL = `WITH i AS (INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ` + tsParam11 + `) RETURNING intent_id, run_id, generation, recorded_at),
o AS (INSERT INTO outbox (intent_id, run_id, status, attempts, updated_at) SELECT intent_id, run_id, 'in_flight', 1, recorded_at FROM i)
INSERT INTO attempts (intent_id, n, status, generation, started_at) SELECT intent_id, 1, 'started', generation, recorded_at FROM i`
	tsParam11 = `COALESCE($11::bigint, current_setting('` + tickAt + `')::bigint)`
)

// chain is the chain hashes of a tick's events, each after the one
// before it: their 32-byte sums, as the events' row stores them, and the
// last one's text, the run's new head hash. Each sum is hashed from the
// one before it (store.ChainSumAfter), without its text made.
type chain struct {
	sums []byte // 32 bytes an event
	last string // the last event's chain hash; "" without events
}

// chainOf returns the chain hashes of evs appended after head, whose
// chain hash is prev.
func chainOf(prev string, head int64, evs []store.Event) chain {
	if len(evs) == 0 {
		return chain{}
	}
	c := chain{sums: make([]byte, 0, sha256.Size*len(evs))}
	sum := store.ChainSum(prev, head+1, evs[0].Digest)
	c.sums = append(c.sums, sum[:]...)
	for i, ev := range evs[1:] {
		sum = store.ChainSumAfter(sum, head+int64(i)+2, ev.Digest)
		c.sums = append(c.sums, sum[:]...)
	}
	c.last = store.SumText(sum)
	return c
}

// len is the number of chain hashes.
func (c chain) len() int { return len(c.sums) / sha256.Size }

// sum is the i-th chain hash's sum.
func (c chain) sum(i int) []byte {
	return c.sums[sha256.Size*i : sha256.Size*(i+1) : sha256.Size*(i+1)]
}

// text is the i-th chain hash as its text.
func (c chain) text(i int) string {
	if i == c.len()-1 {
		return c.last
	}
	return store.SumText([sha256.Size]byte(c.sum(i)))
}

// tickReads is what a tick is decided on, read in the round trip that
// locks the run: one entry per approval use, intent, attempt result and
// inbox consumption of the tick, in the tick's order.
type tickReads struct {
	approvals []*store.Approval // nil: never granted
	keys      []keyRead
	attempts  []bool                // the result's attempt exists in this run
	outbox    map[string]*outboxRow // by intent id, for the run's intents the tick names
	inbox     []bool                // the inbound event is pending in this run (store.FromInbox's entries)
	submitted []bool                // the tick's submitted inbound id is already in this run's inbox
	pending   int64                 // the run's pending inbox entries, when the tick expects none left
	// The run's last checkpoint number and trace sequence number: the
	// tick's records take the next ones.
	checkpoints, trace int64
}

type keyRead struct {
	digest string
	found  bool
}

// outboxRow is an intent's outbox as the tick's checks see it: as read,
// then as the tick's own earlier writes leave it.
type outboxRow struct {
	status   string
	attempts int64
}

// queue returns the reads for tick, to travel after the run's row lock.
func (rd *tickReads) queue(runID string, tick store.Tick) func(*pgx.Batch) {
	return func(b *pgx.Batch) {
		rd.approvals = make([]*store.Approval, len(tick.Approvals))
		for i, use := range tick.Approvals {
			b.Queue(`SELECT `+approvalColumns+` FROM approvals WHERE approval_id = $1`, use.ApprovalID).QueryRow(func(row pgx.Row) error {
				a, err := scanApproval(row)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				rd.approvals[i] = &a
				return err
			})
		}
		rd.keys = make([]keyRead, len(tick.Intents))
		for i, in := range tick.Intents {
			b.Queue(`SELECT content_digest FROM intents WHERE idempotency_key = $1`, in.IdempotencyKey).QueryRow(func(row pgx.Row) error {
				err := row.Scan(&rd.keys[i].digest)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				rd.keys[i].found = err == nil
				return err
			})
		}
		rd.attempts = make([]bool, len(tick.Results))
		for i, r := range tick.Results {
			b.Queue(`SELECT EXISTS (SELECT 1 FROM attempts
WHERE intent_id = $1 AND n = $2 AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = $3))`,
				r.IntentID, r.N, runID).QueryRow(func(row pgx.Row) error { return row.Scan(&rd.attempts[i]) })
		}
		if len(tick.Intents)+len(tick.Begin)+len(tick.Receipts) > 0 {
			rd.outbox = map[string]*outboxRow{}
		}
		for _, ids := range [][]string{tick.Begin, receiptIntents(tick.Receipts)} {
			for _, id := range ids {
				if _, ok := rd.outbox[id]; ok {
					continue
				}
				rd.outbox[id] = nil
				queueOutboxRead(b, runID, id, rd.outbox)
			}
		}
		rd.submitted = make([]bool, len(tick.Submit))
		for i, in := range tick.Submit {
			b.Queue(`SELECT EXISTS (SELECT 1 FROM inbox WHERE run_id = $1 AND inbound_id = $2)`, runID, in.ID).
				QueryRow(func(row pgx.Row) error { return row.Scan(&rd.submitted[i]) })
		}
		if tick.ExpectInboxEmpty {
			b.Queue(`SELECT count(*) FROM inbox WHERE run_id = $1 AND NOT consumed`, runID).
				QueryRow(func(row pgx.Row) error { return row.Scan(&rd.pending) })
		}
		fromInbox := store.FromInbox(tick)
		rd.inbox = make([]bool, len(fromInbox))
		for i, id := range fromInbox {
			b.Queue(`SELECT EXISTS (SELECT 1 FROM inbox WHERE run_id = $1 AND inbound_id = $2 AND NOT consumed)`, runID, id).
				QueryRow(func(row pgx.Row) error { return row.Scan(&rd.inbox[i]) })
		}
		// Read even when this tick writes neither: the next tick may then
		// go in one round trip (see Commit).
		b.Queue(`SELECT (SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = $1),
	COALESCE((SELECT last_seq FROM trace WHERE run_id = $1 ORDER BY seq DESC LIMIT 1), 0)`, runID).
			QueryRow(func(row pgx.Row) error { return row.Scan(&rd.checkpoints, &rd.trace) })
	}
}

func receiptIntents(rcs []store.Receipt) []string {
	ids := make([]string, len(rcs))
	for i, rc := range rcs {
		ids[i] = rc.IntentID
	}
	return ids
}

// queueOutboxRead reads the outbox of intent id, if the intent is this
// run's, into into[id].
func queueOutboxRead(b *pgx.Batch, runID, id string, into map[string]*outboxRow) {
	b.Queue(`SELECT o.status, o.attempts FROM outbox o JOIN intents i ON i.intent_id = o.intent_id
WHERE o.intent_id = $1 AND i.run_id = $2`, id, runID).QueryRow(func(row pgx.Row) error {
		var o outboxRow
		err := row.Scan(&o.status, &o.attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err == nil {
			into[id] = &o
		}
		return err
	})
}

// errRetryKey makes write run a transaction again: a concurrent commit
// claimed an idempotency key first, and only a fresh snapshot can tell
// a duplicate from a conflict.
var errRetryKey = retryError{"idempotency key claimed concurrently"}

// errRetryInbox makes write run a submission again: another submission to
// the run committed while this one waited for the run's row, after this
// one's snapshot was taken, and took the inbox position it computed (or
// the same inbound id); a fresh snapshot sees it.
var errRetryInbox = retryError{"inbox position taken concurrently"}

// retryError is a failure after which the transaction is run again from
// the start (the server rolled it back; see retryable).
type retryError struct{ why string }

func (e retryError) Error() string { return e.why }

func pgConstraint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

// consumeApproval revalidates a grant as read (a, nil if it was never
// granted, as this tick's earlier uses left it), at the transaction's clock
// reading, and queues its consumption.
func (s *Store) consumeApproval(tx *wtx, runID string, use store.ApprovalUse, a *store.Approval, consumedBy map[string]string, now time.Time) error {
	const op = "commit"
	if a == nil {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s was never granted", use.ApprovalID)
	}
	g := *a
	if by, ok := consumedBy[use.ApprovalID]; ok {
		g.Status, g.ConsumedBy = store.ApprovalConsumed, by
	}
	if g.Status != store.ApprovalGranted {
		return store.Errorf(store.CodeApprovalUnavailable, op, runID, nil, "approval %s is %s", use.ApprovalID, g.Status)
	}
	if g.RunID != runID {
		return store.Errorf(store.CodeApprovalRejected, op, runID, nil, "approval %s belongs to run %s", use.ApprovalID, g.RunID)
	}
	if !now.Before(g.ExpiresAt) {
		return store.Errorf(store.CodeApprovalRejected, op, runID, nil, "approval %s expired at %s", use.ApprovalID, g.ExpiresAt.Format(time.RFC3339Nano))
	}
	if use.Check != nil {
		if err := use.Check(g, now); err != nil {
			return store.Errorf(store.CodeApprovalRejected, op, runID, err, "approval %s", use.ApprovalID)
		}
	}
	consumedBy[use.ApprovalID] = use.IntentID
	tx.Queue(expectOne(`UPDATE approvals SET status = 'consumed', consumed_by = $1 WHERE approval_id = $2 AND status = 'granted'`, "approval consumption"),
		use.IntentID, use.ApprovalID)
	return nil
}

// BeginAttempt implements store.Store. It takes one round trip (see
// beginAhead); when the server refuses that, nothing of it was written and
// the attempt is begun in two, which report exactly what is wrong: the
// lock with the intent's outbox, then the attempt with COMMIT.
func (s *Store) BeginAttempt(ctx context.Context, lease store.Lease, intentID string) (store.Attempt, error) {
	const op = "begin attempt"
	if at, done, err := s.beginAhead(ctx, lease, intentID); done {
		return at, s.mapErr(op, lease.RunID, err)
	}
	var at store.Attempt
	err := s.write(ctx, op, lease.RunID, func(tx *wtx) error {
		outbox := map[string]*outboxRow{}
		_, now, err := s.fence(ctx, tx, op, lease, nil, func(b *pgx.Batch) { queueOutboxRead(b, lease.RunID, intentID, outbox) })
		if err != nil {
			return err
		}
		at, err = beginAttempt(tx, lease, intentID, outbox[intentID], now)
		return err
	})
	return at, err
}

// beginAheadSQL begins the next attempt of intent $5 of run $1 in one
// statement: it locks the run's row, reads the clock after the lock ($2
// when injected), and only if the lease ($3, $4) is the run's current,
// unexpired one and the run is not quarantined (fenceSQL) moves the
// intent's outbox, when this run's and attemptable, in flight and inserts
// the attempt it numbers. Anything else touches no row, and the guard
// fails the transaction.
const beginAheadSQL = `WITH r AS MATERIALIZED (SELECT run_id, quarantine, lease_owner, lease_generation, lease_expires_at FROM runs WHERE run_id = $1 FOR NO KEY UPDATE),
c AS MATERIALIZED (SELECT r.*, COALESCE($2::bigint, ` + nowNanos + `) AS now FROM r),
o AS (UPDATE outbox SET status = 'in_flight', attempts = outbox.attempts + 1, updated_at = c.now
	FROM c WHERE ` + fenceSQL + ` AND outbox.intent_id = $5 AND outbox.run_id = c.run_id AND outbox.status IN ('pending', 'retry')
	RETURNING outbox.attempts AS n, c.now),
a AS (INSERT INTO attempts (intent_id, n, status, generation, started_at) SELECT $5, o.n, 'started', $4, o.now FROM o RETURNING n, started_at)
SELECT flrh_expect_one((SELECT count(*) FROM a), 'attempt start'), (SELECT n FROM a), (SELECT started_at FROM a)`

// beginAhead begins the intent's next attempt in one round trip: BEGIN,
// beginAheadSQL and COMMIT. The statement itself checks what the
// two-round-trip path reads first (the fence, the intent's outbox), so
// the common case needs no read before the write. done is false when the
// server refused it before COMMIT — a fence, a missing or unattemptable
// intent, a serialization failure: nothing was written, and the caller
// takes the two-round-trip path. When done, err is the outcome (a
// connection lost while COMMIT was answered leaves it unknown, as
// anywhere).
func (s *Store) beginAhead(ctx context.Context, lease store.Lease, intentID string) (at store.Attempt, done bool, err error) {
	if s.ro {
		return at, false, nil
	}
	var clock time.Time
	var injected any
	if s.clock != nil {
		clock = s.clock()
		injected = nanos(clock)
	}
	commitSent, err := s.once(ctx, func(tx *wtx) error {
		at = store.Attempt{}
		tx.Queue(beginAheadSQL, lease.RunID, injected, lease.Owner, lease.Generation, intentID).QueryRow(func(row pgx.Row) error {
			var started int64
			if err := row.Scan(nil, &at.N, &started); err != nil {
				return err
			}
			at.StartedAt = fromNanos(started)
			return nil
		})
		return tx.commit(ctx)
	})
	if err != nil && !commitSent {
		return store.Attempt{}, false, nil
	}
	if err != nil {
		return store.Attempt{}, true, err
	}
	at.IntentID, at.Status, at.Generation = intentID, store.AttemptStarted, lease.Generation
	if s.clock != nil {
		at.StartedAt = clock.UTC() // as the two-round-trip path reports it
	}
	return at, true, nil
}

// beginAttempt queues attempt n+1 of an intent inside tx (already fenced),
// given its outbox as the transaction sees it (nil: no such intent in this
// run), and moves that outbox in flight.
func beginAttempt(tx *wtx, lease store.Lease, intentID string, o *outboxRow, now time.Time) (store.Attempt, error) {
	n, err := nextAttempt(lease, intentID, o)
	if err != nil {
		return store.Attempt{}, err
	}
	queueAttempt(tx, lease, intentID, n, nanos(now))
	return store.Attempt{IntentID: intentID, N: n, Status: store.AttemptStarted, Generation: lease.Generation, StartedAt: now.UTC()}, nil
}

// nextAttempt checks that the intent (its outbox o, nil when the intent is
// not this run's) may be attempted, and returns the attempt's number,
// leaving o as the attempt will.
func nextAttempt(lease store.Lease, intentID string, o *outboxRow) (int64, error) {
	const op = "begin attempt"
	if o == nil {
		return 0, store.Errorf(store.CodeNotFound, op, lease.RunID, nil, "no intent %s in this run", intentID)
	}
	// Only a pending intent or one whose last attempt failed transiently
	// may be attempted; in-flight and unknown outcomes reconcile first.
	if o.status != string(store.OutboxPending) && o.status != string(store.OutboxRetry) {
		return 0, store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "intent %s is %s, not attemptable", intentID, o.status)
	}
	o.status, o.attempts = string(store.OutboxInFlight), o.attempts+1
	return o.attempts, nil
}

// queueAttempt queues attempt n of an intent and its outbox in flight,
// guarded on the outbox being at attempt n-1 and attemptable. ts is the
// time, or nil for the run header's updated_at (see tsParam).
func queueAttempt(tx *wtx, lease store.Lease, intentID string, n int64, ts any) {
	// The outbox first: when a concurrent writer moved it after this
	// transaction's snapshot, the update fails with a serialization error
	// (run again, and told exactly why) before the attempt's number can
	// collide.
	tx.Queue(attemptSQL, n, ts, intentID, lease.Generation)
}

// sealTick returns the bodies the tick's checkpoint and trace records are
// stored with: as they are without a sealer, else sealed for the positions
// they will take after the run's last checkpoint (checkpoints) and trace
// record (trace). The run's row is locked, so no other commit of this run
// can take those positions first. The tick itself is left alone: a
// transaction run again seals afresh.
func (s *Store) sealTick(op, runID string, tick store.Tick, checkpoints, trace int64) (cp []byte, bodies [][]byte, err error) {
	bodies = make([][]byte, len(tick.Trace))
	if tick.Checkpoint != nil {
		cp = tick.Checkpoint.Body
	}
	for i, tr := range tick.Trace {
		bodies[i] = tr.Body
	}
	if s.sealer == nil {
		return cp, bodies, nil
	}
	if cp != nil {
		if cp, err = store.SealBody(s.sealer, op, store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: checkpoints + 1}, cp); err != nil {
			return nil, nil, err
		}
	}
	for i, tr := range tick.Trace {
		if bodies[i], err = store.SealBody(s.sealer, op, store.SealRef{RunID: runID, Kind: store.SealTrace + "/" + tr.Kind, Seq: trace + int64(i) + 1}, tr.Body); err != nil {
			return nil, nil, err
		}
	}
	return cp, bodies, nil
}

// implicitTick sends the one-round-trip tick (commitAhead, commitTogether)
// as the pipeline's implicit transaction, without BEGIN and COMMIT (see
// wtx.implicit). A variable so that tests can compare the two.
var implicitTick = true
