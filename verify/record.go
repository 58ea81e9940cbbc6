package verify

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"

	"flrh.dev/flrh/store"
)

// runReader is implemented by stores that read the attempts of all of a
// run's intents, and the grants those intents name, in one query each
// (both SQLite and PostgreSQL do). Without it verify asks per intent.
type runReader interface {
	RunAttempts(ctx context.Context, runID string) ([]store.Attempt, error)
	RunApprovals(ctx context.Context, runID string) ([]store.Approval, error)
}

// runReaderOf returns the runReader of st, or of the first store it wraps
// that has one.
func runReaderOf(st store.Store) (runReader, bool) { return store.As[runReader](st) }

// record is what verify and replay read of one run, each table once.
type record struct {
	st       store.Store
	run      store.Run
	events   []store.Event
	cp       store.Checkpoint
	hasCP    bool
	intents  []store.Intent
	receipts []store.Receipt
	// attempts and approvals hold what a runReader read in bulk; bulk is
	// false when the store has none and they are read per intent.
	bulk      bool
	attempts  map[string][]store.Attempt
	approvals map[string]store.Approval
	// grouped holds the attempts read in bulk when they come grouped by
	// intent, in increasing byte order of the intent id (as the SQLite
	// store reads them): an intent's attempts are then the run of them
	// found by a binary search, where attempts is nil.
	grouped []store.Attempt
	// known is what verifying the record vouched for, event by event
	// (see vouched), when it was verified before being replayed (Check);
	// nil otherwise.
	known []vouched
	// knownBuf is the pooled buffer known was cut from (takeKnown).
	knownBuf *[]vouched
	// approvalRead holds, intent by intent, the approval digest the
	// verifier read from each committed intent it could read (Check),
	// for replay to try first; nil otherwise.
	approvalRead []approvalHint
	// scanned is the checkpoint's members, read once for both the
	// verifier and the replay (see checkpointOf); nil until then.
	scanned *checkpoint
	// hashed holds bytes the verifier found to have their digest (the
	// receipts it checked), for replay to recognize them (digestMatches);
	// nil when the record was not verified first.
	hashed []hashedBody
	// The arrays approvalRead, scanned and hashed are cut from while a
	// run's few intents and receipts fit (most runs commit one or two
	// effects): allocated with the record, not once more each.
	approvalBuf [2]approvalHint
	scannedBuf  checkpoint
	hashedBuf   [2]hashedBody
}

// hashedBody is bytes whose SHA-256 digest is digest.
type hashedBody struct {
	digest string
	body   []byte
}

// digestMatches is store.DigestMatches(body, digest), answered without
// hashing when the verifier found those very bytes to have that digest: a
// receipt accepted as an input is the receipt's own body under its own
// digest, which Check's verifier has just hashed. Any other body, or the
// same body under another digest, is hashed.
func (r *record) digestMatches(body []byte, digest string) bool {
	for _, h := range r.hashed {
		if h.digest == digest && bytes.Equal(h.body, body) {
			return true
		}
	}
	return store.DigestMatches(body, digest)
}

// checkpointOf returns the checkpoint body's members, scanning the body
// (which holds the whole workflow state) the first time only: Check
// verifies and replays one record, and both read the checkpoint.
func (r *record) checkpointOf() *checkpoint {
	if r.scanned == nil {
		r.scanned = &r.scannedBuf
		readCheckpointInto(r.scanned, r.cp.Body)
	}
	return r.scanned
}

// What load reads beyond the events, intents and checkpoint replay needs.
const (
	withRun     = 1 << iota // the run's header
	withEffects             // receipts, attempts and approvals
)

// recordReader is implemented by stores that read a run's tables at
// once (SQLite: one statement), each part as its own method returns it;
// all asks for the header and the effects as well (withRun|withEffects).
type recordReader interface {
	ReadRunRecord(ctx context.Context, runID string, all bool) (store.RunRecord, error)
}

// recordReaderOf returns the recordReader of st, or of the first store it
// wraps that has one.
func recordReaderOf(st store.Store) (recordReader, bool) { return store.As[recordReader](st) }

// recordsReader is implemented by stores that read several runs' records
// at once (SQLite: up to sixteen runs by one statement), each record and
// error exactly as ReadRunRecord returns it.
type recordsReader interface {
	ReadRunRecords(ctx context.Context, runIDs []string, all bool) ([]store.RunRecord, []error)
}

