package httpadapter_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

const payload = `{"amount":1250,"currency":"EUR","payee":"acct:7"}`

func startSandbox(t *testing.T) *sandbox.Running {
	t.Helper()
	s, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newAdapter(t *testing.T, url string, timeout time.Duration) *httpadapter.Adapter {
	t.Helper()
	a, err := httpadapter.New(httpadapter.Config{URL: url, Timeout: timeout, ConnectTimeout: time.Second, DestinationDigest: fixture.DestinationDigest})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func execute(t *testing.T, a *httpadapter.Adapter, in effect.Intent) effect.Receipt {
	t.Helper()
	r, err := a.Execute(context.Background(), in)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	return r
}

func lookup(t *testing.T, a *httpadapter.Adapter, key, digest string) effect.LookupResult {
	t.Helper()
	r, err := a.Lookup(context.Background(), key, digest)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	return r
}

func digestOf(t *testing.T, in effect.Intent) string {
	t.Helper()
	_, d, err := httpadapter.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSuccessReplayAndConflict(t *testing.T) {
	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, 5*time.Second)
	in := fixture.Intent("effect:k1", payload)

	r := execute(t, a, in)
	if r.Outcome != effect.Succeeded || r.Code != "HTTP_201" || r.Replayed || r.EvidenceDigest == "" {
		t.Fatalf("first attempt: %+v", r)
	}
	res, err := httpwire.DecodeResult(r.Evidence, "effect:k1", digestOf(t, in))
	if err != nil || res.Sequence != 1 {
		t.Fatalf("evidence %s: %v", r.Evidence, err)
	}

	// The same key and content again: the original result, no second mutation.
	r2 := execute(t, a, in)
	if r2.Outcome != effect.Succeeded || !r2.Replayed || string(r2.Evidence) != string(r.Evidence) {
		t.Fatalf("replay: %+v", r2)
	}

	// The same key with other content: a typed conflict, never the old result.
	other := fixture.Intent("effect:k1", `{"amount":999999,"currency":"EUR","payee":"acct:666"}`)
	r3 := execute(t, a, other)
	if r3.Outcome != effect.FailedPermanent || r3.Code != httpwire.CodeKeyConflict {
		t.Fatalf("conflict: %+v", r3)
	}
	if _, err := httpwire.DecodeResult(r3.Evidence, "effect:k1", digestOf(t, other)); err == nil {
		t.Fatal("a conflicting reuse was answered with a result")
	}
	if p, err := httpwire.DecodeProblem(r3.Evidence); err != nil || p.Code != httpwire.CodeKeyConflict {
		t.Fatalf("conflict evidence %s: %v", r3.Evidence, err)
	}

	ms := s.Mutations()
	body, _, _ := httpadapter.Prepare(in)
	if len(ms) != 1 || ms[0].IdempotencyKey != "effect:k1" || string(ms[0].Body) != string(body) || ms[0].ContentDigest != digestOf(t, in) {
		t.Fatalf("ledger: %+v", ms)
	}
	st := s.Stats()
	if st.Requests != 3 || st.Applied != 1 || st.Replayed != 1 || st.Conflicts != 1 {
		t.Errorf("stats %+v", st)
	}
	// A lookup confirms the original content and refuses the other one.
	if l := lookup(t, a, "effect:k1", digestOf(t, in)); l.Status != effect.ConfirmedSuccess {
		t.Errorf("lookup of the applied content: %+v", l)
	}
	if l := lookup(t, a, "effect:k1", digestOf(t, other)); l.Status != effect.HumanRequired {
		t.Errorf("lookup of the other content: %+v", l)
	}
}

func TestInjectedStatuses(t *testing.T) {
	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, 5*time.Second)
	for i, tc := range []struct {
		status int64
		want   effect.Outcome
	}{
		{503, effect.FailedTransient}, {500, effect.FailedTransient}, {502, effect.FailedTransient},
		{429, effect.FailedTransient}, {408, effect.FailedTransient}, {425, effect.FailedTransient},
		{400, effect.FailedPermanent}, {403, effect.FailedPermanent}, {422, effect.FailedPermanent},
		{409, effect.Unknown}, // an untyped conflict: only a lookup can tell
	} {
		key := "effect:status-" + string(rune('a'+i))
		if err := s.Inject(sandbox.Fault{Key: key, Times: 1, Status: tc.status}); err != nil {
			t.Fatal(err)
		}
		in := fixture.Intent(key, payload)
		r := execute(t, a, in)
		if r.Outcome != tc.want {
			t.Errorf("status %d: %v (%s), want %v", tc.status, r.Outcome, r.Code, tc.want)
		}
		// Nothing was applied, and a lookup says so.
		if l := lookup(t, a, key, digestOf(t, in)); l.Status != effect.ConfirmedFailure {
			t.Errorf("status %d: lookup %+v", tc.status, l)
		}
		// The rule was used up: the retry with the same key applies.
		if r := execute(t, a, in); r.Outcome != effect.Succeeded || r.Replayed {
			t.Errorf("status %d: retry %+v", tc.status, r)
		}
	}
	if got := len(s.Mutations()); got != 10 {
		t.Errorf("%d mutations, want one per key", got)
	}
}

// Drop after apply: the destination applied the mutation and closed the
// connection without answering. The adapter must say unknown; the lookup
// must confirm success from the destination's ledger; exactly one mutation.
func TestDropAfterApplyThenLookup(t *testing.T) {
	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, 5*time.Second)
	// Warm a keep-alive connection first, so that the dropped request goes
	// out on a reused connection: the transport must not resend it.
	execute(t, a, fixture.Intent("effect:warm", payload))

	in := fixture.Intent("effect:drop", payload)
	if err := s.Inject(sandbox.Fault{Key: "effect:drop", Times: 1, Drop: true}); err != nil {
		t.Fatal(err)
	}
	r := execute(t, a, in)
	if r.Outcome != effect.Unknown || r.Code != "TRANSPORT_AFTER_SEND" || r.Evidence != nil {
		t.Fatalf("dropped answer: %+v", r)
	}
	if st := s.Stats(); st.Requests != 2 || st.Dropped != 1 {
		t.Fatalf("the request was sent %d times (stats %+v): a hidden retry", st.Requests-1, st)
	}
	res, err := effect.Reconcile(context.Background(), a, "effect:drop", r.ContentDigest, effect.Plan{Backoff: []time.Duration{0}})
	if err != nil || res.Status != effect.ConfirmedSuccess {
		t.Fatalf("reconcile: %+v %v", res, err)
	}
	n := 0
	for _, m := range s.Mutations() {
		if m.IdempotencyKey == "effect:drop" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d mutations for the dropped effect, want exactly 1", n)
	}
}

