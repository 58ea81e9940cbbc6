package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"flrh.dev/flrh/store"
)

// Commit implements store.Store: one IMMEDIATE transaction that checks the
// fence and the head, revalidates and consumes approvals, appends events to
// the hash chain, writes intents with their outbox rows, attempt results,
// receipts, the checkpoint, the run header and the trace — or nothing.
func (s *Store) Commit(ctx context.Context, lease store.Lease, tick store.Tick) error {
	const op = "commit"
	if err := store.ValidateTick(lease.RunID, tick); err != nil {
		return err
	}
	// The request carries the lease and the tick themselves, not a
	// closure over them, and is reused from commit to commit: a commit
	// allocates none of it (commitReqs). A lagging tick may be run again,
	// after its caller has returned, if a write that joins its
	// transaction is refused (linger.go): then it runs on the writer's
	// copy of it (beginLinger), made before its caller returns, which
	// the caller cannot change.
	req := commitReqs.Get().(*writeReq)
	*req = writeReq{ctx: ctx, op: op, runID: lease.RunID, lazy: tick.MayLag, commit: true, lease: lease, tick: tick}
	err := s.enqueueWrite(req)
	// Nothing refers to the request once its write is decided (lead
	// hands the batch's requests back to their callers); it is put back
	// holding none of the tick (storetest.RunKeepsNone).
	*req = writeReq{}
	commitReqs.Put(req)
	return err
}

// commitReqs are the requests Commit reuses.
var commitReqs = sync.Pool{New: func() any { return new(writeReq) }}

