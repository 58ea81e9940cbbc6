package effect

import (
	"time"

	"flrh.dev/flrh/control"
)

// RetryClass maps an attempt's outcome to the loop contract's outcome
// class, which control.RetryPolicy.Decide turns into retry, fail, reconcile
// or exhausted. Success has no class: nothing follows it. The transient
// class is the only one that is ever retried.
func (r Receipt) RetryClass() (control.OutcomeClass, bool) {
	switch r.Outcome {
	case FailedTransient:
		return control.ClassTransient, true
	case FailedPermanent:
		return control.ClassPermanent, true
	case Unknown:
		return control.ClassUnknown, true
	}
	return "", false
}

// RetryPlan derives a reconciliation plan from the loop contract's retry
// policy: the first lookup at once, and lookup n+1 after the jittered
// backoff the policy gives retry n for this key and the run's recorded
// jitter seed. A replay recomputes exactly the same waits.
func RetryPlan(p control.RetryPolicy, seed, key string, lookups int) Plan {
	lookups = max(1, min(lookups, MaxLookups))
	backoff := make([]time.Duration, lookups)
	for n := 1; n < lookups; n++ {
		ms := control.Jitter(p.Backoff(int64(n)), seed, key, int64(n))
		backoff[n] = time.Duration(ms) * time.Millisecond
	}
	return Plan{Backoff: backoff}
}
