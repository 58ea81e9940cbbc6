package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDrainDelay: flrh serve --drain-delay, sent SIGTERM, keeps serving
// for the delay with GET /readyz answering 503 draining (and /healthz
// 200), then closes and stops; ready before. A negative delay is a usage
// error.
func TestDrainDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
	if out, err := flrh(bin, nil, "serve", "--addr", "127.0.0.1:0", "--store", db, "--drain-delay", "-1s"); exitStatus(t, err) != exitUsage ||
		!strings.Contains(out, "--drain-delay must not be negative") {
		t.Fatalf("a negative delay: %v\n%s", err, out)
	}
	p := startServe(t, bin, nil, "--store", db, "--drain-delay", "2s")
	status := func(path string) (int, string) {
		resp, err := http.Get(p.base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var body struct {
			Status string `json:"status"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Status
	}
	if code, s := status("/readyz"); code != http.StatusOK || s != "ready" {
		t.Fatalf("before SIGTERM /readyz: %d %s", code, s)
	}
	sent := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	if code, s := status("/readyz"); code != http.StatusServiceUnavailable || s != "draining" {
		t.Fatalf("draining /readyz: %d %s", code, s)
	}
	if code, _ := status("/healthz"); code != http.StatusOK {
		t.Fatalf("draining /healthz: %d", code)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if took := time.Since(sent); took < 2*time.Second {
		t.Fatalf("serve stopped %s after SIGTERM, before its drain delay", took)
	}
	if p.err != nil || !strings.Contains(p.stdout.String(), "flrh serve: stopped") {
		t.Fatalf("serve ended with %v:\n%s", p.err, p.stdout)
	}
}
