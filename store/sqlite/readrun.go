package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync"

	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/packed"
)

// A run's record read by one statement. Each of Run, Events, Checkpoint,
// Intents, Receipts, RunAttempts and RunApprovals is a statement of its
// own, and most of a small run's read is the fixed cost of a statement in
// the driver and in database/sql (a result set, a value per column, the
// columns' names); a verifier reading every table of a run paid it seven
// times. ReadRunRecord reads the same rows with one compound statement,
// one arm per table, a leading column naming the arm and the rest holding
// the arm's columns in the order its own read selects them (NULL beyond).
// One statement also reads one state of the database.
//
// Each arm selects what the table's own read selects, with the same
// WHERE; the order of the rows each read returns is restored from the
// same keys (the arms' order within the compound is not relied on).
const (
	recordWidth = 17 // the tag and up to 16 columns (the run's header)

	armRun        = 0
	armEvents     = 1
	armCheckpoint = 2
	armIntents    = 3
	armReceipts   = 4
	armAttempts   = 5
	armApprovals  = 6
)

const recordRunArm = `SELECT 0, ` + runColumns + ` FROM runs WHERE run_id = ?1`

// An event's kind, where it is one the runtime writes, is selected as its
// index in eventKinds (a small integer, which the driver hands over
// without making a string of it), and any other kind as its text.
var eventKinds = [...]string{1: "control", 2: "accepted", 3: "control.rejected"}

const recordCoreArms = `
SELECT 1, seq, CASE kind WHEN 'control' THEN 1 WHEN 'accepted' THEN 2 WHEN 'control.rejected' THEN 3 ELSE kind END, body, digest, prev_hash, chain_hash, generation, recorded_at, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM events WHERE run_id = ?1
UNION ALL
SELECT 2, n, seq, format_version, build_digest, body, digest, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM (SELECT n, seq, format_version, build_digest, body, digest FROM checkpoints WHERE run_id = ?1 ORDER BY n DESC LIMIT 1)
UNION ALL
SELECT 3, i.intent_id, i.run_id, i.seq, i.effect_type, i.idempotency_key, i.content_digest,
	COALESCE(i.approval_id, ''), i.body, i.digest, o.status, o.route, o.attempts, i.commit_order, NULL, NULL, NULL
FROM intents i JOIN outbox o ON o.intent_order = i.commit_order WHERE i.run_id = ?1`

const recordEffectArms = `
UNION ALL
SELECT 4, intent_id, outcome, body, digest, commit_order, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM receipts WHERE run_id = ?1
UNION ALL
SELECT 5, i.intent_id, a.n, a.status, a.generation, a.detail, a.started_at, a.finished_at, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM intents i JOIN attempts a ON a.intent_order = i.commit_order WHERE i.run_id = ?1
UNION ALL
SELECT 6, a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM intents i JOIN approvals a ON a.approval_id = i.approval_id WHERE i.run_id = ?1
UNION ALL
SELECT 6, a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM approvals a JOIN intents i ON i.intent_id = a.consumed_by WHERE a.run_id = ?1 AND ` + store.ConcurringGrants

// The two statements: with the run's header and effects, and without.
const (
	recordAllQuery  = recordRunArm + "\nUNION ALL" + recordCoreArms + recordEffectArms
	recordCoreQuery = recordCoreArms
)

// ReadRunRecord reads run runID's events, latest checkpoint and intents,
// and with all its header (Run), receipts, attempts (RunAttempts) and the
// grants its intents name (RunApprovals) as well: each part exactly as
// its own method returns it, read by one statement. Where the statement
// meets anything but the plain case (no such run, a value of a type the
// column's own read would convert or refuse, a sealed checkpoint that does
// not open, a database error), the parts are read by their own methods
// instead, one after the other in the order above, so that what is
// returned, errors included, is what those methods return.
func (s *Store) ReadRunRecord(ctx context.Context, runID string, all bool) (store.RunRecord, error) {
	if rec, ok := s.readRunRecord(ctx, runID, all); ok {
		return rec, nil
	}
	return store.ReadRunRecordByParts(ctx, s, runID, all)
}