// commitTick is Commit's work inside the batch's transaction.
func (s *Store) commitTick(ctx context.Context, tx *wtx, now time.Time, lease store.Lease, tick *store.Tick) error {
	const op = "commit"
	// A lagging tick counts the run's pending inbox entries too, so
	// that the next tick, which at C=1 joins its transaction and
	// expects the inbox empty, finds the run's row known.
	run, counters, err := s.fenceTick(ctx, tx, op, lease, now, tick.ExpectInboxEmpty || tick.MayLag)
	if err != nil {
		return err
	}
	// The run's row as the lagging tick before this one wrote it may
	// be waiting to be written (deferRunRow). If the fence took the
	// row known from that tick, no statement has run since (a read
	// of the row would have written it first), and this tick writes
	// every column of the row after its own writes: the deferred
	// write is this tick's to make. Whatever refuses this tick from
	// here rolls the transaction back whole and runs the lagging
	// ticks again (the write joins a lagging transaction alone), or
	// writes the row first (a SAVEPOINT is a statement).
	if d := &tx.w.deferred; d.set && d.runID == lease.RunID {
		d.set = false
	}
	if err := s.refuseLost(tx, op, lease.RunID); err != nil {
		return err
	}
	if run.Head != tick.ExpectHead {
		return store.Errorf(store.CodeHeadMismatch, op, lease.RunID, nil, "writer computed from event %d, the run is at %d", tick.ExpectHead, run.Head)
	}
	if run.Outcome != "" {
		return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "run already ended with %s", run.Outcome)
	}
	ts := nanos(now)
	runArg, genArg, tsArg := lease.RunID, lease.Generation, ts

	// Events extend the hash chain, inserted a few hundred rows per
	// statement (well inside SQLite's limit on bound parameters).
	// Each chain hash is computed as its sum, stored as those 32 bytes
	// (what packHash makes of its text) and is the next event's
	// previous hash; it is hashed after the one before from that sum
	// (store.ChainSumAfter). The last is kept as its sum for the run's
	// row, whose text is written where the row is bound (writeRunRow),
	// and for the run's next tick, should its row be known to it
	// (runCounters.summed): a run's head hash is made into text only
	// when read from its row. The rows are kept typed in a list the writer
	// reuses (eventRow) and bound as they are (insertEventRows).
	head, hash := run.Head, run.HeadHash
	sum, summed := counters.headSum, counters.summed
	for start := 0; start < len(tick.Events); start += eventsPerInsert {
		chunk := tick.Events[start:min(start+eventsPerInsert, len(tick.Events))]
		rows := tx.w.evRows[:0]
		for _, ev := range chunk {
			r := eventRow{kind: ev.Kind, body: ev.Body, digest: ev.Digest, prev: sum}
			if head == run.Head && !summed {
				r.prevText = hash
				sum = store.ChainSum(hash, head+1, ev.Digest)
			} else {
				sum = store.ChainSumAfter(sum, head+1, ev.Digest)
			}
			head++
			r.head, r.next = head, sum
			rows = append(rows, r)
		}
		err := s.insertEventRows(ctx, tx, lease.RunID, lease.Generation, ts, rows)
		clear(rows) // holds no event once bound
		tx.w.evRows = rows[:0]
		if err != nil {
			return err
		}
	}
	if head != run.Head {
		hash, summed = "", true
	}

	// Approvals: revalidated against the grant as stored, at this
	// transaction's clock reading, then consumed once.
	for _, use := range tick.Approvals {
		a, err := scanApproval(s.queryRow(ctx, tx, `SELECT `+approvalColumns+` FROM approvals WHERE approval_id = ?`, use.ApprovalID))
		if err == sql.ErrNoRows {
			return store.Errorf(store.CodeApprovalUnavailable, op, lease.RunID, nil, "approval %s was never granted", use.ApprovalID)
		} else if err != nil {
			return err
		}
		if a.Status != store.ApprovalGranted {
			return store.Errorf(store.CodeApprovalUnavailable, op, lease.RunID, nil, "approval %s is %s", use.ApprovalID, a.Status)
		}
		if a.RunID != lease.RunID {
			return store.Errorf(store.CodeApprovalRejected, op, lease.RunID, nil, "approval %s belongs to run %s", use.ApprovalID, a.RunID)
		}
		if !now.Before(a.ExpiresAt) {
			return store.Errorf(store.CodeApprovalRejected, op, lease.RunID, nil, "approval %s expired at %s", use.ApprovalID, a.ExpiresAt.Format(time.RFC3339Nano))
		}
		if use.Check != nil {
			if err := use.Check(a, now); err != nil {
				return store.Errorf(store.CodeApprovalRejected, op, lease.RunID, err, "approval %s", use.ApprovalID)
			}
		}
		if _, err := s.exec(ctx, tx, `UPDATE approvals SET status = 'consumed', consumed_by = ? WHERE approval_id = ? AND status = 'granted'`,
			use.IntentID, use.ApprovalID); err != nil {
			return err
		}
	}

	// Intents, each with its outbox row. A reused idempotency key with the
	// same content is the same intent committed twice: refused as a
	// duplicate. With other content it is a conflict, never a reuse.
	//
	// The key's binding is looked up only when the INSERT is refused
	// (the key is UNIQUE): a refusal for any reason leaves the
	// transaction as it was, and the lookup then tells a reused key,
	// reported as before, from a reused intent id.
	//
	// An intent the tick also begins is written with its outbox row
	// already in flight for attempt 1, and beginAttempt below inserts
	// only the attempt: the row is what the pending row and its
	// update wrote, at the same clock reading, two statements fewer.
	var begun []string // intents begun with their outbox row
	for _, in := range tick.Intents {
		var approval any
		if in.ApprovalID != "" {
			approval = in.ApprovalID
		}
		if _, err := s.exec(ctx, tx, insertIntent,
			in.ID, runArg, head, in.EffectType, in.IdempotencyKey, in.ContentDigest, approval, in.Body, in.Digest, genArg, tsArg); err != nil {
			var existing string
			switch qerr := s.queryRow(ctx, tx, `SELECT content_digest FROM intents WHERE idempotency_key = ?`, in.IdempotencyKey).Scan(&existing); {
			case qerr == nil && existing != in.ContentDigest:
				return store.Errorf(store.CodeIdempotencyConflict, op, lease.RunID, nil, "idempotency key %s is bound to other content", in.IdempotencyKey)
			case qerr == nil:
				return store.Errorf(store.CodeExists, op, lease.RunID, nil, "intent with idempotency key %s already committed", in.IdempotencyKey)
			}
			return err
		}
		if slices.Contains(tick.Begin, in.ID) && !slices.Contains(begun, in.ID) {
			if _, err := s.exec(ctx, tx, insertOutboxInFlight,
				in.ID, runArg, tsArg); err != nil {
				return err
			}
			begun = append(begun, in.ID)
			continue
		}
		if _, err := s.exec(ctx, tx, insertOutboxPending,
			in.ID, runArg, tsArg); err != nil {
			return err
		}
	}

	// Attempt results move their intent's outbox.
	// (Results come before new attempts so that a retry can finish the
	// last attempt and begin the next one in one tick.)
	//
	// A result that moved its intent's outbox row to done is noted: the
	// intent is then known to be this run's with an outbox row, so its
	// receipt below needs neither the lookup nor the update that would
	// set the row to what it already holds.
	var closed []string
	for _, r := range tick.Results {
		res, err := s.exec(ctx, tx, finishAttempt, string(r.Status), r.Detail, tsArg, r.IntentID, runArg, r.N)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "no attempt %d of intent %s in this run", r.N, r.IntentID)
		}
		res, err = s.exec(ctx, tx, moveOutbox,
			string(r.Outbox), r.Route, tsArg, r.IntentID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 && r.Outbox == store.OutboxDone {
			closed = append(closed, r.IntentID)
		} else {
			closed = slices.DeleteFunc(closed, func(id string) bool { return id == r.IntentID })
		}
	}

	for _, id := range tick.Begin {
		if i := slices.Index(begun, id); i >= 0 {
			// Its outbox row was written in flight with the intent.
			begun = slices.Delete(begun, i, i+1)
			if _, err := s.exec(ctx, tx, insertAttempt,
				id, id, 1, genArg, tsArg); err != nil {
				return err
			}
			continue
		}
		if _, err := s.beginAttempt(ctx, tx, lease, id, now); err != nil {
			return err
		}
	}

	// Receipts close their intents. Every receipt's intent is checked,
	// then the inbox entries consumed, then the receipts written: the
	// order in which the PostgreSQL store finds the same faults (its
	// reads come first, a duplicate receipt shows only when written),
	// so both backends refuse a bad tick with the same error.
	for _, rc := range tick.Receipts {
		if slices.Contains(closed, rc.IntentID) {
			continue
		}
		var status string
		err := s.queryRow(ctx, tx, runIntentOutbox, rc.IntentID, runArg).Scan(&status)
		if err == sql.ErrNoRows {
			return store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "receipt for unknown intent %s", rc.IntentID)
		} else if err != nil {
			return err
		}
	}

	if err := s.submitInTick(ctx, tx, lease.RunID, tick.Submit, ts); err != nil {
		return err
	}
	consumed := store.FromInbox(*tick)
	if err := s.consume(ctx, tx, lease.RunID, consumed); err != nil {
		return err
	}
	// The fence counted the entries pending when the tick began; each
	// one the tick consumed was one of them (consume refuses any
	// other), and the tick's own submissions are written consumed. So
	// the inbox is empty now exactly when the tick consumed as many
	// as there were: no read of the inbox after the writes.
	if tick.ExpectInboxEmpty && counters.pending > int64(len(consumed)) {
		return store.Errorf(store.CodeHeadMismatch, op, lease.RunID, nil, "the run's inbox holds entries the writer did not see")
	}

	for _, rc := range tick.Receipts {
		if _, err := s.exec(ctx, tx, insertReceipt,
			rc.IntentID, runArg, rc.Outcome, rc.Body, rc.Digest, genArg, tsArg); err != nil {
			return err
		}
		if slices.Contains(closed, rc.IntentID) {
			continue // set to done at ts by its result
		}
		if _, err := s.exec(ctx, tx, closeOutbox, tsArg, rc.IntentID); err != nil {
			return err
		}
	}

	if cp := tick.Checkpoint; cp != nil {
		counters.checkpointN++
		n := counters.checkpointN
		ref := store.SealRef{RunID: lease.RunID, Kind: store.SealCheckpoint, Seq: n}
		// Packed since schema 12 (its bodies are two thirds of the
		// bytes a step writes to the checkpoints' pages; decision 1784).
		var body []byte
		var err error
		if s.testUnpacked {
			body, err = store.SealBody(s.sealer, op, ref, cp.Body)
		} else {
			body, err = store.PackSealBody(s.sealer, &tx.w.packer, op, ref, cp.Body)
		}
		if err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO checkpoints (run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, runArg, n, head, cp.FormatVersion, cp.BuildDigest, body, cp.Digest, genArg, tsArg); err != nil {
			return err
		}
	}

	state := run.State
	if tick.State != "" {
		state = tick.State
	}
	// The tick's trace records, in one row (trace.go).
	if len(tick.Trace) > 0 {
		last := counters.traceSeq
		size := 0
		for _, tr := range tick.Trace {
			size += 8 + len(tr.Kind) + len(tr.Body)
		}
		frame := slices.Grow(tx.w.frame[:0], size+size/8) // room for a sealer's overhead
		for i, tr := range tick.Trace {
			body := tr.Body
			if s.sealer != nil { // the reference's kind is built only to seal
				var err error
				if body, err = store.SealBody(s.sealer, op, store.SealRef{RunID: lease.RunID, Kind: store.SealTrace + "/" + tr.Kind, Seq: last + 1 + int64(i)}, tr.Body); err != nil {
					return err
				}
			}
			frame = appendTraceRecord(frame, tr.Kind, body)
		}
		_, err := s.exec(ctx, tx, `INSERT INTO trace (run_id, seq, last_seq, records, recorded_at) VALUES (?, ?, ?, ?, ?)`,
			runArg, last+1, last+int64(len(tick.Trace)), frame, tsArg)
		tx.w.frame = frame[:0] // the driver copied it
		if err != nil {
			return err
		}
	}

	traceSeq := counters.traceSeq + int64(len(tick.Trace))
	for _, n := range tick.Notices {
		if _, err := s.exec(ctx, tx, insertNotice, store.NoticeID(lease.RunID, head, traceSeq, n.Kind), runArg, head, n.Kind, n.Body, tsArg, tsArg); err != nil {
			return err
		}
	}
	// The run's row, written last (a lagging tick's write of it waits;
	// see deferRunRow).
	row := deferredRow{runID: lease.RunID, head: head, hash: hash, sum: sum, summed: summed, state: state, outcome: tick.Outcome,
		ts: ts, traceSeq: traceSeq, checkpointN: counters.checkpointN, due: nanos(tick.DueAt)}
	if tick.MayLag {
		// Written when the next statement runs, unless the next write
		// is a tick of the run that takes this row known, which writes
		// the row itself (deferRunRow).
		tx.w.deferRunRow(row)
	} else if err := s.writeRunRow(ctx, tx, &row); err != nil {
		return err
	}

	// The run's row as this tick leaves it, for the next write's
	// fence should that be the run's next tick (decision 1188). Set
	// last: a tick refused on the way leaves nothing known.
	known := run
	known.Head, known.HeadHash, known.State, known.Outcome, known.DueAt = head, hash, state, tick.Outcome, tick.DueAt
	counters.headSum, counters.summed = sum, summed
	counters.traceSeq = traceSeq
	counters.pending -= int64(len(consumed))
	tx.w.known = knownRun{run: known, c: counters, pending: tick.ExpectInboxEmpty || tick.MayLag}
	return nil
}

