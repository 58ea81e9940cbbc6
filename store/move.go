package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"flrh.dev/flrh/label"
)

// WholeRun is everything a store keeps of one run that is not pruned, in
// the terms every store reads it in: what moves when a run, live or ended,
// moves from one store to another (RunImporter), and what an archive
// document holds (package archive reads it, archive.Read).
type WholeRun struct {
	// Record is the run as a verifier reads it (RunRecord with the
	// header): header, events, latest checkpoint, intents with their
	// outbox state, receipts in commit order, every intent's attempts
	// (ordered by intent id and number) and the grants its intents name.
	Record RunRecord
	// Grants are every grant recorded for the run (Pruner.Grants),
	// consumed or not, ordered by id.
	Grants []Approval
	// Inbox holds the run's inbound events in order, consumed or not.
	Inbox []Inbound
	// Trace holds the run's trace records in order.
	Trace []TraceRecord
	// Notices are the run's notices not yet delivered
	// (Noticeboard.RunNotices), with their IDs, times, attempts and the
	// routes that took them: a store that takes the run in writes them
	// too, due at once, so that moving a run waiting for a person does
	// not lose the telling. Not evidence: archives hold none.
	Notices []Notice
}

// RunImporter is implemented by stores that take in a whole run another
// store kept (WholeRun), so that a deployment moving from one store to
// another (the embedded one to PostgreSQL) takes its live runs along:
// runs waiting for a person, with effects in flight or input pending go
// on in the new store where they stood.
type RunImporter interface {
	// ImportRun writes r in one transaction, and returns false, writing
	// nothing, when the store holds the run already at r's head hash
	// (importing twice is importing once; a run imported, then pruned, is
	// imported still). Every record reads back as r holds it (events with
	// their generations and times, attempts with theirs, the outbox, the
	// inbox with its positions and what was consumed, grants with their
	// status). The header is unleased, with r's lease generation, so that
	// the next lease fences every record r holds, and with r's quarantine.
	// Its place in the creation order is the store's next. What no read
	// returns (when this store recorded an intent, a receipt, a grant, an
	// inbox entry, a trace record or the checkpoint, and the lease
	// generation of each but the events and attempts: the header's) is
	// the import's. The latest checkpoint is the only one kept.
	//
	// It refuses, writing nothing:
	//   - CodeInvalidInput: r could not have been kept so
	//     (ValidateWholeRun);
	//   - CodeExists: the run id is taken by another run, an intent id or
	//     idempotency key (with the same content) by another intent, or a
	//     grant's id or nonce by another grant;
	//   - CodeIdempotencyConflict: a key is bound to other content.
	ImportRun(ctx context.Context, r WholeRun) (bool, error)
}

// ImportedRunBefore answers, for ImportRun, a store that holds a run of
// r's id already, at headHash: nil when it is r, imported before (the same
// head hash is the same chain of events), CodeExists for another run.
func ImportedRunBefore(op string, r WholeRun, headHash string) error {
	if headHash == r.Record.Run.HeadHash {
		return nil
	}
	return Errorf(CodeExists, op, r.Record.Run.ID, nil, "the run id is taken by another run")
}

// GrantTaken is ImportRun's refusal of grant g of run id, whose id or
// nonce the store holds already for run other.
func GrantTaken(op, id string, g Approval, other string) error {
	return Errorf(CodeExists, op, id, nil, "grant %s, or its nonce, is taken by run %s", g.ID, other)
}

// RunImporterOf returns the RunImporter of s, or of the first store it
// wraps that has one.
func RunImporterOf(s Store) (RunImporter, bool) { return As[RunImporter](s) }