// Delay beyond the timeout: unknown. While the destination still holds the
// request the lookup says so (still unknown); once it applies, the
// reconciler confirms success. Exactly one mutation.
func TestDelayBeyondTimeoutReconciles(t *testing.T) {
	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, 100*time.Millisecond)
	in := fixture.Intent("effect:slow", payload)
	// The delay leaves a wide margin over the timeout, so that the first
	// lookup falls inside it even on a loaded machine.
	if err := s.Inject(sandbox.Fault{Key: "effect:slow", Times: 1, DelayMillis: 1500}); err != nil {
		t.Fatal(err)
	}
	r := execute(t, a, in)
	if r.Outcome != effect.Unknown || r.Code != "TRANSPORT_AFTER_SEND" {
		t.Fatalf("timed-out attempt: %+v", r)
	}
	res, err := effect.Reconcile(context.Background(), a, "effect:slow", r.ContentDigest, effect.Plan{
		Backoff: []time.Duration{0, 500 * time.Millisecond, time.Second, time.Second, 2 * time.Second, 4 * time.Second},
	})
	if err != nil || res.Status != effect.ConfirmedSuccess {
		t.Fatalf("reconcile: %+v %v", res, err)
	}
	if res.Lookups[0].Status != effect.StillUnknown || res.Lookups[0].Code != "LOOKUP_IN_PROGRESS" {
		t.Errorf("the first lookup, during the delay, answered %+v", res.Lookups[0])
	}
	if got := len(s.Mutations()); got != 1 {
		t.Errorf("%d mutations", got)
	}
}

