package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/internal/smtptest"
	"flrh.dev/flrh/internal/testpki"
	"flrh.dev/flrh/notify"
	"flrh.dev/flrh/store"
)

// hookReceiver is a webhook receiver that checks each delivery's
// signature and records it; while hold is set, the first delivery of
// that kind is not answered until release is closed.
type hookReceiver struct {
	t        *testing.T
	secret   []byte
	mu       sync.Mutex
	got      []hookDelivery
	hold     string
	held     chan struct{} // closed when a held delivery arrived
	free     chan struct{} // closed to answer it
	freeOnce sync.Once
}

type hookDelivery struct {
	ID, Kind, Attempt string
	EscalatedAfter    int64 // the envelope's escalated_after_seconds
	At                time.Time
	Notice            struct {
		Kind     string   `json:"kind"`
		RunID    string   `json:"run_id"`
		State    string   `json:"state"`
		Outcome  string   `json:"outcome"`
		Requests []string `json:"requests"`
	}
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := notify.Verify(h.secret, body, r.Header.Get(notify.SignatureHeader), time.Now(), time.Minute); err != nil {
		h.t.Errorf("delivery refused: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var env struct {
		ID             string          `json:"id"`
		EscalatedAfter int64           `json:"escalated_after_seconds"`
		Notice         json.RawMessage `json:"notice"`
	}
	d := hookDelivery{ID: r.Header.Get("Flrh-Notice-Id"), Kind: r.Header.Get("Flrh-Notice-Kind"), Attempt: r.Header.Get("Flrh-Notice-Attempt"), At: time.Now()}
	if err := json.Unmarshal(body, &env); err != nil || env.ID != d.ID || json.Unmarshal(env.Notice, &d.Notice) != nil {
		h.t.Errorf("delivery %s: %s", d.ID, body)
	}
	d.EscalatedAfter = env.EscalatedAfter
	h.mu.Lock()
	h.got = append(h.got, d)
	hold := h.hold != "" && d.Kind == h.hold
	if hold {
		h.hold = ""
	}
	h.mu.Unlock()
	if hold {
		close(h.held)
		<-h.free
	}
	w.WriteHeader(http.StatusNoContent)
}

// await waits for a delivery of kind for run and returns it.
func (h *hookReceiver) await(kind, run, attempt string) hookDelivery {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, d := range h.got {
			if d.Kind == kind && d.Notice.RunID == run && (attempt == "" || d.Attempt == attempt) {
				h.mu.Unlock()
				return d
			}
		}
		h.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("no %s notice (attempt %q) for %s in %+v", kind, attempt, run, h.deliveries())
	return hookDelivery{}
}

// newHookReceiver starts a receiver of deliveries signed with secret and
// returns it with its URL; it stops with the test, a held delivery
// answered first.
func newHookReceiver(t *testing.T, secret string) (*hookReceiver, string) {
	h := &hookReceiver{t: t, secret: []byte(secret), held: make(chan struct{}), free: make(chan struct{})}
	recv := httptest.NewServer(h)
	t.Cleanup(recv.Close)
	t.Cleanup(h.release) // runs first: the held handler returns
	return h, recv.URL + "/hooks/flrh"
}

// holdNext has the next delivery of kind held until release.
func (h *hookReceiver) holdNext(kind string) {
	h.mu.Lock()
	h.hold = kind
	h.mu.Unlock()
}

// waitHeld waits for the held delivery to arrive.
func (h *hookReceiver) waitHeld() {
	h.t.Helper()
	select {
	case <-h.held:
	case <-time.After(30 * time.Second):
		h.t.Fatal("the delivery to hold never came")
	}
}

// release answers the held delivery (once; later calls do nothing).
func (h *hookReceiver) release() { h.freeOnce.Do(func() { close(h.free) }) }

// deliveredOnce checks, after a moment for anything late, that n
// notices were delivered, each once, but twice, delivered twice.
func (h *hookReceiver) deliveredOnce(n int, twice string) {
	h.t.Helper()
	time.Sleep(1500 * time.Millisecond) // anything more would come within a pass or two
	counts := map[string]int{}
	for _, d := range h.deliveries() {
		counts[d.ID]++
	}
	if len(counts) != n {
		h.t.Fatalf("%d notices delivered, want %d: %+v", len(counts), n, counts)
	}
	for id, k := range counts {
		if want := map[bool]int{true: 2, false: 1}[id == twice]; k != want {
			h.t.Errorf("%s delivered %d times, want %d", id, k, want)
		}
	}
}

func (h *hookReceiver) deliveries() []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.got...)
}