// cells reads one row's values as the parts' own reads would convert them
// for their destinations, for the values they take as they are; any other
// value makes bad true (and the record is read by parts). The row is the
// driver's values in row, or, while st is set, the current row of st,
// read where SQLite holds it: a cell of the type its reader takes is read
// as it is, any other is made into the driver's value (st.value) and read
// as that.
type cells struct {
	row [recordWidth]driver.Value
	st  *libRow
	lib libRow // what st points to while set
	bad bool
	// text is where strs gathers a row's texts, reused row after row.
	text []byte
	// cut holds the texts strs has cut for the records read: each row's
	// are appended to it and cut from its String, so that many rows share
	// one allocation instead of one a row. Appending leaves the bytes of
	// the strings cut before it as they are, so a batchRead keeps it from
	// statement to statement (give); a full one is left to the strings cut
	// from it and a new one begun (cutText).
	cut strings.Builder
	// chunk is what the BLOBs read where SQLite holds them are copied
	// into (see keep): one allocation for many bodies. A statement's
	// records share its chunks; a batchRead starts each statement with
	// none.
	chunk []byte
	// lent, when set, is the caller's memory the BLOBs are copied into
	// instead (ReadRunRecordsReusing).
	lent *lender
	// unpacker and unpacked unpack the packed bodies read, before they
	// are kept.
	unpacker packed.Packer
	unpacked []byte
}

// bodyChunk is the size of the chunks BLOBs are copied into, the largest
// of the allocator's small size classes; a BLOB of more than an eighth of
// it is copied on its own.
const bodyChunk = 32 << 10

// keep copies b, which SQLite holds until the statement steps on, for a
// record to keep: nil when b is nil (an empty BLOB, as the driver hands
// it on), else b's bytes in a slice whose capacity is its length, cut from
// c's chunk, so that an append to it copies it rather than write over the
// next body.
func (c *cells) keep(b []byte) []byte {
	if c.lent != nil && b != nil {
		return c.lent.copy(b)
	}
	if b == nil || len(b) > bodyChunk/8 {
		return bytes.Clone(b)
	}
	return cutCopy(&c.chunk, b, bodyChunk)
}

// at is cell i as the driver's value.
func (c *cells) at(i int) driver.Value {
	if c.st != nil {
		c.row[i] = c.st.value(i)
	}
	return c.row[i]
}

func (c *cells) str(i int) string {
	if c.st != nil && c.st.typ(i) == sqlite3.SQLITE_TEXT {
		return string(c.st.textBytes(i))
	}
	s, ok := c.at(i).(string)
	c.bad = c.bad || !ok
	return s
}

// strs reads the cells at cols into dst as str reads each; the TEXT cells
// read where SQLite holds them are copied into one string for the row and
// cut from it, instead of one string a cell.
func (c *cells) strs(cols []int, dst []*string) {
	var end [recordWidth]int // where each cell's text ends in buf; -1: read by str
	buf := c.text[:0]
	for k, i := range cols {
		if c.st != nil && c.st.typ(i) == sqlite3.SQLITE_TEXT {
			buf = append(buf, c.st.textBytes(i)...)
			end[k] = len(buf)
		} else {
			*dst[k], end[k] = c.str(i), -1
		}
	}
	c.text = buf
	all, lo := c.cutText(buf), 0
	for k := range cols {
		if end[k] >= 0 {
			*dst[k], lo = all[lo:end[k]], end[k]
		}
	}
}

// textChunk is the size of the strings' allocations cutText cuts a
// statement's texts from; a row's texts of more than an eighth of it are
// a string of their own.
const textChunk = 4 << 10

// cutText is b as a string cut from c.cut: the row's texts, which
// strs cuts each cell's from.
func (c *cells) cutText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > textChunk/8 {
		return string(b)
	}
	if c.cut.Cap()-c.cut.Len() < len(b) {
		c.cut = strings.Builder{}
		c.cut.Grow(textChunk)
	}
	at := c.cut.Len()
	c.cut.Write(b)
	return c.cut.String()[at:]
}