// ValidateWholeRun refuses a whole run that no store could have kept: a
// header without an id, workflow or state; events that are not numbered
// 1 to the head, whose digests are not their bodies', or that do not chain
// from GenesisHash to the header's head hash; a record written by a lease
// generation beyond the header's; a checkpoint past the head or not its
// body's digest; intents, receipts, attempts, grants or inbox entries of
// another run, of an unknown intent, named twice, malformed, or in a
// status no store writes.
func ValidateWholeRun(op string, r WholeRun) error {
	run := r.Record.Run
	id := run.ID
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidInput, op, id, nil, format, args...)
	}
	if id == "" || run.WorkflowID == "" || run.State == "" {
		return bad("run id, workflow id and state are required")
	}
	if what := unheldText(r); what != "" {
		return bad("%s is not text every store holds (UTF-8 without a NUL byte)", what)
	}
	if err := label.Check(run.Labels); err != nil {
		return Errorf(CodeInvalidInput, op, id, err, "%v", err)
	}
	gen := run.Lease.Generation
	evs := r.Record.Events
	if run.Head != int64(len(evs)) {
		return bad("the header's head is %d, but %d events are given", run.Head, len(evs))
	}
	hash := GenesisHash
	for i, e := range evs {
		switch {
		case e.Seq != int64(i)+1:
			return bad("event %d is numbered %d", i+1, e.Seq)
		case e.Kind == "" || len(e.Body) == 0:
			return bad("event %d has no kind or no body", e.Seq)
		case !DigestMatches(e.Body, e.Digest):
			return bad("event %d's digest is not its body's", e.Seq)
		case e.PrevHash != hash || e.ChainHash != ChainHash(hash, e.Seq, e.Digest):
			return bad("event %d does not chain from the one before", e.Seq)
		case e.Generation < 0 || e.Generation > gen:
			return bad("event %d was written by lease generation %d, beyond the header's %d", e.Seq, e.Generation, gen)
		}
		hash = e.ChainHash
	}
	if hash != run.HeadHash {
		return bad("the events chain to %s, the header's head hash is %s", hash, run.HeadHash)
	}
	if r.Record.HasCheckpoint {
		cp := r.Record.Checkpoint
		if cp.Seq < 0 || cp.Seq > run.Head || len(cp.Body) == 0 || !DigestMatches(cp.Body, cp.Digest) {
			return bad("the checkpoint (after event %d) is past the head or not its body's digest", cp.Seq)
		}
	}
	if why := checkNotices(r.Notices); why != "" {
		return bad("%s", why)
	}
	for i, n := range r.Notices {
		switch {
		case n.RunID != id || !strings.HasPrefix(n.ID, id+"/") || !utf8.ValidString(n.ID) || strings.ContainsRune(n.ID, 0):
			return bad("notice %d is not the run's (id %q, run %q)", i, n.ID, n.RunID)
		case n.Seq < 0 || n.Seq > run.Head || n.Attempts < 0 || n.CreatedAt.IsZero():
			return bad("notice %s is past the head, or has no time or a negative attempt count", n.ID)
		case len(n.LastError) > MaxNoticeError || !utf8.ValidString(n.LastError) || strings.ContainsRune(n.LastError, 0):
			return bad("notice %s's last error is not text of at most %d bytes", n.ID, MaxNoticeError)
		case ValidateSent(n.Sent) != nil:
			return bad("notice %s names the routes it reached badly", n.ID)
		}
		for _, o := range r.Notices[:i] {
			if o.ID == n.ID {
				return bad("notice %s is given twice", n.ID)
			}
		}
	}
	grants := make(map[string]Approval, len(r.Grants))
	nonces := make(map[string]bool, len(r.Grants))
	for _, g := range r.Grants {
		if g.RunID != id {
			return bad("grant %s is of run %q", g.ID, g.RunID)
		}
		if err := ValidateGrant(op, g); err != nil {
			return err
		}
		if _, dup := grants[g.ID]; dup || nonces[g.Nonce] {
			return bad("grant %s, or its nonce, is given twice", g.ID)
		}
		switch g.Status {
		case ApprovalGranted, ApprovalRevoked:
			if g.ConsumedBy != "" {
				return bad("grant %s is %s but consumed by %s", g.ID, g.Status, g.ConsumedBy)
			}
		case ApprovalConsumed:
		default:
			return bad("grant %s is in status %q", g.ID, g.Status)
		}
		grants[g.ID], nonces[g.Nonce] = g, true
	}
	intents := make(map[string]Intent, len(r.Record.Intents))
	keys := make(map[string]bool, len(r.Record.Intents))
	for _, in := range r.Record.Intents {
		switch {
		case in.RunID != id || in.ID == "" || in.IdempotencyKey == "" || in.ContentDigest == "" || in.EffectType == "" || len(in.Body) == 0:
			return bad("intent %q (run %q) is incomplete or of another run", in.ID, in.RunID)
		case intents[in.ID].ID != "" || keys[in.IdempotencyKey]:
			return bad("intent %s, or its idempotency key, is given twice", in.ID)
		case in.Seq < 0 || in.Seq > run.Head:
			return bad("intent %s follows event %d, past the head", in.ID, in.Seq)
		case !DigestMatches(in.Body, in.Digest):
			return bad("intent %s's digest is not its body's", in.ID)
		case !validOutbox(in.Outbox) || in.Attempts < 0:
			return bad("intent %s's outbox is %q after %d attempts", in.ID, in.Outbox, in.Attempts)
		}
		if in.ApprovalID != "" {
			if g, ok := grants[in.ApprovalID]; !ok || g.Status != ApprovalConsumed || g.ConsumedBy != in.ID {
				return bad("intent %s consumed grant %s, which is not among the run's grants as consumed by it", in.ID, in.ApprovalID)
			}
		}
		intents[in.ID], keys[in.IdempotencyKey] = in, true
	}
	// A consumed grant is named by the intent that consumed it, or concurs
	// with the grant that intent names: one of the same request, as a
	// quorum's approvals are.
	for _, g := range r.Grants {
		if g.Status != ApprovalConsumed {
			continue
		}
		in, ok := intents[g.ConsumedBy]
		if !ok || in.ApprovalID == "" {
			return bad("grant %s is consumed by %q, which is no intent of the run that names a grant", g.ID, g.ConsumedBy)
		}
		if in.ApprovalID != g.ID && grants[in.ApprovalID].RequestDigest != g.RequestDigest {
			return bad("grant %s is consumed by %s, which names grant %s of another request", g.ID, in.ID, in.ApprovalID)
		}
	}
	made := make(map[string]int64, len(intents))
	for _, a := range r.Record.Attempts {
		in, ok := intents[a.IntentID]
		switch {
		case !ok:
			return bad("attempt %d is of intent %q, not the run's", a.N, a.IntentID)
		case a.N != made[in.ID]+1:
			return bad("attempt %d of intent %s follows attempt %d", a.N, in.ID, made[in.ID])
		case !validAttempt(a.Status):
			return bad("attempt %d of intent %s is in status %q", a.N, in.ID, a.Status)
		case a.Generation < 0 || a.Generation > gen:
			return bad("attempt %d of intent %s was made by lease generation %d, beyond the header's %d", a.N, in.ID, a.Generation, gen)
		}
		made[in.ID] = a.N
	}
	receipted := make(map[string]bool, len(r.Record.Receipts))
	for _, rc := range r.Record.Receipts {
		switch in, ok := intents[rc.IntentID]; {
		case !ok || receipted[rc.IntentID]:
			return bad("a receipt closes intent %q, not the run's or closed twice", rc.IntentID)
		case rc.Outcome == "" || len(rc.Body) == 0 || !DigestMatches(rc.Body, rc.Digest):
			return bad("the receipt of intent %s has no outcome or is not its body's digest", rc.IntentID)
		case in.Outbox != OutboxDone:
			return bad("intent %s has a receipt, but its outbox is %s", rc.IntentID, in.Outbox)
		}
		receipted[rc.IntentID] = true
	}
	entries := make(map[string]bool, len(r.Inbox))
	var last int64
	for _, in := range r.Inbox {
		if in.RunID != id {
			return bad("inbound %s is of run %q", in.ID, in.RunID)
		}
		in.Grant = nil
		if err := ValidateInbound(op, in); err != nil {
			return err
		}
		if entries[in.ID] || in.Seq <= last {
			return bad("inbound %s is given twice, or out of order (at %d after %d)", in.ID, in.Seq, last)
		}
		entries[in.ID], last = true, in.Seq
	}
	for i, tr := range r.Trace {
		if tr.Kind == "" {
			return bad("trace record %d has no kind", i+1)
		}
	}
	return nil
}

