package storetest

import (
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// readiness asks a store whether a run is ready at a clock reading (the
// due reading Ready and ClaimReady take; zero for none): listed by Ready,
// and handed out by ClaimReady when the store claims (each lease it hands
// out given back at once).
type readiness struct {
	t       *testing.T
	s       store.Store
	rl      store.ReadyLister
	resting []string
}

func newReadiness(t *testing.T, s store.Store, rl store.ReadyLister) readiness {
	return readiness{t: t, s: s, rl: rl, resting: []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}}
}

// listed reports whether Ready lists id at the reading at.
func (r readiness) listed(id string, at time.Time) bool {
	r.t.Helper()
	ids, err := r.rl.Ready(ctx, r.resting, at)
	must(r.t, err)
	return slices.Contains(ids, id)
}

// claimed reports whether ClaimReady hands id out at the reading at (or,
// for a store that does not claim, whether Ready lists it).
func (r readiness) claimed(id string, at time.Time) bool {
	r.t.Helper()
	cl, ok := r.s.(store.Claimer)
	if !ok {
		return r.listed(id, at)
	}
	got, err := cl.ClaimReady(ctx, "claimer", time.Minute, 10, r.resting, at)
	must(r.t, err)
	for _, l := range got {
		must(r.t, r.s.ReleaseLease(ctx, l))
	}
	return slices.ContainsFunc(got, func(l store.Lease) bool { return l.RunID == id })
}

// both holds Ready and ClaimReady to want for id at the reading at.
func (r readiness) both(id string, at time.Time, want bool, when string) {
	r.t.Helper()
	if got := r.listed(id, at); got != want {
		r.t.Fatalf("%s: Ready lists %s: %v, want %v", when, id, got, want)
	}
	if got := r.claimed(id, at); got != want {
		r.t.Fatalf("%s: ClaimReady takes %s: %v, want %v", when, id, got, want)
	}
}