func (c *cells) i64(i int) int64 {
	if c.st != nil && c.st.typ(i) == sqlite3.SQLITE_INTEGER {
		return c.st.int64(i)
	}
	n, ok := c.at(i).(int64)
	c.bad = c.bad || !ok
	return n
}

// kind reads an event's kind as the events arm selects it: an index in
// eventKinds, or the kind's own text.
func (c *cells) kind(i int) string {
	switch v := c.at(i).(type) {
	case int64:
		if v >= 1 && v < int64(len(eventKinds)) {
			return eventKinds[v]
		}
	case string:
		return v
	}
	c.bad = true
	return ""
}

func (c *cells) blob(i int) []byte {
	if c.st != nil && c.st.typ(i) == sqlite3.SQLITE_BLOB {
		return c.keep(c.st.blobBytes(i)) // nil when empty, as the driver hands it on
	}
	var b []byte
	c.bad = c.bad || blob{&b}.Scan(c.at(i)) != nil
	return b
}

// packedBlob is blob for a body that may be stored packed (a
// checkpoint's, since schema version 12): a packed one is unpacked, into
// c's buffer, and that kept as blob keeps it. One that does not unpack
// makes the row bad: the record is then read by parts, which says what is
// damaged. A sealed body is left for record to open and unpack.
func (c *cells) packedBlob(i int) []byte {
	if c.st == nil || c.st.typ(i) != sqlite3.SQLITE_BLOB {
		return c.blob(i)
	}
	raw := c.st.blobBytes(i)
	if !packed.Is(raw) {
		return c.keep(raw)
	}
	body, err := c.unpacker.Unpack(c.unpacked[:0], raw)
	if err != nil {
		c.bad = true
		return nil
	}
	c.unpacked = body
	return c.keep(body)
}

// hashes reads an event's three hash columns, from cell i on, into dst as
// unpackHashes reads them; h holds their values where they are read as
// the driver's.
func (c *cells) hashes(i int, dst [3]*string, h *[3]any) {
	if c.st != nil {
		var sums [3][]byte
		for k := range sums {
			if c.st.typ(i+k) != sqlite3.SQLITE_BLOB {
				break
			}
			sums[k] = c.st.blobBytes(i + k)
		}
		if len(sums[0]) == 32 && len(sums[1]) == 32 && len(sums[2]) == 32 {
			all := hashTexts(&sums)
			for k, d := range dst {
				*d = all[k*hashText : (k+1)*hashText]
			}
			return
		}
	}
	h[0], h[1], h[2] = c.at(i), c.at(i+1), c.at(i+2)
	c.bad = c.bad || unpackHashes(dst, h) != nil
}

// sums reads an event's three hash columns, from cell i on, into dst when
// all three are 32-byte BLOBs read where SQLite holds them, and reports
// whether they were; hashes reads them otherwise.
func (c *cells) sums(i int, dst *[3 * 32]byte) bool {
	if c.st == nil {
		return false
	}
	for k := range 3 {
		if c.st.typ(i+k) != sqlite3.SQLITE_BLOB {
			return false
		}
		b := c.st.blobBytes(i + k)
		if len(b) != 32 {
			return false
		}
		copy(dst[k*32:], b)
	}
	return true
}

// hashText is the length of a hash sum's text.
const hashText = len(hashPrefix) + 64

// hashTexts is the three sums' texts as unpackHashes builds them, in one
// string.
func hashTexts(sums *[3][]byte) string {
	var b strings.Builder
	b.Grow(3 * hashText)
	var digits [64]byte
	for _, sum := range sums {
		b.WriteString(hashPrefix)
		cjson.HexSum(&digits, (*[32]byte)(sum))
		b.Write(digits[:])
	}
	return b.String()
}

// keyed is a row of a part with the key its own read orders it by.
type keyed[T any] struct {
	v    T
	n    int64  // an integer key
	text string // a text key, compared before n
}

func ordered[T any](rows []keyed[T]) []T {
	cmpKey := func(a, b keyed[T]) int {
		if c := cmp.Compare(a.text, b.text); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	}
	if !slices.IsSortedFunc(rows, cmpKey) {
		slices.SortStableFunc(rows, cmpKey)
	}
	if len(rows) == 0 {
		return nil
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = r.v
	}
	return out
}

