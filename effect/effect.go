package effect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// Intent is what an adapter is asked to perform: a committed protocol
// EffectIntent and the action's parameters. The protocol intent carries the
// action only as a digest; Payload is the action itself, as JSON text that is
// valid flrh-cjson/1 input (nil means null).
type Intent struct {
	Effect  protocol.EffectIntent
	Payload []byte
}

// Outcome is what an adapter observed of one attempt.
type Outcome uint8

// The outcomes. The zero Outcome is invalid, so a receipt that was never
// classified cannot pass for any of them.
const (
	// Succeeded: the destination confirmed it applied the effect.
	Succeeded Outcome = iota + 1
	// FailedPermanent: the destination refused the effect and the same
	// request cannot succeed later; do not retry.
	FailedPermanent
	// FailedTransient: the destination did not apply the effect (or the
	// request never left) and the same request may be retried, with the
	// same idempotency key, after a backoff.
	FailedTransient
	// Unknown: the request may have been applied and no trustworthy answer
	// came back. Never retried blindly, never reported as success:
	// reconcile with Lookup.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case FailedPermanent:
		return "failed_permanent"
	case FailedTransient:
		return "failed_transient"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Receipt is an adapter's observation of one attempt.
type Receipt struct {
	Outcome Outcome
	// Code is a stable reason, for example "HTTP_201", "HTTP_503",
	// "IDEMPOTENCY_KEY_CONFLICT", "TRANSPORT_BEFORE_SEND" or
	// "TRANSPORT_AFTER_SEND".
	Code string
	// Detail explains Code for people; it is not part of any contract.
	Detail string
	// ContentDigest is the digest of the content the adapter sent, the
	// value a later Lookup must be asked about.
	ContentDigest string
	// Evidence is the destination's answer (canonical bytes) when one was
	// read and validated, else nil. EvidenceDigest is its digest, the
	// receipt's output digest.
	Evidence       []byte
	EvidenceDigest string
	// Replayed reports that the destination answered from its idempotency
	// record: an earlier attempt with this key had already applied it.
	Replayed bool
	// RetryAfter, on a transient failure, is how long the destination
	// asked to be left alone before the next attempt (an HTTP destination's
	// Retry-After); zero when it did not say. The runner waits at least
	// this long, up to its own bound, before retrying. It is advice about
	// timing, never part of the receipt's record.
	RetryAfter time.Duration
}

// LookupStatus is what a destination's evidence says about an idempotency
// key and content.
type LookupStatus uint8

// The lookup statuses. The zero LookupStatus is invalid.
const (
	// ConfirmedSuccess: the destination applied exactly this content.
	ConfirmedSuccess LookupStatus = iota + 1
	// ConfirmedFailure: the destination has not applied it and has nothing
	// in flight under the key.
	ConfirmedFailure
	// StillUnknown: no evidence yet (the destination is unreachable, busy,
	// or still handling a request with the key); ask again later.
	StillUnknown
	// HumanRequired: the evidence is contradictory or unrecognised (for
	// example the key holds other content); a person must decide.
	HumanRequired
)

func (s LookupStatus) String() string {
	switch s {
	case ConfirmedSuccess:
		return "confirmed_success"
	case ConfirmedFailure:
		return "confirmed_failure"
	case StillUnknown:
		return "still_unknown"
	case HumanRequired:
		return "human_required"
	}
	return fmt.Sprintf("LookupStatus(%d)", uint8(s))
}

// LookupResult is what one lookup found.
type LookupResult struct {
	Status         LookupStatus
	Code           string // a stable reason, like Receipt.Code
	Detail         string
	Evidence       []byte // the destination's answer, canonical, when one was read
	EvidenceDigest string
}

// Adapter performs effects of one type at one destination and answers for
// them afterwards.
//
// Execute performs one attempt. Every observation, including a transport
// failure, is reported in the Receipt; the error is non-nil only when
// nothing was attempted (the intent is malformed or not for this adapter).
//
// Lookup asks the destination what became of the effect sent under key with
// the given content digest. As with Execute, an unreachable destination is a
// StillUnknown result, not an error.
type Adapter interface {
	Execute(ctx context.Context, in Intent) (Receipt, error)
	Lookup(ctx context.Context, idempotencyKey, contentDigest string) (LookupResult, error)
}

// ContentDigester is implemented by adapters that can name, before any
// I/O, the digest of exactly the content they will send for an intent: the
// value a later Lookup must be asked about. A runner records it with the
// intent at commit time, so that reconciliation after a crash does not
// depend on the attempt's own receipt. Both built-in adapters implement it.
type ContentDigester interface {
	ContentDigest(in Intent) (string, error)
}

// Prepared is the request an adapter sends for an intent, as it prepared
// it before any I/O: the bytes and their content digest (what
// ContentDigest returns for the intent).
type Prepared struct {
	Body          []byte
	ContentDigest string
}

// Preparer is implemented by adapters whose ContentDigest prepares the
// very request Execute sends. A caller that prepared an intent to learn
// its content digest hands the preparation back to ExecutePrepared, which
// is Execute without preparing the request again: for p = Prepare(in),
// ExecutePrepared(ctx, in, p) does exactly what Execute(ctx, in) does.
// Neither the adapter nor the caller changes p.Body. Both built-in
// adapters implement it.
type Preparer interface {
	ContentDigester
	Prepare(in Intent) (Prepared, error)
	ExecutePrepared(ctx context.Context, in Intent, p Prepared) (Receipt, error)
}

// ErrNoAdapter is returned when no adapter is registered for an intent's
// effect type and adapter version.
var ErrNoAdapter = errors.New("effect: no adapter registered")

// Registry maps (effect type, adapter version) to adapters. The zero
// Registry is empty and ready to use; it is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[registryKey]Adapter
}