// Applied, then answered too late: unknown to the adapter, but the lookup
// confirms at once, since the destination has already recorded it.
func TestAppliedButAnsweredLate(t *testing.T) {
	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, 100*time.Millisecond)
	if err := s.Inject(sandbox.Fault{Key: "effect:late", Times: 1, DelayAfterMillis: 1500}); err != nil {
		t.Fatal(err)
	}
	r := execute(t, a, fixture.Intent("effect:late", payload))
	if r.Outcome != effect.Unknown {
		t.Fatalf("late answer: %+v", r)
	}
	if l := lookup(t, a, "effect:late", r.ContentDigest); l.Status != effect.ConfirmedSuccess {
		t.Fatalf("lookup: %+v", l)
	}
	if len(s.Mutations()) != 1 {
		t.Errorf("%d mutations", len(s.Mutations()))
	}
}

func TestDialFailureIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1/effects"
	ln.Close() // nothing listens there now
	a := newAdapter(t, url, time.Second)
	r := execute(t, a, fixture.Intent("effect:nowhere", payload))
	if r.Outcome != effect.FailedTransient || r.Code != "TRANSPORT_BEFORE_SEND" {
		t.Fatalf("%+v", r)
	}
	if l := lookup(t, a, "effect:nowhere", r.ContentDigest); l.Status != effect.StillUnknown || l.Code != "LOOKUP_TRANSPORT" {
		t.Errorf("lookup of an unreachable destination: %+v", l)
	}
}

// stub serves fixed answers to check how the adapter reads destinations
// other than the sandbox.
func stub(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/effects"
}

func TestAnswersThatDoNotWitnessTheRequest(t *testing.T) {
	in := fixture.Intent("effect:w", payload)
	d := digestOf(t, in)
	var redirected atomic.Int32
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want effect.Outcome
		code string
	}{
		{"result for another key", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(201)
			w.Write(httpwire.Result{IdempotencyKey: "effect:other", ContentDigest: d, Sequence: 1}.Encode())
		}, effect.Unknown, httpwire.CodeBinding},
		{"result for other content", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			w.Write(httpwire.Result{IdempotencyKey: "effect:w", ContentDigest: fixture.ActionDigest, Sequence: 1}.Encode())
		}, effect.Unknown, httpwire.CodeBinding},
		{"plain OK", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("OK")) }, effect.Unknown, httpwire.CodeMalformed},
		{"empty 204", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, effect.Unknown, httpwire.CodeMalformed},
		{"oversized answer", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			w.Write([]byte(strings.Repeat(" ", httpwire.MaxAnswerBytes+10)))
		}, effect.Unknown, "ANSWER_UNREADABLE"},
		{"body cut short", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(201)
			w.Write([]byte(`{"kind":`))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, effect.Unknown, "ANSWER_UNREADABLE"},
		{"headers then silence", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(201)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, effect.Unknown, "ANSWER_UNREADABLE"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/elsewhere" {
				redirected.Add(1)
				w.WriteHeader(201)
				return
			}
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, effect.FailedPermanent, "HTTP_307"},
		{"untyped 409", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(409) }, effect.Unknown, "HTTP_409"},
		{"in-progress 409", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(409)
			w.Write(httpwire.Problem{Code: httpwire.CodeInProgress, Detail: "busy"}.Encode())
		}, effect.Unknown, httpwire.CodeInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdapter(t, stub(t, tc.h), 2*time.Second)
			r := execute(t, a, in)
			if r.Outcome != tc.want || r.Code != tc.code {
				t.Errorf("got %v %s (%s), want %v %s", r.Outcome, r.Code, r.Detail, tc.want, tc.code)
			}
		})
	}
	if redirected.Load() != 0 {
		t.Error("the adapter followed a redirect")
	}
}