// inOrder is ordered of the rows vals with the keys key gives for each
// index (a text key compared before an integer one), in place: the rows
// as read when their keys already increase, as a part's rows nearly
// always come, or else sorted stably by them; nil for none.
func inOrder[T any](vals []T, key func(i int) (string, int64)) []T {
	if len(vals) == 0 {
		return nil
	}
	pt, pn := key(0)
	for i := 1; i < len(vals); i++ {
		t, n := key(i)
		if c := cmp.Compare(pt, t); c > 0 || c == 0 && pn > n {
			rows := make([]keyed[T], len(vals))
			for k, v := range vals {
				rows[k].v = v
				rows[k].text, rows[k].n = key(k)
			}
			copy(vals, ordered(rows))
			return vals
		}
		pt, pn = t, n
	}
	return vals
}

// runRows gathers one run's rows of a compound statement and makes its
// record of them; bad is set by any row ReadRunRecord would read by parts
// instead.
type runRows struct {
	rec    store.RunRecord
	hasRun bool
	cpN    int64
	events []store.Event // in the order read; sorted by seq in record if need be
	// The effects' rows in the order read; intents and receipts are
	// ordered by their commit order (intentOrder, receiptOrder, which
	// the batch read keeps from one statement to the next), attempts by
	// intent and number, approvals by id (see inOrder).
	intents      []store.Intent
	receipts     []store.Receipt
	attempts     []store.Attempt
	approvals    []store.Approval
	intentOrder  []int64
	receiptOrder []int64
	h            [3]any
	bad          bool
	// texts are the hash texts of the events summed, written as their rows
	// are read and cut from one string for the run (writeSums) instead of
	// one string an event: three an event, or two (its digest and chain
	// hash) when its previous hash is the chain hash of the event read
	// just before it, whose text it shares.
	texts  strings.Builder
	summed []summedEvent
	// chain is the chain hash sum of the last event read, when its sums
	// were read as they are (chained).
	chain   [32]byte
	chained bool
}

// summedEvent is an event whose hash texts are in runRows.texts, from at
// on; shared when its previous hash is the text of the chain hash of the
// event read before it.
type summedEvent struct {
	ev, at int
	shared bool
}