type registryKey struct{ effectType, version string }

// Register adds an adapter. Registering the same pair twice is an error:
// an intent's adapter version must name exactly one implementation.
func (r *Registry) Register(effectType, version string, a Adapter) error {
	if err := checkEntry("register", effectType, version, a); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := registryKey{effectType, version}
	if _, dup := r.m[k]; dup {
		return fmt.Errorf("effect: %q version %q is already registered", effectType, version)
	}
	if r.m == nil {
		r.m = make(map[registryKey]Adapter)
	}
	r.m[k] = a
	return nil
}

// Set registers a or, when the pair is registered already, puts a in
// its place: how a server swaps in adapters rebuilt with new credentials
// while runs go on. A call that holds the old adapter finishes with it.
func (r *Registry) Set(effectType, version string, a Adapter) error {
	if err := checkEntry("set", effectType, version, a); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[registryKey]Adapter)
	}
	r.m[registryKey{effectType, version}] = a
	return nil
}

// checkEntry refuses an entry Register or Set (op) cannot hold.
func checkEntry(op, effectType, version string, a Adapter) error {
	if !cjson.ValidID(effectType) || !cjson.ValidID(version) {
		return fmt.Errorf("effect: %s %q version %q: not identifiers", op, effectType, version)
	}
	if a == nil {
		return fmt.Errorf("effect: %s %q version %q: nil adapter", op, effectType, version)
	}
	return nil
}

// Adapter returns the adapter for an effect type and version.
func (r *Registry) Adapter(effectType, version string) (Adapter, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.m[registryKey{effectType, version}]
	return a, ok
}

// For returns the adapter an intent names through its effect type and
// adapter version, or an error wrapping ErrNoAdapter.
func (r *Registry) For(e protocol.EffectIntent) (Adapter, error) {
	a, ok := r.Adapter(e.EffectType, e.AdapterVersion)
	if !ok {
		return nil, fmt.Errorf("%w for effect type %q version %q", ErrNoAdapter, e.EffectType, e.AdapterVersion)
	}
	return a, nil
}

// Entries lists the registered (effect type, version) pairs, sorted.
func (r *Registry) Entries() [][2]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([][2]string, 0, len(r.m))
	for k := range r.m {
		out = append(out, [2]string{k.effectType, k.version})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}
