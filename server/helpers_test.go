package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/mcp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// Test tokens: each is planted in requests and must never reach a log.
const (
	tokOperator   = "tok-operator-7c1f0a9d2b"
	tokApprover   = "tok-approver-4e8b3c6a1f"
	tokReconciler = "tok-reconciler-9d2e7b5c0a"
	tokViewer     = "tok-viewer-1a6f4d8e3b"
	tokAgent      = "tok-agent-5b0c9e2f7d"
	tokUnknown    = "tok-unknown-3f7a1c5e9b"
)

var allTokens = []string{tokOperator, tokApprover, tokReconciler, tokViewer, tokAgent, tokUnknown}

const tokenFileText = `{"tokens":[
 {"actor":"oscar","roles":["operator"],"token":"` + tokOperator + `"},
 {"actor":"alice","roles":["approver"],"token":"` + tokApprover + `"},
 {"actor":"rita","roles":["reconciler"],"token":"` + tokReconciler + `"},
 {"actor":"vera","roles":["viewer"],"token":"` + tokViewer + `"},
 {"actor":"bot","roles":["agent"],"token":"` + tokAgent + `"}
]}`

// lossy wraps the sandbox's in-process adapter: while lose is set, every
// mutation is applied but its answer is lost and lookups cannot tell, so
// the outcome is unknown until a person reconciles it.
type lossy struct {
	inner effect.Adapter
	lose  atomic.Bool
}

func (l *lossy) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	rc, err := l.inner.Execute(ctx, in)
	if err == nil && l.lose.Load() {
		return effect.Receipt{Outcome: effect.Unknown, Code: "TRANSPORT_AFTER_SEND"}, nil
	}
	return rc, err
}

func (l *lossy) Lookup(ctx context.Context, key, digest string) (effect.LookupResult, error) {
	if l.lose.Load() {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "UNREACHABLE"}, nil
	}
	return l.inner.Lookup(ctx, key, digest)
}

func (l *lossy) ContentDigest(in effect.Intent) (string, error) {
	return l.inner.(effect.ContentDigester).ContentDigest(in)
}

// syncBuffer collects log lines from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	t      testing.TB
	store  store.Store
	runner *runner.Runner
	server *Server
	ts     *httptest.Server
	sb     *sandbox.Sandbox
	dest   *lossy
	logs   *syncBuffer
}

// fixtureOption adjusts the runner's and the server's configuration.
type fixtureOption func(*runner.Config, *Config)

// newFixture serves the refund workflow over a temporary SQLite store with
// the sandbox destination and a background runner. tokens may be "".
func newFixture(t testing.TB, tokens string, opts ...fixtureOption) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wrapped, notifier := NotifyCommits(st)
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dest := &lossy{inner: sb.Adapter()}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "http/1", dest); err != nil {
		t.Fatal(err)
	}
	wf := demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	// The runner logs from its own goroutines; a fuzz target may not log
	// through its F, so fuzzing discards the runner's logs.
	logs := &syncBuffer{}
	runnerLog := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	if _, fuzzing := t.(*testing.F); fuzzing {
		runnerLog = slog.New(slog.DiscardHandler)
	}
	rcfg := runner.Config{Store: wrapped, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "test-server",
		Poll: 20 * time.Millisecond, Parallelism: 4, Logger: runnerLog, Reconcile: effect.Plan{Backoff: []time.Duration{0}}}
	scfg := Config{Store: wrapped, Catalog: Static{wf}, Notifier: notifier,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), StreamPoll: 50 * time.Millisecond}
	for _, o := range opts {
		o(&rcfg, &scfg)
	}
	r, err := runner.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var tk *Tokens
	if tokens != "" {
		if tk, err = ParseTokens([]byte(tokens)); err != nil {
			t.Fatal(err)
		}
	}
	scfg.Runner, scfg.Tokens = r, tk
	scfg.MCP = mcp.Handler(mcp.Deps{Store: wrapped, Runner: r, Catalog: Static{wf}, AgentFrom: ActorFrom, WorkflowsFrom: WorkflowsFrom})
	srv, err := New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
		cancel()
		<-done
		st.Close()
		sb.Close()
	})
	return &fixture{t: t, store: wrapped, runner: r, server: srv, ts: ts, sb: sb, dest: dest, logs: logs}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %s", a.status, err, a.body)
	}
	return v
}

// errorOf checks that the answer is an error body and returns its members.
func (a answer) errorOf(t *testing.T) (typ, field string) {
	t.Helper()
	var b struct {
		Error map[string]string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(a.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Error["type"] == "" || b.Error["message"] == "" {
		t.Fatalf("status %d: not an error body: %s", a.status, a.body)
	}
	return b.Error["type"], b.Error["field"]
}

func (f *fixture) do(method, path, token, contentType string, body []byte) answer {
	f.t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return f.send(method, path, h, body)
}

// send makes a request with the header fields h.
func (f *fixture) send(method, path string, h http.Header, body []byte) answer {
	f.t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header = h
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

func (f *fixture) get(path, token string) answer { return f.do("GET", path, token, "", nil) }

// metricsHolding scrapes /metrics and checks that it holds each line of
// want; it returns the scrape.
func (f *fixture) metricsHolding(want ...string) string {
	f.t.Helper()
	metrics := string(f.get("/metrics", tokOperator).body)
	for _, w := range want {
		if !strings.Contains(metrics, w) {
			f.t.Errorf("metrics lack %s", w)
		}
	}
	return metrics
}

func (f *fixture) post(path, token, body string) answer {
	return f.do("POST", path, token, "application/json", []byte(body))
}

// page reads a run's page.
func (f *fixture) page(id, token string) RunPage {
	f.t.Helper()
	a := f.get("/v1/runs/"+id, token)
	if a.status != 200 {
		f.t.Fatalf("GET run %s: %d %s", id, a.status, a.body)
	}
	var p RunPage
	if err := json.Unmarshal(a.body, &p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// waitFor polls a run's page until cond holds.
func (f *fixture) waitFor(id, token, what string, cond func(RunPage) bool) RunPage {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := f.page(id, token)
		if cond(p) {
			return p
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s never reached %s: %+v", id, what, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sseMessage is one server-sent event.
type sseMessage struct {
	id, event, data string
	at              time.Time
}

// openStream reads a run's event stream in the background until it ends.
func (f *fixture) openStream(id, token string) <-chan []sseMessage {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/runs/"+id+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		f.t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan []sseMessage, 1)
	go func() {
		defer resp.Body.Close()
		var msgs []sseMessage
		var cur sseMessage
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" || cur.data != "" {
					cur.at = time.Now()
					msgs = append(msgs, cur)
				}
				cur = sseMessage{}
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			}
		}
		out <- msgs
	}()
	return out
}

// streamEnd waits at most within for a stream openStream returned to
// end, and returns its last message; what names the stream in a failure.
func (f *fixture) streamEnd(stream <-chan []sseMessage, within time.Duration, what string) sseMessage {
	f.t.Helper()
	select {
	case msgs := <-stream:
		if len(msgs) == 0 {
			f.t.Fatalf("%s ended without a message", what)
		}
		return msgs[len(msgs)-1]
	case <-time.After(within):
		f.t.Fatalf("%s is still open", what)
	}
	return sseMessage{}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func newRequest(method, url string) (*http.Request, error) { return http.NewRequest(method, url, nil) }

func sha256hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}
