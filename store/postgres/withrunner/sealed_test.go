package withrunner

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/verify"
)

// Two runners, each with its own pool and the same key, advance refund
// runs on one encrypted database at once: every run succeeds with one
// mutation, verifies and replays with the key; every checkpoint and trace
// body in the database is sealed; a store opened without the key refuses
// them with CodeSealed.
func TestRunnersOnAnEncryptedDatabase(t *testing.T) {
	schema := freshSchema(t)
	key, err := sealed.New(bytes.Repeat([]byte{0x42}, sealed.KeySize))
	must(t, err)
	sb, err := sandbox.New(sandbox.Options{})
	must(t, err)
	wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	const runners, runs = 2, 8
	rs := make([]*runner.Runner, runners)
	var st *postgres.Store
	for i := range rs {
		s := openNamed(t, schema, fmt.Sprintf("flrh-sealed-%d", i), postgres.Options{MaxConns: 4, Sealer: key})
		if st == nil {
			st = s
		}
		reg := &effect.Registry{}
		must(t, reg.Register("refund.pay", "http/1", sb.Adapter()))
		r, err := runner.New(runner.Config{Store: s, Workflows: []runner.Workflow{wf}, Adapters: reg,
			Owner: fmt.Sprintf("sealed-%d", i), LeaseTTL: 5 * time.Second, Poll: 20 * time.Millisecond, Parallelism: 2})
		must(t, err)
		rs[i] = r
	}
	for i := 0; i < runs; i++ {
		in := fmt.Sprintf(`{"refunds":[{"id":"s-%03d","amount":%d,"payee":"p%d","reason":"sealed-reason-%d"}]}`, i, 10+i, i, i)
		must(t, rs[i%runners].Start(ctx, fmt.Sprintf("sealed-%03d", i), wf.ID(), wf.Version(), []byte(in)))
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(rctx) }()
	}
	waitFor(t, func() bool { live, err := st.Live(ctx); must(t, err); return len(live) == 0 })
	cancel()
	wg.Wait()

	for i := 0; i < runs; i++ {
		id := fmt.Sprintf("sealed-%03d", i)
		r, err := st.Run(ctx, id)
		must(t, err)
		if r.State != "SUCCEEDED" || r.Quarantine != "" {
			t.Fatalf("%s ended %s (quarantine %q)", id, r.State, r.Quarantine)
		}
		rep, err := verify.Run(ctx, st, nil, id)
		must(t, err)
		if len(rep.Findings) != 0 {
			t.Fatalf("%s: verify: %v", id, rep.Findings)
		}
		rr, err := verify.Replay(ctx, st, wf, id)
		must(t, err)
		if !rr.OK() {
			t.Fatalf("%s: replay: %v", id, rr.Findings)
		}
	}
	if n := len(sb.Mutations()); n != runs {
		t.Fatalf("%d mutations for %d refunds", n, runs)
	}
	var total, clear int
	// Every checkpoint's body, and every trace record's (a tick's records
	// share a row).
	for _, q := range []string{`SELECT body FROM checkpoints`, `SELECT unnest(bodies) FROM trace`} {
		rows, err := st.Pool().Query(ctx, q)
		must(t, err)
		for rows.Next() {
			var b []byte
			must(t, rows.Scan(&b))
			total++
			if !store.IsSealed(b) || bytes.Contains(b, []byte("sealed-reason")) || bytes.Contains(b, []byte("payments-sandbox")) {
				clear++
			}
		}
		rows.Close()
	}
	if total < runs*2 || clear != 0 {
		t.Fatalf("%d of %d checkpoint and trace bodies are in clear", clear, total)
	}
	plain := openNamed(t, schema, "flrh-nokey", postgres.Options{})
	if _, err := plain.Checkpoint(ctx, "sealed-000"); store.CodeOf(err) != store.CodeSealed {
		t.Fatalf("without the key: %v", err)
	}
	if _, err := verify.Replay(context.Background(), plain, wf, "sealed-000"); store.CodeOf(err) != store.CodeSealed {
		t.Fatalf("replay without the key: %v", err)
	}
}
