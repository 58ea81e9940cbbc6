package withrunner

import (
	"context"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/runner"
)

// A run resting for a person's approval with an input pending, which its
// state does not take, is claimed once and settled: runners claiming work
// on one database do not take turns leasing it at every poll (each claim
// would raise its lease generation). The approval, an entry after the
// settled one, is claimed at once, and the run ends with its one payment.
func TestARestingRunIsNotClaimedForEntriesItDoesNotTake(t *testing.T) {
	wf := demo.Refunds{AutoLimit: 100, Destination: "payments-sandbox"}
	rs, st, sb := sandboxRunners(t, freshSchema(t), "flrh-settle", 2, wf, runner.Config{LeaseTTL: 5 * time.Second, Poll: 10 * time.Millisecond})
	const id = "waits"
	must(t, rs[0].Start(ctx, id, wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"r-1","amount":900,"payee":"bob","reason":"damaged item"}]}`)))
	must(t, rs[0].RunToIdle(ctx))
	if r, err := st.Run(ctx, id); err != nil || r.State != "WAIT_APPROVAL" {
		t.Fatalf("seeded run: %+v, %v", r, err)
	}
	inputter := runner.Actor{Name: "agent", Role: "agent", Capability: "run.input"}
	must(t, rs[0].Submit(ctx, id, []byte(`{"refunds":[{"id":"r-2","amount":10,"payee":"ann","reason":"late"}]}`), inputter))
	before, err := st.Run(ctx, id)
	must(t, err)

	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(rctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	time.Sleep(time.Second) // a hundred polls each, the claim's backoff aside
	after, err := st.Run(ctx, id)
	must(t, err)
	// One claim, whose pass settles it. (The deadline sweep, every 30 s,
	// does not come within the second.)
	if n := after.Lease.Generation - before.Lease.Generation; n != 1 {
		t.Fatalf("the resting run was leased %d times in a second, want once", n)
	}
	if after.State != "WAIT_APPROVAL" || after.Lease.Owner != "" {
		t.Fatalf("the settled run is in %s, leased by %q", after.State, after.Lease.Owner)
	}
	t.Logf("leased %d times in a second", after.Lease.Generation-before.Lease.Generation)

	s, err := rs[1].Inspect(ctx, id)
	if err != nil || len(s.Waiting) != 1 {
		t.Fatalf("status %+v, %v", s, err)
	}
	who := runner.Actor{Name: "ana", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	must(t, rs[1].Approve(ctx, id, s.Waiting[0].RequestID, who, time.Hour))
	waitFor(t, func() bool {
		r, err := st.Run(ctx, id)
		return err == nil && r.Outcome != ""
	})
	if r, _ := st.Run(ctx, id); r.State != "SUCCEEDED" || len(sb.Mutations()) != 1 {
		t.Fatalf("approved run ended %s with %d mutations", r.State, len(sb.Mutations()))
	}
}
