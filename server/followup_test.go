package server

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/notify"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/webhook"
)

// chatService stands for Slack's and Discord's hosts: every request the
// notifier sends anywhere reaches it, and it records each message by
// the host and path it was sent to.
type chatService struct {
	mu  sync.Mutex
	got map[string][]string
	url *url.URL
}

func (c *chatService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.got[r.Header.Get("X-Sent-To")+r.URL.Path] = append(c.got[r.Header.Get("X-Sent-To")+r.URL.Path], string(body))
	c.mu.Unlock()
}

// RoundTrip sends every request to the chat service, saying where it
// was sent.
func (c *chatService) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Sent-To", r.URL.Scheme+"://"+r.URL.Host)
	r.URL.Scheme, r.URL.Host = c.url.Scheme, c.url.Host
	return http.DefaultTransport.RoundTrip(r)
}

func (c *chatService) messages() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]string{}
	for k, v := range c.got {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// waitMessage waits until the chat service holds a message to address
// that says words.
func (c *chatService) waitMessage(t *testing.T, address, words string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, m := range c.messages()[address] {
			if strings.Contains(m, words) {
				return
			}
		}
	}
	t.Fatalf("no message to %s says %q: %v", address, words, c.messages())
}

// People who start runs from Slack and Discord are told, as messages
// only they see, when the runs wait for someone and when they end; the
// notices go nowhere else (no route). A webhook without follow_up, an
// address that is not Slack's, and a delivery refused keep nothing.
func TestFollowUps(t *testing.T) {
	app := ed25519.NewKeyFromSeed([]byte("the discord application's seed!!"))
	specs, err := ParseWebhooks([]byte(`{"webhooks": [
 {"name": "chat", "scheme": "slack", "secret_env": "SLACK_SECRET", "workflow": "refund-agent", "follow_up": true, "run_id": "chat-{$delivery}",
  "input": {"refunds": [{"id": "r-{$delivery}", "amount": 15, "payee": "{/user_name}", "reason": "{$event}"}]}},
 {"name": "quiet", "scheme": "slack", "secret_env": "SLACK_SECRET", "workflow": "refund-agent", "run_id": "quiet-{$delivery}",
  "input": {"refunds": [{"id": "r-{$delivery}", "amount": 15, "payee": "{/user_name}", "reason": "{$event}"}]}},
 {"name": "bot", "scheme": "discord", "secret_env": "DISCORD_KEY", "workflow": "refund-agent", "follow_up": true,
  "input": {"refunds": [{"id": "r-{$delivery}", "amount": "{/data/options/0/value}", "payee": "{/member/user/id}", "reason": "{$event}"}]}}
]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	const slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	env := map[string]string{"SLACK_SECRET": slackSecret, "DISCORD_KEY": hex.EncodeToString(app.Public().(ed25519.PublicKey))}
	hooks, err := LoadWebhooks(specs, t.TempDir(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// A server that delivers no follow-ups refuses a webhook with
	// follow_up: no one would be told.
	plain := newFixture(t, "")
	if err := plain.server.SetWebhooks(hooks); err == nil || !strings.Contains(err.Error(), "webhook chat: follow_up, and this server delivers no follow-ups") {
		t.Fatalf("set on a server without follow-ups: %v", err)
	}
	f := newFixture(t, tokenFileText, func(rc *runner.Config, c *Config) { c.Webhooks, c.FollowUps, rc.Notices = hooks, true, true })
	chat := &chatService{got: map[string][]string{}}
	srv := httptest.NewServer(chat)
	defer srv.Close()
	chat.url, _ = url.Parse(srv.URL)
	board, _ := store.NoticeboardOf(f.store)
	fus, ok := store.FollowUpsOf(f.store)
	if !ok {
		t.Fatal("the store keeps no follow-ups")
	}
	n, err := notify.New(notify.Config{Board: board, Holder: "test", FollowUps: fus, Transport: chat, Poll: 20 * time.Millisecond,
		MinDelay: 50 * time.Millisecond, Link: "https://flrh.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.Run(ctx) }()
	defer func() { stop(); <-done }()

	now := time.Now()
	slack := func(hook, trigger, responseURL string) answer {
		body := url.Values{"command": {"/refund"}, "user_name": {"roadrunner"}, "trigger_id": {trigger}, "response_url": {responseURL}}.Encode()
		h := webhook.Sign(webhook.Slack, []byte(slackSecret), webhook.Delivery{Timestamp: now.Unix()}, []byte(body))
		h["Content-Type"] = []string{"application/x-www-form-urlencoded"}
		return f.deliver(hook, h, []byte(body))
	}
	discord := func(id, amount string) answer {
		body := `{"type":2,"id":"` + id + `","application_id":"4200","token":"tok-` + id + `","data":{"name":"refund","options":[{"name":"amount","value":` + amount + `}]},"member":{"user":{"id":"u-7"}}}`
		if amount == "" {
			body = `{"type":2,"id":"` + id + `","application_id":"4200","token":"tok-` + id + `","data":{"name":"refund"},"member":{"user":{"id":"u-7"}}}`
		}
		return f.deliver("bot", webhook.SignEd25519(webhook.Discord, app, webhook.Delivery{Timestamp: now.Unix()}, []byte(body)), []byte(body))
	}
	const toldMore = ` You will be told here when it waits for someone or ends.`

	// A small refund from Slack: the person is told it started, then
	// that it ended, at the response_url Slack gave.
	if a := slack("chat", "t.1", "https://hooks.slack.com/commands/T1/1/abc"); a.status != 200 || !strings.Contains(string(a.body), `"text":"Started run chat-t.1.`+toldMore+`"`) {
		t.Fatalf("slash command: %d %s", a.status, a.body)
	}
	chat.waitMessage(t, "https://hooks.slack.com/commands/T1/1/abc", `"text":"flrh: Run *chat-t.1* (refund-agent@`)
	chat.waitMessage(t, "https://hooks.slack.com/commands/T1/1/abc", `ended: success`)

	// A large refund from Discord waits for an approval: the person is
	// told so on the interaction's follow-up webhook, ephemerally.
	if a := discord("901", "500"); a.status != 200 || !strings.Contains(string(a.body), `"content":"Started run bot-901.`+toldMore+`"`) {
		t.Fatalf("discord command: %d %s", a.status, a.body)
	}
	chat.waitMessage(t, "https://discord.com/api/v10/webhooks/4200/tok-901", `waits for an approval`)
	chat.waitMessage(t, "https://discord.com/api/v10/webhooks/4200/tok-901", `"flags":64`)
	f.waitFor("bot-901", tokOperator, "its approval", func(p RunPage) bool { return p.Run.State == "WAIT_APPROVAL" })

	// Kept nothing: a webhook without follow_up, an address not Slack's,
	// a delivery refused (its follow-up dropped again).
	if a := slack("quiet", "t.2", "https://hooks.slack.com/commands/T1/2/abc"); a.status != 200 || strings.Contains(string(a.body), toldMore) {
		t.Fatalf("quiet: %d %s", a.status, a.body)
	}
	if a := slack("chat", "t.3", "https://hooks.slack.example/commands/T1/3/abc"); a.status != 200 || strings.Contains(string(a.body), toldMore) {
		t.Fatalf("another host: %d %s", a.status, a.body)
	}
	if a := discord("902", ""); a.status != 200 || !strings.Contains(string(a.body), "Refused") || strings.Contains(string(a.body), toldMore) {
		t.Fatalf("refused: %d %s", a.status, a.body)
	}
	for _, run := range []string{"quiet-t.2", "chat-t.3", "bot-902"} {
		if got, err := fus.FollowUps(context.Background(), run); err != nil || len(got) != 0 {
			t.Fatalf("%s keeps follow-ups %v, %v", run, got, err)
		}
	}
	f.waitFor("quiet-t.2", tokOperator, "its end", func(p RunPage) bool { return p.Run.Outcome != "" })
	f.waitFor("chat-t.3", tokOperator, "its end", func(p RunPage) bool { return p.Run.Outcome != "" })
	time.Sleep(200 * time.Millisecond) // the notifier's passes over their notices
	for address := range chat.messages() {
		if !strings.HasSuffix(address, "/commands/T1/1/abc") && !strings.HasSuffix(address, "/tok-901") {
			t.Fatalf("a message was sent to %s", address)
		}
	}
	if got := chat.messages()["https://hooks.slack.com/commands/T1/1/abc"]; len(got) != 1 {
		t.Fatalf("the Slack command's person told %d times: %q", len(got), got)
	}
}
