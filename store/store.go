package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"time"

	"flrh.dev/flrh/cjson"
)

// Code classifies a store failure. Callers branch on codes, never on text.
type Code string

const (
	CodeNotFound            Code = "NOT_FOUND"            // no such run, intent, approval or attempt
	CodeExists              Code = "ALREADY_EXISTS"       // a run, intent or approval id reused
	CodeFenced              Code = "FENCED"               // the lease is not (or no longer) this writer's
	CodeLeaseHeld           Code = "LEASE_HELD"           // another writer holds an unexpired lease
	CodeHeadMismatch        Code = "HEAD_MISMATCH"        // the run moved since the writer last read it
	CodeQuarantined         Code = "QUARANTINED"          // the run is parked; it never resumes silently
	CodeIdempotencyConflict Code = "IDEMPOTENCY_CONFLICT" // one idempotency key, two different contents
	CodeApprovalUnavailable Code = "APPROVAL_UNAVAILABLE" // consumed, revoked or never granted
	CodeApprovalRejected    Code = "APPROVAL_REJECTED"    // the caller's revalidation refused the grant
	CodeInvalidTransition   Code = "INVALID_TRANSITION"   // e.g. a receipt for an intent with no attempt
	CodeInvalidInput        Code = "INVALID_INPUT"        // a malformed record handed to the store
	CodeCorrupt             Code = "CORRUPT"              // stored bytes fail their digest or chain
	CodeSchemaTooNew        Code = "SCHEMA_TOO_NEW"       // the database was written by a newer flrh
	CodeUnavailable         Code = "UNAVAILABLE"          // the database could not be reached or was busy
)