// add files one row of arm arm, read into c, whose bad the caller clears
// before reading the arm from the row.
func (r *runRows) add(arm int64, c *cells) {
	switch arm {
	case armRun:
		run := &r.rec.Run
		var labels string
		c.strs([]int{1, 2, 3, 4, 5, 7, 8, 11, 14, 16}, []*string{&run.ID, &run.WorkflowID, &run.WorkflowVersion, &run.State,
			&run.Outcome, &run.HeadHash, &run.Lease.Owner, &run.Quarantine, &run.WorkflowDigest, &labels})
		var err error
		if run.Labels, err = label.Decode(labels); err != nil {
			c.bad = true
		}
		run.Head, run.Lease.Generation = c.i64(6), c.i64(9)
		run.Lease.ExpiresAt = fromNanos(c.i64(10))
		run.CreatedAt, run.UpdatedAt = fromNanos(c.i64(12)), fromNanos(c.i64(13))
		run.DueAt = fromNanos(c.i64(15))
		run.Lease.RunID = run.ID
		c.bad = c.bad || r.hasRun
		r.hasRun = true
	case armEvents:
		if r.events == nil && r.hasRun {
			// The header, when it came first, says how many events
			// to expect: one slice, filled in place.
			n := min(max(r.rec.Run.Head, 1), 1<<12)
			r.events = make([]store.Event, 0, n)
			if cap(r.summed) < int(n) {
				r.summed = make([]summedEvent, 0, n)
			}
			r.texts.Grow((2*int(n) + 1) * hashText)
		}
		r.events = append(r.events, store.Event{})
		e := &r.events[len(r.events)-1]
		e.Seq, e.Kind, e.Body = c.i64(1), c.kind(2), c.blob(3)
		var sums [3 * 32]byte
		if c.sums(4, &sums) {
			var digits [64]byte
			se := summedEvent{ev: len(r.events) - 1, at: r.texts.Len()}
			se.shared = r.chained && [32]byte(sums[32:64]) == r.chain
			for k := range 3 {
				if k == 1 && se.shared {
					continue
				}
				r.texts.WriteString(hashPrefix)
				cjson.HexSum(&digits, (*[32]byte)(sums[k*32:]))
				r.texts.Write(digits[:])
			}
			r.summed = append(r.summed, se)
			r.chain, r.chained = [32]byte(sums[64:]), true
		} else {
			c.hashes(4, [3]*string{&e.Digest, &e.PrevHash, &e.ChainHash}, &r.h)
			r.chained = false
		}
		e.Generation, e.RecordedAt = c.i64(7), fromNanos(c.i64(8))
	case armCheckpoint:
		cp := &r.rec.Checkpoint
		r.cpN = c.i64(1)
		cp.Seq, cp.FormatVersion, cp.Body = c.i64(2), c.i64(3), c.packedBlob(5)
		c.strs([]int{4, 6}, []*string{&cp.BuildDigest, &cp.Digest})
		c.bad = c.bad || r.rec.HasCheckpoint
		r.rec.HasCheckpoint = true
	case armIntents:
		var in store.Intent
		var outbox string
		c.strs([]int{1, 2, 4, 5, 6, 7, 9, 10, 11}, []*string{&in.ID, &in.RunID, &in.EffectType, &in.IdempotencyKey,
			&in.ContentDigest, &in.ApprovalID, &in.Digest, &outbox, &in.Route})
		in.Seq, in.Body, in.Outbox, in.Attempts = c.i64(3), c.blob(8), store.OutboxStatus(outbox), c.i64(12)
		r.intents, r.intentOrder = append(r.intents, in), append(r.intentOrder, c.i64(13))
	case armReceipts:
		var rc store.Receipt
		c.strs([]int{1, 2, 4}, []*string{&rc.IntentID, &rc.Outcome, &rc.Digest})
		rc.Body = c.blob(3)
		r.receipts, r.receiptOrder = append(r.receipts, rc), append(r.receiptOrder, c.i64(5))
	case armAttempts:
		var a store.Attempt
		var status string
		c.strs([]int{1, 3, 5}, []*string{&a.IntentID, &status, &a.Detail})
		a.N, a.Status, a.Generation = c.i64(2), store.AttemptStatus(status), c.i64(4)
		a.StartedAt, a.FinishedAt = fromNanos(c.i64(6)), fromNanos(c.i64(7))
		r.attempts = append(r.attempts, a)
	case armApprovals:
		var a store.Approval
		var status string
		c.strs([]int{1, 2, 3, 4, 6, 8, 9}, []*string{&a.ID, &a.RunID, &a.RequestDigest, &a.Nonce, &a.Digest, &status, &a.ConsumedBy})
		a.Body, a.ExpiresAt, a.Status = c.blob(5), fromNanos(c.i64(7)), store.ApprovalStatus(status)
		r.approvals = append(r.approvals, a)
	default:
		c.bad = true
	}
	r.bad = r.bad || c.bad
}

// record is the run's record of the rows added; ok is false where
// ReadRunRecord reads by parts instead.
func (r *runRows) record(s *Store, runID string, all bool) (store.RunRecord, bool) {
	if r.bad || (all && !r.hasRun) {
		return store.RunRecord{}, false
	}
	rec := r.rec
	if rec.HasCheckpoint {
		body, err := store.OpenPackedBody(s.sealer, "checkpoint", store.SealRef{RunID: runID, Kind: store.SealCheckpoint, Seq: r.cpN}, rec.Checkpoint.Body)
		if err != nil {
			return store.RunRecord{}, false
		}
		rec.Checkpoint.Body = body
	}
	r.writeSums()
	bySeq := func(a, b store.Event) int { return cmp.Compare(a.Seq, b.Seq) }
	if !slices.IsSortedFunc(r.events, bySeq) {
		slices.SortStableFunc(r.events, bySeq)
	}
	rec.Events = r.events
	rec.Intents = inOrder(r.intents, func(i int) (string, int64) { return "", r.intentOrder[i] })
	rec.Receipts = inOrder(r.receipts, func(i int) (string, int64) { return "", r.receiptOrder[i] })
	rec.Attempts = inOrder(r.attempts, func(i int) (string, int64) { return r.attempts[i].IntentID, r.attempts[i].N })
	rec.Approvals = inOrder(r.approvals, func(i int) (string, int64) { return r.approvals[i].ID, 0 })
	return rec, true
}

