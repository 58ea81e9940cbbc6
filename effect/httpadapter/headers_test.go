package httpadapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// Configured headers reach the destination with every mutation and
// lookup, and the content digest does not depend on them.
func TestHeadersSentAndOutsideTheDigest(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		sb.ServeHTTP(w, r)
	}))
	defer ts.Close()
	in := fixture.Intent("effect:h1", `{"amount":5,"payee":"acct:1"}`)
	var digests []string
	for _, token := range []string{"Bearer one-0123456789", "Bearer two-9876543210"} {
		a, err := httpadapter.New(httpadapter.Config{URL: ts.URL + sandbox.EffectsPath, Timeout: 5 * time.Second,
			Headers: map[string]string{"Authorization": token, "flrh-secret-api-key": "k-" + token[7:]}})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := a.Execute(context.Background(), in)
		if err != nil || rc.Outcome != effect.Succeeded {
			t.Fatalf("Execute: %+v, %v", rc, err)
		}
		if strings.Contains(rc.Detail+string(rc.Evidence), token) {
			t.Fatalf("the receipt repeats a header: %+v", rc)
		}
		lr, err := a.Lookup(context.Background(), in.Effect.IdempotencyKey, rc.ContentDigest)
		if err != nil || lr.Status != effect.ConfirmedSuccess {
			t.Fatalf("Lookup: %+v, %v", lr, err)
		}
		d, _ := a.ContentDigest(in)
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Fatalf("the content digest changed with the headers: %v", digests)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 {
		t.Fatalf("%d requests, want 2 mutations and 2 lookups", len(seen))
	}
	for i, h := range seen {
		want := []string{"Bearer one-0123456789", "Bearer two-9876543210"}[i/2]
		if h.Get("Authorization") != want || h.Get("Flrh-Secret-Api-Key") != "k-"+want[7:] {
			t.Fatalf("request %d carried %v", i, h)
		}
	}
	// The second mutation was the first one replayed: same key, same content.
	if n := len(sb.Mutations()); n != 1 {
		t.Fatalf("%d mutations, want 1", n)
	}
}

func TestHeadersRefused(t *testing.T) {
	for _, h := range []map[string]string{
		{"Idempotency-Key": "x"}, {"content-digest": "x"}, {"Content-Type": "text/plain"}, {"Host": "evil"},
		{"Bad Name": "x"}, {"": "x"}, {"X-Ok": "line\r\nInjected: 1"},
	} {
		if _, err := httpadapter.New(httpadapter.Config{URL: "http://127.0.0.1:1/v1/effects", Headers: h}); err == nil {
			t.Fatalf("New accepted headers %q", h)
		} else if v, ok := h["X-Ok"]; ok && strings.Contains(err.Error(), v) {
			t.Fatalf("the error quotes a header value: %v", err)
		}
	}
}