// updateRunRow writes a tick's changes to its run's row.
const updateRunRow = `UPDATE runs SET head_seq = ?, head_hash = ?, state = ?, outcome = ?, updated_at = ?, trace_seq = ?, checkpoint_n = ?, due_at = ? WHERE run_id = ?`

// deferredRow is a tick's write of its run's row (a lagging tick's, not
// yet made): updateRunRow's arguments, the head hash as its text or, when
// summed, as its sum.
type deferredRow struct {
	set                       bool
	runID                     string
	head                      int64
	hash, state, outcome      string
	sum                       [32]byte
	summed                    bool
	ts, traceSeq, checkpointN int64
	due                       int64
}

// writeRunRow runs updateRunRow for d, after the row a lagging tick left
// to write (flushRunRow). On the writing connection a head hash known as
// its sum is bound as its text written into the bound values' buffer;
// via the driver, or known as text, the text is bound as it is.
func (s *Store) writeRunRow(ctx context.Context, tx *wtx, d *deferredRow) error {
	if tx.lc == nil || !d.summed {
		hash := d.hash
		if d.summed {
			hash = store.SumText(d.sum)
		}
		_, err := s.exec(ctx, tx, updateRunRow, d.head, hash, d.state, d.outcome, d.ts, d.traceSeq, d.checkpointN, d.due, d.runID)
		return err
	}
	if err := s.flushRunRow(ctx, tx); err != nil {
		return err
	}
	var buf [len(hashPrefix) + 64]byte
	text := store.AppendSumText(buf[:0], d.sum)
	b, err := tx.lc.binder(updateRunRow, len(text)+len(d.state)+len(d.outcome)+len(d.runID))
	if err != nil {
		return err
	}
	b.int64(d.head)
	b.textBytes(text)
	b.text(d.state)
	b.text(d.outcome)
	b.int64(d.ts)
	b.int64(d.traceSeq)
	b.int64(d.checkpointN)
	b.int64(d.due)
	b.text(d.runID)
	_, err = b.exec()
	return err
}

