package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/redact"
)

// Planted secrets: one an adapter header of the bundle's configuration,
// one a secret parameter of the effect. Each is distinctive, so any copy
// of it anywhere is found.
const (
	plantedAuth   = "Bearer tok-PLANTED-b81d44e0c6a7"
	plantedAPIKey = "sk-live-PLANTED-7f3a9c21e5d0"
)

// secretBundle copies the refund-agent example into a directory and marks
// its adapter's Authorization header and a new api_key parameter secret,
// both read from the environment.
func secretBundle(t *testing.T) string {
	t.Helper()
	return refundExampleWith(t, "refund-secret", func(b []byte) []byte { return withSecrets(t, b) })
}

// refundExampleWith copies the refund-agent example into a directory
// named name, its workflow.json rewritten by edit, and returns the
// directory.
func refundExampleWith(t *testing.T, name string, edit func(manifest []byte) []byte) string {
	t.Helper()
	src := filepath.Join("..", "..", "examples", "refund-agent")
	dst := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "workflow.json" {
			b = edit(b)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func withSecrets(t *testing.T, manifest []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(manifest))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	tool := m["tools"].([]any)[0].(map[string]any)
	tool["parameters"] = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"amount":    map[string]any{"type": "integer"},
			"payee":     map[string]any{"type": "string"},
			"refund_id": map[string]any{"type": "string"},
			"api_key":   map[string]any{"type": "string", "writeOnly": true, "x-flrh-secret-env": "FLRH_TEST_PAYMENTS_API_KEY"},
		},
	}
	ad := m["adapters"].(map[string]any)["refund.pay"].(map[string]any)
	ad["headers"] = map[string]any{"Authorization": map[string]any{"env": "FLRH_TEST_PAYMENTS_AUTH"}}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// capture is the destination: the sandbox, behind a handler that keeps
// the headers of every request it receives.
type capture struct {
	mu      sync.Mutex
	headers []http.Header
}

func (c *capture) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.headers = append(c.headers, r.Header.Clone())
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// capturedSandbox serves a sandbox behind a capture of every request's
// headers until the test ends, and returns the sandbox, the capture and
// the effects URL.
func capturedSandbox(t *testing.T) (*sandbox.Sandbox, *capture, string) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dest := &capture{}
	ts := httptest.NewServer(dest.wrap(sb))
	t.Cleanup(ts.Close)
	return sb, dest, ts.URL + sandbox.EffectsPath
}

func (c *capture) mutationsWith(name, value string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.headers {
		if h.Get(name) == value && h.Get("Idempotency-Key") != "" {
			n++
		}
	}
	return n
}

// TestSecretsAppearNowhere plants two secrets (an adapter header in the
// bundle's configuration and a secret effect parameter), runs a refund
// that needs approval end to end through "flrh serve" (its runner and
// HTTP API) against a sandbox destination, approves it, and then scans
// everything written: every byte of the SQLite database and its WAL, the
// server's logs, every API response (run list and page, events, trace,
// tickets, FHRs, scorecards, verify, replay) and the CLI's run
// show/events/trace --json. Neither secret, nor a plain SHA-256 of
// either, appears anywhere; the destination received both with the one
// mutation. The secrets come from the environment, or from files named by
// NAME_FILE variables (as container platforms mount them), each file
// ending in a line break the destination must not receive.
func TestSecretsAppearNowhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	t.Run("from the environment", func(t *testing.T) { secretsAppearNowhere(t, bin, false) })
	t.Run("from files", func(t *testing.T) { secretsAppearNowhere(t, bin, true) })
}

