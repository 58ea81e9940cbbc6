// Package sandbox is a real HTTP destination for effects: it speaks
// flrh-effect-http/1 (package httpwire), records every mutation it applies
// with its idempotency key, content digest, body and sequence number, honours
// idempotency keys, answers lookups, and can be told to misbehave — delay,
// fail with a status, or apply and then drop the connection without
// answering — so that demos and tests can exercise every outcome an
// adapter must classify.
//
// Endpoints:
//
//	POST   /v1/effects              apply a mutation (Idempotency-Key, Content-Digest)
//	GET    /v1/effects/{key}        look a key up (?content_digest=… to compare)
//	GET    /_sandbox/mutations      the ledger
//	GET    /_sandbox/faults         the pending fault rules
//	POST   /_sandbox/faults         add a fault rule (a Fault as JSON)
//	DELETE /_sandbox/faults         clear the fault rules
//
// Idempotency: the same key with the same content answers the original
// result (201, with Idempotent-Replayed: true) and applies nothing; the same
// key with other content is a 409 IDEMPOTENCY_KEY_CONFLICT, never the old
// result; a second request with a key that is still being handled is a 409
// IDEMPOTENCY_KEY_IN_PROGRESS.
//
// With a state file (an append-only journal, one fsync per mutation) the
// ledger is written durably before any answer is given, so a sandbox killed
// after applying a mutation still knows, when restarted on the same file,
// that it applied it.
//
// Besides serving HTTP, a Sandbox offers the same behaviour in process
// through Adapter, an effect.Adapter without the network.
//
// The admin endpoints are unauthenticated: the sandbox is a test
// destination and "flrh sandbox" binds to loopback unless told otherwise.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect/httpwire"
)

// EffectsPath is the path of the mutation endpoint; lookups are below it.
const EffectsPath = "/v1/effects"

// DefaultMaxMutations bounds the ledger when Options.MaxMutations is zero.
const DefaultMaxMutations = 100_000

// MaxDelay bounds an injected delay.
const MaxDelay = 10 * time.Minute

// Options configures a Sandbox. The zero Options is an in-memory sandbox.
type Options struct {
	// StatePath, when set, is the ledger's journal file: loaded at start
	// and appended to, with an fsync, before any mutation is answered.
	StatePath string
	// MaxMutations bounds the ledger; a mutation beyond it is answered 507.
	MaxMutations int
	// Logger, when set, receives one line per mutation request.
	Logger *slog.Logger
}

// Stats counts what the sandbox has seen since it started.
type Stats struct {
	Requests  int // mutation requests received, valid or not
	Applied   int // mutations applied
	Replayed  int // requests answered from the idempotency record
	Conflicts int // same key, other content
	Rejected  int // malformed requests
	Injected  int // injected failures answered
	Dropped   int // connections dropped after applying
}

// Sandbox is the destination. It is an http.Handler and safe for
// concurrent use.
type Sandbox struct {
	opts Options
	mux  *http.ServeMux

	mu        sync.Mutex
	journal   *journal // nil without a state file
	ledger    []Mutation
	byKey     map[string]int    // key -> index in ledger
	inflight  map[string]string // key -> content digest of the request being handled
	faults    []Fault
	stats     Stats
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a sandbox, loading its ledger from opts.StatePath when set.
// A state file that is present but not a valid ledger is an error.
func New(opts Options) (*Sandbox, error) {
	if opts.MaxMutations < 0 {
		return nil, errors.New("sandbox: MaxMutations must not be negative")
	}
	if opts.MaxMutations == 0 {
		opts.MaxMutations = DefaultMaxMutations
	}
	s := &Sandbox{opts: opts, byKey: map[string]int{}, inflight: map[string]string{}, closing: make(chan struct{})}
	if opts.StatePath != "" {
		j, ms, err := openJournal(opts.StatePath)
		if err != nil {
			return nil, err
		}
		if len(ms) > opts.MaxMutations {
			j.close()
			return nil, fmt.Errorf("sandbox: the state holds %d mutations, more than the limit %d", len(ms), opts.MaxMutations)
		}
		s.journal, s.ledger = j, ms
		for i, m := range ms {
			s.byKey[m.IdempotencyKey] = i
		}
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST "+EffectsPath, s.handleMutation)
	s.mux.HandleFunc("GET "+EffectsPath+"/{key}", s.handleLookup)
	s.mux.HandleFunc("GET /_sandbox/mutations", s.handleLedger)
	s.mux.HandleFunc("GET /_sandbox/faults", s.handleFaults)
	s.mux.HandleFunc("POST /_sandbox/faults", s.handleFaults)
	s.mux.HandleFunc("DELETE /_sandbox/faults", s.handleFaults)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusNotFound, httpwire.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Sandbox) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Mutations returns a copy of the ledger.
func (s *Sandbox) Mutations() []Mutation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneMutations(s.ledger)
}

// Stats returns the counters.
func (s *Sandbox) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Lookup answers for a key as GET /v1/effects/{key} does; contentDigest
// may be empty.
func (s *Sandbox) Lookup(key, contentDigest string) httpwire.LookupAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(key, contentDigest)
}