// deferRunRow keeps a lagging tick's write of its run's row until the next statement on the connection, which writes it
// first (flushRunRow), or the next tick of the run, taking the row known
// from this one, which writes every column of it itself. At C=1 a governed
// step's receipt tick lags and the next step's input tick joins its
// transaction: the row is written once for the two. Anything else runs a
// statement first: a read of the row, a SAVEPOINT, a COMMIT.
func (w *writer) deferRunRow(d deferredRow) {
	d.set = true
	w.deferred = d
}

// flushRunRow writes the run's row a lagging tick left to write, if any.
func (s *Store) flushRunRow(ctx context.Context, tx *wtx) error {
	d := &tx.w.deferred
	if !d.set {
		return nil
	}
	d.set = false
	return s.writeRunRow(ctx, tx, d)
}

// insertIntent and insertReceipt leave the commit order to SQLite: it is
// the table's rowid (intents since schema version 8, receipts since 5),
// and a row inserted without one is given the largest rowid in the table
// plus one (1 in an empty table), which is what COALESCE(MAX(commit_order),
// 0) + 1 read before each insert; the tables are append-only, so no
// larger order was ever taken and freed. (Only a table whose largest rowid
// is the largest integer would be given another; an order is one per
// intent or receipt.)
const (
	insertIntent = `INSERT INTO intents (intent_id, run_id, seq, effect_type, idempotency_key, content_digest, approval_id, body, digest, generation, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertReceipt = `INSERT INTO receipts (intent_id, run_id, outcome, body, digest, generation, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`
)

// finishAttempt records an attempt's result (status, detail, finish time)
// if its intent is the run's: the arguments are status, detail,
// finished_at, intent_id, run_id, n. The one intent is looked up by its
// key and the run (an IN over the run's intents made SQLite list every
// intent of the run, and build a filter of them, for each result, a cost
// that grew with the run), and its commit order keys the attempt (schema
// version 9). The rows it changes are the same
// (TestFinishAttemptMatchesListedIntents). Its parameters are plain ?
// (the driver makes a string of each numbered parameter's name).
const finishAttempt = `UPDATE attempts SET status = ?, detail = ?, finished_at = ?
WHERE intent_order = (SELECT commit_order FROM intents WHERE intent_id = ? AND run_id = ?) AND n = ?`

// The statements that find an intent's outbox row or attempts: schema
// version 9 keys both by the intent's commit order, looked up by the
// intent's id. A new outbox row is written by the statement after its
// intent's INSERT and takes that intent's order, the rowid SQLite just
// gave it (last_insert_rowid(); no other INSERT runs between). Each
// row also keeps its intent's id, which no read of the store uses.
const (
	// insertAttempt begins an attempt: intent_id (twice: the order is
	// looked up by it), n, generation, started_at.
	insertAttempt = `INSERT INTO attempts (intent_order, intent_id, n, status, generation, started_at)
VALUES ((SELECT commit_order FROM intents WHERE intent_id = ?), ?, ?, 'started', ?, ?)`
	// runIntentOutbox reads the outbox status of an intent of the run:
	// intent_id, run_id.
	runIntentOutbox = `SELECT o.status FROM intents i JOIN outbox o ON o.intent_order = i.commit_order
WHERE i.intent_id = ? AND i.run_id = ?`
	// runIntentOutboxAttempts is runIntentOutbox with the attempts made.
	runIntentOutboxAttempts = `SELECT o.status, o.attempts FROM intents i JOIN outbox o ON o.intent_order = i.commit_order
WHERE i.intent_id = ? AND i.run_id = ?`
	// moveOutbox sets an intent's outbox status and route after a
	// result: status, route, updated_at, intent_id.
	moveOutbox = `UPDATE outbox SET status = ?, route = ?, updated_at = ? WHERE intent_order = (SELECT commit_order FROM intents WHERE intent_id = ?)`
	// closeOutbox sets an intent's outbox done: updated_at, intent_id.
	closeOutbox = `UPDATE outbox SET status = 'done', updated_at = ? WHERE intent_order = (SELECT commit_order FROM intents WHERE intent_id = ?)`
	// attemptOutbox sets an intent's outbox in flight for attempt n:
	// attempts, updated_at, intent_id.
	attemptOutbox = `UPDATE outbox SET status = 'in_flight', attempts = ?, updated_at = ? WHERE intent_order = (SELECT commit_order FROM intents WHERE intent_id = ?)`
	// insertOutboxInFlight and insertOutboxPending write a new intent's
	// outbox row: intent_id, run_id, updated_at.
	insertOutboxInFlight = `INSERT INTO outbox (intent_order, intent_id, run_id, status, attempts, updated_at) VALUES (last_insert_rowid(), ?, ?, 'in_flight', 1, ?)`
	insertOutboxPending  = `INSERT INTO outbox (intent_order, intent_id, run_id, status, updated_at) VALUES (last_insert_rowid(), ?, ?, 'pending', ?)`
)

// eventsPerInsert bounds the rows of one INSERT INTO events, well inside
// SQLite's limit on bound parameters.
const eventsPerInsert = 500

// eventRow is an event's row as a tick inserts it: its number, kind,
// body and digest (bound as packHash binds the text), its previous hash
// (the text prevText, the run's head, for the tick's first event; the
// sum prev for the others) and its chain hash's sum.
type eventRow struct {
	head       int64
	kind       string
	body       []byte
	digest     string
	prevText   string
	prev, next [32]byte
}

// insertEventRows inserts rows of run's events (generation gen, recorded
// at ts) in one statement, after the run's row a lagging tick left to
// write (flushRunRow). On the writing connection each value is bound as
// it is, the sums from the row's arrays; via the driver as values
// database/sql would hand on.
func (s *Store) insertEventRows(ctx context.Context, tx *wtx, run string, gen, ts int64, rows []eventRow) error {
	if tx.lc == nil {
		args := make([]any, 0, 9*len(rows))
		for i := range rows {
			r := &rows[i]
			prev := packHash(r.prevText)
			if r.prevText == "" {
				prev = slices.Clone(r.prev[:])
			}
			args = append(args, run, r.head, r.kind, r.body, packHash(r.digest), prev, slices.Clone(r.next[:]), gen, ts)
		}
		_, err := s.exec(ctx, tx, insertEvents(len(rows)), args...)
		return err
	}
	if err := s.flushRunRow(ctx, tx); err != nil {
		return err
	}
	size := 0
	for i := range rows {
		r := &rows[i]
		size += len(run) + len(r.kind) + len(r.body) + max(32, len(r.digest)) + max(32, len(r.prevText)) + 32
	}
	b, err := tx.lc.binder(insertEvents(len(rows)), size)
	if err != nil {
		return err
	}
	var sum [32]byte
	for i := range rows {
		r := &rows[i]
		b.text(run)
		b.int64(r.head)
		b.text(r.kind)
		b.blob(r.body)
		b.hash(&sum, r.digest)
		if r.prevText != "" {
			b.hash(&sum, r.prevText)
		} else {
			b.blob(r.prev[:])
		}
		b.blob(r.next[:])
		b.int64(gen)
		b.int64(ts)
	}
	_, err = b.exec()
	return err
}

// insertEvents is the statement that inserts n events. The texts for the
// tick sizes a runner commits are built once: the statement cache is keyed
// by the text, and building it cost as much as looking it up.
func insertEvents(n int) string {
	if t := insertEventsText(); n < len(t) {
		return t[n]
	}
	return buildInsertEvents(n)
}

// insertEventsText is built on first use, not while packages initialise.
var insertEventsText = sync.OnceValue(func() []string {
	t := make([]string, 33)
	for n := 1; n < len(t); n++ {
		t[n] = buildInsertEvents(n)
	}
	return t
})

func buildInsertEvents(n int) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO events (run_id, seq, kind, body, digest, prev_hash, chain_hash, generation, recorded_at) VALUES `)
	for i := 0; i < n; i++ {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	return q.String()
}

// BeginAttempt implements store.Store.
func (s *Store) BeginAttempt(ctx context.Context, lease store.Lease, intentID string) (store.Attempt, error) {
	const op = "begin attempt"
	var at store.Attempt
	err := s.write(ctx, op, lease.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		if _, err := s.fence(ctx, tx, op, lease, now); err != nil {
			return err
		}
		var err error
		at, err = s.beginAttempt(ctx, tx, lease, intentID, now)
		return err
	})
	return at, err
}

