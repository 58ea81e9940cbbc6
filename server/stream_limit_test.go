package server

import (
	"net/http"
	"testing"
	"time"
)

// Beyond MaxStreams, a stream is refused with 503 and Retry-After, and the
// count comes back down when streams end.
func TestStreamLimit(t *testing.T) {
	f := newFixture(t, tokenFileText)
	f.server.cfg.MaxStreams = 1
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	f.waitFor("held", tokViewer, "an approval wait", waiting)
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/runs/held/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tokViewer)
	resp, err := f.ts.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first stream: %v %v", err, resp)
	}
	a := f.get("/v1/runs/held/stream", tokViewer)
	if a.status != 503 || a.header.Get("Retry-After") == "" {
		t.Fatalf("second stream: %d %v", a.status, a.header)
	}
	if typ, _ := a.errorOf(t); typ != TypeUnavailable {
		t.Fatalf("type %s", typ)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for f.server.streams.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the closed stream was never counted down")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