// TestNoticesThroughServe runs flrh serve with notices (the webhook's URL
// in FLRH_NOTIFY_URL): a refund that needs an approval and its end reach
// the webhook signed, with the secret read from a file; a small refund's end too. Then the process is
// killed while the receiver holds a delivery it has taken and not
// answered: restarted, it delivers the notice again under the same id as
// its second attempt, once its hold has passed, and every other notice
// was delivered once. No notice carries the refund's amount or payee.
func TestNoticesThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	secret := "whsec-0f3a9c51d2e7b8461a"
	secretFile := filepath.Join(dir, "hook-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, hookURL := newHookReceiver(t, secret)
	// The URL from the environment, as one holding a credential is given.
	env := []string{"FLRH_NOTIFY_SECRET_FILE=" + secretFile, "FLRH_NOTIFY_URL=" + hookURL}
	args := []string{"--store", "sqlite:" + filepath.Join(dir, "flrh.db"), "--destination", sb + "/v1/effects", "--notify-timeout", "1s", "--lease-ttl", "2s"}
	p := startServe(t, bin, env, args...)

	startRefund(t, p.base, "big", 800)
	if d := h.await("approval_waiting", "big", "1"); d.Notice.State != "WAIT_APPROVAL" || len(d.Notice.Requests) != 1 {
		t.Fatalf("approval notice %+v", d)
	}
	if !approveWaiting(p.base, "big") {
		t.Fatal("approval refused")
	}
	if d := h.await("run_ended", "big", "1"); d.Notice.Outcome != "success" || d.Notice.State != "SUCCEEDED" {
		t.Fatalf("end notice %+v", d)
	}
	startRefund(t, p.base, "small", 40)
	h.await("run_ended", "small", "1")

	// Killed while the receiver holds a delivery.
	h.holdNext("approval_waiting")
	startRefund(t, p.base, "crash", 900)
	h.waitHeld()
	p.cmd.Process.Kill()
	<-p.exited
	h.release()
	first := h.await("approval_waiting", "crash", "1")
	// Approved on the command line while no server runs: the command's
	// runner writes the run's end notice, since the store is delivered
	// from (its notify duty is held).
	if out, err := flrh(bin, nil, "approve", "crash", first.Notice.Requests[0], "--as", "finance-lead", "--store", args[1],
		"--destination", sb+"/v1/effects", "--wait", "20s"); err != nil || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("approve on the command line: %v\n%s", err, out)
	}
	// The store says the notices wait.
	out, err := flrh(bin, nil, "store", "check", "--json", "--store", args[1])
	var rep struct {
		Pending int64 `json:"notices_pending"`
		Oldest  struct {
			ID       string `json:"id"`
			Attempts int    `json:"attempts"`
		} `json:"oldest_notice"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Pending != 2 || rep.Oldest.ID != first.ID || rep.Oldest.Attempts != 1 {
		t.Fatalf("store check after the kill: %v, %+v\n%s", err, rep, out)
	}
	// And who delivers them: the killed server holds the notify duty for a
	// day, so runners write notices meanwhile.
	if out, err := flrh(bin, nil, "store", "check", "--store", args[1]); err != nil || !strings.Contains(out, "notices not yet delivered: 2 (flrh serve --notify); the oldest, "+first.ID+", written ") ||
		!strings.Contains(out, "duty notify: held by serve:") {
		t.Fatalf("store check after the kill: %v\n%s", err, out)
	}
	start := time.Now()
	p2 := startServe(t, bin, env, args...)
	again := h.await("approval_waiting", "crash", "2")
	t.Logf("delivered again %s after the restart", time.Since(start).Round(time.Millisecond))
	if again.ID != first.ID {
		t.Fatalf("delivered again as %s, first as %s", again.ID, first.ID)
	}
	if d := h.await("run_ended", "crash", "1"); d.Notice.Outcome != "success" {
		t.Fatalf("end notice %+v", d)
	}

	h.deliveredOnce(5, first.ID)
	metrics := scrape(t, p2.base)
	for _, want := range []string{`flrh_notices_total{kind="approval_waiting",outcome="delivered",route="default"} 1`,
		`flrh_notices_total{kind="run_ended",outcome="delivered",route="default"} 1`, "flrh_notices_backlog 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
	for _, logs := range []string{p.stderr.String(), p2.stderr.String()} {
		if strings.Contains(logs, secret) || strings.Contains(logs, "/hooks/flrh") {
			t.Error("the logs hold the signing secret or the webhook's path")
		}
		if !strings.Contains(logs, `"msg":"notices delivered to a webhook","route":"default","host":"127.0.0.1:`) {
			t.Errorf("the logs do not say where notices go:\n%s", logs)
		}
	}
}

