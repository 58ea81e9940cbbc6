package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An http.Server that registers Server.Shutdown stops gracefully even with
// event streams open: the streams end with a "shutdown" message, and
// Shutdown returns without waiting out its deadline.
func TestGracefulShutdownEndsStreams(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	f.waitFor("held", tokViewer, "an approval wait", waiting)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: f.server}
	hs.RegisterOnShutdown(f.server.Shutdown)
	go hs.Serve(ln)

	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/v1/runs/held/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tokViewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Read until the stream has caught up (the run's events are sent).
	deadline := time.After(30 * time.Second)
	for caught := false; !caught; {
		select {
		case l := <-lines:
			caught = strings.HasPrefix(l, "id: ")
		case <-deadline:
			t.Fatal("no events on the stream")
		}
	}
	// The deadline is generous for a loaded machine; a stream left open
	// would hold Shutdown until it passed.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Fatalf("shutdown waited %v for the stream", d)
	}
	sawShutdown := false
	for l := range lines {
		sawShutdown = sawShutdown || l == "event: shutdown"
	}
	if !sawShutdown {
		t.Fatal("the stream ended without a shutdown message")
	}
}

// A client resuming with Last-Event-ID gets only the events after it.
func TestStreamResumes(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("done", smallRefund)); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	p := f.waitFor("done", tokViewer, "its end", ended)
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/runs/done/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tokViewer)
	req.Header.Set("Last-Event-ID", "3")
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ids []string
	end := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "id: ") {
			ids = append(ids, l[4:])
		} else if l == "event: end" {
			end = true
		}
	}
	if !end || len(ids) != int(p.Run.Events)-3 || ids[0] != "4" {
		t.Fatalf("resumed stream: ids %v (run has %d events), end %v", ids, p.Run.Events, end)
	}
}