// unheldText names the first text of r that is not valid UTF-8 or holds a
// NUL byte, which PostgreSQL's text refuses; "" when there is none. Such
// a run could not move to every store, so no store takes it.
func unheldText(r WholeRun) string {
	held := func(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
	run := r.Record.Run
	for _, t := range [...]struct{ what, s string }{{"the run id", run.ID}, {"the workflow id", run.WorkflowID}, {"the workflow version", run.WorkflowVersion},
		{"the workflow digest", run.WorkflowDigest}, {"the state", run.State}, {"the outcome", run.Outcome}, {"the quarantine", run.Quarantine},
		{"the checkpoint's build digest", r.Record.Checkpoint.BuildDigest}} {
		if !held(t.s) {
			return t.what
		}
	}
	for _, e := range r.Record.Events {
		if !held(e.Kind) {
			return fmt.Sprintf("event %d's kind", e.Seq)
		}
	}
	for _, in := range r.Record.Intents {
		for _, s := range [...]string{in.ID, in.EffectType, in.IdempotencyKey, in.ContentDigest, in.ApprovalID, in.Route} {
			if !held(s) {
				return fmt.Sprintf("a text of intent %q", in.ID)
			}
		}
	}
	for _, a := range r.Record.Attempts {
		if !held(a.IntentID) || !held(a.Detail) {
			return fmt.Sprintf("a text of attempt %d of intent %q", a.N, a.IntentID)
		}
	}
	for _, rc := range r.Record.Receipts {
		if !held(rc.IntentID) || !held(rc.Outcome) {
			return fmt.Sprintf("a text of the receipt of intent %q", rc.IntentID)
		}
	}
	for _, g := range r.Grants {
		for _, s := range [...]string{g.ID, g.RequestDigest, g.Nonce, g.ConsumedBy} {
			if !held(s) {
				return fmt.Sprintf("a text of grant %q", g.ID)
			}
		}
	}
	for _, in := range r.Inbox {
		for _, s := range [...]string{in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability} {
			if !held(s) {
				return fmt.Sprintf("a text of inbound %q", in.ID)
			}
		}
	}
	for i, tr := range r.Trace {
		if !held(tr.Kind) {
			return fmt.Sprintf("trace record %d's kind", i+1)
		}
	}
	return ""
}

func validOutbox(s OutboxStatus) bool {
	switch s {
	case OutboxPending, OutboxInFlight, OutboxRetry, OutboxReconcile, OutboxHuman, OutboxDone:
		return true
	}
	return false
}

func validAttempt(s AttemptStatus) bool {
	switch s {
	case AttemptStarted, AttemptSucceeded, AttemptFailedTransient, AttemptFailedPermanent, AttemptUnknown,
		AttemptReconciledApplied, AttemptReconciledNotApplied:
		return true
	}
	return false
}

// The quarantine of a run that moved to another store: MovedToPrefix,
// where it went, and, if it was quarantined before, quarantinedBefore and
// why. A store that checks for it in its own query language matches the
// prefix (it holds no quote, percent sign or underscore).
const (
	MovedToPrefix     = "moved to another store: "
	quarantinedBefore = "\nquarantined before: "
)

// RefuseMoved is Submit's refusal of an entry for a run that moved to
// another store (quarantine is MovedAway): CodeInvalidTransition, naming
// where it went, so that a person or client still pointed at this store
// learns where to submit it instead of handing it to a run that will never
// take it. Nil for any other run.
func RefuseMoved(op, runID, quarantine string) error {
	to, _, moved := MovedFrom(quarantine)
	if !moved {
		return nil
	}
	return Errorf(CodeInvalidTransition, op, runID, nil, "the run moved to another store (%s): submit it there", to)
}

// MovedAway is the quarantine that fences a run out of the store it moved
// from, for good: to says where it went (one line; a line break becomes
// a space), prev is the quarantine it had before ("" for none). MovedFrom
// gives both back, so that a move interrupted and taken up again still
// knows what the run was, and that a run is not moved to a second store.
func MovedAway(to, prev string) string {
	q := MovedToPrefix + strings.NewReplacer("\r", " ", "\n", " ").Replace(to)
	if prev != "" {
		q += quarantinedBefore + prev
	}
	return q
}

// MovedFrom reports whether quarantine is a MovedAway one, where the run
// went and the quarantine it had before it moved.
func MovedFrom(quarantine string) (to, prev string, moved bool) {
	rest, ok := strings.CutPrefix(quarantine, MovedToPrefix)
	if !ok {
		return "", "", false
	}
	to, prev, _ = strings.Cut(rest, quarantinedBefore)
	return to, prev, true
}

// MoveFencer is implemented by stores live runs move out of: the other
// side of RunImporter. A live run is fenced out before it is read for the
// move, so that nothing it does in the old store after the read is lost,
// and nothing is done twice: its runners' commits are refused there (it is
// quarantined), and a runner of the old store started again by mistake
// never takes it up.
type MoveFencer interface {
	// MoveOut fences a live run out of the store, at the store's clock,
	// as moving to the store to describes, and returns its header as
	// fenced: its quarantine MovedAway(to, the one it had), its lease
	// given up. A run fenced out already is returned as it is (a move
	// interrupted and taken up again, or one to another store: MovedFrom
	// tells). It
	// refuses, changing nothing (MoveOutOf): CodeNotFound; CodeLeaseHeld
	// while a runner's lease on it is live (stop the old store's runners
	// first, or wait for their leases to run out); CodeInvalidTransition
	// for a run that has ended (it moves as it is).
	MoveOut(ctx context.Context, runID, to string) (Run, error)
	// CancelMove lifts MoveOut, for a move that did not happen: the run's
	// quarantine is again what it was. CodeInvalidTransition for a run
	// that is not fenced out.
	CancelMove(ctx context.Context, runID string) error
}

// MoveFencerOf returns the MoveFencer of s, or of the first store it
// wraps that has one.
func MoveFencerOf(s Store) (MoveFencer, bool) { return As[MoveFencer](s) }

// MoveOutOf decides MoveOut for run r, read at now, moving to to: the
// quarantine that fences it out, or why not. Both stores decide with it.
func MoveOutOf(op string, r Run, to string, now time.Time) (string, error) {
	if _, _, moved := MovedFrom(r.Quarantine); moved {
		return r.Quarantine, nil
	}
	if r.Outcome != "" {
		return "", Errorf(CodeInvalidTransition, op, r.ID, nil, "the run has ended (%s): it moves as it is", r.Outcome)
	}
	if r.Lease.Owner != "" && now.Before(r.Lease.ExpiresAt) {
		return "", Errorf(CodeLeaseHeld, op, r.ID, nil, "runner %s holds the run until %s", r.Lease.Owner, r.Lease.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return MovedAway(to, r.Quarantine), nil
}

// MoveCancelled decides CancelMove for run r: the quarantine it had
// before MoveOut, or why it cannot be given back.
func MoveCancelled(op string, r Run) (string, error) {
	_, prev, moved := MovedFrom(r.Quarantine)
	if !moved {
		return "", Errorf(CodeInvalidTransition, op, r.ID, nil, "the run is not moving out of this store")
	}
	return prev, nil
}
