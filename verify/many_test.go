package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/sqlite"
)

// refundAgent loads the refund-agent example bundle the way the flrh
// binary does for example:refund-agent.
func refundAgent(tb testing.TB) (*bundle.Workflow, *bundle.Adapters) {
	tb.Helper()
	fsys, err := examples.Bundle("refund-agent")
	if err != nil {
		tb.Fatal(err)
	}
	wf, ads, err := bundle.LoadFS(fsys)
	if err != nil {
		tb.Fatal(err)
	}
	return wf, ads
}

// manyRuns records n ordinary runs of the refund-agent bundle in one
// SQLite store, each one refund paid through a sandbox destination on
// loopback: most are small and authorized outright, every fifth is above
// the approval limit and approved by a person, every twentieth names a
// blocked payee, is found ineligible and rests without an effect. It returns the closed database's path, the
// workflow and the run ids in creation order.
func manyRuns(tb testing.TB, n int) (string, *bundle.Workflow, []string) {
	tb.Helper()
	wf, ads := refundAgent(tb)
	path := filepath.Join(tb.TempDir(), "many.db")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go sb.Serve(sctx, ln, time.Second)
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath
	reg, err := ads.Registry(func(name string) string {
		if strings.HasPrefix(name, "FLRH_") {
			return url
		}
		return ""
	})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "bench",
		Reconcile: effect.Plan{Backoff: []time.Duration{0, 20 * time.Millisecond}}})
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close(context.Background())
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("refund-%04d", i)
		amount, payee := 10+i%80, fmt.Sprintf("payee-%d", i%13)
		switch {
		case i%20 == 19:
			payee = "mallory"
		case i%5 == 4:
			amount = 150 + i
		}
		in, _ := json.Marshal(map[string]any{"type": "refund.requested/1", "payload": map[string]any{
			"refund_id": fmt.Sprintf("r-%04d", i), "amount": amount, "payee": payee, "reason": "damaged item"}})
		if err := r.Start(ctx, ids[i], wf.ID(), wf.Version(), in); err != nil {
			tb.Fatal(err)
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		tb.Fatal(err)
	}
	approver := runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	for _, id := range ids {
		s, err := r.Inspect(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		for _, w := range s.Waiting {
			if err := r.Approve(ctx, id, w.RequestID, approver, time.Hour); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		tb.Fatal(err)
	}
	for i, id := range ids {
		run, err := st.Run(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		if want := i%20 != 19; (run.Outcome == "success") != want {
			tb.Fatalf("run %s is %s %q", id, run.State, run.Outcome)
		}
	}
	return path, wf, ids
}

// TestManyRunsVerifyAndReplay keeps the many-runs benchmark honest: every
// run of each shape is found clean, approvals were consumed, refusals
// left the run without an effect.
func TestManyRunsVerifyAndReplay(t *testing.T) {
	path, wf, ids := manyRuns(t, 20)
	st := open(t, path, true)
	approvals, intents := 0, 0
	for _, id := range ids {
		rep, err := Run(ctx, st, nil, id)
		if err != nil || !rep.OK() {
			t.Fatalf("%s verify: %v %+v", id, err, rep)
		}
		rp, err := Replay(ctx, st, wf, id)
		if err != nil || !rp.OK() || rp.Inputs == 0 {
			t.Fatalf("%s replay: %v %+v", id, err, rp)
		}
		approvals += rep.Approvals
		intents += rep.Intents
	}
	// 20 runs: refunds 4, 9 and 14 need approval, 19 is ineligible.
	if approvals != 3 || intents != 19 {
		t.Fatalf("%d approvals consumed and %d intents, want 3 and 19", approvals, intents)
	}
}