// writeSums sets the hash texts of the events whose sums were read as
// they are (texts): each as unpackHashes builds it, all cut from one
// string.
func (r *runRows) writeSums() {
	if len(r.summed) == 0 {
		return
	}
	all := r.texts.String()
	for _, se := range r.summed {
		e, t := &r.events[se.ev], all[se.at:]
		if se.shared {
			// The event before it in r.events, summed before it.
			e.Digest, e.PrevHash, e.ChainHash = t[:hashText], r.events[se.ev-1].ChainHash, t[hashText:2*hashText]
			continue
		}
		e.Digest, e.PrevHash, e.ChainHash = t[:hashText], t[hashText:2*hashText], t[2*hashText:3*hashText]
	}
}

// readRunRecord is the one-statement read; ok is false where
// ReadRunRecord reads by parts instead.
func (s *Store) readRunRecord(ctx context.Context, runID string, all bool) (store.RunRecord, bool) {
	return s.readRunRecordBy(ctx, runID, all, s.queryRecords)
}

// rowQuery runs a record statement and hands each row to row (queryRecords).
type rowQuery func(ctx context.Context, query string, args []driver.NamedValue, c *cells, row rowFunc) bool

// readRunRecordBy is readRunRecord with its statement run by q.
func (s *Store) readRunRecordBy(ctx context.Context, runID string, all bool, q rowQuery) (store.RunRecord, bool) {
	query := recordCoreQuery
	if all {
		query = recordAllQuery
	}
	b := takeBatchRead()
	defer b.give()
	r := &b.runs[0]
	args := [1]driver.NamedValue{{Ordinal: 1, Value: runID}}
	ok := q(ctx, query, args[:], &b.c, func(c *cells) bool {
		c.bad = false
		r.add(c.i64(0), c)
		return !r.bad
	})
	if !ok {
		return store.RunRecord{}, false
	}
	return r.record(s, runID, all)
}

// batchRead is a statement's state: its runs' rows and the row read. The
// function that reads the rows holds it, so it lives on the heap; one is
// reused from statement to statement.
type batchRead struct {
	runs [RecordBatch]runRows
	c    cells
}

var batchReads = sync.Pool{New: func() any { return new(batchRead) }}

func takeBatchRead() *batchRead { return batchReads.Get().(*batchRead) }

// give forgets b's rows (its records belong to the caller) and puts it
// back, keeping only the arrays of each run's scratch lists, which hold
// no pointer and no part of a record (the summed events and the commit
// orders), and the texts' builder, which only ever appends after the
// strings cut from it.
func (b *batchRead) give() {
	var keep [RecordBatch]struct {
		summed        []summedEvent
		intent, rcpts []int64
	}
	for k := range b.runs {
		r := &b.runs[k]
		keep[k].summed, keep[k].intent, keep[k].rcpts = r.summed[:0], r.intentOrder[:0], r.receiptOrder[:0]
	}
	cut := b.c.cut // put back at the same address, where the builder was used
	*b = batchRead{}
	for k := range b.runs {
		r := &b.runs[k]
		r.summed, r.intentOrder, r.receiptOrder = keep[k].summed, keep[k].intent, keep[k].rcpts
	}
	b.c.cut = cut
	batchReads.Put(b)
}

// RecordBatch is how many runs ReadRunRecords reads by one statement.
const RecordBatch = 16