func TestRequestOnTheWire(t *testing.T) {
	in := fixture.Intent("effect:wire", payload)
	body, digest, _ := httpadapter.Prepare(in)
	var got *http.Request
	var gotBody []byte
	url := stub(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.WriteHeader(201)
		w.Write(httpwire.Result{IdempotencyKey: "effect:wire", ContentDigest: digest, Sequence: 9}.Encode())
	})
	a := newAdapter(t, url, time.Second)
	if r := execute(t, a, in); r.Outcome != effect.Succeeded {
		t.Fatalf("%+v", r)
	}
	cd, _ := httpwire.FormatContentDigest(digest)
	if got.Method != "POST" || got.URL.Path != "/v1/effects" || got.Header.Get("Idempotency-Key") != "effect:wire" ||
		got.Header.Get("Content-Digest") != cd || got.Header.Get("Content-Type") != "application/json" || string(gotBody) != string(body) {
		t.Errorf("request %s %s %v body %s", got.Method, got.URL, got.Header, gotBody)
	}
	if _, err := httpwire.DecodeRequest(got.Header.Get("Idempotency-Key"), got.Header.Get("Content-Digest"), gotBody); err != nil {
		t.Errorf("the destination-side decoder refuses the adapter's request: %v", err)
	}
	determinism.Check(t, in, func(in effect.Intent) string { b, d, _ := httpadapter.Prepare(in); return string(b) + d })
}