// beginAttempt records attempt n+1 of an intent inside tx (already fenced).
func (s *Store) beginAttempt(ctx context.Context, tx *wtx, lease store.Lease, intentID string, now time.Time) (store.Attempt, error) {
	const op = "begin attempt"
	var status string
	var attempts int64
	err := s.queryRow(ctx, tx, runIntentOutboxAttempts, intentID, lease.RunID).Scan(&status, &attempts)
	if err == sql.ErrNoRows {
		return store.Attempt{}, store.Errorf(store.CodeNotFound, op, lease.RunID, nil, "no intent %s in this run", intentID)
	} else if err != nil {
		return store.Attempt{}, err
	}
	// Only a pending intent or one whose last attempt failed transiently
	// may be attempted; in-flight and unknown outcomes reconcile first.
	if status != string(store.OutboxPending) && status != string(store.OutboxRetry) {
		return store.Attempt{}, store.Errorf(store.CodeInvalidTransition, op, lease.RunID, nil, "intent %s is %s, not attemptable", intentID, status)
	}
	at := store.Attempt{IntentID: intentID, N: attempts + 1, Status: store.AttemptStarted, Generation: lease.Generation, StartedAt: now.UTC()}
	if _, err := s.exec(ctx, tx, insertAttempt,
		intentID, intentID, at.N, lease.Generation, nanos(now)); err != nil {
		return store.Attempt{}, err
	}
	_, err = s.exec(ctx, tx, attemptOutbox, at.N, nanos(now), intentID)
	return at, err
}