// A batch of runs is read by one compound statement whose arms are those
// of recordAllQuery (or recordCoreQuery), each joined to the batch's run
// ids, given as the rows (k, run id) of a table of values. The leading
// column is the run's position k in the batch times eight plus the arm:
// a row names its run without carrying the run's id. Positions beyond
// the ids given are bound to NULL, which matches no run, so that every
// batch is one statement, prepared once.
const (
	recordBatchRunArm = `SELECT b.k*8, ` + runColumns + ` FROM b JOIN runs ON runs.run_id = b.rid`

	recordBatchCoreArms = `
SELECT b.k*8+1, seq, CASE kind WHEN 'control' THEN 1 WHEN 'accepted' THEN 2 WHEN 'control.rejected' THEN 3 ELSE kind END, body, digest, prev_hash, chain_hash, generation, recorded_at, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM b JOIN events ON events.run_id = b.rid
UNION ALL
SELECT b.k*8+2, c.n, c.seq, c.format_version, c.build_digest, c.body, c.digest, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM b JOIN checkpoints c ON c.run_id = b.rid AND c.n = (SELECT max(n) FROM checkpoints WHERE run_id = b.rid)
UNION ALL
SELECT b.k*8+3, i.intent_id, i.run_id, i.seq, i.effect_type, i.idempotency_key, i.content_digest,
	COALESCE(i.approval_id, ''), i.body, i.digest, o.status, o.route, o.attempts, i.commit_order, NULL, NULL, NULL
FROM b JOIN intents i ON i.run_id = b.rid JOIN outbox o ON o.intent_order = i.commit_order`

	recordBatchEffectArms = `
UNION ALL
SELECT b.k*8+4, r.intent_id, r.outcome, r.body, r.digest, r.commit_order, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM b JOIN receipts r ON r.run_id = b.rid
UNION ALL
SELECT b.k*8+5, i.intent_id, a.n, a.status, a.generation, a.detail, a.started_at, a.finished_at, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM b JOIN intents i ON i.run_id = b.rid JOIN attempts a ON a.intent_order = i.commit_order
UNION ALL
SELECT b.k*8+6, a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM b JOIN intents i ON i.run_id = b.rid JOIN approvals a ON a.approval_id = i.approval_id
UNION ALL
SELECT b.k*8+6, a.approval_id, a.run_id, a.request_digest, a.nonce, a.body, a.digest, a.expires_at, a.status, a.consumed_by, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM b JOIN approvals a ON a.run_id = b.rid JOIN intents i ON i.intent_id = a.consumed_by WHERE ` + store.ConcurringGrants
)

// The batch statements, with the run's header and effects and without.
var recordBatchAllQuery, recordBatchCoreQuery = func() (string, string) {
	var with strings.Builder
	with.WriteString("WITH b(k, rid) AS (VALUES ")
	for k := range RecordBatch {
		if k > 0 {
			with.WriteString(", ")
		}
		fmt.Fprintf(&with, "(%d, ?%d)", k, k+1)
	}
	with.WriteString(")\n")
	return with.String() + recordBatchRunArm + "\nUNION ALL" + recordBatchCoreArms + recordBatchEffectArms,
		with.String() + strings.TrimPrefix(recordBatchCoreArms, "\n")
}()

// ReadRunRecords reads the records of the runs runIDs as ReadRunRecord
// reads each: recs[i] and errs[i] are what ReadRunRecord(ctx, runIDs[i],
// all) returns. Up to RecordBatch runs are read by one statement, which
// reads one state of the database for all of them; a run the statement
// does not read plainly (see ReadRunRecord) is read by ReadRunRecord.
func (s *Store) ReadRunRecords(ctx context.Context, runIDs []string, all bool) ([]store.RunRecord, []error) {
	return store.ReadRunRecordsInBatches(ctx, runIDs, all, RecordBatch, s.readRunRecords, s.ReadRunRecord)
}