// serve refuses --notify without a secret, with one too short, with a
// URL it cannot deliver to, and the other notify flags without --notify.
func TestNotifyFlagsChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "flrh.db")
	routes := func(name, text string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := routes("good.json", `{"routes": [{"name": "a", "url_env": "HOOK_URL"}]}`)
	o365 := routes("o365.yaml", "routes:\n  - name: o365\n    url_env: MAIL_URL\n    format: email\n    from: alerts@example.com\n    to: [ops@example.com]\n"+
		"    oauth2: {token_url: 'https://login.example.com/t', client_id: c, client_secret_env: MAIL_CLIENT_SECRET, scope: mail}\n")
	badKind := routes("bad.yaml", "routes:\n  - name: a\n    url: http://127.0.0.1:9/h\n  - name: b\n    url: http://127.0.0.1:9/h\n    kinds: [run_paged]\n")
	for _, tc := range []struct {
		env  []string
		args []string
		says string
	}{
		{nil, []string{"--notify", "http://127.0.0.1:9/h"}, "FLRH_NOTIFY_SECRET"},
		{[]string{"HOOK=short"}, []string{"--notify", "http://127.0.0.1:9/h", "--notify-secret-env", "HOOK"}, "fewer than 16"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify", "ftp://x/h"}, "not an http or https URL"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef", "FLRH_NOTIFY_SECRET_FILE=/nonexistent"}, []string{"--notify", "http://127.0.0.1:9/h"}, "both set"},
		{nil, []string{"--notify-timeout", "5s"}, "need --notify"},
		{nil, []string{"--notify-link", "https://flrh.example.com"}, "need --notify"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify", "http://127.0.0.1:9/h", "--notify-format", "teams"}, `format "teams" is not flrh, slack, template or email`},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify", "http://127.0.0.1:9/h", "--notify-kinds", "run_ended,run_started"}, "not a kind of notice"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify", "http://127.0.0.1:9/h", "--notify-kinds", ""}, "at least one kind"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify", "http://127.0.0.1:9/h", "--notify-link", "flrh.example.com"}, "not an http or https address"},
		{[]string{"FLRH_NOTIFY_URL=http://127.0.0.1:9/h"}, []string{"--notify", "http://127.0.0.1:9/h"}, "both set"},
		{[]string{"FLRH_NOTIFY_URL=ftp://x/T0/s3cr3t", "FLRH_NOTIFY_SECRET=0123456789abcdef"}, nil, "not an http or https URL"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef", "HOOK_URL=http://127.0.0.1:9/h"}, []string{"--notify-routes", good, "--notify", "http://127.0.0.1:9/h"}, "both set"},
		{[]string{"FLRH_NOTIFY_URL=http://127.0.0.1:9/h"}, []string{"--notify-routes", good}, "both set"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef", "HOOK_URL=http://127.0.0.1:9/h"}, []string{"--notify-routes", good, "--notify-kinds", "run_ended"}, "each route's"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify-routes", badKind}, `route 1, kinds: "run_paged" is not a kind`},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify-routes", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef"}, []string{"--notify-routes", good}, `route "a": set HOOK_URL (or HOOK_URL_FILE)`},
		{[]string{"HOOK_URL=http://127.0.0.1:9/h"}, []string{"--notify-routes", good}, `route "a": set FLRH_NOTIFY_SECRET`},
		{[]string{"FLRH_NOTIFY_SECRET=0123456789abcdef", "HOOK_URL=ftp://x/T0/s3cr3t"}, []string{"--notify-routes", good}, `route "a": the webhook URL is not`},
		{[]string{"MAIL_URL=smtp://alerts%40example.com@smtp.example.com"}, []string{"--notify-routes", o365}, `route "o365": set MAIL_CLIENT_SECRET (or MAIL_CLIENT_SECRET_FILE) to its OAuth 2.0 client's secret`},
		{[]string{"MAIL_URL=smtp://s3cr3t:pw@smtp.example.com", "MAIL_CLIENT_SECRET=s3cr3t"}, []string{"--notify-routes", o365}, `route "o365": with oauth2, the URL holds no password`},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--store", db}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.says) || strings.Contains(string(out), "s3cr3t") {
			t.Errorf("serve %v: %v, said %q; want it to say %q, and name no URL", tc.args, err, out, tc.says)
		}
	}
}

// TestNoticesThroughServePostgres runs two flrh serve processes with
// --notify on one PostgreSQL store: every notice of runs started through
// either is delivered once, by one of them. The process holding a
// delivery the receiver has taken and not answered is killed; the other
// delivers the notice again under the same id once the hold passes.
func TestNoticesThroughServePostgres(t *testing.T) {
	spec, st := pgStoreURL(t)
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	secret := "whsec-pg-5b19e07c3d4a2f68"
	h, hookURL := newHookReceiver(t, secret)
	env := []string{"FLRH_NOTIFY_SECRET=" + secret}
	args := []string{"--store", spec, "--destination", sb + "/v1/effects", "--notify", hookURL, "--notify-timeout", "1s"}
	procs := []*serveProc{startServe(t, bin, env, args...), startServe(t, bin, env, args...)}

	for i, id := range []string{"pg-a", "pg-b", "pg-c", "pg-d"} {
		startRefund(t, procs[i%2].base, id, 30+i)
	}
	for i, id := range []string{"pg-big-1", "pg-big-2"} {
		startRefund(t, procs[i%2].base, id, 850)
		h.await("approval_waiting", id, "1")
		if !approveWaiting(procs[(i+1)%2].base, id) {
			t.Fatalf("approval of %s refused", id)
		}
	}
	for _, id := range []string{"pg-a", "pg-b", "pg-c", "pg-d", "pg-big-1", "pg-big-2"} {
		h.await("run_ended", id, "1")
	}

	h.holdNext("approval_waiting")
	startRefund(t, procs[0].base, "pg-crash", 950)
	h.waitHeld()
	var holder string
	if err := st.Pool().QueryRow(t.Context(), `SELECT holder FROM notices WHERE run_id = 'pg-crash'`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	victim, survivor := procs[0], procs[1]
	if holder == procs[1].owner()+"/notify" {
		victim, survivor = procs[1], procs[0]
	} else if holder != procs[0].owner()+"/notify" {
		t.Fatalf("the notice is held by %q, neither process", holder)
	}
	victim.cmd.Process.Kill()
	<-victim.exited
	h.release()
	first := h.await("approval_waiting", "pg-crash", "1")
	again := h.await("approval_waiting", "pg-crash", "2")
	if again.ID != first.ID {
		t.Fatalf("delivered again as %s, first as %s", again.ID, first.ID)
	}
	if !approveWaiting(survivor.base, "pg-crash") {
		t.Fatal("approval refused")
	}
	h.await("run_ended", "pg-crash", "1")
	h.deliveredOnce(10, first.ID)
}

// With --notify-format slack, --notify-link and --notify-kinds, serve
// posts a chat sentence linking the approvals inbox for the approval a
// large refund waits on, and nothing for the runs that end.
func TestSlackNoticesThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	secret := "whsec-slack-7c0d3e9a51b2"
	chat := newTextReceiver(t, secret)
	p := startServe(t, bin, []string{"FLRH_NOTIFY_SECRET=" + secret}, "--store", "sqlite:"+filepath.Join(t.TempDir(), "flrh.db"),
		"--destination", sb+"/v1/effects", "--notify", chat.url, "--notify-format", "slack", "--notify-link", "https://flrh.example.com",
		"--notify-kinds", "approval_waiting,choice_waiting")
	approveBigAfterSmall(t, p.base, chat)
	time.Sleep(1500 * time.Millisecond) // the ends' notices, skipped
	want := "flrh: Run *big* (refund-agent@1) waits for an approval (1 request). <https://flrh.example.com/ui/#/inbox|Open the approvals inbox>"
	if texts := chat.texts(); len(texts) != 1 || texts[0] != want {
		t.Fatalf("texts %q, want [%q]", texts, want)
	}
	if m := scrape(t, p.base); !strings.Contains(m, `flrh_notices_total{kind="run_ended",outcome="skipped",route="default"} 2`) {
		t.Errorf("the metrics do not count the two ends skipped")
	}
}

// textReceiver is a chat's incoming webhook: it takes a JSON object of
// one member ({"text": ...} from Slack's format, {"content": ...} from a
// Discord-style template), checks the signature, and keeps its value.
type textReceiver struct {
	mu  sync.Mutex
	got []string
	url string
}

func newTextReceiver(t *testing.T, secret string) *textReceiver {
	rc := &textReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]string
		if err := json.Unmarshal(body, &m); err != nil || len(m) != 1 ||
			notify.Verify([]byte(secret), body, r.Header.Get(notify.SignatureHeader), time.Now(), time.Minute) != nil {
			t.Errorf("delivery %s", body)
		}
		rc.mu.Lock()
		for _, text := range m {
			rc.got = append(rc.got, text)
		}
		rc.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/services/T0/B0/s3cr3t"
	return rc
}

func (rc *textReceiver) texts() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.got...)
}