// Quarantine implements store.Store.
func (s *Store) Quarantine(ctx context.Context, runID, reason string, notices ...store.Notice) error {
	if err := store.ValidateQuarantine(runID, reason, notices); err != nil {
		return err
	}
	return s.write(ctx, "quarantine", runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		var head, traceSeq int64
		err := s.queryRow(ctx, tx, `UPDATE runs SET quarantine = ?, lease_owner = '', lease_expires_at = 0, updated_at = ? WHERE run_id = ?
RETURNING head_seq, trace_seq`, reason, nanos(now), runID).Scan(&head, &traceSeq)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, "quarantine", runID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		return s.insertNotices(ctx, tx, runID, head, traceSeq, now, notices)
	})
}

// Release implements store.Store: the header's park is checked, lifted and
// recorded in the run's trace in one write transaction.
func (s *Store) Release(ctx context.Context, rel store.Release) error {
	const op = "release"
	if err := store.CheckRelease(op, rel); err != nil {
		return err
	}
	return s.write(ctx, op, rel.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		var traceSeq int64
		var exp, created, updated, due int64
		var r store.Run
		err := s.queryRow(ctx, tx, `SELECT `+runColumns+`, trace_seq FROM runs WHERE run_id = ?`, rel.RunID).Scan(
			&r.ID, &r.WorkflowID, &r.WorkflowVersion, &r.State, &r.Outcome, &r.Head, &r.HeadHash,
			&r.Lease.Owner, &r.Lease.Generation, &exp, &r.Quarantine, &created, &updated, &r.WorkflowDigest, &due, new(string), &traceSeq)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Errorf(store.CodeNotFound, op, rel.RunID, nil, "no such run")
		}
		if err != nil {
			return err
		}
		seq := traceSeq + 1
		body, err := store.ReleaseBody(op, r, rel, now, seq, s.sealer)
		if err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO trace (run_id, seq, last_seq, records, recorded_at) VALUES (?, ?, ?, ?, ?)`,
			rel.RunID, seq, seq, appendTraceRecord(nil, store.ReleaseKind, body), nanos(now)); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE runs SET quarantine = '', lease_owner = '', lease_expires_at = 0, settled_seq = 0, trace_seq = ?, updated_at = ? WHERE run_id = ?`,
			seq, nanos(now), rel.RunID)
		return err
	})
}

