package runner_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/openended"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

// lossyStore counts the ticks committed with MayLag and, once armed,
// loses the next one: Commit returns as if it had committed, and the
// store stays as it was before it. That is what a power loss leaves after
// a commit that did not wait for the disk, once the process restarts.
type lossyStore struct {
	store.Store
	mu      sync.Mutex
	armed   bool
	lagging int
	lost    []store.Tick
}

func (s *lossyStore) Commit(ctx context.Context, l store.Lease, tick store.Tick) error {
	s.mu.Lock()
	if tick.MayLag {
		s.lagging++
		if s.armed {
			s.armed = false
			s.lost = append(s.lost, store.CloneTick(tick)) // the runner may write over the tick once Commit returns
			s.mu.Unlock()
			return nil
		}
	}
	s.mu.Unlock()
	return s.Store.Commit(ctx, l, tick)
}

func (s *lossyStore) Unwrap() store.Store { return s.Store }

// The receipt commit of a governed step that leaves its run waiting for
// the next input lags, the intent commit before it does not; and when the
// lagging commit is lost (the destination applied, the runner went on,
// then a power loss), a restarted runner finds the attempt begun under an
// earlier lease, asks the destination by idempotency key, and records the
// receipt it gets: one mutation per refund, the run goes on and ends as
// asked, and its record verifies and replays.
func TestLostLaggingCommitIsRecoveredByReconciliation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wf, st, sb, reg := refundOnSQLite(ctx, t, sqlite.Options{})
	lossy := &lossyStore{Store: st}
	start := func() *runner.Runner {
		r, err := runner.New(runner.Config{Store: lossy, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "node-1",
			Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	agent := runner.Actor{Name: "agent", Role: "agent", Capability: "run.input"}
	state := func() string {
		t.Helper()
		run, err := st.Run(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		return run.State
	}
	receipts := func() []store.Receipt {
		t.Helper()
		rcs, err := st.Receipts(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		return rcs
	}

	before := start()
	if err := before.Start(ctx, "r", wf.ID(), wf.Version(), refundInput("r-1", 40)); err != nil {
		t.Fatal(err)
	}
	if _, err := before.Advance(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if lossy.lagging != 1 || len(sb.Mutations()) != 1 || len(receipts()) != 1 || state() != "INGEST" {
		t.Fatalf("first step: %d lagging commits, %d mutations, %d receipts, state %s", lossy.lagging, len(sb.Mutations()), len(receipts()), state())
	}
	head := func() int64 {
		run, err := st.Run(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		return run.Head
	}
	h1 := head()

	// The second step's receipt commit is lost.
	lossy.armed = true
	if moved, err := before.SubmitAdvance(ctx, "r", refundInput("r-2", 41), agent); err != nil || !moved {
		t.Fatalf("second step: moved %v, %v", moved, err)
	}
	if len(lossy.lost) != 1 {
		t.Fatalf("%d commits lost", len(lossy.lost))
	}
	lost := lossy.lost[0]
	if len(lost.Receipts) != 1 || len(lost.Intents) != 0 || len(lost.Begin) != 0 || lost.State != "INGEST" {
		t.Fatalf("the lost commit is not a step's receipt commit: %d receipts, %d intents, %d begun, state %s",
			len(lost.Receipts), len(lost.Intents), len(lost.Begin), lost.State)
	}
	if len(sb.Mutations()) != 2 || len(receipts()) != 1 || state() != "EXECUTE" || head() == h1 {
		t.Fatalf("after the loss: %d mutations, %d receipts, state %s (the intent commit must have landed)", len(sb.Mutations()), len(receipts()), state())
	}

	// The process is gone with the power; a runner starts again.
	after := start()
	if err := after.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	rcs := receipts()
	if len(sb.Mutations()) != 2 || len(rcs) != 2 || state() != "INGEST" {
		t.Fatalf("after recovery: %d mutations, %d receipts, state %s", len(sb.Mutations()), len(rcs), state())
	}
	ins, err := st.Intents(ctx, "r")
	if err != nil || len(ins) != 2 {
		t.Fatalf("intents %d (%v)", len(ins), err)
	}
	ats, err := st.Attempts(ctx, ins[1].ID)
	if err != nil || len(ats) != 1 || ats[0].Status != store.AttemptReconciledApplied || rcs[1].Outcome != "confirmed_success" {
		t.Fatalf("the second refund's attempts %+v (%v), receipt %s", ats, err, rcs[1].Outcome)
	}

	// The run goes on, and ends as asked.
	if _, err := after.SubmitAdvance(ctx, "r", refundInput("r-3", 42), agent); err != nil {
		t.Fatal(err)
	}
	if err := after.Cancel(ctx, "r", "done", runner.Actor{Name: "carol", Role: "authorized_requester", Capability: "run.cancel"}); err != nil {
		t.Fatal(err)
	}
	if err := after.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != "CANCELED" {
		t.Fatalf("final state %s, want CANCELED", got)
	}
	keys := map[string]int{}
	for _, m := range sb.Mutations() {
		keys[m.IdempotencyKey]++
	}
	if len(sb.Mutations()) != 3 || len(keys) != 3 || len(receipts()) != 3 {
		t.Fatalf("%d mutations under %d keys, %d receipts, for 3 refunds", len(sb.Mutations()), len(keys), len(receipts()))
	}
	vr, err := verify.Run(ctx, st, control.Default(), "r")
	if err != nil || !vr.OK() {
		t.Fatalf("verify: %v %+v", err, vr)
	}
	rp, err := verify.Replay(ctx, st, wf, "r")
	if err != nil || !rp.OK() {
		t.Fatalf("replay: %v %+v", err, rp)
	}
}

// refundOnSQLite opens the refund agent, a SQLite store in a temporary
// directory (closed when the test ends), a sandbox destination and a
// registry with its adapter for refund.pay.
func refundOnSQLite(ctx context.Context, t *testing.T, opts sqlite.Options) (*bundle.Workflow, *sqlite.Store, *sandbox.Sandbox, *effect.Registry) {
	t.Helper()
	wf, err := openended.RefundAgent()
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "http/1", sb.Adapter()); err != nil {
		t.Fatal(err)
	}
	return wf, st, sb, reg
}