// approveBigAfterSmall starts a small refund (paid at once) and a big
// one (waiting for an approval), waits for chat to hear of something,
// approves the big one, and waits for both to succeed.
func approveBigAfterSmall(t *testing.T, base string, chat *textReceiver) {
	t.Helper()
	startRefund(t, base, "small", 30)
	startRefund(t, base, "big", 800)
	for deadline := time.Now().Add(30 * time.Second); len(chat.texts()) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !approveWaiting(base, "big") {
		t.Fatal("approval refused")
	}
	for _, id := range []string{"small", "big"} {
		if o := awaitOutcome(t, base, id); o != "success" {
			t.Fatalf("run %s: outcome %q", id, o)
		}
	}
}

// scrape reads the server's metrics.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestNoticeRoutesThroughServe runs flrh serve with a routes file in
// YAML: a chat route (its URL in a file a variable names, its own
// secret, Slack's format) takes the refund agent's approvals alone; an
// audit route (the URL written in the file) takes everything; an
// operations route takes the operations agent's runs alone, so nothing
// here. Each receives exactly its notices, signed with its secret, and
// the metrics count them by route. flrh notify test posts to every
// route and names the one that refuses.
func TestNoticeRoutesThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	chatSecret, auditSecret := "whsec-chat-5b1f0e7d93a2", "whsec-audit-0d9c2b8e4f61"
	chat := newTextReceiver(t, chatSecret)
	audit, auditURL := newHookReceiver(t, auditSecret)
	ops, opsURL := newHookReceiver(t, auditSecret)
	if err := os.WriteFile(filepath.Join(dir, "chat-url"), []byte(chat.url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	routes := filepath.Join(dir, "notify-routes.yaml")
	discord := newTextReceiver(t, auditSecret)
	discordURL := discord.url
	writeRoutes := func(opsURL string) {
		t.Helper()
		yaml := `# where people hear of runs
routes:
  - name: approvals
    url_env: CHAT_URL
    secret_env: CHAT_SECRET
    format: slack
    kinds: [approval_waiting, choice_waiting]
    workflows: [refund-agent]
  - name: audit
    url: ` + auditURL + `
  - name: ops
    url: ` + opsURL + `
    workflows: [ops-agent]
  - name: discord
    url: ` + discordURL + `
    format: template
    kinds: [run_ended]
    template: '{"content": {{json .Text}}}'
`
		if err := os.WriteFile(routes, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeRoutes(opsURL)
	env := []string{"CHAT_URL_FILE=" + filepath.Join(dir, "chat-url"), "CHAT_SECRET=" + chatSecret, "FLRH_NOTIFY_SECRET=" + auditSecret}
	p := startServe(t, bin, env, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--destination", sb+"/v1/effects",
		"--notify-routes", routes, "--notify-link", "https://flrh.example.com")
	approveBigAfterSmall(t, p.base, chat)
	audit.await(store.NoticeApproval, "big", "1")
	audit.await(store.NoticeEnded, "small", "1")
	audit.await(store.NoticeEnded, "big", "1")
	audit.deliveredOnce(3, "")
	want := "flrh: Run *big* (refund-agent@1) waits for an approval (1 request). <https://flrh.example.com/ui/#/inbox|Open the approvals inbox>"
	if texts := chat.texts(); len(texts) != 1 || texts[0] != want {
		t.Fatalf("the chat's texts %q, want [%q]", texts, want)
	}
	if got := ops.deliveries(); len(got) != 0 {
		t.Fatalf("the operations route took %+v", got)
	}
	ends := discord.texts()
	slices.Sort(ends)
	if want := []string{"flrh: Run big (refund-agent@1) ended: success. Open the run: https://flrh.example.com/ui/#/run/big",
		"flrh: Run small (refund-agent@1) ended: success. Open the run: https://flrh.example.com/ui/#/run/small"}; !slices.Equal(ends, want) {
		t.Fatalf("the templated route's texts %q, want %q", ends, want)
	}
	m := scrape(t, p.base)
	for _, line := range []string{
		`flrh_notices_total{kind="approval_waiting",outcome="delivered",route="approvals"} 1`,
		`flrh_notices_total{kind="run_ended",outcome="skipped",route="approvals"} 2`,
		`flrh_notices_total{kind="approval_waiting",outcome="delivered",route="audit"} 1`,
		`flrh_notices_total{kind="run_ended",outcome="delivered",route="audit"} 2`,
		`flrh_notices_total{kind="run_ended",outcome="skipped",route="ops"} 2`,
		`flrh_notices_total{kind="approval_waiting",outcome="skipped",route="ops"} 1`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("the metrics lack %s", line)
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	if logs := p.stderr.String(); strings.Contains(logs, "s3cr3t") || !strings.Contains(logs, `"route":"approvals"`) {
		t.Error("the chat's URL reached the logs")
	}

	// One test notice to each route; a route that refuses is named.
	if out, err := flrh(bin, env, "notify", "test", "--notify-routes", routes); err != nil || !strings.Contains(out, "every route took the test notice (4)") {
		t.Fatalf("notify test: %v\n%s", err, out)
	}
	if len(chat.texts()) != 2 || len(audit.deliveries()) != 4 || len(ops.deliveries()) != 1 || len(discord.texts()) != 3 {
		t.Fatalf("test notices: chat %d, audit %d, ops %d, discord %d", len(chat.texts()), len(audit.deliveries()), len(ops.deliveries()), len(discord.texts()))
	}
	// One route alone; a route the file does not have; --route without a file.
	if out, err := flrh(bin, env, "notify", "test", "--notify-routes", routes, "--route", "discord"); err != nil || !strings.Contains(out, "(1)") {
		t.Fatalf("notify test --route discord: %v\n%s", err, out)
	}
	if len(discord.texts()) != 4 || len(chat.texts()) != 2 || len(audit.deliveries()) != 4 {
		t.Fatalf("--route discord reached other routes: discord %d, chat %d, audit %d", len(discord.texts()), len(chat.texts()), len(audit.deliveries()))
	}
	if out, err := flrh(bin, env, "notify", "test", "--notify-routes", routes, "--route", "nope"); exitStatus(t, err) != exitUsage || !strings.Contains(out, `--route "nope": the routes file has no such route`) {
		t.Fatalf("--route nope: %v\n%s", err, out)
	}
	if out, err := flrh(bin, env, "notify", "test", "--notify", auditURL, "--route", "audit"); exitStatus(t, err) != exitUsage || !strings.Contains(out, "--route names routes of a --notify-routes file") {
		t.Fatalf("--route without a routes file: %v\n%s", err, out)
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer refusing.Close()
	writeRoutes(refusing.URL + "/T0/s3cr3t")
	out, err := flrh(bin, env, "notify", "test", "--notify-routes", routes)
	if err == nil || !strings.Contains(out, "route ops: the receiver answered 403") || strings.Contains(out, "s3cr3t") {
		t.Fatalf("a refusing route: %v\n%s", err, out)
	}
}

// TestEscalationThroughServe: a route with after hears of a run waiting
// for an approval only once it has waited that long, and only if it
// still waits: of two refunds waiting, the one approved at once is never
// escalated; meanwhile the store check counts the notices held apart,
// and the metrics say what became of each.
func TestEscalationThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	const hookSecret = "whsec-escalation-7c2e91a4"
	team, teamURL := newHookReceiver(t, hookSecret)
	manager, managerURL := newHookReceiver(t, hookSecret)
	routes := filepath.Join(dir, "notify-routes.yaml")
	yaml := "routes:\n  - name: team\n    url: " + teamURL + "\n  - name: manager\n    url: " + managerURL +
		"\n    kinds: [approval_waiting]\n    after: 4s\n"
	if err := os.WriteFile(routes, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(dir, "flrh.db")
	p := startServe(t, bin, []string{"FLRH_NOTIFY_SECRET=" + hookSecret}, "--store", db, "--destination", sb+"/v1/effects", "--notify-routes", routes)
	start := time.Now()
	startRefund(t, p.base, "waits", 800)
	startRefund(t, p.base, "approved", 900)
	team.await(store.NoticeApproval, "waits", "1")
	team.await(store.NoticeApproval, "approved", "1")
	if !approveWaiting(p.base, "approved") {
		t.Fatal("approval refused")
	}
	team.await(store.NoticeEnded, "approved", "1")
	out, err := flrh(bin, nil, "store", "check", "--json", "--store", db)
	var rep struct {
		Pending int64 `json:"notices_pending"`
		Held    int64 `json:"notices_held"`
	}
	if time.Since(start) < 4*time.Second && (err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Pending != 2 || rep.Held != 2) {
		t.Fatalf("store check while the escalations wait: %v, %+v\n%s", err, rep, out)
	}
	got := manager.await(store.NoticeApproval, "waits", "")
	if waited := got.At.Sub(start); waited < 4*time.Second || got.EscalatedAfter != 4 {
		t.Fatalf("the manager heard after %v (escalated after %d s)", waited, got.EscalatedAfter)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(scrape(t, p.base), `flrh_notices_total{kind="approval_waiting",outcome="moot",route="manager"} 1`) {
		if time.Now().After(deadline) {
			t.Fatalf("the approved run's escalation not counted moot:\n%s", scrape(t, p.base))
		}
		time.Sleep(100 * time.Millisecond)
	}
	m := scrape(t, p.base)
	for _, line := range []string{`flrh_notices_total{kind="approval_waiting",outcome="delivered",route="manager"} 1`,
		`flrh_notices_total{kind="run_ended",outcome="skipped",route="manager"} 1`, "flrh_notices_backlog 0", "flrh_notices_held 0"} {
		if !strings.Contains(m, line) {
			t.Errorf("the metrics lack %s", line)
		}
	}
	if n := len(manager.deliveries()); n != 1 {
		t.Fatalf("the manager heard %d times: %+v", n, manager.deliveries())
	}
	if logs := p.stderr.String(); !strings.Contains(logs, `"route":"manager"`) || !strings.Contains(logs, `"after":"4s"`) {
		t.Errorf("the logs do not say the manager's route escalates:\n%s", logs)
	}
}

// TestEmailNoticesThroughServe: a route of format email, its mail server
// (credentials included) in a variable and its CA in SSL_CERT_FILE, no
// signing secret set: flrh notify test reaches it, and flrh serve mails
// the approval a refund waits for, over STARTTLS, authenticated, from and
// to the addresses the route names. The password reaches no log.
func TestEmailNoticesThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	pki := testpki.New(t, "mail CA")
	srv := smtptest.Start(t, smtptest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pki.Issue(t, "mail", false, "localhost")}}})
	caFile := filepath.Join(dir, "ca.pem")
	routes := filepath.Join(dir, "notify-routes.yaml")
	yaml := "routes:\n  - name: finance-mail\n    url_env: FLRH_MAIL_URL\n    format: email\n    from: flrh@example.com\n" +
		"    to: [finance@example.com]\n    kinds: [approval_waiting]\n"
	if os.WriteFile(caFile, pki.CAPEM, 0o600) != nil || os.WriteFile(routes, []byte(yaml), 0o600) != nil {
		t.Fatal("writing the CA and routes")
	}
	env := []string{"SSL_CERT_FILE=" + caFile, "FLRH_MAIL_URL=smtp://flrh:pw-5d1e0b@localhost:" + srv.Port()}
	if out, err := flrh(bin, env, "notify", "test", "--notify-routes", routes); err != nil || !strings.Contains(out, "every route took the test notice (1)") {
		t.Fatalf("notify test: %v\n%s", err, out)
	}
	p := startServe(t, bin, env, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--destination", sb+"/v1/effects",
		"--notify-routes", routes, "--notify-link", "https://flrh.example.com")
	startRefund(t, p.base, "big", 800)
	deadline := time.Now().Add(30 * time.Second)
	for len(srv.Messages()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no approval mailed: %+v", srv.Messages())
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := srv.Messages()[1]
	msg, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if !m.TLS || m.User != "flrh" || m.Pass != "pw-5d1e0b" || m.From != "flrh@example.com" || !slices.Equal(m.To, []string{"finance@example.com"}) ||
		subject != "flrh: Run big (refund-agent@1) waits for an approval (1 request)." || msg.Header.Get("X-Flrh-Notice-Kind") != store.NoticeApproval {
		t.Fatalf("mailed TLS %v, user %q, from %q, to %q, subject %q, headers %v", m.TLS, m.User, m.From, m.To, subject, msg.Header)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	if strings.Contains(p.stderr.String(), "pw-5d1e0b") {
		t.Error("the mail server's password reached the logs")
	}
}

// flrh notify test posts a test notice the receiver checks, and fails,
// naming no part of the URL, when the receiver refuses it.
func TestNotifyTestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	secret := "whsec-test-3e8a0c5f7d21"
	h, hookURL := newHookReceiver(t, secret)
	env := []string{"FLRH_NOTIFY_SECRET=" + secret, "FLRH_NOTIFY_URL=" + hookURL}
	if out, err := flrh(bin, env, "notify", "test"); err != nil || !strings.Contains(out, "the webhook took the test notice") {
		t.Fatalf("notify test: %v\n%s", err, out)
	}
	if got := h.deliveries(); len(got) != 1 || got[0].Kind != notify.TestKind || got[0].Attempt != "1" {
		t.Fatalf("deliveries %+v", got)
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer refusing.Close()
	out, err := flrh(bin, []string{"FLRH_NOTIFY_SECRET=" + secret}, "notify", "test", "--notify", refusing.URL+"/T0/s3cr3t")
	if err == nil || !strings.Contains(out, "403") || strings.Contains(out, "s3cr3t") {
		t.Fatalf("a refusal: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "notify", "test"); err == nil || !strings.Contains(out, "FLRH_NOTIFY_URL") {
		t.Fatalf("no URL: %v\n%s", err, out)
	}
}

// TestNoticesTellRunsWaitingBefore: a run that came to wait for an
// approval on a server without notices is told of once a server delivers
// notices from the store, as the tick that left it there would have told
// of it; a server started again later tells nothing twice.
func TestNoticesTellRunsWaitingBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	secret := "whsec-told-late-8c2e41f0"
	h, hookURL := newHookReceiver(t, secret)
	args := []string{"--store", "sqlite:" + filepath.Join(dir, "flrh.db"), "--destination", sb + "/v1/effects"}
	quiet := startServe(t, bin, nil, args...)
	startRefund(t, quiet.base, "big", 800)
	awaitState(t, quiet.base, "big", "WAIT_APPROVAL")
	quiet.cmd.Process.Signal(syscall.SIGTERM)
	<-quiet.exited

	env := []string{"FLRH_NOTIFY_SECRET=" + secret, "FLRH_NOTIFY_URL=" + hookURL}
	h.holdNext(store.NoticeApproval)
	p := startServe(t, bin, env, args...)
	h.waitHeld()
	told := h.await(store.NoticeApproval, "big", "1")
	if told.Notice.State != "WAIT_APPROVAL" || len(told.Notice.Requests) != 1 {
		t.Fatalf("told of %+v", told)
	}
	if logs := p.stderr.String(); !strings.Contains(logs, `"msg":"runs waiting for people told of: they came to wait while no one delivered notices","runs":1`) {
		t.Errorf("the server does not say it told of the waiting run:\n%s", logs)
	}
	// Stopped while the receiver holds the notice, the server waits for
	// its answer (up to --notify-timeout) and settles the delivery before
	// it exits: the next server does not send it again.
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		t.Fatalf("the server exited with a delivery under way:\n%s", p.stderr)
	case <-time.After(time.Second):
	}
	h.release()
	<-p.exited
	if logs := p.stderr.String(); !strings.Contains(logs, `"msg":"notice delivered","component":"notify","notice_id":"big/5/0/approval_waiting"`) {
		t.Fatalf("the server does not say it delivered the notice:\n%s", logs)
	}
	p = startServe(t, bin, env, args...)
	if !approveWaiting(p.base, "big") {
		t.Fatal("approval refused")
	}
	h.await(store.NoticeEnded, "big", "1")
	h.deliveredOnce(2, "")
}

// TestNoticeRoutesReloadedOnSIGHUP: flrh serve reads its routes file
// again on SIGHUP: a chat route added then takes the runs' ends; a file
// broken afterwards keeps the routes as they were, and says why.
func TestNoticeRoutesReloadedOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	secret := "whsec-reload-routes-4e1a"
	audit, auditURL := newHookReceiver(t, secret)
	chat := newTextReceiver(t, secret)
	routes := filepath.Join(dir, "routes.json")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(routes, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	auditOnly := `{"routes": [{"name": "audit", "url": "` + auditURL + `"}]}`
	write(auditOnly)
	p := startServe(t, bin, []string{"FLRH_NOTIFY_SECRET=" + secret}, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"),
		"--destination", sb+"/v1/effects", "--notify-routes", routes)
	hup := func(says string) {
		t.Helper()
		before := strings.Count(p.stderr.String(), says)
		p.cmd.Process.Signal(syscall.SIGHUP)
		for deadline := time.Now().Add(10 * time.Second); strings.Count(p.stderr.String(), says) == before; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q after SIGHUP:\n%s", says, p.stderr)
			}
		}
	}
	startRefund(t, p.base, "big", 800)
	audit.await(store.NoticeApproval, "big", "1")

	write(`{"routes": [{"name": "audit", "url": "` + auditURL + `"},
  {"name": "chat", "url": "` + chat.url + `", "format": "slack", "kinds": ["run_ended"]}]}`)
	hup(`"msg":"notice routes reloaded"`)
	if !approveWaiting(p.base, "big") {
		t.Fatal("approval refused")
	}
	audit.await(store.NoticeEnded, "big", "1")
	for deadline := time.Now().Add(10 * time.Second); len(chat.texts()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the route added on SIGHUP heard nothing")
		}
	}

	write(`{"routes": [{"name": "audit", "url": "` + auditURL + `", "kinds": ["run_paged"]}]}`)
	hup(`"msg":"notice routes kept as they were"`)
	startRefund(t, p.base, "small", 30)
	audit.await(store.NoticeEnded, "small", "1")
	for deadline := time.Now().Add(10 * time.Second); len(chat.texts()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a broken file dropped the chat route")
		}
	}
	if logs := p.stderr.String(); !strings.Contains(logs, `run_paged`) || strings.Contains(logs, "s3cr3t") {
		t.Errorf("the refusal does not say why, or names the chat's URL:\n%s", logs)
	}
}

