package runner

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// sleepy is the destination, taking real time over each mutation while
// another runner tries to take the run over.
type sleepy struct {
	*destination
	took    time.Duration
	calling atomic.Bool
}

func (s *sleepy) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	s.calling.Store(true)
	defer s.calling.Store(false)
	select {
	case <-time.After(s.took):
	case <-ctx.Done():
		return effect.Receipt{Outcome: effect.Unknown, Code: "CANCELLED"}, nil
	}
	return s.destination.Execute(ctx, in)
}

// A destination that takes longer than the runner's lease to answer does
// not cost the runner its run: the lease is renewed while the call is
// under way, so another runner cannot take the run over mid-call (and
// find the effect in flight, which it could only hand to a person), and
// the run ends with its one attempt succeeded.
func TestLeaseKeptDuringALongCall(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dest := &sleepy{destination: newDestination(), took: 1500 * time.Millisecond}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "fake/1", dest); err != nil {
		t.Fatal(err)
	}
	const ttl = 300 * time.Millisecond
	r, err := New(Config{Store: st, Workflows: []Workflow{refunds{limit: 100}}, Adapters: reg, Owner: "slow", LeaseTTL: ttl,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	if err := r.Start(ctx, "run", "refunds", "1", []byte(small)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := r.Advance(ctx, "run"); done <- err }()
	// Another runner tries the run all through the call.
	took := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if took > 0 {
				t.Fatalf("another runner took the run over %d times during the call", took)
			}
			run, err := st.Run(ctx, "run")
			if err != nil {
				t.Fatal(err)
			}
			ins, _ := st.Intents(ctx, "run")
			ats, _ := st.Attempts(ctx, ins[0].ID)
			if run.State != "SUCCEEDED" || len(ats) != 1 || ats[0].Status != store.AttemptSucceeded || dest.count() != 1 {
				t.Fatalf("run %s, attempts %+v, %d mutations", run.State, ats, dest.count())
			}
			return
		case <-time.After(20 * time.Millisecond):
			if !dest.calling.Load() {
				continue
			}
			if l, err := st.AcquireLease(ctx, "run", "intruder", ttl); err == nil {
				took++
				st.ReleaseLease(ctx, l)
			}
		}
	}
}