func TestLookupAnswers(t *testing.T) {
	d := fixture.ActionDigest
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want effect.LookupStatus
	}{
		{"404", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) }, effect.HumanRequired},
		{"503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }, effect.StillUnknown},
		{"garbage", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"status":"applied"}`)) }, effect.HumanRequired},
		{"answer for another key", func(w http.ResponseWriter, _ *http.Request) {
			w.Write(httpwire.LookupAnswer{IdempotencyKey: "effect:x", Status: httpwire.StatusNotApplied}.Encode())
		}, effect.HumanRequired},
		{"not applied", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("content_digest") != d || r.PathValue("key") != "" && r.PathValue("key") != "effect:a/b" {
				w.WriteHeader(400)
				return
			}
			w.Write(httpwire.LookupAnswer{IdempotencyKey: "effect:a/b", Status: httpwire.StatusNotApplied}.Encode())
		}, effect.ConfirmedFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdapter(t, stub(t, tc.h), time.Second)
			if l := lookup(t, a, "effect:a/b", d); l.Status != tc.want {
				t.Errorf("got %+v, want %v", l, tc.want)
			}
		})
	}
	// A key with a slash reaches the sandbox as one path segment.
	s := startSandbox(t)
	a := newAdapter(t, s.EffectsURL, time.Second)
	in := fixture.Intent("effect:a/b", payload)
	if r := execute(t, a, in); r.Outcome != effect.Succeeded {
		t.Fatalf("%+v", r)
	}
	if l := lookup(t, a, "effect:a/b", digestOf(t, in)); l.Status != effect.ConfirmedSuccess {
		t.Errorf("lookup of a slashed key: %+v", l)
	}
}

func TestRefusesBeforeSending(t *testing.T) {
	var hits atomic.Int32
	url := stub(t, func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) })
	a := newAdapter(t, url, time.Second)
	wrongDest := fixture.Intent("effect:d", payload)
	wrongDest.Effect.DestinationDigest = fixture.ActionDigest
	for name, in := range map[string]effect.Intent{
		"other destination": wrongDest,
		"bad key":           fixture.Intent("effect key", payload),
		"float payload":     fixture.Intent("effect:f", `{"amount":1.5}`),
	} {
		if _, err := a.Execute(context.Background(), in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := a.Lookup(context.Background(), "bad key", fixture.ActionDigest); err == nil {
		t.Error("lookup with a bad key accepted")
	}
	if _, err := a.Lookup(context.Background(), "effect:1", "sha256:x"); err == nil {
		t.Error("lookup with a bad digest accepted")
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the destination", hits.Load())
	}
	for _, bad := range []string{"", "ftp://x/y", "/relative", "http://h/p?q=1", "http://h/p#f"} {
		if _, err := httpadapter.New(httpadapter.Config{URL: bad}); err == nil {
			t.Errorf("New accepted URL %q", bad)
		}
	}
	if _, err := httpadapter.New(httpadapter.Config{URL: "http://h/p", Timeout: -1}); err == nil {
		t.Error("New accepted a negative timeout")
	}
}

func TestClassifyTable(t *testing.T) {
	d := fixture.ActionDigest
	ok := httpwire.Result{IdempotencyKey: "k", ContentDigest: d, Sequence: 1}.Encode()
	boom := errors.New("connection reset by peer")
	for _, tc := range []struct {
		name string
		o    httpadapter.Observation
		want effect.Outcome
		code string
	}{
		{"dial failed", httpadapter.Observation{TransportErr: boom}, effect.FailedTransient, "TRANSPORT_BEFORE_SEND"},
		{"reset after connect", httpadapter.Observation{Connected: true, TransportErr: boom}, effect.Unknown, "TRANSPORT_AFTER_SEND"},
		{"TLS handshake refused by the destination", httpadapter.Observation{Connected: true, HandshakeRefused: true, TransportErr: boom}, effect.FailedTransient, "TLS_HANDSHAKE_REFUSED"},
		{"201 bound", httpadapter.Observation{Connected: true, Status: 201, Body: ok}, effect.Succeeded, "HTTP_201"},
		{"201 replayed", httpadapter.Observation{Connected: true, Status: 201, Body: ok, Replayed: true}, effect.Succeeded, "HTTP_201"},
		{"200 unreadable", httpadapter.Observation{Connected: true, Status: 200, BodyErr: boom}, effect.Unknown, "ANSWER_UNREADABLE"},
		{"503 unreadable", httpadapter.Observation{Connected: true, Status: 503, BodyErr: boom}, effect.FailedTransient, "HTTP_503"},
		{"409 unreadable", httpadapter.Observation{Connected: true, Status: 409, BodyErr: boom}, effect.Unknown, "HTTP_409"},
		{"409 conflict", httpadapter.Observation{Connected: true, Status: 409, Body: httpwire.Problem{Code: httpwire.CodeKeyConflict}.Encode()}, effect.FailedPermanent, httpwire.CodeKeyConflict},
		{"422 problem", httpadapter.Observation{Connected: true, Status: 422, Body: httpwire.Problem{Code: "BAD_AMOUNT"}.Encode()}, effect.FailedPermanent, "BAD_AMOUNT"},
		{"404 html", httpadapter.Observation{Connected: true, Status: 404, Body: []byte("<html>")}, effect.FailedPermanent, "HTTP_404"},
	} {
		tc.o.Key, tc.o.ContentDigest = "k", d
		r := determinism.Check(t, tc.o, httpadapter.Classify)
		if r.Outcome != tc.want || r.Code != tc.code || r.ContentDigest != d {
			t.Errorf("%s: %v %s, want %v %s", tc.name, r.Outcome, r.Code, tc.want, tc.code)
		}
		if tc.want != effect.Succeeded && r.Replayed && tc.o.Status/100 == 2 {
			t.Errorf("%s: replayed without success", tc.name)
		}
	}
}

// FuzzAnswers: whatever a destination answers, classification never
// panics, success is only ever claimed on a result bound to the request,
// and a lookup only confirms with evidence in hand.
func FuzzAnswers(f *testing.F) {
	d := fixture.ActionDigest
	f.Add(201, httpwire.Result{IdempotencyKey: "k", ContentDigest: d, Sequence: 1}.Encode())
	f.Add(200, httpwire.LookupAnswer{IdempotencyKey: "k", Status: httpwire.StatusNotApplied}.Encode())
	f.Add(409, httpwire.Problem{Code: httpwire.CodeKeyConflict}.Encode())
	f.Add(500, []byte("oops"))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		r := httpadapter.Classify(httpadapter.Observation{Key: "k", ContentDigest: d, Connected: true, Status: status, Body: body})
		if r.Outcome == 0 {
			t.Fatal("unclassified")
		}
		if r.Outcome == effect.Succeeded {
			if _, err := httpwire.DecodeResult(body, "k", d); err != nil || status/100 != 2 || r.EvidenceDigest == "" {
				t.Fatalf("success on %d %q", status, body)
			}
		}
		l := httpadapter.JudgeLookup("k", d, status, body, nil)
		if l.Status == 0 {
			t.Fatal("unjudged lookup")
		}
		if (l.Status == effect.ConfirmedSuccess || l.Status == effect.ConfirmedFailure) && (status != 200 || len(l.Evidence) == 0) {
			t.Fatalf("confirmed %v on %d %q", l.Status, status, body)
		}
	})
}
