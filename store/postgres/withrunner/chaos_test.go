package withrunner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/postgres"
)

// Runners keep going while PostgreSQL itself restarts under them, twice,
// in immediate mode (no checkpoint: crash recovery on start). Afterwards
// every run has succeeded with exactly one receipt, and the destination
// applied exactly one mutation per refund: nothing lost, nothing doubled.
//
// It restarts the server, so it runs only when FLRH_TEST_POSTGRES_RESTART
// holds the shell command that does it, e.g.
// "pg_ctlcluster 15 main restart -m immediate".
func TestRunnersSurviveServerRestarts(t *testing.T) {
	restart := os.Getenv("FLRH_TEST_POSTGRES_RESTART")
	if restart == "" {
		t.Skip("FLRH_TEST_POSTGRES_RESTART is unset; set it to a command that restarts the test PostgreSQL to run the restart campaign")
	}
	schema := freshSchema(t)
	sb, err := sandbox.New(sandbox.Options{})
	must(t, err)
	// Every payment takes a little while at the destination, so that the
	// campaign outlasts a restart however fast the machine is: on a quiet
	// machine the runners would otherwise finish every refund in the time
	// one restart takes, and the next restart would find nothing in flight.
	must(t, sb.Inject(sandbox.Fault{DelayMillis: 150}))
	wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	const runners, runs, restarts = 3, 480, 2
	rs := make([]*runner.Runner, runners)
	var st *postgres.Store
	for i := range rs {
		s := openNamed(t, schema, fmt.Sprintf("flrh-chaos-%d", i), postgres.Options{MaxConns: 4})
		if st == nil {
			st = s
		}
		reg := &effect.Registry{}
		must(t, reg.Register("refund.pay", "http/1", sb.Adapter()))
		r, err := runner.New(runner.Config{Store: s, Workflows: []runner.Workflow{wf}, Adapters: reg,
			Owner: fmt.Sprintf("runner-%d", i), LeaseTTL: 2 * time.Second, Poll: 50 * time.Millisecond, Parallelism: 4,
			Reconcile: effect.Plan{Backoff: []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}}})
		must(t, err)
		rs[i] = r
	}
	for i := 0; i < runs; i++ {
		in := fmt.Sprintf(`{"refunds":[{"id":"r-%03d","amount":%d,"payee":"p%d","reason":"damaged item"}]}`, i, 10+i%80, i)
		must(t, rs[i%runners].Start(ctx, fmt.Sprintf("run-%03d", i), wf.ID(), wf.Version(), []byte(in)))
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(rctx) }()
	}
	// The first restart begins once the destination has seen a fifth of
	// the refunds, each later one as soon as the runners have made progress
	// again after the last, so every restart lands while effects and
	// commits are in flight.
	want := runs / 5
	for i := 1; i <= restarts; i++ {
		waitFor(t, func() bool { return len(sb.Mutations()) >= want })
		before := len(sb.Mutations())
		if before >= runs {
			t.Fatalf("restart %d would come after every effect and prove nothing", i)
		}
		if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
			t.Fatalf("restart: %v\n%s", err, out)
		}
		t.Logf("restart %d began after %d of %d mutations", i, before, runs)
		want = before + 1
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		live, err := st.Live(ctx)
		if err == nil && len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("runs still live after 90s: %v (%v)", live, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for i := 0; i < runs; i++ {
		id := fmt.Sprintf("run-%03d", i)
		r, err := st.Run(ctx, id)
		must(t, err)
		rcs, err := st.Receipts(ctx, id)
		must(t, err)
		if r.State != "SUCCEEDED" || len(rcs) != 1 {
			t.Errorf("%s ended %s with %d receipts", id, r.State, len(rcs))
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
}
