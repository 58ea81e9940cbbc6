package withrunner

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
)

// BenchmarkRefundRun drives one refund run of the demo workflow from Start
// to SUCCEEDED through the runner — input accepted, decided, authorized,
// intent and attempt committed, the payment applied by an in-process
// sandbox, its receipt committed — on each backend in the same process,
// one run at a time. It reports the run's events and ticks so the per-run
// time can be read per governed step.
func BenchmarkRefundRun(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), sqlite.Options{})
		must(b, err)
		defer st.Close()
		benchRefundRun(b, st)
	})
	b.Run("postgres", func(b *testing.B) {
		benchRefundRun(b, openNamed(b, freshSchema(b), "flrh-bench", postgres.Options{}))
	})
}

// counting counts the store calls and write transactions a run costs.
type counting struct {
	store.Store
	calls, writes int64
}

func (c *counting) w() { c.calls++; c.writes++ }

func (c *counting) CreateRun(ctx context.Context, run store.Run, first ...store.Inbound) error {
	c.w()
	return c.Store.CreateRun(ctx, run, first...)
}
func (c *counting) AcquireLease(ctx context.Context, id, owner string, ttl time.Duration) (store.Lease, error) {
	c.w()
	return c.Store.AcquireLease(ctx, id, owner, ttl)
}
func (c *counting) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	c.w()
	return c.Store.RenewLease(ctx, l, ttl)
}
func (c *counting) ReleaseLease(ctx context.Context, l store.Lease) error {
	c.w()
	return c.Store.ReleaseLease(ctx, l)
}
func (c *counting) Commit(ctx context.Context, l store.Lease, t store.Tick) error {
	c.w()
	return c.Store.Commit(ctx, l, t)
}
func (c *counting) BeginAttempt(ctx context.Context, l store.Lease, id string) (store.Attempt, error) {
	c.w()
	return c.Store.BeginAttempt(ctx, l, id)
}
func (c *counting) Submit(ctx context.Context, in store.Inbound) error {
	c.w()
	return c.Store.Submit(ctx, in)
}
func (c *counting) Run(ctx context.Context, id string) (store.Run, error) {
	c.calls++
	return c.Store.Run(ctx, id)
}
func (c *counting) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	c.calls++
	return c.Store.Events(ctx, id, after)
}
func (c *counting) Checkpoint(ctx context.Context, id string) (store.Checkpoint, error) {
	c.calls++
	return c.Store.Checkpoint(ctx, id)
}
func (c *counting) Intents(ctx context.Context, id string) ([]store.Intent, error) {
	c.calls++
	return c.Store.Intents(ctx, id)
}
func (c *counting) Inbox(ctx context.Context, id string, pending bool) ([]store.Inbound, error) {
	c.calls++
	return c.Store.Inbox(ctx, id, pending)
}
func (c *counting) Attempts(ctx context.Context, id string) ([]store.Attempt, error) {
	c.calls++
	return c.Store.Attempts(ctx, id)
}
func (c *counting) Receipts(ctx context.Context, id string) ([]store.Receipt, error) {
	c.calls++
	return c.Store.Receipts(ctx, id)
}
func (c *counting) Approval(ctx context.Context, id string) (store.Approval, error) {
	c.calls++
	return c.Store.Approval(ctx, id)
}
func (c *counting) Live(ctx context.Context) ([]string, error) {
	c.calls++
	return c.Store.Live(ctx)
}

func benchRefundRun(b *testing.B, inner store.Store) {
	st := &counting{Store: inner}
	sb, err := sandbox.New(sandbox.Options{MaxMutations: 1 << 24})
	must(b, err)
	reg := &effect.Registry{}
	must(b, reg.Register("refund.pay", "http/1", sb.Adapter()))
	wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "bench"})
	must(b, err)
	defer r.Close(ctx)
	var events int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("run-%s-%d", b.Name(), i)
		in := fmt.Sprintf(`{"refunds":[{"id":"r-%d","amount":40,"payee":"p","reason":"damaged item"}]}`, i)
		must(b, r.Start(ctx, id, wf.ID(), wf.Version(), []byte(in)))
		for {
			moved, err := r.Advance(ctx, id)
			must(b, err)
			if !moved {
				break
			}
		}
		b.StopTimer()
		run, err := inner.Run(ctx, id)
		must(b, err)
		if run.State != "SUCCEEDED" {
			b.Fatalf("%s ended %s", id, run.State)
		}
		events += run.Head
		b.StartTimer()
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
	b.ReportMetric(float64(st.writes)/float64(b.N), "write-tx/run")
	b.ReportMetric(float64(st.calls)/float64(b.N), "store-calls/run")
}

// readyOnly hides the store's Claimer and WorkWatcher but keeps its Ready
// listing: the runner then polls Ready and takes leases one by one, as it
// did before it claimed.
type readyOnly struct{ *postgres.Store }

func (s readyOnly) Ready(ctx context.Context, resting []string, due time.Time) ([]string, error) {
	return s.Store.Ready(ctx, resting, due)
}

// countingClaimer counts each claim as a write transaction of c.
type countingClaimer struct {
	store.Claimer
	c *counting
}

func (cc countingClaimer) ClaimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, due time.Time) ([]store.Lease, error) {
	cc.c.w()
	return cc.Claimer.ClaimReady(ctx, owner, ttl, limit, resting, due)
}

// BenchmarkRunLoop starts 32 refund runs and lets one runner's background
// loop (4 at a time) take them to SUCCEEDED on PostgreSQL, claiming ready
// runs in batches and waking on notifications ("claim") or polling Ready
// and taking each lease ("poll"). One op is the whole batch.
func BenchmarkRunLoop(b *testing.B) {
	for _, mode := range []string{"claim", "poll"} {
		b.Run(mode, func(b *testing.B) {
			pg := openNamed(b, freshSchema(b), "flrh-bench-loop", postgres.Options{})
			var st store.Store = pg
			if mode == "poll" {
				st = readyOnly{pg}
			}
			cs := &counting{Store: st}
			sb, err := sandbox.New(sandbox.Options{MaxMutations: 1 << 24})
			must(b, err)
			reg := &effect.Registry{}
			must(b, reg.Register("refund.pay", "http/1", sb.Adapter()))
			wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
			cfg := runner.Config{Store: cs, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "bench", Parallelism: 4, Poll: 20 * time.Millisecond}
			if mode == "claim" {
				cfg.Claimer, cfg.Watcher = countingClaimer{pg, cs}, pg
			}
			r, err := runner.New(cfg)
			must(b, err)
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { r.Run(rctx); close(done) }()
			defer func() { cancel(); <-done }()
			const runs = 32
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := 0; j < runs; j++ {
					in := fmt.Sprintf(`{"refunds":[{"id":"r-%d-%d","amount":40,"payee":"p","reason":"damaged item"}]}`, i, j)
					must(b, r.Start(ctx, fmt.Sprintf("run-%d-%d", i, j), wf.ID(), wf.Version(), []byte(in)))
				}
				for {
					live, err := pg.Live(ctx)
					must(b, err)
					if len(live) == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			b.StopTimer()
			if n := len(sb.Mutations()); n != runs*b.N {
				b.Fatalf("%d mutations for %d runs", n, runs*b.N)
			}
			b.ReportMetric(float64(runs*b.N)/b.Elapsed().Seconds(), "runs/s")
			b.ReportMetric(float64(cs.writes)/float64(runs*b.N), "write-tx/run")
			b.ReportMetric(float64(cs.calls)/float64(runs*b.N), "store-calls/run")
		})
	}
}
