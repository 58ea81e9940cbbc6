package effect

import (
	"context"
	"fmt"
	"time"
)

// MaxLookups bounds a reconciliation plan, whatever the caller asks for.
const MaxLookups = 64

// Plan bounds one reconciliation. Backoff[i] is how long to wait before
// lookup i. A destination can only speak for requests that reached it, so
// over a real network the first wait should outlast the attempt's own
// timeout; on loopback it may be zero. len(Backoff) is the number of
// lookups, at least 1 and at most MaxLookups. The numbers come from the
// caller — the runner derives them from the loop contract's retry policy and
// its recorded jitter seed — so a replay waits exactly as the run did.
//
// Sleep waits for d or until ctx is done; nil means a real timer. Tests pass
// a recording function so that nothing waits.
type Plan struct {
	Backoff []time.Duration
	Sleep   func(ctx context.Context, d time.Duration) error
}

// Resolution is the end of a reconciliation.
type Resolution struct {
	// Status is ConfirmedSuccess, ConfirmedFailure, StillUnknown or
	// HumanRequired. StillUnknown after the plan is spent means the caller
	// must hand the effect to a person (HUMAN_RECONCILIATION) rather than
	// retry it.
	Status LookupStatus
	// Lookups is every lookup made, in order: the audit trail of the
	// decision. The last one decided it.
	Lookups []LookupResult
}

// Reconcile settles an attempt whose outcome is unknown by asking the
// destination, through a.Lookup, what became of the effect sent under key
// with contentDigest. It stops at the first confirmed or human-required
// answer and otherwise asks again after each planned backoff.
//
// It never mints an outcome: a confirmed answer that carries no destination
// evidence, or a status it does not know, is turned into HumanRequired. If
// ctx ends, it returns StillUnknown with what it has and ctx's error. A
// non-nil error from a.Lookup (the adapter was misused, nothing was asked)
// is returned as is.
func Reconcile(ctx context.Context, a Adapter, key, contentDigest string, p Plan) (Resolution, error) {
	if len(p.Backoff) == 0 || len(p.Backoff) > MaxLookups {
		return Resolution{}, fmt.Errorf("effect: a reconciliation plan has 1 to %d lookups, not %d", MaxLookups, len(p.Backoff))
	}
	for i, d := range p.Backoff {
		if d < 0 {
			return Resolution{}, fmt.Errorf("effect: backoff %d is negative (%v)", i, d)
		}
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepTimer
	}
	res := Resolution{Status: StillUnknown}
	for _, d := range p.Backoff {
		if d > 0 {
			if err := sleep(ctx, d); err != nil {
				return res, err
			}
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := a.Lookup(ctx, key, contentDigest)
		if err != nil {
			return res, err
		}
		r = vet(r)
		res.Lookups = append(res.Lookups, r)
		res.Status = r.Status
		if r.Status != StillUnknown {
			return res, nil
		}
	}
	return res, nil
}

// vet keeps the reconciler honest about what an adapter returned: only a
// confirmed answer backed by destination evidence stays confirmed.
func vet(r LookupResult) LookupResult {
	switch r.Status {
	case ConfirmedSuccess, ConfirmedFailure:
		if len(r.Evidence) == 0 || r.EvidenceDigest == "" {
			return LookupResult{Status: HumanRequired, Code: "CONFIRMATION_WITHOUT_EVIDENCE",
				Detail: fmt.Sprintf("the adapter reported %s (%s) with no destination evidence", r.Status, r.Code)}
		}
		return r
	case StillUnknown, HumanRequired:
		return r
	}
	return LookupResult{Status: HumanRequired, Code: "UNRECOGNISED_LOOKUP_STATUS",
		Detail: fmt.Sprintf("the adapter reported %v (%s)", r.Status, r.Code), Evidence: r.Evidence, EvidenceDigest: r.EvidenceDigest}
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