func (s *Sandbox) lookupLocked(key, contentDigest string) httpwire.LookupAnswer {
	a := httpwire.LookupAnswer{IdempotencyKey: key, Status: httpwire.StatusNotApplied}
	if i, ok := s.byKey[key]; ok {
		m := s.ledger[i]
		d, seq := m.ContentDigest, m.Sequence
		a.ContentDigest, a.Sequence = &d, &seq
		a.Status = httpwire.StatusApplied
		if contentDigest != "" && contentDigest != d {
			a.Status = httpwire.StatusConflict
		}
		return a
	}
	if d, ok := s.inflight[key]; ok {
		a.Status, a.ContentDigest = httpwire.StatusInProgress, &d
	}
	return a
}

// Close releases the state file. Call it after the server has stopped;
// Serve does not call it.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	err := s.journal.close()
	s.journal = nil
	return err
}

// shutdown ends injected delays early; requests caught in one are answered
// 503 without being applied.
func (s *Sandbox) shutdown() { s.closeOnce.Do(func() { close(s.closing) }) }

func (s *Sandbox) handleMutation(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpwire.MaxRequestBytes))
	if err != nil {
		s.count(func(st *Stats) { st.Requests++; st.Rejected++ })
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			problem(w, http.StatusRequestEntityTooLarge, httpwire.CodeTooLarge, err.Error())
			return
		}
		problem(w, http.StatusBadRequest, httpwire.CodeMalformed, "reading the body: "+err.Error())
		return
	}
	a := s.mutate(r.Header.Get(httpwire.HeaderIdempotencyKey), r.Header.Get(httpwire.HeaderContentDigest), body)
	if a.drop {
		drop(w)
		return
	}
	if a.replayed {
		w.Header().Set(httpwire.HeaderReplayed, "true")
	}
	if a.retryAfter > 0 {
		w.Header().Set(httpwire.HeaderRetryAfter, strconv.FormatInt(a.retryAfter, 10))
	}
	write(w, a.status, a.body)
}

// answer is what the sandbox does with one mutation request: answer status
// and body, or (drop) close the connection without answering.
type answer struct {
	status     int
	body       []byte
	replayed   bool
	drop       bool
	retryAfter int64 // seconds, sent as Retry-After when positive
}

func problemAnswer(status int, code, detail string) answer {
	return answer{status: status, body: httpwire.Problem{Code: code, Detail: detail}.Encode()}
}

// mutate handles one mutation request, whether it came over HTTP or
// through the in-process adapter: validate, claim the key, apply any fault
// rule, apply or replay. With a logger, it logs one line per request.
func (s *Sandbox) mutate(key, digestField string, body []byte) answer {
	a := s.mutateQuiet(key, digestField, body)
	if s.opts.Logger != nil {
		s.logAnswer(key, digestField, a)
	}
	return a
}