// Error is a typed store failure.
type Error struct {
	Code   Code
	Op     string // the store operation, e.g. "commit"
	RunID  string // the run concerned, if any
	Detail string
	Err    error // the underlying cause, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("store: %s", e.Op)
	if e.RunID != "" {
		s += " run " + e.RunID
	}
	s += ": " + string(e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error; implementations use it so messages stay uniform.
func Errorf(code Code, op, runID string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, RunID: runID, Detail: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf returns the Code of err if it is (or wraps) an *Error, else "".
func CodeOf(err error) Code {
	for err != nil {
		if e, ok := err.(*Error); ok {
			return e.Code
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return ""
		}
		err = u.Unwrap()
	}
	return ""
}

// Run is a run's header row.
type Run struct {
	ID              string
	WorkflowID      string
	WorkflowVersion string
	// WorkflowDigest is the digest of the workflow definition the run was
	// created under (Workflow.Digest in the runner), recorded with the
	// header so that a process holding another definition of the same id
	// and version can tell the run is not its own before reading anything
	// else. "" for a run created without one, or migrated from a store
	// that did not record it and holding no readable checkpoint.
	WorkflowDigest string
	State          string // the run FSM state after the last commit
	Outcome        string // the final outcome category, "" while the run is live
	Head           int64  // sequence number of the last accepted event, 0 before any
	HeadHash       string // chain hash after the last event (GenesisHash before any)
	Lease          Lease
	Quarantine     string // why the run is parked, "" when it is not
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// DueAt is when the run, resting, next has something to do by the
	// clock alone (a time budget runs out while it waits): a reading of
	// the clock of the runner whose tick recorded it (Tick.DueAt). Zero
	// when nothing is due by the clock.
	DueAt time.Time
	// Labels are the names and values the run was started with (package
	// label), nil for none: fixed at creation, found again with
	// RunFilter.Labels. Not evidence: no event, digest or check reads
	// them.
	Labels map[string]string
}

// Lease is a writer's claim on a run. Generation grows by one on every
// acquisition, so a stale holder is recognised by its smaller number.
type Lease struct {
	RunID      string
	Owner      string
	Generation int64
	ExpiresAt  time.Time
}

// Event is one accepted event of a run, in canonical bytes.
type Event struct {
	Seq        int64
	Kind       string
	Body       []byte // canonical JSON
	Digest     string // sha256 of Body
	PrevHash   string // the chain hash before this event
	ChainHash  string // ChainHash(PrevHash, Seq, Digest)
	Generation int64  // the lease generation that committed it
	RecordedAt time.Time
	// Proof is ProveDigest's proof that Digest is Body's digest, if the
	// writer has one: a store then does not hash Body again (ValidateTick).
	// Never set by a store; the zero value proves nothing.
	Proof DigestProof
}

// Checkpoint is a snapshot of a run's pure state after an event.
type Checkpoint struct {
	Seq           int64  // the event it follows
	FormatVersion int64  // checkpoint layout version; a newer one quarantines
	BuildDigest   string // digest of the code that wrote it (loaded-code coherence)
	Body          []byte // canonical JSON
	Digest        string
	// Proof is ProveDigest's proof that Digest is Body's digest, if the
	// writer has one: a store then does not hash Body again (ValidateTick).
	// Never set by a store; the zero value proves nothing.
	Proof DigestProof
}

// Intent is a committed effect intent with the outbox state that drives it.
type Intent struct {
	ID             string
	RunID          string
	Seq            int64 // the event after which it was committed
	EffectType     string
	IdempotencyKey string
	ContentDigest  string // digest of the exact content the key is bound to
	ApprovalID     string // the approval it consumed, "" if none was required
	Body           []byte // canonical EffectIntent
	Digest         string
	Outbox         OutboxStatus
	Route          string // why the outbox is in its status (e.g. retry_exhausted)
	Attempts       int64
	// Proof is ProveDigest's proof that Digest is Body's digest, if the
	// writer has one: a store then does not hash Body again (ValidateTick).
	// Never set by a store; the zero value proves nothing.
	Proof DigestProof
}

// OutboxStatus is where an intent stands on its way to the world.
type OutboxStatus string

const (
	OutboxPending   OutboxStatus = "pending"   // committed, not yet attempted
	OutboxInFlight  OutboxStatus = "in_flight" // an attempt began; its outcome is not recorded
	OutboxRetry     OutboxStatus = "retry"     // a transient failure; may be attempted again
	OutboxReconcile OutboxStatus = "reconcile" // outcome unknown; ask the destination first
	OutboxHuman     OutboxStatus = "human"     // a person must reconcile
	OutboxDone      OutboxStatus = "done"      // a receipt closed it
)

// AttemptStatus is the recorded outcome of one adapter attempt.
type AttemptStatus string

const (
	AttemptStarted              AttemptStatus = "started"
	AttemptSucceeded            AttemptStatus = "succeeded"
	AttemptFailedTransient      AttemptStatus = "failed_transient"
	AttemptFailedPermanent      AttemptStatus = "failed_permanent"
	AttemptUnknown              AttemptStatus = "unknown"
	AttemptReconciledApplied    AttemptStatus = "reconciled_applied"
	AttemptReconciledNotApplied AttemptStatus = "reconciled_not_applied"
)

// Attempt is one try of an intent against its destination.
type Attempt struct {
	IntentID   string
	N          int64 // 1, 2, ...
	Status     AttemptStatus
	Generation int64
	Detail     string
	StartedAt  time.Time
	FinishedAt time.Time
}

// Receipt closes an intent: the external witness of what happened.
type Receipt struct {
	IntentID string
	Outcome  string // confirmed_success, confirmed_failure, ...
	Body     []byte // canonical ActionReceipt
	Digest   string
	// Proof is ProveDigest's proof that Digest is Body's digest, if the
	// writer has one: a store then does not hash Body again (ValidateTick).
	// Never set by a store; the zero value proves nothing.
	Proof DigestProof
}

// Approval is a grant in the approvals ledger.
type Approval struct {
	ID            string
	RunID         string
	RequestDigest string // digest of the approval request it answers
	Nonce         string // one-time; unique across the store
	Body          []byte // canonical grant
	Digest        string
	ExpiresAt     time.Time
	Status        ApprovalStatus
	ConsumedBy    string // intent id, once consumed
}

// Clone returns a copy of a that shares nothing with it, its body copied
// by keep; nil for nil.
func (a *Approval) Clone(keep func([]byte) []byte) *Approval {
	if a == nil {
		return nil
	}
	c := *a
	c.Body = keep(a.Body)
	return &c
}

// ApprovalStatus is a grant's place in its one-time life.
type ApprovalStatus string

const (
	ApprovalGranted  ApprovalStatus = "granted"
	ApprovalConsumed ApprovalStatus = "consumed"
	ApprovalRevoked  ApprovalStatus = "revoked"
)

// ApprovalUse asks Commit to consume a grant for an intent. Check receives
// the stored grant and the transaction's own clock reading; it must be the
// pure revalidation against the exact current request. A non-nil error
// aborts the whole commit with CodeApprovalRejected.
//
// An intent names one grant (Intent.ApprovalID). Where a request needs the
// approvals of several people (a quorum), the others are consumed by the
// same intent in the same commit, each a use with Concurs set: the record
// of who approved is the set of grants the intent consumed.
type ApprovalUse struct {
	ApprovalID string
	IntentID   string
	Check      func(grant Approval, now time.Time) error
	// Concurs marks a grant consumed alongside the one the intent names.
	Concurs bool
}

// Inbound is an event submitted to a run from outside the runner: a person's
// approval, denial, choice or cancellation, an agent's proposal, new input.
// It waits in the run's inbox until a tick consumes it. Who submitted it is
// recorded as authenticated by the caller (the API), never as claimed.
type Inbound struct {
	ID         string // unique per run; resubmitting the same content is idempotent
	RunID      string
	Kind       string
	ActorRole  string
	Actor      string
	Capability string
	Body       []byte // canonical JSON
	Digest     string
	Seq        int64 // inbox order, assigned by the store
	Consumed   bool
	// Proof is ProveDigest's proof that Digest is Body's digest, if the
	// writer has one: a store then does not hash Body again (ValidateTick).
	// Never set by a store; the zero value proves nothing.
	Proof DigestProof
	// Grant, with Submit only, is a grant for the approvals ledger that
	// the entry hands to the run (a person's approval names it), recorded
	// in the same write as the entry: both or neither. An approval the
	// run refuses (it has ended, say) thus leaves no grant behind, and a
	// grant is never in the ledger without the entry that hands it over.
	// Submitting the same entry again records nothing. A tick's or a new
	// run's entries carry none, and a store never returns one.
	Grant *Approval
	// Seen, with Submit only, guards an entry decided on what the writer
	// read of the run's pending entries of the entry's kind (or of
	// Seen.Kinds): the store refuses it (CodeHeadMismatch), writing
	// nothing, when the run holds a pending entry of those kinds the
	// writer did not see, one submitted since. Two people approving at
	// the same instant: the second is refused, reads again, and is told
	// that the first's grant stands. Entries consumed meanwhile do not
	// count; nil guards nothing.
	Seen *PendingSeen
}

// PendingSeen is what a writer read of a run's pending inbox entries of
// the kinds it guards: their ids (Inbound.Seen).
type PendingSeen struct {
	IDs []string
	// Kinds are the kinds guarded; none guards the entry's own kind.
	Kinds []string
}

// KindsOf are the kinds p guards for an entry of kind.
func (p *PendingSeen) KindsOf(kind string) []string {
	if len(p.Kinds) == 0 {
		return []string{kind}
	}
	return p.Kinds
}

// UnseenError is the refusal of entry in, guarded by in.Seen, because
// the run holds pending entry id of a guarded kind that the writer did
// not see.
func UnseenError(op string, in Inbound, id string) error {
	return Errorf(CodeHeadMismatch, op, in.RunID, nil, "inbound %s was submitted since the run's inbox was read", id)
}

// Clone is a copy of p sharing nothing with it; nil stays nil.
func (p *PendingSeen) Clone() *PendingSeen {
	if p == nil {
		return nil
	}
	return &PendingSeen{IDs: slices.Clone(p.IDs), Kinds: slices.Clone(p.Kinds)}
}

// TraceRecord is an append-only observation, never authoritative.
type TraceRecord struct {
	Kind string
	Body []byte
}

// AttemptResult records how an attempt ended, optionally with its receipt.
type AttemptResult struct {
	IntentID string
	N        int64
	Status   AttemptStatus
	Detail   string
	Outbox   OutboxStatus // the outbox status that follows
	Route    string
}

// Tick is everything one tick decided, committed atomically by Commit.
type Tick struct {
	ExpectHead int64         // the run's Head the writer computed from
	Events     []Event       // Kind, Body (and Digest, checked) are required; chain fields are computed
	Checkpoint *Checkpoint   // the state after the last event, if any
	State      string        // the run FSM state after the tick ("" keeps it)
	Outcome    string        // the final outcome, when the tick ends the run
	Intents    []Intent      // new intents; each gets an outbox row in OutboxPending
	Approvals  []ApprovalUse // grants consumed by those intents
	Results    []AttemptResult
	Receipts   []Receipt // each closes its intent's outbox (done)
	Consume    []string  // inbox entries this tick consumed (they must be pending)
	// ExpectInboxEmpty refuses the tick with CodeHeadMismatch when, after
	// its consumption, the run's inbox still holds a pending entry: a
	// writer that decided without reading the inbox, because it knew the
	// inbox empty, learns that something arrived, and nothing is written.
	// It is ExpectHead for the inbox.
	ExpectInboxEmpty bool
	// Begin starts the next attempt of each named intent (new in this tick or
	// already pending/retry) durably, before the caller's adapter I/O: what
	// BeginAttempt does, folded into the tick's one transaction.
	Begin []string
	// Submit appends inbound events to the run's inbox inside the tick,
	// already consumed: an input handed to the runner in-process and
	// accepted by the tick it starts is durable with that tick, one commit
	// instead of a submission's commit and then the tick's. Each entry's
	// row is what Submit and then consuming it would leave (the next inbox
	// position, the tick's time), and each must be named in Consume. An
	// id the run's inbox already holds refuses the whole tick with
	// CodeExists, whatever its content: whether it is a resubmission is
	// for Submit to decide.
	Submit []Inbound
	Trace  []TraceRecord
	// Notices are written with the tick (Notice), at most one of each
	// kind; the store sets their IDs, run, position and time.
	Notices []Notice
	// MayLag lets the tick be committed without waiting for the disk:
	// it is committed, visible to every reader, fenced and atomic as any
	// other tick, but the store does not wait for it to reach stable
	// storage (SQLite commits it with synchronous=NORMAL, PostgreSQL with
	// synchronous_commit off). A crash of the process keeps it; a power
	// loss or an operating-system crash (SQLite), or a crash of the
	// database server (PostgreSQL), before the store's next durable
	// commit may lose it, and then the tick before it is the run's last.
	// Both stores' logs are durable as a prefix, so any later durable
	// commit, of any run, makes it durable too.
	//
	// Only a tick whose every record can be derived again after its loss
	// may set it (decision 1174): the runner marks the receipt commit of a
	// step that leaves its run waiting for input, whose receipt the
	// reconciler recovers from the destination by idempotency key.
	// ValidateTick refuses it on a tick that holds an intent, an
	// approval's consumption, an attempt's beginning, an inbound event of
	// its own or a final outcome: what such a tick records must be durable
	// before anything follows from it.
	MayLag bool
	// DueAt is the run's due time as the tick leaves it (Run.DueAt),
	// recorded with the header by every tick; zero for none. A resting
	// run is ready (ReadyLister, Claimer) once it has come.
	DueAt time.Time
}

// CloneTick returns t with every slice and body its own: what a store, or
// a wrapper of one, that keeps a tick past Commit keeps, since the caller
// may write over the tick's slices once Commit returns (Store.Commit).
// Approvals' Check functions are shared, not copied.
func CloneTick(t Tick) Tick {
	c := t
	c.Events = slices.Clone(t.Events)
	for i := range c.Events {
		c.Events[i].Body = bytes.Clone(c.Events[i].Body)
	}
	if t.Checkpoint != nil {
		cp := *t.Checkpoint
		cp.Body = bytes.Clone(cp.Body)
		c.Checkpoint = &cp
	}
	c.Intents = slices.Clone(t.Intents)
	for i := range c.Intents {
		c.Intents[i].Body = bytes.Clone(c.Intents[i].Body)
	}
	c.Approvals = slices.Clone(t.Approvals)
	c.Results = slices.Clone(t.Results)
	c.Receipts = slices.Clone(t.Receipts)
	for i := range c.Receipts {
		c.Receipts[i].Body = bytes.Clone(c.Receipts[i].Body)
	}
	c.Consume = slices.Clone(t.Consume)
	c.Begin = slices.Clone(t.Begin)
	c.Submit = slices.Clone(t.Submit)
	for i := range c.Submit {
		c.Submit[i].Body = bytes.Clone(c.Submit[i].Body)
		c.Submit[i].Grant = c.Submit[i].Grant.Clone(bytes.Clone) // refused in a tick, but never shared
		c.Submit[i].Seen = c.Submit[i].Seen.Clone()
	}
	c.Trace = slices.Clone(t.Trace)
	for i := range c.Trace {
		c.Trace[i].Body = bytes.Clone(c.Trace[i].Body)
	}
	c.Notices = slices.Clone(t.Notices)
	for i := range c.Notices {
		c.Notices[i].Body = bytes.Clone(c.Notices[i].Body)
		c.Notices[i].Sent = slices.Clone(c.Notices[i].Sent)
		c.Notices[i].Waits = slices.Clone(c.Notices[i].Waits)
	}
	return c
}

// Store is the durable record. All methods are safe for concurrent use.
// Every mutating method that takes a Lease is fenced: it fails with
// CodeFenced unless the lease is the run's current one and unexpired at the
// store's own clock reading inside the transaction.
type Store interface {
	// CreateRun inserts a new run header in the given initial state. The
	// inbound events in first, if any, are the run's first inbox entries,
	// written in the same transaction: a run is never seen, by a runner or
	// after a crash, without the input it was started with. Each is checked
	// as Submit checks it and must name the run; the ids must differ. On
	// any error nothing is written.
	CreateRun(ctx context.Context, run Run, first ...Inbound) error
	// Run returns a run's header.
	Run(ctx context.Context, runID string) (Run, error)
	// Runs lists run headers in creation order, after the cursor run id
	// ("" for the start), at most limit of them.
	Runs(ctx context.Context, after string, limit int) ([]Run, error)

	// AcquireLease claims a run for owner for ttl. It succeeds when the run
	// has no live lease or owner already holds it; the generation always
	// grows, fencing every earlier holder.
	AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (Lease, error)
	// RenewLease extends a lease that is still current.
	RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives a current lease up.
	ReleaseLease(ctx context.Context, lease Lease) error

	// Commit writes a tick atomically, fenced by lease. When it returns,
	// whatever it returns, the store holds none of the tick's byte slices
	// (bodies), its slices of records nor its Checkpoint (the struct
	// pointed to): what it keeps past the call, it
	// keeps a copy of (CloneTick), so that the caller may write over every
	// one of them at once, and reuse its buffers for its next tick. A
	// lagging tick (MayLag) is no exception, though its transaction may
	// stay open, and its work run again, after Commit has returned
	// (decisions 1174, 1186, 1717): the store runs it from its own copy.
	// storetest.RunKeepsNone holds a store to this.
	Commit(ctx context.Context, lease Lease, tick Tick) error
	// BeginAttempt records, fenced and before any adapter I/O, that attempt
	// number n of an intent is starting, and marks its outbox in flight.
	BeginAttempt(ctx context.Context, lease Lease, intentID string) (Attempt, error)

	// GrantApproval records a grant (from a person, through the API).
	GrantApproval(ctx context.Context, a Approval) error
	// RevokeApproval revokes a grant that has not been consumed.
	RevokeApproval(ctx context.Context, approvalID string) error
	// Approval returns a grant.
	Approval(ctx context.Context, approvalID string) (Approval, error)

	// Submit appends an inbound event to a run's inbox. The same id with the
	// same content (kind, actor, role, capability and body) is accepted once
	// and then ignored; with other content it is CodeExists. A run that has
	// ended refuses new inbound events.
	Submit(ctx context.Context, in Inbound) error
	// Inbox returns a run's inbound events in order; pendingOnly drops the
	// consumed ones.
	Inbox(ctx context.Context, runID string, pendingOnly bool) ([]Inbound, error)
	// Live returns the ids of runs that have not ended and are not
	// quarantined, in creation order.
	Live(ctx context.Context) ([]string, error)

	// Events returns a run's events with Seq > after, in order.
	Events(ctx context.Context, runID string, after int64) ([]Event, error)
	// Checkpoint returns a run's latest checkpoint (CodeNotFound if none).
	Checkpoint(ctx context.Context, runID string) (Checkpoint, error)
	// Intents returns a run's intents in commit order.
	Intents(ctx context.Context, runID string) ([]Intent, error)
	// Attempts returns an intent's attempts in order.
	Attempts(ctx context.Context, intentID string) ([]Attempt, error)
	// Receipts returns a run's receipts in commit order.
	Receipts(ctx context.Context, runID string) ([]Receipt, error)
	// Trace returns a run's trace records in order.
	Trace(ctx context.Context, runID string) ([]TraceRecord, error)

	// Quarantine parks a run; a quarantined run refuses every fenced
	// write. Notices, when given (at most one of each kind, as a tick's),
	// are written in the same transaction, each ID made as a tick's
	// (NoticeID) from the run's head and trace position: the run is told
	// of if and only if it is quarantined.
	Quarantine(ctx context.Context, runID, reason string, notices ...Notice) error
	// Release lifts a tripwire's park (IsPark) on a person's word, and
	// records who released it, with which capability, why and when as a
	// trace record of kind ReleaseKind, in one transaction. It refuses
	// (CheckReleasable) a run not parked, quarantined for anything else,
	// or parked again since the person read rel.Park. The run is then live
	// and unleased: the next runner pass takes it and its inbox.
	Release(ctx context.Context, rel Release) error

	// Close releases the store's resources.
	Close() error
}

// ReadyLister is implemented by stores that can tell which live runs have
// something to do: a pending inbox entry, a state that is not one of the
// given resting states (a run mid-effect, say, whose runner died), or,
// when due is not zero, a due time (Run.DueAt) at or before due. A runner
// polls it instead of advancing every live run, most of which are waiting
// for a person or for input.
type ReadyLister interface {
	Ready(ctx context.Context, resting []string, due time.Time) ([]string, error)
}

// Unwrapper is implemented by a store that wraps another one (to observe
// its commits, say). Optional read-only interfaces such as ReadyLister are
// looked for along the chain, so a wrapper need not repeat each of them.
type Unwrapper interface {
	Unwrap() Store
}

// ReadyListerOf returns the ReadyLister of s, or of the first store it
// wraps that has one.
func ReadyListerOf(s Store) (ReadyLister, bool) { return As[ReadyLister](s) }

// As returns s as a T, or the first store s wraps (through Unwrapper,
// link by link) that is one: how an optional interface is found behind
// wrappers, as errors.As finds an error in a chain.
func As[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(Unwrapper)
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}

// GenesisHash is the chain hash of a run before its first event.
const GenesisHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// ChainHash links an event to the one before it. The preimage names its
// kind and version so it can never collide with another digest in flrh.
func ChainHash(prev string, seq int64, digest string) string {
	sum := ChainSum(prev, seq, digest)
	return SumText(sum)
}

// ChainSum is ChainHash's sum itself, for a store that keeps the 32 bytes
// rather than their text: a commit chains a dozen events, and formatting
// each hash only to parse it back cost as much as hashing it.
func ChainSum(prev string, seq int64, digest string) [sha256.Size]byte {
	// The preimage of a chain hash is about 170 bytes; built on the stack.
	var buf [256]byte
	b := append(buf[:0], "flrh-event-chain/1\x00"...)
	b = append(b, prev...)
	b = append(b, 0)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, 0)
	b = append(b, digest...)
	return sha256.Sum256(b)
}

// ChainSumAfter is ChainSum(SumText(prev), seq, digest): the chain hash
// after an event whose chain hash is the sum prev, without the text of
// prev made as a string (a store appending a tick's events hashes each
// after the one before).
func ChainSumAfter(prev [sha256.Size]byte, seq int64, digest string) [sha256.Size]byte {
	var buf [256]byte
	b := append(buf[:0], "flrh-event-chain/1\x00"...)
	b = AppendSumText(b, prev)
	b = append(b, 0)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, 0)
	b = append(b, digest...)
	return sha256.Sum256(b)
}

// SumText is a SHA-256 sum in the text every digest and chain hash is
// written in: "sha256:" and 64 lowercase hex digits.
func SumText(sum [sha256.Size]byte) string {
	var buf [sumTextLen]byte
	return string(AppendSumText(buf[:0], sum))
}

// AppendSumText appends SumText(sum) to b, without the string.
func AppendSumText(b []byte, sum [sha256.Size]byte) []byte {
	b = append(b, sumPrefix...)
	b = append(b, make([]byte, 2*sha256.Size)...)
	cjson.HexSum((*[64]byte)(b[len(b)-2*sha256.Size:]), &sum)
	return b
}

const (
	sumPrefix  = "sha256:"
	sumTextLen = len(sumPrefix) + 2*sha256.Size
)

// BodyDigest is the digest of canonical bytes as stored.
func BodyDigest(body []byte) string {
	return SumText(sha256.Sum256(body))
}

// DigestMatches reports whether digest is BodyDigest(body), without
// building the text: the stores check every digest a tick hands them.
func DigestMatches(body []byte, digest string) bool {
	return SumMatches(digest, sha256.Sum256(body))
}

// SumMatches reports whether digest is SumText(sum), without building it:
// the verifier checks every event's chain hash against ChainSum this way.
// The sum's digits are written on the stack by cjson.HexSum, two a byte
// from its table, and compared with digest's in one comparison, where
// each digit was looked up and compared on its own.
func SumMatches(digest string, sum [sha256.Size]byte) bool {
	if len(digest) != sumTextLen || digest[:len(sumPrefix)] != sumPrefix {
		return false
	}
	var digits [2 * sha256.Size]byte
	cjson.HexSum(&digits, &sum)
	return digest[len(sumPrefix):] == string(digits[:])
}
