package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

const payload = `{"amount":1250,"currency":"EUR","payee":"acct:7"}`

func start(t *testing.T, opts sandbox.Options) *sandbox.Running {
	t.Helper()
	s, err := sandbox.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func adapterFor(t *testing.T, url string) *httpadapter.Adapter {
	t.Helper()
	a, err := httpadapter.New(httpadapter.Config{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// post sends a raw mutation request to the handler and returns the
// recorded answer.
func post(h http.Handler, key, digestField string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", sandbox.EffectsPath, bytes.NewReader(body))
	if key != "" {
		req.Header.Set(httpwire.HeaderIdempotencyKey, key)
	}
	if digestField != "" {
		req.Header.Set(httpwire.HeaderContentDigest, digestField)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func requestBody(t testing.TB, key, p string) ([]byte, string, string) {
	t.Helper()
	body, digest, err := httpadapter.Prepare(fixture.Intent(key, p))
	if err != nil {
		t.Fatal(err)
	}
	field, _ := httpwire.FormatContentDigest(digest)
	return body, digest, field
}

func TestMalformedMutationsChangeNothing(t *testing.T) {
	s, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body, _, field := requestBody(t, "effect:1", payload)
	for _, tc := range []struct {
		name, key, field string
		body             []byte
		status           int
		code             string
	}{
		{"no key", "", field, body, 400, httpwire.CodeMissingKey},
		{"bad key", "effect 1", field, body, 400, httpwire.CodeInvalidKey},
		{"no digest", "effect:1", "", body, 400, httpwire.CodeMissingDigest},
		{"wrong digest", "effect:1", "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", body, 400, httpwire.CodeDigestMismatch},
		{"too large", "effect:1", field, bytes.Repeat([]byte("x"), httpwire.MaxRequestBytes+1), 413, httpwire.CodeTooLarge},
	} {
		rec := post(s, tc.key, tc.field, tc.body)
		p, err := httpwire.DecodeProblem(rec.Body.Bytes())
		if rec.Code != tc.status || err != nil || p.Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, rec.Code, rec.Body, tc.status, tc.code)
		}
	}
	if st := s.Stats(); len(s.Mutations()) != 0 || st.Rejected != 5 || st.Requests != 5 {
		t.Errorf("malformed requests changed the ledger or were miscounted: %+v", st)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/nowhere", nil))
	if p, err := httpwire.DecodeProblem(rec.Body.Bytes()); rec.Code != 404 || err != nil || p.Code != httpwire.CodeNotFound {
		t.Errorf("unknown endpoint: %d %s", rec.Code, rec.Body)
	}
	for _, url := range []string{sandbox.EffectsPath + "/bad%20key", sandbox.EffectsPath + "/effect:1?content_digest=sha256:zz"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
		if rec.Code != 400 {
			t.Errorf("lookup %s: %d %s", url, rec.Code, rec.Body)
		}
	}
}

func TestLedgerSurvivesRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "ledger.json")
	s1 := start(t, sandbox.Options{StatePath: state})
	a1 := adapterFor(t, s1.EffectsURL)
	for _, k := range []string{"effect:a", "effect:b"} {
		if r, _ := a1.Execute(context.Background(), fixture.Intent(k, payload)); r.Outcome != effect.Succeeded {
			t.Fatalf("%s: %+v", k, r)
		}
	}
	before := s1.Mutations()
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := start(t, sandbox.Options{StatePath: state})
	after := s2.Mutations()
	if len(after) != 2 {
		t.Fatalf("restarted with %d mutations", len(after))
	}
	for i := range before {
		if before[i].Sequence != after[i].Sequence || before[i].IdempotencyKey != after[i].IdempotencyKey ||
			before[i].ContentDigest != after[i].ContentDigest || !bytes.Equal(before[i].Body, after[i].Body) {
			t.Errorf("mutation %d changed across the restart: %+v vs %+v", i, before[i], after[i])
		}
	}
	a2 := adapterFor(t, s2.EffectsURL)
	// The restarted sandbox still honours the keys it applied before.
	r, _ := a2.Execute(context.Background(), fixture.Intent("effect:b", payload))
	if r.Outcome != effect.Succeeded || !r.Replayed {
		t.Errorf("replay after restart: %+v", r)
	}
	r, _ = a2.Execute(context.Background(), fixture.Intent("effect:a", `{"amount":1}`))
	if r.Code != httpwire.CodeKeyConflict {
		t.Errorf("conflict after restart: %+v", r)
	}
	r, _ = a2.Execute(context.Background(), fixture.Intent("effect:c", payload))
	if res, err := httpwire.DecodeResult(r.Evidence, "effect:c", r.ContentDigest); err != nil || res.Sequence != 3 {
		t.Errorf("new mutation after restart: %+v %v", res, err)
	}
	// The ledger endpoint serves the mutations the state file holds.
	resp, err := http.Get(s2.URL + "/_sandbox/mutations")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	onDisk, _ := os.ReadFile(state)
	fromDoc, err := sandbox.DecodeLedger(served)
	if err != nil || len(fromDoc) != 3 {
		t.Fatalf("served ledger: %d mutations, %v", len(fromDoc), err)
	}
	fromFile, valid, err := sandbox.DecodeJournal(onDisk)
	if err != nil || valid != len(onDisk) || len(fromFile) != 3 {
		t.Fatalf("state file: %d mutations, %d of %d bytes valid, %v", len(fromFile), valid, len(onDisk), err)
	}
	for i := range fromDoc {
		if fromDoc[i].ContentDigest != fromFile[i].ContentDigest || !bytes.Equal(fromDoc[i].Body, fromFile[i].Body) {
			t.Errorf("mutation %d differs between the served ledger and the state file", i)
		}
	}
}

func TestCorruptStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "ledger.json")
	s := start(t, sandbox.Options{StatePath: state})
	a := adapterFor(t, s.EffectsURL)
	for _, k := range []string{"effect:a", "effect:b"} {
		a.Execute(context.Background(), fixture.Intent(k, payload))
	}
	s.Close()
	good, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if ms, _, err := sandbox.DecodeJournal(good); err != nil || len(ms) != 2 {
		t.Fatal(len(ms), err)
	}
	edit := func(old, new string) []byte {
		if !strings.Contains(string(good), old) {
			t.Fatalf("the state file has no %q", old)
		}
		return []byte(strings.Replace(string(good), old, new, 1))
	}
	for name, text := range map[string][]byte{
		"tampered body":    edit(`"amount":1250`, `"amount":1251`),
		"sequence gap":     edit(`"sequence":2`, `"sequence":3`),
		"repeated key":     edit(`"idempotency_key":"effect:b"`, `"idempotency_key":"effect:a"`),
		"wrong header":     edit(`"kind":"SandboxJournal"`, `"kind":"Ledger"`),
		"extra member":     edit(`"sequence":1`, `"sequence":1,"x":0`),
		"not canonical":    edit(`"sequence":1`, `"sequence": 1`),
		"damaged middle":   edit(`"sequence":1`, `"seq`),
		"a ledger instead": []byte(`{"kind":"SandboxLedger","protocol":"flrh-effect-http/1","mutations":[]}` + "\n"),
	} {
		if _, _, err := sandbox.DecodeJournal(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
		bad := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		os.WriteFile(bad, text, 0o600)
		if _, err := sandbox.New(sandbox.Options{StatePath: bad}); err == nil {
			t.Errorf("%s: the sandbox started on it", name)
		}
		if after, _ := os.ReadFile(bad); !bytes.Equal(after, text) {
			t.Errorf("%s: a refused state file was changed", name)
		}
	}
	// A record cut off by a crash was never acknowledged: the sandbox starts
	// with the intact prefix and cuts the torn tail away.
	torn := filepath.Join(dir, "torn.json")
	os.WriteFile(torn, good[:len(good)-10], 0o600)
	sb, err := sandbox.New(sandbox.Options{StatePath: torn})
	if err != nil {
		t.Fatal(err)
	}
	if ms := sb.Mutations(); len(ms) != 1 || ms[0].IdempotencyKey != "effect:a" {
		t.Errorf("torn tail: %+v", ms)
	}
	sb.Close()
	cut, _ := os.ReadFile(torn)
	if ms, valid, err := sandbox.DecodeJournal(cut); err != nil || valid != len(cut) || len(ms) != 1 {
		t.Errorf("after cutting the torn tail: %d mutations, %d of %d bytes, %v", len(ms), valid, len(cut), err)
	}
	// A missing file is an empty ledger, and so is a torn header.
	for _, text := range [][]byte{nil, good[:5]} {
		p := filepath.Join(dir, "fresh.json")
		os.Remove(p)
		if text != nil {
			os.WriteFile(p, text, 0o600)
		}
		sb, err := sandbox.New(sandbox.Options{StatePath: p})
		if err != nil || len(sb.Mutations()) != 0 {
			t.Errorf("fresh state %q: %v", text, err)
			continue
		}
		sb.Close()
	}
	// DecodeLedger refuses damaged ledger documents the same way.
	doc := []byte(`{"kind":"SandboxLedger","protocol":"flrh-effect-http/1","mutations":[{"body":{},"content_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","idempotency_key":"k","sequence":1}]}`)
	if _, err := sandbox.DecodeLedger(doc); err == nil {
		t.Error("a ledger whose digest does not match its body was accepted")
	}
}

func TestFaultRules(t *testing.T) {
	s := start(t, sandbox.Options{})
	a := adapterFor(t, s.EffectsURL)
	exec := func(k string) effect.Receipt {
		r, err := a.Execute(context.Background(), fixture.Intent(k, payload))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The next two requests, whatever their key, fail with 503.
	if err := s.Inject(sandbox.Fault{Times: 2, Status: 503}); err != nil {
		t.Fatal(err)
	}
	// Requests with effect:z fail with 422 until cleared.
	if err := s.Inject(sandbox.Fault{Key: "effect:z", Status: 422}); err != nil {
		t.Fatal(err)
	}
	got := []string{exec("effect:x").Code, exec("effect:z").Code, exec("effect:x").Code, exec("effect:z").Outcome.String(), exec("effect:z").Outcome.String()}
	want := []string{httpwire.CodeInjected, httpwire.CodeInjected, "HTTP_201", "failed_permanent", "failed_permanent"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %s, want %s", i, got[i], want[i])
		}
	}
	if fs := s.Faults(); len(fs) != 1 || fs[0].Key != "effect:z" {
		t.Errorf("pending rules %+v", fs)
	}

	// The admin endpoint adds, lists and clears rules.
	resp, err := http.Post(s.URL+"/_sandbox/faults", "application/json", strings.NewReader(`{"key":"effect:y","times":1,"drop":true}`))
	if err != nil {
		t.Fatal(err)
	}
	listed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(listed), `"key":"effect:y"`) || !strings.Contains(string(listed), `"key":"effect:z"`) {
		t.Errorf("POST faults: %d %s", resp.StatusCode, listed)
	}
	if r := exec("effect:y"); r.Outcome != effect.Unknown {
		t.Errorf("admin drop rule: %+v", r)
	}
	for _, bad := range []string{`{"status":200}`, `{"status":503,"drop":true}`, `{"status":503,"delay_after_ms":5}`, `{"delay_after_ms":-1}`, `{}`, `{"times":-1,"drop":true}`, `{"key":"bad key","drop":true}`, `{"drop":"yes"}`, `{"delay_ms":1.5}`, `{"colour":"red"}`, `[]`, `{"delay_ms":600001}`,
		`{"retry_after":5}`, `{"retry_after":5,"drop":true}`, `{"status":429,"retry_after":-1}`, `{"status":429,"retry_after":3601}`, `{"status":429,"retry_after":"5"}`} {
		resp, err := http.Post(s.URL+"/_sandbox/faults", "application/json", strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("fault %s: %d", bad, resp.StatusCode)
		}
		if _, err := sandbox.DecodeFault([]byte(bad)); err == nil {
			t.Errorf("DecodeFault(%s) accepted", bad)
		}
	}
	req, _ := http.NewRequest("DELETE", s.URL+"/_sandbox/faults", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("DELETE faults: %v", err)
	} else {
		resp.Body.Close()
	}
	if len(s.Faults()) != 0 {
		t.Error("rules survived DELETE")
	}
	if r := exec("effect:z"); r.Outcome != effect.Succeeded {
		t.Errorf("after clearing: %+v", r)
	}
}

// Concurrent deliveries of one effect converge to one mutation: every
// attempt either succeeds with the one sequence number or is told the key is
// in progress (unknown), and the lookup afterwards confirms it.
func TestConcurrentDuplicatesConverge(t *testing.T) {
	s := start(t, sandbox.Options{})
	a := adapterFor(t, s.EffectsURL)
	if err := s.Inject(sandbox.Fault{Key: "effect:dup", Times: 1, DelayMillis: 50}); err != nil {
		t.Fatal(err)
	}
	in := fixture.Intent("effect:dup", payload)
	const n = 8
	var wg sync.WaitGroup
	receipts := make([]effect.Receipt, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			receipts[i], _ = a.Execute(context.Background(), in)
		}()
	}
	wg.Wait()
	succeeded := 0
	for i, r := range receipts {
		switch r.Outcome {
		case effect.Succeeded:
			succeeded++
			if res, err := httpwire.DecodeResult(r.Evidence, "effect:dup", r.ContentDigest); err != nil || res.Sequence != 1 {
				t.Errorf("attempt %d: %v %+v", i, err, res)
			}
		case effect.Unknown:
			if r.Code != httpwire.CodeInProgress {
				t.Errorf("attempt %d: unknown for %s", i, r.Code)
			}
		default:
			t.Errorf("attempt %d: %+v", i, r)
		}
	}
	if succeeded == 0 || len(s.Mutations()) != 1 {
		t.Fatalf("%d successes, %d mutations", succeeded, len(s.Mutations()))
	}
	if l, _ := a.Lookup(context.Background(), "effect:dup", receipts[0].ContentDigest); l.Status != effect.ConfirmedSuccess {
		t.Errorf("lookup: %+v", l)
	}

	// Distinct keys in parallel get distinct, gap-free sequence numbers.
	var wg2 sync.WaitGroup
	for i := range 16 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			a.Execute(context.Background(), fixture.Intent("effect:p"+string(rune('a'+i)), payload))
		}()
	}
	wg2.Wait()
	ms := s.Mutations()
	if len(ms) != 17 {
		t.Fatalf("%d mutations", len(ms))
	}
	for i, m := range ms {
		if m.Sequence != int64(i+1) {
			t.Fatalf("sequence %d at %d", m.Sequence, i)
		}
	}
}