// TestNoticeRoutesFollowTheirFiles: with --reload-adapters-every, a
// route's URL file swapped under a running server (as a platform rotates
// a mounted secret) is seen by itself: the next notice goes to the new
// URL, none to the old.
func TestNoticeRoutesFollowTheirFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	secret := "whsec-follow-files-77d0"
	before, after := newTextReceiver(t, secret), newTextReceiver(t, secret)
	urlFile := filepath.Join(dir, "chat-url")
	swap := func(url string) {
		t.Helper()
		tmp := urlFile + ".new"
		if err := os.WriteFile(tmp, []byte(url+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, urlFile); err != nil {
			t.Fatal(err)
		}
	}
	swap(before.url)
	routes := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(routes, []byte("routes:\n  - name: chat\n    url_env: CHAT_URL\n    format: slack\n    kinds: [run_ended]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, bin, []string{"FLRH_NOTIFY_SECRET=" + secret, "CHAT_URL_FILE=" + urlFile}, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"),
		"--destination", sb+"/v1/effects", "--notify-routes", routes, "--reload-adapters-every", "100ms")
	await := func(rc *textReceiver, n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); len(rc.texts()) < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d texts, want %d", len(rc.texts()), n)
			}
		}
	}
	startRefund(t, p.base, "one", 30)
	await(before, 1)
	swap(after.url)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), `"msg":"notice routes reloaded"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the swapped file was not seen:\n%s", p.stderr)
		}
	}
	startRefund(t, p.base, "two", 30)
	await(after, 1)
	time.Sleep(300 * time.Millisecond)
	if len(before.texts()) != 1 || !strings.Contains(after.texts()[0], "Run *two*") {
		t.Fatalf("before %q, after %q", before.texts(), after.texts())
	}
	if strings.Contains(p.stderr.String(), "s3cr3t") {
		t.Error("a chat URL reached the logs")
	}
}

// TestNotifyCheckCommand: flrh notify check lists every route of a
// routes file as flrh serve would read it (format, host alone, kinds,
// workflows, escalation) and sends nothing; a route whose variable is not
// set, or a file that is wrong, is a usage error naming it.
func TestNotifyCheckCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	routes := filepath.Join(dir, "notify-routes.yaml")
	yaml := `routes:
  - name: approvals
    url_env: CHAT_URL
    format: slack
    kinds: [approval_waiting]
    labels: {team: payments, flrh.schedule: nightly}
  - name: manager
    url: https://hooks.example.com/manager
    kinds: [approval_waiting]
    after: 4h
  - name: finance-mail
    url_env: MAIL_URL
    format: email
    from: flrh@example.com
    to: [finance@example.com, audit@example.com]
    workflows: [refund-agent]
