package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
)

// limitedRefundBundle copies the refund-agent example with its payments
// adapter limited as limits says (a JSON object).
func limitedRefundBundle(t *testing.T, limits string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "refund-agent")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "refund-agent"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "workflow.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wf map[string]any
	if err := json.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	var l any
	if err := json.Unmarshal([]byte(limits), &l); err != nil {
		t.Fatal(err)
	}
	wf["adapters"].(map[string]any)["refund.pay"].(map[string]any)["limits"] = l
	out, err := json.MarshalIndent(wf, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openCounter is a destination that counts the requests it holds open at
// once, keeping the most it saw.
type openCounter struct{ now, most, total atomic.Int64 }

func (c *openCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.total.Add(1)
		n := c.now.Add(1)
		defer c.now.Add(-1)
		for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
		}
		h.ServeHTTP(w, r)
	})
}

// TestSharedLimitsAcrossServeProcesses: two "flrh serve" processes on one
// PostgreSQL, four runners each, run refunds whose payments adapter
// allows one request at a time, shared. The destination never holds more
// than one request open although both processes pay refunds, and every
// refund is paid once. Held to one each instead (the same bundle without
// "shared"), the destination sees two at once: the test would see it.
func TestSharedLimitsAcrossServeProcesses(t *testing.T) {
	for _, tc := range []struct {
		name, limits string
		most         int64
	}{
		{"shared", `{"max_in_flight":1,"wait_ms":30000,"shared":"payments"}`, 1},
		{"each its own", `{"max_in_flight":1,"wait_ms":30000}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storeURL, st := pgStoreURL(t)
			bin := buildFlrh(t)
			sb, err := sandbox.New(sandbox.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Each payment takes long enough that both processes' payments
			// are waiting together.
			if err := sb.Inject(sandbox.Fault{DelayMillis: 150}); err != nil {
				t.Fatal(err)
			}
			dest := &openCounter{}
			ts := httptest.NewServer(dest.wrap(sb))
			t.Cleanup(ts.Close)
			bundleDir := limitedRefundBundle(t, tc.limits)
			var procs [2]*serveProc
			for i := range procs {
				procs[i] = startServe(t, bin, []string{"FLRH_PAYMENTS_URL=" + ts.URL + sandbox.EffectsPath},
					"--store", storeURL, "--runners", "4", "--workflows", bundleDir)
			}
			const runs = 12
			for i := range runs {
				startSmallRefund(t, procs[i%2].base, fmt.Sprintf("lim-%02d", i))
			}
			owners := map[string]int{}
			for i := range runs {
				id := fmt.Sprintf("lim-%02d", i)
				if o := awaitOutcome(t, procs[0].base, id); o != "success" {
					t.Fatalf("run %s: outcome %q", id, o)
				}
				owners[readRecord(t, st, id).Run.Lease.Owner]++
			}
			if n := len(sb.Mutations()); n != runs {
				t.Fatalf("%d mutations for %d refunds", n, runs)
			}
			if len(owners) < 2 {
				t.Fatalf("one process paid every refund (%v): the test shows nothing", owners)
			}
			if m := dest.most.Load(); m != tc.most {
				t.Fatalf("the destination held %d requests open at once, want %d (runs per process: %v)", m, tc.most, owners)
			}
			// Each request the destination saw was admitted by the shared
			// limit once, in one process or the other.
			admitted := 0.0
			for _, p := range procs {
				admitted += scrapeValue(t, p.base, `flrh_shared_limit_requests_total{limit="payments",outcome="admitted"}`)
			}
			if want := float64(dest.total.Load()); tc.most == 1 && admitted != want || tc.most != 1 && admitted != 0 {
				t.Fatalf("the processes' metrics count %v requests admitted by the shared limit; the destination saw %d", admitted, dest.total.Load())
			}
		})
	}
}

// startedAt is a destination that records when each request began.
type startedAt struct {
	mu     sync.Mutex
	starts []time.Time
	open   atomic.Int64
}

func (s *startedAt) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.starts = append(s.starts, time.Now())
		s.mu.Unlock()
		s.open.Add(1)
		defer s.open.Add(-1)
		h.ServeHTTP(w, r)
	})
}

func (s *startedAt) since(t time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, st := range s.starts {
		if st.After(t) {
			out = append(out, st.Sub(t))
		}
	}
	return out
}

// TestSharedLimitHeldByAKilledProcess: a serve process killed (SIGKILL)
// while its payment holds the only shared slot never gives it back; the
// other process sends nothing to the destination until the slot's hold
// (the adapter's 5 s timeout and 5 s) has passed, then pays its own
// refund and takes over the killed process's run, reconciling it: both
// refunds paid, once each.
func TestSharedLimitHeldByAKilledProcess(t *testing.T) {
	storeURL, _ := pgStoreURL(t)
	bin := buildFlrh(t)
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The first payment hangs at the destination long enough to be killed
	// mid-request.
	if err := sb.Inject(sandbox.Fault{Times: 1, DelayMillis: 3000}); err != nil {
		t.Fatal(err)
	}
	dest := &startedAt{}
	ts := httptest.NewServer(dest.wrap(sb))
	t.Cleanup(ts.Close)
	bundleDir := limitedRefundBundle(t, `{"max_in_flight":1,"wait_ms":30000,"shared":"payments"}`)
	env := []string{"FLRH_PAYMENTS_URL=" + ts.URL + sandbox.EffectsPath}
	start := func(p *serveProc, id string) { t.Helper(); startSmallRefund(t, p.base, id) }
	a := startServe(t, bin, env, "--store", storeURL, "--lease-ttl", "3s", "--workflows", bundleDir)
	start(a, "killed-1")
	eventually(t, "the first payment open at the destination", 30*time.Second, func() bool { return dest.open.Load() == 1 })
	held := time.Now()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	b := startServe(t, bin, env, "--store", storeURL, "--lease-ttl", "3s", "--workflows", bundleDir)
	start(b, "live-2")
	for _, id := range []string{"live-2", "killed-1"} {
		if o := awaitOutcome(t, b.base, id); o != "success" {
			t.Fatalf("run %s: outcome %q", id, o)
		}
	}
	after := dest.since(held)
	if len(after) == 0 {
		t.Fatal("no request reached the destination after the kill")
	}
	// The slot was taken a moment before the request was seen open: its
	// hold ends at most 10 s after that sighting, and not much sooner.
	if after[0] < 9*time.Second {
		t.Fatalf("a request reached the destination %s after the killed process took the only slot, before its hold passed", after[0])
	}
	keys := map[string]bool{}
	for _, m := range sb.Mutations() {
		keys[m.IdempotencyKey] = true
	}
	if n := len(sb.Mutations()); n != 2 || len(keys) != 2 {
		t.Fatalf("%d mutations under %d keys for two refunds", n, len(keys))
	}
}

// scrapeValue reads one sample of a serve process's /metrics, 0 when it is
// not there.
func scrapeValue(t *testing.T, base, sample string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// startSmallRefund starts, through a serve process's API, a refund-agent
// run of a refund small enough to be paid without an approval.
func startSmallRefund(t *testing.T, base, id string) {
	t.Helper()
	body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":{"type":"refund.requested/1","payload":{"refund_id":"r-%s","amount":40,"payee":"alice","reason":"damaged item"}}}`, id, id)
	resp, err := http.Post(base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("start %s: %s", id, resp.Status)
	}
}