// recordsReaderOf returns the recordsReader of st, or of the first store
// it wraps that has one.
func recordsReaderOf(st store.Store) (recordsReader, bool) { return store.As[recordsReader](st) }

// reusingReader is implemented by stores that read several runs' records
// at once into memory the caller lends them (SQLite's
// ReadRunRecordsReusing): the records are ReadRunRecords', but their
// bodies' bytes stay valid only until the next call given the same mem,
// which writes over them.
type reusingReader interface {
	ReadRunRecordsReusing(ctx context.Context, runIDs []string, all bool, mem *[][]byte) ([]store.RunRecord, []error)
}

// fromRunRecord is the record load reads from a store's RunRecord, read
// with the parts given (withRun|withEffects, or 0).
func fromRunRecord(st store.Store, r store.RunRecord, parts int) *record {
	rec := &record{st: st, run: r.Run, events: r.Events, cp: r.Checkpoint, hasCP: r.HasCheckpoint,
		intents: r.Intents, receipts: r.Receipts}
	if parts != 0 {
		rec.bulk = true
		rec.setEffects(r.Attempts, r.Approvals)
	}
	return rec
}

func load(ctx context.Context, st store.Store, runID string, parts int) (*record, error) {
	if parts == withRun|withEffects || parts == 0 {
		if rr, ok := recordReaderOf(st); ok {
			r, err := rr.ReadRunRecord(ctx, runID, parts != 0)
			if err != nil {
				return nil, err
			}
			return fromRunRecord(st, r, parts), nil
		}
	}
	rec := &record{st: st}
	var err error
	if parts&withRun != 0 {
		if rec.run, err = st.Run(ctx, runID); err != nil {
			return nil, err
		}
	}
	if rec.events, err = st.Events(ctx, runID, 0); err != nil {
		return nil, err
	}
	rec.cp, err = st.Checkpoint(ctx, runID)
	switch {
	case err == nil:
		rec.hasCP = true
	case store.CodeOf(err) != store.CodeNotFound:
		return nil, err
	}
	if rec.intents, err = st.Intents(ctx, runID); err != nil {
		return nil, err
	}
	if parts&withEffects == 0 {
		return rec, nil
	}
	if rec.receipts, err = st.Receipts(ctx, runID); err != nil {
		return nil, err
	}
	rr, ok := runReaderOf(st)
	if !ok || len(rec.intents) == 0 {
		rec.bulk = ok
		return rec, nil
	}
	ats, err := rr.RunAttempts(ctx, runID)
	if err != nil {
		return nil, err
	}
	var aps []store.Approval
	for _, in := range rec.intents {
		if in.ApprovalID != "" {
			if aps, err = rr.RunApprovals(ctx, runID); err != nil {
				return nil, err
			}
			break
		}
	}
	rec.bulk = true
	rec.setEffects(ats, aps)
	return rec, nil
}

// setEffects files the attempts and grants read for the whole run by
// intent and by id: attempts already grouped by intent in byte order are
// kept as they are (grouped), others filed in a map.
func (r *record) setEffects(ats []store.Attempt, aps []store.Approval) {
	if len(r.intents) == 0 {
		return
	}
	if slices.IsSortedFunc(ats, attemptOrder) {
		r.grouped = ats
	} else {
		r.attempts = make(map[string][]store.Attempt, len(r.intents))
		for _, a := range ats {
			r.attempts[a.IntentID] = append(r.attempts[a.IntentID], a)
		}
	}
	if len(aps) > 0 {
		r.approvals = make(map[string]store.Approval, len(aps))
		for _, a := range aps {
			r.approvals[a.ID] = a
		}
	}
}

// attemptsOf returns an intent's attempts in order.
func (r *record) attemptsOf(ctx context.Context, intentID string) ([]store.Attempt, error) {
	if r.bulk {
		if r.attempts == nil {
			return attemptsIn(r.grouped, intentID), nil
		}
		return r.attempts[intentID], nil
	}
	return r.st.Attempts(ctx, intentID)
}

// attemptOrder orders attempts by the byte order of their intent ids.
func attemptOrder(a, b store.Attempt) int { return strings.Compare(a.IntentID, b.IntentID) }