func TestShutdownDuringDelayAppliesNothing(t *testing.T) {
	s, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Inject(sandbox.Fault{Times: 1, DelayMillis: 60_000}); err != nil {
		t.Fatal(err)
	}
	a := adapterFor(t, s.EffectsURL)
	done := make(chan effect.Receipt, 1)
	go func() {
		r, _ := a.Execute(context.Background(), fixture.Intent("effect:late", payload))
		done <- r
	}()
	for s.Lookup("effect:late", "").Status != httpwire.StatusInProgress {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Outcome != effect.FailedTransient || r.Code != httpwire.CodeInjected || time.Since(start) > 10*time.Second {
		t.Errorf("request caught by shutdown: %+v after %v", r, time.Since(start))
	}
	if len(s.Mutations()) != 0 {
		t.Error("a request interrupted by shutdown was applied")
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8787": true, "127.3.4.5:0": true, "[::1]:9": true, "localhost:1": true,
		"0.0.0.0:8787": false, ":8787": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := sandbox.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
	err := sandbox.Run(context.Background(), sandbox.Config{Addr: "0.0.0.0:0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Run on 0.0.0.0: %v", err)
	}
}

// FuzzMutation drives the handler with arbitrary keys, digest fields and
// bodies. Whatever arrives, nothing panics, every answer is a protocol
// object, and the ledger grows exactly when the request decodes.
func FuzzMutation(f *testing.F) {
	body, _, field := requestBody(f, "effect:1", payload)
	f.Add("effect:1", field, body)
	f.Add("effect:1", field, body[:len(body)-1])
	f.Add("", "", []byte(`{}`))
	f.Add("k", "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", []byte(`{"hello": "world"}`))
	f.Fuzz(func(t *testing.T, key, field string, body []byte) {
		if strings.ContainsAny(key+field, "\r\n\x00") {
			return // not representable as header values
		}
		s, err := sandbox.New(sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec := post(s, key, field, body)
		_, decodeErr := httpwire.DecodeRequest(strings.TrimSpace(key), strings.TrimSpace(field), body)
		switch rec.Code {
		case 201:
			var res map[string]any
			if json.Unmarshal(rec.Body.Bytes(), &res) != nil || res["kind"] != httpwire.KindResult {
				t.Fatalf("201 with %s", rec.Body)
			}
			if len(s.Mutations()) != 1 || decodeErr != nil {
				t.Fatalf("applied %d mutations; decoder said %v", len(s.Mutations()), decodeErr)
			}
		default:
			if _, err := httpwire.DecodeProblem(rec.Body.Bytes()); err != nil {
				t.Fatalf("%d answer is not a problem: %s", rec.Code, rec.Body)
			}
			if len(s.Mutations()) != 0 {
				t.Fatal("a refused request changed the ledger")
			}
		}
	})
}

// FuzzDecodeJournal: a state file is untrusted input at start. Whatever it
// holds, decoding never panics, the valid prefix is within the text, and
// every accepted record is consistent.
func FuzzDecodeJournal(f *testing.F) {
	f.Add([]byte(`{"kind":"SandboxJournal","protocol":"flrh-effect-http/1"}` + "\n"))
	f.Add([]byte(`{"kind":"SandboxJournal","protocol":"flrh-effect-http/1"}` + "\n" + `{"body":{},"content_digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","idempotency_key":"k","sequence":1}` + "\n{"))
	f.Fuzz(func(t *testing.T, text []byte) {
		ms, valid, err := sandbox.DecodeJournal(text)
		if err != nil {
			return
		}
		if valid < 0 || valid > len(text) {
			t.Fatalf("valid prefix %d of %d bytes", valid, len(text))
		}
		again, v2, err := sandbox.DecodeJournal(text[:valid])
		if err != nil || v2 != valid || len(again) != len(ms) {
			t.Fatalf("the valid prefix does not decode to itself: %v", err)
		}
		for i, m := range ms {
			if m.Sequence != int64(i+1) || httpwire.ContentDigest(m.Body) != m.ContentDigest {
				t.Fatalf("accepted an inconsistent mutation %+v", m)
			}
		}
	})
}

// FuzzDecodeLedger: the ledger document is what tools read from a sandbox. Whatever it
// Whatever it holds, decoding never panics and accepted records are
// consistent.
func FuzzDecodeLedger(f *testing.F) {
	f.Add([]byte(`{"kind":"SandboxLedger","protocol":"flrh-effect-http/1","mutations":[]}`))
	f.Add([]byte(`{"kind":"SandboxLedger","protocol":"flrh-effect-http/1","mutations":[{"body":{},"content_digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","idempotency_key":"k","sequence":1}]}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		ms, err := sandbox.DecodeLedger(text)
		if err != nil {
			return
		}
		for i, m := range ms {
			if m.Sequence != int64(i+1) || httpwire.ContentDigest(m.Body) != m.ContentDigest {
				t.Fatalf("accepted an inconsistent mutation %+v", m)
			}
		}
	})
}

// FuzzDecodeFault: admin input never panics, and an accepted rule is one
// Check accepts.
func FuzzDecodeFault(f *testing.F) {
	f.Add([]byte(`{"key":"effect:1","times":1,"drop":true}`))
	f.Add([]byte(`{"times":3,"status":503,"delay_ms":10}`))
	f.Add([]byte(`{"times":1,"status":429,"retry_after":30}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		fl, err := sandbox.DecodeFault(text)
		if err == nil && fl.Check() != nil {
			t.Fatalf("accepted an invalid rule %+v", fl)
		}
	})
}
