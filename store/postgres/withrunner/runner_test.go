package withrunner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// The runner works on this store unchanged. Three runners, each with its
// own connection pool as separate processes would have, advance one set of
// refund runs on one database at once: every run succeeds, and the
// destination applies exactly one mutation per refund — leases and fencing
// kept the runners from ever paying twice.
func TestRunnersShareOneDatabase(t *testing.T) {
	wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	const runners, runs = 3, 24
	rs, st, sb := sandboxRunners(t, freshSchema(t), "flrh-runner", runners, wf,
		runner.Config{LeaseTTL: 5 * time.Second, Poll: 20 * time.Millisecond, Parallelism: 4})
	for i := 0; i < runs; i++ {
		in := fmt.Sprintf(`{"refunds":[{"id":"r-%03d","amount":%d,"payee":"p%d","reason":"damaged item"}]}`, i, 10+i, i)
		must(t, rs[i%runners].Start(ctx, fmt.Sprintf("run-%03d", i), wf.ID(), wf.Version(), []byte(in)))
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(rctx) }()
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		live, err := st.Live(ctx)
		must(t, err)
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("%d runs still live after 45s: %v", len(live), live)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	owners := map[string]bool{}
	for i := 0; i < runs; i++ {
		id := fmt.Sprintf("run-%03d", i)
		r, err := st.Run(ctx, id)
		must(t, err)
		if r.State != "SUCCEEDED" || r.Quarantine != "" {
			t.Errorf("%s ended %s (outcome %q, quarantine %q)", id, r.State, r.Outcome, r.Quarantine)
		}
		rcs, err := st.Receipts(ctx, id)
		must(t, err)
		if len(rcs) != 1 {
			t.Errorf("%s has %d receipts", id, len(rcs))
		}
		evs, err := st.Events(ctx, id, 0)
		must(t, err)
		prev := store.GenesisHash
		for _, e := range evs {
			if e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
				t.Fatalf("%s: chain broken at %d", id, e.Seq)
			}
			prev = e.ChainHash
		}
		if r.Lease.Owner != "" {
			owners[r.Lease.Owner] = true
		}
	}
	muts := sb.Mutations()
	keys := map[string]int{}
	for _, m := range muts {
		keys[m.IdempotencyKey]++
	}
	if len(muts) != runs || len(keys) != runs {
		t.Fatalf("the destination applied %d mutations under %d keys for %d refunds", len(muts), len(keys), runs)
	}
	t.Logf("runs still leased by %d distinct runners at the end", len(owners))
}