`
	if err := os.WriteFile(routes, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"CHAT_URL=https://chat.example.com/T0/s3cr3t-path", "MAIL_URL=smtp://flrh:pw-77@mail.example.com:587", "FLRH_NOTIFY_SECRET=0123456789abcdef0123"}
	out, err := flrh(bin, env, "notify", "check", "--notify-routes", routes)
	want := []string{
		"route approvals: slack to chat.example.com; kinds approval_waiting; workflows all; runs labelled flrh.schedule=nightly, team=payments\n",
		"route manager: flrh to hooks.example.com; kinds approval_waiting; workflows all; after 4h, if the run still waits\n",
		"route finance-mail: email to mail.example.com:587 (from flrh@example.com to finance@example.com, audit@example.com); kinds all; workflows refund-agent\n",
		"flrh notify check: 3 routes, nothing sent\n",
	}
	if err != nil || out != strings.Join(want, "") {
		t.Fatalf("notify check: %v\n%s", err, out)
	}
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "pw-77") {
		t.Fatal("the check quotes a credential")
	}
	out, err = flrh(bin, env[1:], "notify", "check", "--notify-routes", routes)
	if exitStatus(t, err) != exitUsage || !strings.Contains(out, `route "approvals": set CHAT_URL`) {
		t.Fatalf("a variable not set: %v\n%s", err, out)
	}
	if err := os.WriteFile(routes, []byte(strings.Replace(yaml, "after: 4h", "after: 100h", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = flrh(bin, env, "notify", "check", "--notify-routes", routes)
	if exitStatus(t, err) != exitUsage || !strings.Contains(out, `route "manager": after 100h0m0s is not less than the give-up age`) {
		t.Fatalf("an escalation past the give-up age: %v\n%s", err, out)
	}
}

// TestSMSNoticesThroughServe: an SMS route naming two numbers, its
// account's auth token in a variable: a run waiting for an approval is
// texted to each number once, through the account's Messages resource,
// and the token reaches no log.
func TestSMSNoticesThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dir := t.TempDir()
	const account, token = "AC0123456789abcdef0123456789abcdef", "twilio-token-7c41d2"
	var mu sync.Mutex
	var texts []url.Values
	twilio := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if r.URL.Path != "/2010-04-01/Accounts/"+account+"/Messages.json" || user != account || pass != token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		texts = append(texts, form)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(twilio.Close)
	routes := filepath.Join(dir, "notify-routes.yaml")
	yaml := "routes:\n  - name: oncall-phones\n    url: " + twilio.URL + "/2010-04-01/Accounts/" + account + "/Messages.json\n" +
		"    secret_env: TWILIO_AUTH_TOKEN\n    format: sms\n    from: '+15550000000'\n    to: ['+15550000001', '+15550000002']\n    kinds: [approval_waiting]\n"
	if err := os.WriteFile(routes, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TWILIO_AUTH_TOKEN=" + token}
	if out, err := flrh(bin, nil, "serve", "--addr", "127.0.0.1:0", "--store", "sqlite:"+filepath.Join(dir, "x.db"), "--notify-routes", routes); err == nil ||
		!strings.Contains(out, `route "oncall-phones": set TWILIO_AUTH_TOKEN (or TWILIO_AUTH_TOKEN_FILE) to the Twilio account's auth token`) {
		t.Fatalf("without the token: %v\n%s", err, out)
	}
	p := startServe(t, bin, env, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--destination", sb+"/v1/effects",
		"--notify-routes", routes, "--notify-link", "https://flrh.example.com")
	startRefund(t, p.base, "big", 800)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(texts)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("texted %d numbers", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	var to []string
	for _, f := range texts {
		to = append(to, f.Get("To"))
		if f.Get("From") != "+15550000000" || !strings.HasPrefix(f.Get("Body"), "flrh: Run big (refund-agent@1) waits for an approval (1 request)") ||
			!strings.HasSuffix(f.Get("Body"), "Open the approvals inbox: https://flrh.example.com/ui/#/inbox") {
			t.Fatalf("a text: %v", f)
		}
	}
	slices.Sort(to)
	if !slices.Equal(to, []string{"+15550000001", "+15550000002"}) {
		t.Fatalf("texted %v, want each number once", to)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	if strings.Contains(p.stderr.String(), token) {
		t.Error("the auth token reached the logs")
	}
}