func (s *Sandbox) logAnswer(key, digestField string, a answer) {
	attrs := []any{slog.String("key", key)}
	switch {
	case a.drop:
		s.opts.Logger.Info("applied, answer dropped", attrs...)
	case a.status == http.StatusCreated:
		if res, err := httpwire.DecodeResult(a.body, key, mustParse(digestField)); err == nil {
			attrs = append(attrs, slog.Int64("sequence", res.Sequence), slog.String("content_digest", res.ContentDigest))
		}
		if a.replayed {
			s.opts.Logger.Info("replayed", attrs...)
		} else {
			s.opts.Logger.Info("applied", attrs...)
		}
	default:
		if p, err := httpwire.DecodeProblem(a.body); err == nil {
			attrs = append(attrs, slog.String("code", p.Code))
		}
		if a.retryAfter > 0 {
			attrs = append(attrs, slog.Int64("retry_after", a.retryAfter))
		}
		s.opts.Logger.Info("refused", append(attrs, slog.Int("status", a.status))...)
	}
}

func mustParse(field string) string {
	d, _ := httpwire.ParseContentDigest(field)
	return d
}

func (s *Sandbox) mutateQuiet(key, digestField string, body []byte) answer {
	s.count(func(st *Stats) { st.Requests++ })
	m, err := httpwire.CheckRequest(key, digestField, body)
	if err != nil {
		s.count(func(st *Stats) { st.Rejected++ })
		code := httpwire.CodeMalformed
		var we *httpwire.Error
		if errors.As(err, &we) {
			code = we.Code
		}
		status := http.StatusBadRequest
		if code == httpwire.CodeTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		return problemAnswer(status, code, err.Error())
	}

	// Claim the key for the duration of the request, so that a lookup
	// during an injected delay answers in_progress, not not_applied.
	s.mu.Lock()
	if d, busy := s.inflight[m.Key]; busy {
		s.stats.Conflicts++
		s.mu.Unlock()
		if d != m.ContentDigest {
			return problemAnswer(http.StatusConflict, httpwire.CodeKeyConflict, "a request with this key and other content is in flight")
		}
		return problemAnswer(http.StatusConflict, httpwire.CodeInProgress, "a request with this key is being handled")
	}
	s.inflight[m.Key] = m.ContentDigest
	f, faulted := s.takeFaultLocked(m.Key)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, m.Key)
		s.mu.Unlock()
	}()

	if faulted && !s.wait(f.DelayMillis) {
		return problemAnswer(http.StatusServiceUnavailable, httpwire.CodeInjected, "the sandbox is shutting down; nothing was applied")
	}
	if faulted && f.Status != 0 {
		s.count(func(st *Stats) { st.Injected++ })
		a := problemAnswer(int(f.Status), httpwire.CodeInjected, fmt.Sprintf("injected failure %d; nothing was applied", f.Status))
		a.retryAfter = f.RetryAfterSeconds
		return a
	}

	a := s.apply(m)
	if faulted && a.status == http.StatusCreated {
		// Applied: a shutdown cuts the wait short but still answers.
		s.wait(f.DelayAfterMillis)
	}
	if faulted && f.Drop && a.status == http.StatusCreated {
		s.count(func(st *Stats) { st.Dropped++ })
		return answer{drop: true}
	}
	return a
}

// wait sleeps for ms milliseconds; it reports false if the sandbox began
// shutting down first.
func (s *Sandbox) wait(ms int64) bool {
	if ms <= 0 {
		return true
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closing:
		return false
	}
}