// attemptsIn returns the attempts of intent id in ats, which are in
// increasing byte order of their intent ids: the run of them with that id,
// in their order in ats (nil: none), as filing them by intent would give.
// The run's capacity is its length, so that an append to it copies it.
func attemptsIn(ats []store.Attempt, id string) []store.Attempt {
	lo, _ := slices.BinarySearchFunc(ats, id, func(a store.Attempt, id string) int { return strings.Compare(a.IntentID, id) })
	hi := lo
	for hi < len(ats) && ats[hi].IntentID == id {
		hi++
	}
	if lo == hi {
		return nil
	}
	return ats[lo:hi:hi]
}

// concurring returns the grants in consumed besides the one it names (a
// quorum's other approvals), by id, as the record's bulk read holds them
// (none when the store reads no run's grants at once).
func (r *record) concurring(in store.Intent) []store.Approval {
	var out []store.Approval
	for _, a := range r.approvals { //flrh:orderfree sorted below
		if a.ConsumedBy == in.ID && a.ID != in.ApprovalID && a.Status == store.ApprovalConsumed {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b store.Approval) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// concurringFor is concurring, reading the run's grants first when the
// record was read without its effects (a replay on its own).
func (r *record) concurringFor(ctx context.Context, runID string, in store.Intent) ([]store.Approval, error) {
	if !r.bulk && r.approvals == nil && r.st != nil {
		if rr, ok := runReaderOf(r.st); ok {
			aps, err := rr.RunApprovals(ctx, runID)
			if err != nil {
				return nil, err
			}
			r.approvals = make(map[string]store.Approval, len(aps))
			for _, a := range aps {
				r.approvals[a.ID] = a
			}
		}
	}
	return r.concurring(in), nil
}

// approval returns a grant by id. One the bulk read did not return is
// looked up on its own, so that "not in the ledger" is the store's answer.
func (r *record) approval(ctx context.Context, id string) (store.Approval, error) {
	if a, ok := r.approvals[id]; ok {
		return a, nil
	}
	if r.st == nil {
		return store.Approval{}, store.Errorf(store.CodeNotFound, "approval", r.run.ID, nil, "grant %s is not in the record", id)
	}
	return r.st.Approval(ctx, id)
}

// pruned returns what the store recorded of the run's pruning when the
// record is that of a pruned run (an ended run holding no event), nil
// otherwise: a record read elsewhere than from a store, or from a store
// that does not prune, is what it is.
func (r *record) pruned(ctx context.Context) (*Pruned, error) {
	if r.st == nil || len(r.events) > 0 {
		return nil, nil
	}
	p, err := store.PruningOf(ctx, r.st, r.run)
	if p == nil || err != nil {
		return nil, err
	}
	return PrunedOf(*p), nil
}

// grantIfAny returns a grant by id as approval does, and whether the
// ledger has it (verify reports one it does not have); a record read
// without a store (in tests) has only what was filed in it.
func (r *record) grantIfAny(ctx context.Context, id string) (store.Approval, bool, error) {
	if _, ok := r.approvals[id]; !ok && r.st == nil {
		return store.Approval{}, false, nil
	}
	a, err := r.approval(ctx, id)
	if store.CodeOf(err) == store.CodeNotFound {
		return store.Approval{}, false, nil
	}
	return a, err == nil, err
}

// knownPool holds the buffers of vouched entries that verifying a run
// fills, one per event, for the next run to reuse: a buffer is about 400
// bytes per event, much of a verification's allocation, and is dead once
// the run's reports are made. Every buffer in the pool is zero over its
// whole capacity, as a fresh one would be.
var knownPool sync.Pool // of *[]vouched

// takeKnown sets r.known to n zero entries, from a pooled buffer when one
// is large enough, and returns it.
func (r *record) takeKnown(n int) []vouched {
	r.releaseKnown()
	p, _ := knownPool.Get().(*[]vouched)
	if p == nil || cap(*p) < n {
		p = new([]vouched)
		*p = make([]vouched, 0, n)
	}
	r.known, r.knownBuf = (*p)[:n], p
	return r.known
}

// releaseKnown hands r.known's buffer back to the pool, cleared (no entry
// keeps a record's strings and maps alive, and the next run starts from
// zero entries). Nothing may read r.known afterwards: it is nil.
func (r *record) releaseKnown() {
	if r.knownBuf == nil {
		return
	}
	clear(r.known)
	p := r.knownBuf
	*p = (*p)[:0]
	r.known, r.knownBuf = nil, nil
	knownPool.Put(p)
}

// approvalHint is an approval digest read from a committed intent (ok
// false: none was read).
type approvalHint struct {
	digest *string
	ok     bool
}
