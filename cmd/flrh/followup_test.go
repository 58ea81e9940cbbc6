package main

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/internal/testpki"
)

// chatHosts stands for Slack's and Discord's hosts, reached through an
// HTTPS proxy (HTTPS_PROXY) that ends TLS itself, under a certificate
// of a test authority the client trusts (SSL_CERT_FILE): what a serve
// process posts to hooks.slack.com lands here.
type chatHosts struct {
	mu      sync.Mutex
	got     map[string][]string // by host and path
	refuse  atomic.Bool         // answer 503 while set
	tlsConf *tls.Config
}

// newChatHosts starts the proxy and writes its authority to caFile; it
// returns the proxy's URL.
func newChatHosts(t *testing.T, caFile string) (*chatHosts, string) {
	t.Helper()
	pki := testpki.New(t, "flrh test authority")
	leaf := pki.Issue(t, "chat", false, "hooks.slack.com", "discord.com")
	if err := os.WriteFile(caFile, pki.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &chatHosts{got: map[string][]string{}, tlsConf: &tls.Config{Certificates: []tls.Certificate{leaf}}}
	srv := httptest.NewServer(http.HandlerFunc(c.connect))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// connect takes a CONNECT, ends TLS as the host asked for, and answers
// each request on the tunnel.
func (c *chatHosts) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
	tc := tls.Server(conn, c.tlsConf)
	br := bufio.NewReader(tc)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		status, header := http.StatusOK, http.Header{}
		if c.refuse.Load() {
			// Asked again in 3 s, not 1: the test kills the process
			// between a failure written and the next attempt.
			status = http.StatusServiceUnavailable
			header.Set("Retry-After", "3")
		}
		c.mu.Lock()
		where := req.Host + req.URL.Path
		c.got[where] = append(c.got[where], string(body))
		c.mu.Unlock()
		resp := &http.Response{StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Header: header, Body: io.NopCloser(strings.NewReader("ok")), ContentLength: 2}
		if resp.Write(tc) != nil {
			return
		}
	}
}

func (c *chatHosts) messages(where string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got[where]...)
}

// await waits up to 30 s for a message to where that says words, and
// returns the messages there.
func (c *chatHosts) await(t *testing.T, where, words string) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got := c.messages(where)
		for _, m := range got {
			if strings.Contains(m, words) {
				return got
			}
		}
	}
	t.Fatalf("no message to %s says %q: %q", where, words, c.messages(where))
	return nil
}

const followUpYAML = `webhooks:
  - name: chat
    scheme: slack
    secret_env: SLACK_SECRET
    workflow: refund-agent
    follow_up: true
    events: [/refund]
    run_id: "chat-{$delivery}"
    input: {refunds: [{id: "r-{$delivery}", amount: 15, payee: "{/user_name}", reason: "{$event}"}]}
  - name: big
    scheme: slack
    secret_env: SLACK_SECRET
    workflow: refund-agent
    follow_up: true
    run_id: "big-{$delivery}"
    input: {refunds: [{id: "r-{$delivery}", amount: 900, payee: "{/user_name}", reason: "{$event}"}]}
`

// A serve process whose webhooks have follow_up, and no --notify, tells
// the person who typed a Slack command what became of its run, at the
// command's response_url: that it ended; and, for one waiting for an
// approval while Slack was failing, after the process was killed
// (SIGKILL) and restarted, from the follow-up and notice its store kept.
func TestFollowUpsOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	chat, proxy := newChatHosts(t, filepath.Join(dir, "ca.pem"))
	file := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(file, []byte(followUpYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLACK_SECRET=8f742231b10e8888abcd99yyyzzz85a5", "HTTPS_PROXY=" + proxy, "https_proxy=" + proxy, "NO_PROXY=", "no_proxy=",
		"SSL_CERT_FILE=" + filepath.Join(dir, "ca.pem")}
	sandbox := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	storeFlag := "sqlite:" + filepath.Join(dir, "flrh.db")
	serve := func() *serveProc {
		return startServe(t, bin, env, "--store", storeFlag, "--destination", sandbox+"/v1/effects", "--webhooks", file, "--lease-ttl", crashLeaseTTL)
	}
	command := func(p *serveProc, hook, trigger string) string {
		t.Helper()
		form := "command=%2Frefund&user_name=roadrunner&trigger_id=" + trigger + "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1%2F" + trigger + "%2Fabc"
		body := filepath.Join(dir, trigger+".form")
		if err := os.WriteFile(body, []byte(form), 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := flrhCode(t, bin, env, "webhook", "send", hook, "--webhooks", file, "--body", body, "--url", p.base)
		if code != 0 || !strings.Contains(out, "You will be told here when it waits for someone or ends.") {
			t.Fatalf("send %s: %d\n%s", trigger, code, out)
		}
		return out
	}

	if out, code := flrhCode(t, bin, env, "webhook", "check", "--webhooks", file); code != 0 ||
		!strings.Contains(out, "webhook chat: slack, 1 secrets; events /refund; to run chat-{$delivery} of refund-agent, starting it when it does not exist; the person who sent it told what becomes of the run") {
		t.Fatalf("check: %d\n%s", code, out)
	}
	p := serve()
	command(p, "chat", "t1")
	if got := awaitOutcome(t, p.base, "chat-t1"); got != "success" {
		t.Fatalf("chat-t1 ended %q", got)
	}
	got := chat.await(t, "hooks.slack.com/commands/T1/t1/abc", "ended: success")
	if len(got) != 1 || !strings.Contains(got[0], `"response_type":"ephemeral"`) || !strings.Contains(got[0], `flrh: Run *chat-t1* (refund-agent@`) {
		t.Fatalf("the person told %q", got)
	}

	// Slack fails (503) while a large refund comes to wait for its
	// approval: the notice waits, with its follow-up, in the store.
	chat.refuse.Store(true)
	command(p, "big", "t2")
	awaitState(t, p.base, "big-t2", "WAIT_APPROVAL")
	chat.await(t, "hooks.slack.com/commands/T1/t2/abc", "waits for an approval")
	// Killed once the failure is written (the notice to be tried again),
	// not while the deliverer holds it: a notice held by a deliverer that
	// died waits for its hold to pass, minutes.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ := flrhCode(t, bin, env, "store", "check", "--store", storeFlag, "--json")
		if strings.Contains(out, "503 Service Unavailable") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failed follow-up never written:\n%s", out)
		}
	}
	p.cmd.Process.Kill()
	<-p.exited
	chat.refuse.Store(false)
	tried := len(chat.messages("hooks.slack.com/commands/T1/t2/abc"))
	p = serve()
	for deadline := time.Now().Add(30 * time.Second); len(chat.messages("hooks.slack.com/commands/T1/t2/abc")) == tried; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted process never told the person: %d tries", tried)
		}
	}
	time.Sleep(500 * time.Millisecond) // nothing more is sent once Slack took it
	if got := chat.messages("hooks.slack.com/commands/T1/t2/abc"); len(got) != tried+1 || !strings.Contains(got[tried], "waits for an approval (1 request)") {
		t.Fatalf("after the restart: %d messages, %d before it: %q", len(got), tried, got)
	}
}
