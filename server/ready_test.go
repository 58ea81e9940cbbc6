package server

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// unreachable is a store that no longer answers: its Ping fails as a
// lost database does.
type unreachable struct{ store.Store }

func (unreachable) Ping(context.Context) error {
	return store.Errorf(store.CodeUnavailable, "ping", "", nil, "dial tcp 10.0.0.7:5432: connection refused")
}

// /readyz answers 200 while the store answers, 503 naming the store's
// error code (and no address) when it does not, and 503 draining once the
// server drains, with no token asked; /healthz stays 200 throughout.
func TestReadiness(t *testing.T) {
	f := newFixture(t, tokenFileText)
	for _, path := range []string{"/readyz", "/healthz"} {
		if a := f.get(path, ""); a.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
	}
	if got := f.get("/readyz", "").json(t); got["status"] != "ready" {
		t.Fatalf("ready: %v", got)
	}
	f.server.Drain()
	if a := f.get("/readyz", ""); a.status != http.StatusServiceUnavailable || a.json(t)["status"] != "draining" {
		t.Fatalf("draining: %d %s", a.status, a.body)
	}
	if a := f.get("/healthz", ""); a.status != http.StatusOK {
		t.Fatalf("healthz while draining: %d", a.status)
	}

	down := newFixture(t, "", func(_ *runner.Config, c *Config) { c.Store = unreachable{c.Store} })
	a := down.get("/readyz", "")
	if got := a.json(t); a.status != http.StatusServiceUnavailable || got["status"] != "unavailable" || got["store"] != string(store.CodeUnavailable) {
		t.Fatalf("a store that does not answer: %d %s", a.status, a.body)
	}
	if bytes.Contains(a.body, []byte("10.0.0.7")) {
		t.Fatalf("the probe's answer names the database's address: %s", a.body)
	}
}