func secretsAppearNowhere(t *testing.T, bin string, fromFiles bool) {
	bundleDir := secretBundle(t)
	dir := t.TempDir()

	sb, dest, effectsURL := capturedSandbox(t)

	tokens := filepath.Join(dir, "tokens.json")
	const tokOp, tokApprover = "tok-op-0c5e1b7a93", "tok-fin-6d2a8f41c0"
	if err := os.WriteFile(tokens, []byte(`{"tokens":[{"actor":"oscar","roles":["operator"],"token":"`+tokOp+`"},
 {"actor":"finance-lead","roles":["approver"],"token":"`+tokApprover+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "flrh.db")
	env := []string{"FLRH_PAYMENTS_URL=" + effectsURL, "FLRH_TEST_PAYMENTS_API_KEY=" + plantedAPIKey,
		"FLRH_TEST_PAYMENTS_AUTH=" + plantedAuth}
	if fromFiles {
		env = env[:1]
		for name, secret := range map[string]string{"FLRH_TEST_PAYMENTS_API_KEY": plantedAPIKey, "FLRH_TEST_PAYMENTS_AUTH": plantedAuth} {
			f := filepath.Join(dir, strings.ToLower(name))
			if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			env = append(env, name+"_FILE="+f)
		}
	}
	serve := exec.Command(bin, "serve", "--store", "sqlite:"+dbPath, "--workflows", bundleDir, "--addr", "127.0.0.1:0",
		"--tokens", tokens, "--runners", "2")
	serve.Env = append(os.Environ(), env...)
	var logs bytes.Buffer
	serve.Stderr = &logs
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			serve.Process.Signal(syscall.SIGTERM)
			serve.Wait()
		}
	}
	defer stop()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("serve did not announce itself: %v\n%s", err, logs.String())
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("serve said %q", line)
	}
	base := strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
	var everything bytes.Buffer // every API response and CLI output
	everything.WriteString(line)

	call := func(method, path, token, body string) []byte {
		t.Helper()
		status, b := bearerCall(t, base, method, path, token, body)
		everything.Write(b)
		if status/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, status, b)
		}
		return b
	}
	page := func() map[string]any {
		t.Helper()
		var p map[string]any
		if err := json.Unmarshal(call("GET", "/v1/runs/sec", tokOp, ""), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitFor := func(what string, cond func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			p := page()
			if cond(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("run never %s: %v\nlogs:\n%s", what, p, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	call("POST", "/v1/runs", tokOp, `{"workflow":"refund-agent","run_id":"sec","input":{"type":"refund.requested/1","payload":{"refund_id":"r-sec","amount":400,"payee":"alice","reason":"damaged item"}}}`)
	p := waitFor("waited for approval", func(p map[string]any) bool { w, _ := p["waiting"].([]any); return len(w) > 0 })
	need := p["waiting"].([]any)[0].(map[string]any)
	if dest.mutationsWith("Authorization", plantedAuth) != 0 {
		t.Fatal("the destination was reached before approval")
	}
	call("POST", "/v1/runs/sec/approve", tokApprover, fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need["request_id"], need["request_digest"]))
	p = waitFor("ended", func(p map[string]any) bool {
		r := p["run"].(map[string]any)
		return r["outcome"] != "" && r["outcome"] != nil
	})
	if r := p["run"].(map[string]any); r["outcome"] != "success" {
		t.Fatalf("the run ended %v\nlogs:\n%s", r["outcome"], logs.String())
	}
	for _, path := range []string{"/v1/runs", "/v1/runs/sec", "/v1/runs/sec/events", "/v1/runs/sec/trace", "/v1/runs/sec/tickets",
		"/v1/runs/sec/fhr", "/v1/runs/sec/scorecard", "/v1/runs/sec/verify", "/v1/runs/sec/replay", "/v1/workflows"} {
		call("GET", path, tokOp, "")
	}
	if !strings.Contains(everything.String(), "h.outcome") || !strings.Contains(everything.String(), "h.fhr") {
		t.Fatalf("the trace response has no outcome or FHR records")
	}
	// The database as the running server left it (its WAL not yet folded
	// into the main file), then after it stopped.
	places := map[string][]byte{}
	readDB := func(when string) {
		t.Helper()
		files, _ := filepath.Glob(dbPath + "*")
		if len(files) == 0 {
			t.Fatal("no database files")
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			places[filepath.Base(f)+" "+when] = b
		}
	}
	readDB("while serving")
	stop()
	readDB("after stopping")

	for _, args := range [][]string{
		{"run", "show", "sec", "--workflows", bundleDir},
		{"run", "events", "sec", "--json"},
		{"run", "trace", "sec", "--json"},
		{"run", "export", "sec"},
		{"verify", "sec", "--json"},
		{"replay", "sec", "--workflows", bundleDir},
	} {
		o, err := flrh(bin, env, append(args, "--store=sqlite:"+dbPath)...)
		if err != nil {
			t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		everything.WriteString(o)
	}

	// The destination received both secrets, with exactly one mutation.
	if n := dest.mutationsWith("Authorization", plantedAuth); n != 1 {
		t.Fatalf("the destination received the Authorization header with %d mutations, want 1", n)
	}
	if n := dest.mutationsWith(redact.HeaderName("api_key"), plantedAPIKey); n != 1 {
		t.Fatalf("the destination received the api_key parameter with %d mutations, want 1", n)
	}
	if n := len(sb.Mutations()); n != 1 {
		t.Fatalf("%d mutations, want 1", n)
	}

	places["server logs"], places["API responses and CLI output"] = logs.Bytes(), everything.Bytes()
	if _, ok := places["flrh.db-wal while serving"]; !ok || everything.Len() < 1000 || logs.Len() == 0 {
		t.Fatalf("too little was scanned: %d places, %d bytes of output, %d of logs", len(places), everything.Len(), logs.Len())
	}
	for _, secret := range []string{plantedAuth, plantedAPIKey} {
		sum := sha256.Sum256([]byte(secret))
		forms := map[string]string{
			"the secret":           secret,
			"its distinctive part": secret[strings.Index(secret, "PLANTED"):],
			"its SHA-256 (hex)":    hex.EncodeToString(sum[:]),
			"its SHA-256 (base64)": base64.StdEncoding.EncodeToString(sum[:]),
			"its base64":           base64.StdEncoding.EncodeToString([]byte(secret)),
		}
		for where, b := range places {
			for form, v := range forms {
				if bytes.Contains(b, []byte(v)) {
					t.Errorf("%s holds %s (%q)", where, form, secret)
				}
			}
		}
	}
}