// cloneTick copies t with every slice and body its own, so that the
// caller may reuse what it passed once Commit has returned. The bodies are
// copied into the writer's arena and the slices into its arenas of their
// types (tickArenas), which are reused once the lagging batch's
// transaction is over (endLinger): the copy is made for every lagging
// tick and is needed only until then.
func (w *writer) cloneTick(t store.Tick) store.Tick {
	a := &w.tickArenas
	c := t
	c.Events = cloneIn(&a.events, t.Events)
	for i := range c.Events {
		c.Events[i].Body = w.keep(c.Events[i].Body)
	}
	if t.Checkpoint != nil {
		cp := *t.Checkpoint
		cp.Body = w.keep(cp.Body)
		c.Checkpoint = &cp
	}
	c.Intents = cloneIn(&a.intents, t.Intents)
	for i := range c.Intents {
		c.Intents[i].Body = w.keep(c.Intents[i].Body)
	}
	c.Approvals = cloneIn(&a.approvals, t.Approvals)
	c.Results = cloneIn(&a.results, t.Results)
	c.Receipts = cloneIn(&a.receipts, t.Receipts)
	for i := range c.Receipts {
		c.Receipts[i].Body = w.keep(c.Receipts[i].Body)
	}
	c.Consume = cloneIn(&a.ids, t.Consume)
	c.Begin = cloneIn(&a.ids, t.Begin)
	c.Submit = cloneIn(&a.submit, t.Submit)
	for i := range c.Submit {
		c.Submit[i].Body = w.keep(c.Submit[i].Body)
		c.Submit[i].Grant = c.Submit[i].Grant.Clone(w.keep) // refused in a tick, but never shared
		c.Submit[i].Seen = c.Submit[i].Seen.Clone()
	}
	c.Trace = cloneIn(&a.trace, t.Trace)
	for i := range c.Trace {
		c.Trace[i].Body = w.keep(c.Trace[i].Body)
	}
	c.Notices = cloneIn(&a.notices, t.Notices)
	for i := range c.Notices {
		c.Notices[i].Body = w.keep(c.Notices[i].Body)
		c.Notices[i].Sent = slices.Clone(c.Notices[i].Sent) // the store's to set; a tick's is nil, cloned for nothing
		c.Notices[i].Waits = slices.Clone(c.Notices[i].Waits)
	}
	return c
}

