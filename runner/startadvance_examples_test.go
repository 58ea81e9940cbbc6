package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

// For the example workflows, on SQLite and (with FLRH_TEST_POSTGRES) on
// PostgreSQL, a run started with StartAdvance holds, byte for byte, what
// one started with Start and then Advance holds, and replays the same.
func TestStartAdvanceExamplesWriteWhatStartAndAdvanceWrite(t *testing.T) {
	ctx := context.Background()
	examples := []struct{ name, input string }{
		{"refund-agent", `{"type":"refund.requested/1","payload":{"amount":12,"payee":"p1","reason":"damaged item","refund_id":"r-1"}}`},
		{"refund-agent", `{"type":"refund.requested/1","payload":{"amount":900000,"payee":"p2","reason":"damaged item","refund_id":"r-2"}}`},
		{"ops-agent", `{"type":"restart.requested/1","payload":{"restart_id":"rst-9","service":"api","target":"dest:ops-api","reason":"unknown"}}`},
	}
	type opener func(t *testing.T, clock func() time.Time) store.Store
	backends := map[string]opener{"sqlite": func(t *testing.T, clock func() time.Time) store.Store {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}}
	if dsn := os.Getenv("FLRH_TEST_POSTGRES"); dsn != "" {
		backends["postgres"] = func(t *testing.T, clock func() time.Time) store.Store {
			schema := fmt.Sprintf("startadv_%d", time.Now().UnixNano())
			st, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Pool().Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") })
			return st
		}
	}
	by := runner.Actor{Name: "runner", Role: "runner", Capability: "run.start"}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	for backend, open := range backends {
		for i, ex := range examples {
			var records [2]string
			for k, fused := range []bool{false, true} {
				wf, adapters, err := bundle.LoadExample(ex.name)
				if err != nil {
					t.Fatal(err)
				}
				sb, err := sandbox.New(sandbox.Options{MaxMutations: 1 << 10})
				if err != nil {
					t.Fatal(err)
				}
				reg := &effect.Registry{}
				for typ, spec := range adapters.Specs() {
					if err := reg.Register(typ, spec.Kind+"/1", sb.Adapter()); err != nil {
						t.Fatal(err)
					}
				}
				st := open(t, clock)
				r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "runner", LeaseStarts: true,
					Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: clock, Sleep: func(context.Context, time.Duration) error { return nil }})
				if err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("run-%d", i)
				if fused {
					_, err = r.StartAdvance(ctx, id, wf.ID(), wf.Version(), []byte(ex.input), by)
				} else if err = r.StartAs(ctx, id, wf.ID(), wf.Version(), []byte(ex.input), by); err == nil {
					_, err = r.Advance(ctx, id)
				}
				if err != nil {
					t.Fatalf("%s %s fused=%v: %v", backend, ex.name, fused, err)
				}
				if err := r.RunToIdle(ctx); err != nil {
					t.Fatal(err)
				}
				records[k] = stored(t, ctx, st, id)
				rep, err := verify.Replay(ctx, st, wf, id)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.OK() || rep.Inputs == 0 {
					t.Fatalf("%s %s fused=%v: replay %+v", backend, ex.name, fused, rep)
				}
				records[k] += fmt.Sprintf("replay %+v\n", rep)
				r.Close(ctx)
				st.Close()
			}
			if records[0] != records[1] {
				t.Fatalf("%s %s: the runs differ:\nStart, Advance:\n%s\nStartAdvance:\n%s", backend, ex.name, records[0], records[1])
			}
		}
	}
}

// stored is everything a store holds of a run, as text.
func stored(t *testing.T, ctx context.Context, st store.Store, id string) string {
	t.Helper()
	run, err := st.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("run %+v\n", run)
	evs, err := st.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		s += fmt.Sprintf("event %d %d %s %s %s %s %s %s\n", e.Seq, e.Generation, e.RecordedAt, e.Kind, e.Body, e.Digest, e.PrevHash, e.ChainHash)
	}
	cp, _ := st.Checkpoint(ctx, id)
	s += fmt.Sprintf("checkpoint %d %s %s %s\n", cp.Seq, cp.BuildDigest, cp.Body, cp.Digest)
	ins, _ := st.Intents(ctx, id)
	for _, in := range ins {
		ats, _ := st.Attempts(ctx, in.ID)
		s += fmt.Sprintf("intent %+v attempts %+v\n", in, ats)
	}
	rcs, _ := st.Receipts(ctx, id)
	for _, rc := range rcs {
		s += fmt.Sprintf("receipt %+v %s\n", rc, rc.Body)
	}
	inbox, _ := st.Inbox(ctx, id, false)
	for _, in := range inbox {
		s += fmt.Sprintf("inbox %+v %s\n", in, in.Body)
	}
	tr, _ := st.Trace(ctx, id)
	for _, r := range tr {
		s += fmt.Sprintf("trace %s %s\n", r.Kind, r.Body)
	}
	return s
}
