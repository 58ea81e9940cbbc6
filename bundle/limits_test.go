package bundle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/effect/sharedlimit"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/workflow"
)

func TestLimitsObjectChecked(t *testing.T) {
	for _, c := range []struct{ limits, pointer, detail string }{
		{`{}`, "/adapters/refund.pay/limits", "nothing to limit"},
		{`{"wait_ms":100}`, "/adapters/refund.pay/limits", "nothing to limit"},
		{`{"max_in_flight":0,"per_second":0}`, "/adapters/refund.pay/limits", "nothing to limit"},
		{`{"max_in_flight":-1}`, "/adapters/refund.pay/limits/max_in_flight", "from 1 to 1024"},
		{`{"max_in_flight":1025}`, "/adapters/refund.pay/limits/max_in_flight", "from 1 to 1024"},
		{`{"per_second":100001}`, "/adapters/refund.pay/limits/per_second", "from 1 to 100000"},
		{`{"per_second":5,"wait_ms":60001}`, "/adapters/refund.pay/limits/wait_ms", "from 0 to 60000"},
		{`{"per_second":1.5}`, "/adapters/refund.pay/limits/per_second", "floating-point"},
		{`{"per_second":5,"burst":9}`, "/adapters/refund.pay", "unknown field"},
		{`{"per_second":5,"shared":"-payments"}`, "/adapters/refund.pay/limits/shared", "1 to 64 letters"},
		{`{"per_second":5,"shared":"pay ments"}`, "/adapters/refund.pay/limits/shared", "1 to 64 letters"},
		{`{"per_second":5,"shared":"` + strings.Repeat("p", 65) + `"}`, "/adapters/refund.pay/limits/shared", "1 to 64 letters"},
		{`{"shared":"payments"}`, "/adapters/refund.pay/limits", "nothing to limit"},
		{`{"per_second":5,"shared":7}`, "/adapters/refund.pay", "not an adapter"},
	} {
		_, _, err := withAdapterMember(t, "limits", c.limits)
		var we *workflow.Error
		if !errors.As(err, &we) || we.Pointer != c.pointer || !strings.Contains(we.Detail, c.detail) {
			t.Errorf("limits %s: %v, want %s at %s", c.limits, err, c.detail, c.pointer)
		}
	}
	if _, _, err := withAdapterMember(t, "limits", `{"max_in_flight":4,"per_second":20,"wait_ms":2000}`); err != nil {
		t.Fatal(err)
	}
	// Shared limits wire only where something holds them.
	_, a, err := withAdapterMember(t, "limits", `{"max_in_flight":4,"shared":"stripe.acct-1:refunds"}`)
	if err != nil {
		t.Fatal(err)
	}
	url := func(string) string { return "http://127.0.0.1:1/v1/effects" }
	if _, err := a.Registry(url); err == nil || !strings.Contains(err.Error(), `shared as "stripe.acct-1:refunds"`) {
		t.Fatalf("shared limits wired with nothing to hold them: %v", err)
	}
	if _, err := a.RegistrySharing(url, sharedlimit.New("p")); err != nil {
		t.Fatal(err)
	}
}

// Twelve refunds started at once by two runners, each on its own handle
// of one store file (as two processes would be), reach a destination
// their bundle limits to two requests at a time, shared: never more than
// two are open across both, and every refund is paid, once. Each runner
// held to two of its own would open up to four.
func TestSharedLimitsAcrossRunners(t *testing.T) {
	wf, a, err := withAdapterMember(t, "limits", `{"max_in_flight":2,"wait_ms":20000,"shared":"refunds"}`)
	if err != nil {
		t.Fatal(err)
	}
	dest := newCountingDestination(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := t.TempDir() + "/flrh.db"
	var runners [2]*runner.Runner
	for i := range runners {
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		board := sharedlimit.New(fmt.Sprintf("process-%d", i))
		if !board.Bind(st) {
			t.Fatal("the embedded store holds no shared limits")
		}
		reg, err := a.RegistrySharing(func(string) string { return dest.url }, board)
		if err != nil {
			t.Fatal(err)
		}
		r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: fmt.Sprintf("process-%d", i),
			Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		runners[i] = r
	}
	payTwelve(ctx, t, wf, "shared", runners[:]...)
	if n := len(dest.sb.Mutations()); n != 12 {
		t.Fatalf("%d mutations, want 12", n)
	}
	if m := dest.most.Load(); m != 2 {
		t.Fatalf("at most %d requests were open at once across both runners, want the shared bound 2", m)
	}
}

// Twelve refunds started at once by a runner reach a destination their
// bundle limits to two requests at a time: never more than two are open,
// and every refund is paid, once.
func TestLimitedAdapterUnderTheRunner(t *testing.T) {
	wf, a, err := withAdapterMember(t, "limits", `{"max_in_flight":2,"wait_ms":10000}`)
	if err != nil {
		t.Fatal(err)
	}
	dest := newCountingDestination(t)
	reg, err := a.Registry(func(string) string { return dest.url })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, t.TempDir()+"/flrh.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "test",
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	payTwelve(ctx, t, wf, "limited", r)
	if n := len(dest.sb.Mutations()); n != 12 {
		t.Fatalf("%d mutations, want 12", n)
	}
	if m := dest.most.Load(); m != 2 {
		t.Fatalf("at most %d requests were open at once, want the bound 2", m)
	}
}

// countingDestination is a sandbox, each request delayed 150 ms, behind a
// handler that keeps the most requests it held open at once.
type countingDestination struct {
	sb        *sandbox.Sandbox
	url       string // its effects endpoint
	now, most atomic.Int64
}

func newCountingDestination(t *testing.T) *countingDestination {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Inject(sandbox.Fault{DelayMillis: 150}); err != nil {
		t.Fatal(err)
	}
	d := &countingDestination{sb: sb}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := d.now.Add(1)
		defer d.now.Add(-1)
		for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
		}
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d.url = srv.URL + sandbox.EffectsPath
	return d
}

// payTwelve starts twelve small refunds at once, spread over runners,
// advances each to its end, and holds every one to SUCCEEDED.
func payTwelve(ctx context.Context, t *testing.T, wf *Workflow, prefix string, runners ...*runner.Runner) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Go(func() {
			r := runners[i%len(runners)]
			id := fmt.Sprintf("%s-%d", prefix, i)
			if err := r.Start(ctx, id, wf.ID(), wf.Version(), []byte(refund(fmt.Sprintf("r-%d", i), 40, "alice", "damaged item"))); err != nil {
				t.Error(err)
				return
			}
			if _, err := r.Advance(ctx, id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		s, err := runners[0].Inspect(ctx, id)
		if err != nil || s.State != "SUCCEEDED" {
			t.Fatalf("%s: %s %v", id, s.State, err)
		}
	}
}