// tickArenas hold the slices of the lagging ticks' copies (cloneTick)
// until their transaction is over.
type tickArenas struct {
	events    []store.Event
	intents   []store.Intent
	approvals []store.ApprovalUse
	results   []store.AttemptResult
	receipts  []store.Receipt
	ids       []string
	submit    []store.Inbound
	trace     []store.TraceRecord
	notices   []store.Notice
}

// reset empties the arenas, dropping what their copies referred to:
// nothing refers to the copies any more.
func (a *tickArenas) reset() {
	resetArena(&a.events)
	resetArena(&a.intents)
	resetArena(&a.approvals)
	resetArena(&a.results)
	resetArena(&a.receipts)
	resetArena(&a.ids)
	resetArena(&a.submit)
	resetArena(&a.trace)
	resetArena(&a.notices)
}

func resetArena[T any](a *[]T) {
	clear(*a)
	*a = (*a)[:0]
}

// cloneIn is slices.Clone(s), the copy appended to *arena: a full arena
// is replaced by a larger one (the copies already made keep the old), and
// the copy's capacity is its length, so that an append to it copies it
// rather than write over what follows.
func cloneIn[T any](arena *[]T, s []T) []T {
	if len(s) == 0 {
		return s[:0:0] // as slices.Clone
	}
	if cap(*arena)-len(*arena) < len(s) {
		*arena = make([]T, 0, max(2*cap(*arena), len(s), 16))
	}
	n := len(*arena)
	*arena = append(*arena, s...)
	return (*arena)[n:len(*arena):len(*arena)]
}

// keep copies b into the writer's arena (nil stays nil). A full arena is
// replaced by a larger one; the copies already made keep the old.
func (w *writer) keep(b []byte) []byte {
	if b == nil {
		return nil
	}
	return cutCopy(&w.arena, b, max(2*cap(w.arena), len(b), 64<<10))
}

// cutCopy appends b to *chunk, first replacing *chunk with an empty one of
// capacity fresh if b does not fit (copies already cut keep the old), and
// returns the copy with its length as its capacity, so that an append to
// it copies it rather than write over what follows.
func cutCopy(chunk *[]byte, b []byte, fresh int) []byte {
	if cap(*chunk)-len(*chunk) < len(b) {
		*chunk = make([]byte, 0, fresh)
	}
	n := len(*chunk)
	*chunk = append(*chunk, b...)
	return (*chunk)[n:len(*chunk):len(*chunk)]
}