// ReadRunRecordsReusing is ReadRunRecords copying the records' bytes into
// memory the caller lends and gets back, instead of fresh memory each
// time: the records, and their errors, are exactly what ReadRunRecords
// returns, but the bytes of the bodies that the batch statements read
// (events', the checkpoint's, intents', receipts' and grants' Body) may be
// cut from *mem, whose chunks the call reuses and adds to.
//
// The records' bytes are therefore valid only until the next call given
// the same mem, which writes over them; the caller must neither hold them
// (nor anything aliasing them) beyond that nor write to them. Every string
// of a record, and the records' slices themselves, are fresh and the
// caller's to keep, as are the bytes of a run read by parts. One reader
// reading batch after batch, and done with a batch's records before it
// reads the next, keeps one mem and allocates no bytes for the bodies
// once its chunks hold a batch. A mem is used by one caller at a time.
func (s *Store) ReadRunRecordsReusing(ctx context.Context, runIDs []string, all bool, mem *[][]byte) ([]store.RunRecord, []error) {
	l := lendChunks(*mem)
	recs, errs := store.ReadRunRecordsInBatches(ctx, runIDs, all, RecordBatch,
		func(ctx context.Context, ids []string, all bool, recs []store.RunRecord) []bool {
			return s.readRunRecordsInto(ctx, ids, all, recs, s.queryRecords, &l)
		}, s.ReadRunRecord)
	*mem = l.chunks
	return recs, errs
}

// lender hands out the bytes of the chunks lent to ReadRunRecordsReusing,
// from the first chunk on, each byte at most once per call.
type lender struct {
	chunks [][]byte
	at     int // the chunk being cut; the ones before it are full
}

// lendChunks is a lender of chunks, every byte of them free again.
func lendChunks(chunks [][]byte) lender {
	if len(chunks) > 0 {
		chunks[0] = chunks[0][:0]
	}
	return lender{chunks: chunks}
}

// copy is cutCopy of b from the lent chunks: the chunk being cut while b
// fits, then the next chunk, emptied, and then a new chunk added to them
// (of bodyChunk bytes, or b's length when longer). The slice's capacity is
// its length, so that an append to it copies it.
func (l *lender) copy(b []byte) []byte {
	for ; l.at < len(l.chunks); l.at++ {
		if c := l.chunks[l.at]; cap(c)-len(c) >= len(b) {
			break
		}
		if l.at+1 < len(l.chunks) {
			l.chunks[l.at+1] = l.chunks[l.at+1][:0]
		}
	}
	if l.at == len(l.chunks) {
		l.chunks = append(l.chunks, make([]byte, 0, max(bodyChunk, len(b))))
	}
	return cutCopy(&l.chunks[l.at], b, 0)
}

// readRunRecords is the one-statement read of up to RecordBatch runs into
// recs; ok[i] is false where ReadRunRecord would read run ids[i] by parts
// (and for every run when the statement itself fails).
func (s *Store) readRunRecords(ctx context.Context, ids []string, all bool, recs []store.RunRecord) []bool {
	return s.readRunRecordsBy(ctx, ids, all, recs, s.queryRecords)
}

// readRunRecordsBy is readRunRecords with its statement run by q.
func (s *Store) readRunRecordsBy(ctx context.Context, ids []string, all bool, recs []store.RunRecord, q rowQuery) []bool {
	return s.readRunRecordsInto(ctx, ids, all, recs, q, nil)
}

// readRunRecordsInto is readRunRecordsBy copying the BLOBs into the lent
// chunks (nil: fresh ones).
func (s *Store) readRunRecordsInto(ctx context.Context, ids []string, all bool, recs []store.RunRecord, q rowQuery, lent *lender) []bool {
	ok := make([]bool, len(ids))
	if len(ids) > RecordBatch {
		return ok // more than one statement holds: each run read alone
	}
	query := recordBatchCoreQuery
	if all {
		query = recordBatchAllQuery
	}
	// Positions beyond the ids given are NULL (a nil value).
	var args [RecordBatch]driver.NamedValue
	for i := range args {
		args[i].Ordinal = i + 1
	}
	for i, id := range ids {
		args[i].Value = id
	}
	b := takeBatchRead()
	defer b.give()
	b.c.lent = lent
	runs := &b.runs
	read := q(ctx, query, args[:], &b.c, func(c *cells) bool {
		c.bad = false
		tag := c.i64(0)
		k := tag >> 3
		if c.bad || tag < 0 || k >= int64(len(ids)) {
			return false // no row the statement makes
		}
		runs[k].add(tag&7, c)
		return true
	})
	if !read {
		return ok
	}
	for i, id := range ids {
		recs[i], ok[i] = runs[i].record(s, id, all)
	}
	return ok
}
