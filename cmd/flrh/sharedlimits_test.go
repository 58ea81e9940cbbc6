package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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
type openCounter struct{ now, most atomic.Int64 }

func (c *openCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
				id := fmt.Sprintf("lim-%02d", i)
				body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":{"type":"refund.requested/1","payload":{"refund_id":"r-%s","amount":40,"payee":"alice","reason":"damaged item"}}}`, id, id)
				resp, err := http.Post(procs[i%2].base+"/v1/runs", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Fatalf("start %s: %s", id, resp.Status)
				}
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
		})
	}
}
