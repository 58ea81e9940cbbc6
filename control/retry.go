package control

import (
	"crypto/sha256"
	"encoding/binary"
)

// OutcomeClass classifies the outcome of an effect attempt.
type OutcomeClass string

// Attempt outcome classes. Only transient outcomes are retried; an unknown
// outcome is never retried blindly, it is reconciled with the destination.
const (
	ClassTransient OutcomeClass = "transient"
	ClassPermanent OutcomeClass = "permanent"
	ClassUnknown   OutcomeClass = "unknown"
)

// JitterEqual is the jitter scheme: half the backoff is fixed, the other
// half is drawn deterministically from the recorded jitter seed.
const JitterEqual = "equal"

// JitterDomain separates jitter hashes from every other hash in flrh.
const JitterDomain = "flrh-retry-jitter/1"

// RetryPolicy is bounded exponential backoff with a deterministic cap and
// deterministic jitter.
type RetryPolicy struct {
	MaxRetries     int64  `json:"max_retries"` // retries allowed per transition after the first attempt
	BaseMillis     int64  `json:"base_millis"` // backoff before the first retry, before jitter
	CapMillis      int64  `json:"cap_millis"`  // no backoff exceeds this
	ExhaustedEvent string `json:"exhausted_event"`
}

// Action is what to do after an attempt.
type Action string

// Retry actions.
const (
	ActionRetry     Action = "retry"     // schedule another attempt after DelayMillis
	ActionExhausted Action = "exhausted" // transient but out of retries: issue the exhausted event
	ActionFail      Action = "fail"      // permanent: no retry
	ActionReconcile Action = "reconcile" // unknown: query the destination by idempotency key, never retry blindly
)

// RetryDecision is the verdict after an attempt.
type RetryDecision struct {
	Action      Action `json:"action"`
	Retry       int64  `json:"retry,omitempty"`        // 1-based index of the retry being scheduled
	BaseMillis  int64  `json:"base_millis,omitempty"`  // capped exponential backoff before jitter
	DelayMillis int64  `json:"delay_millis,omitempty"` // what to wait, jitter included
}

// Decide says what follows attempt number attempt (1-based) of one
// transition's effect, which ended with class. seed is the run's recorded
// jitter seed and key identifies the effect (its idempotency key), so that
// replay recomputes the same delay and two effects do not retry in lockstep.
func (p RetryPolicy) Decide(class OutcomeClass, attempt int64, seed, key string) (RetryDecision, error) {
	if attempt < 1 {
		return RetryDecision{}, errorf(CodeInput, "/attempt", "attempt %d is not a 1-based attempt number", attempt)
	}
	switch class {
	case ClassPermanent:
		return RetryDecision{Action: ActionFail}, nil
	case ClassUnknown:
		return RetryDecision{Action: ActionReconcile}, nil
	case ClassTransient:
	default:
		return RetryDecision{}, errorf(CodeInput, "/class", "outcome class %q is not transient, permanent or unknown", class)
	}
	if attempt > p.MaxRetries {
		return RetryDecision{Action: ActionExhausted}, nil
	}
	base := p.Backoff(attempt)
	return RetryDecision{Action: ActionRetry, Retry: attempt, BaseMillis: base, DelayMillis: Jitter(base, seed, key, attempt)}, nil
}

// Backoff returns the capped exponential backoff before retry number
// retry (1-based): min(Cap, Base * 2^(retry-1)).
func (p RetryPolicy) Backoff(retry int64) int64 {
	d := p.BaseMillis
	for i := int64(1); i < retry && d < p.CapMillis; i++ {
		d *= 2 // d < Cap <= one day before doubling: cannot overflow
	}
	return min(d, p.CapMillis)
}

// Jitter applies equal jitter to a backoff: the result is in
// [base - base/2, base], chosen by the first 8 bytes of
// SHA-256(JitterDomain 0x00 seed 0x00 key 0x00 retry-as-8-big-endian-bytes)
// as a big-endian
// integer, modulo base/2 + 1.
func Jitter(base int64, seed, key string, retry int64) int64 {
	if base <= 0 {
		return 0
	}
	half := base / 2
	h := sha256.New()
	h.Write([]byte(JitterDomain))
	h.Write([]byte{0})
	h.Write([]byte(seed))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(retry))
	h.Write(n[:])
	sum := h.Sum(nil)
	r := binary.BigEndian.Uint64(sum[:8]) % uint64(half+1)
	return base - half + int64(r)
}