// apply applies m, or answers from the idempotency record. The ledger
// entry is durable (when a state file is configured) before it returns.
func (s *Sandbox) apply(m httpwire.Mutation) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.byKey[m.Key]; ok {
		old := s.ledger[i]
		if old.ContentDigest != m.ContentDigest {
			s.stats.Conflicts++
			return problemAnswer(http.StatusConflict, httpwire.CodeKeyConflict,
				fmt.Sprintf("key %s was applied as mutation %d with content %s; this request has content %s", m.Key, old.Sequence, old.ContentDigest, m.ContentDigest))
		}
		s.stats.Replayed++
		return answer{status: http.StatusCreated, replayed: true,
			body: httpwire.Result{IdempotencyKey: old.IdempotencyKey, ContentDigest: old.ContentDigest, Sequence: old.Sequence}.Encode()}
	}
	if len(s.ledger) >= s.opts.MaxMutations {
		return problemAnswer(http.StatusInsufficientStorage, httpwire.CodeLedgerFull, "the sandbox ledger is full; nothing was applied")
	}
	rec := Mutation{Sequence: int64(len(s.ledger)) + 1, IdempotencyKey: m.Key, ContentDigest: m.ContentDigest, Body: m.Body}
	if s.opts.StatePath != "" && s.journal == nil {
		// Closed: a sandbox with a state file never applies what it cannot record.
		return problemAnswer(http.StatusServiceUnavailable, "STATE_CLOSED", "the sandbox's state file is closed; nothing was applied")
	}
	if s.journal != nil {
		if err := s.journal.append(rec); err != nil {
			return problemAnswer(http.StatusServiceUnavailable, "STATE_WRITE_FAILED", err.Error()+"; nothing was applied")
		}
	}
	s.ledger = append(s.ledger, rec)
	s.byKey[m.Key] = len(s.ledger) - 1
	s.stats.Applied++
	return answer{status: http.StatusCreated,
		body: httpwire.Result{IdempotencyKey: rec.IdempotencyKey, ContentDigest: rec.ContentDigest, Sequence: rec.Sequence}.Encode()}
}

func (s *Sandbox) handleLookup(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if !httpwire.ValidKey(key) {
		problem(w, http.StatusBadRequest, httpwire.CodeInvalidKey, "the key is not an identifier of at most 128 characters")
		return
	}
	digest := r.URL.Query().Get("content_digest")
	if digest != "" && !cjson.ValidDigest(digest) {
		problem(w, http.StatusBadRequest, httpwire.CodeInvalidDigest, "content_digest is not a sha256 digest")
		return
	}
	write(w, http.StatusOK, s.Lookup(key, digest).Encode())
}

func (s *Sandbox) handleLedger(w http.ResponseWriter, _ *http.Request) {
	b, err := encodeLedger(s.Mutations())
	if err != nil {
		problem(w, http.StatusInternalServerError, "LEDGER_UNENCODABLE", err.Error())
		return
	}
	write(w, http.StatusOK, b)
}

func (s *Sandbox) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// drop closes the connection without writing an answer.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Cannot hijack (HTTP/2): abort the handler, which resets the stream.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // a reset, as a crashed peer would leave
	}
	conn.Close()
}

func write(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func problem(w http.ResponseWriter, status int, code, detail string) {
	write(w, status, httpwire.Problem{Code: code, Detail: detail}.Encode())
}

// Serve serves the sandbox on ln until ctx is done, then shuts down
// gracefully: it stops accepting, ends injected delays (those requests are
// answered 503, unapplied) and waits up to grace for handlers to finish.
func (s *Sandbox) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-done
	return err
}

// Running is a sandbox served on a loopback port in this process, the way
// httptest.Server serves a handler.
type Running struct {
	*Sandbox
	URL        string // http://127.0.0.1:PORT
	EffectsURL string // URL + EffectsPath, the adapter's URL
	cancel     context.CancelFunc
	done       chan error
	closeOnce  sync.Once
	closeErr   error
}

// Start serves a new sandbox on 127.0.0.1 with an ephemeral port.
func Start(opts Options) (*Running, error) {
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{Sandbox: s, URL: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	r.EffectsURL = r.URL + EffectsPath
	go func() { r.done <- s.Serve(ctx, ln, 5*time.Second) }()
	return r, nil
}

// Close shuts the server down and waits for it. Closing twice is harmless.
func (r *Running) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		r.closeErr = <-r.done
		if errors.Is(r.closeErr, http.ErrServerClosed) {
			r.closeErr = nil
		}
		if err := r.Sandbox.Close(); r.closeErr == nil {
			r.closeErr = err
		}
	})
	return r.closeErr
}

// IsLoopback reports whether a listen address (host:port) names only loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
