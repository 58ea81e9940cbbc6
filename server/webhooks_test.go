package server

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/jsontemplate"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/webhook"
)

const webhooksText = `{"webhooks": [
 {"name": "shop", "scheme": "standard", "secret_env": "SHOP_SECRET", "workflow": "refund-agent", "events": ["refund.requested"],
  "run_id": "refund-{/data/order}", "labels": {"order": "{/data/order}", "customer": "{/data/customer}"},
  "input": {"refunds": [{"id": "{/data/refund_id}", "amount": "{/data/amount}", "payee": "{/data/customer}", "reason": "{$event} via {$hook}"}]}},
 {"name": "tracker", "scheme": "github", "secret_file": "tracker.secret", "workflow": "refund-agent", "start": false,
  "when": {"/action": "opened"}, "run_id": "{/issue/run}", "actor": "tracker-bot",
  "input": {"refunds": [{"id": "{/issue/refund}", "amount": "{/issue/amount}", "payee": "{/issue/payee}", "reason": "issue"}]}},
 {"name": "store", "scheme": "shopify", "secret_env": "SHOPIFY_SECRET", "workflow": "refund-agent", "events": ["refunds/create"],
  "input": {"refunds": [{"id": "{/id}", "amount": "{/amount}", "payee": "{/customer}", "reason": "{$event}"}]}},
 {"name": "repo", "scheme": "gitlab", "secret_env": "GITLAB_TOKEN", "workflow": "refund-agent", "start": false, "run_id": "{/run}",
  "input": {"refunds": [{"id": "{/refund}", "amount": 20, "payee": "erin", "reason": "{$event}"}]}},
 {"name": "stripe", "scheme": "stripe", "secret_env": ["STRIPE_NEW", "STRIPE_OLD"], "workflow": "refund-agent", "tolerance_seconds": 60,
  "input": {"refunds": [{"id": "{/data/object/id}", "amount": "{/data/object/amount}", "payee": "{/data/object/customer}", "reason": "{/type}"}]}}
]}`

var (
	shopSecret    = []byte("shop-secret-0123456789abcdef")
	trackerSecret = []byte("tracker-secret-0123456789")
	stripeNew     = []byte("whsec_new_0123456789abcdef")
	stripeOld     = []byte("whsec_old_0123456789abcdef")
	shopifySecret = []byte("shpss_0123456789abcdef0123")
	gitlabToken   = []byte("glpat-like-token-0123456789")
)

func webhookFixture(t *testing.T) *fixture {
	t.Helper()
	return hooksFixture(t, webhooksText, map[string]string{"SHOP_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(shopSecret),
		"STRIPE_NEW": string(stripeNew), "STRIPE_OLD": string(stripeOld), "SHOPIFY_SECRET": string(shopifySecret), "GITLAB_TOKEN": string(gitlabToken)})
}

// hooksFixture serves the webhooks of text, their secrets in env and in
// tracker.secret beside the file.
func hooksFixture(t *testing.T, text string, env map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	writeSecret(t, dir)
	specs, err := ParseWebhooks([]byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := LoadWebhooks(specs, dir, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, tokenFileText, func(_ *runner.Config, c *Config) { c.Webhooks = hooks })
}

// writeSecret writes the tracker's secret to dir/tracker.secret.
func writeSecret(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "tracker.secret"), append(trackerSecret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

// deliver posts body to the webhook with the header fields h.
func (f *fixture) deliver(hook string, h webhook.Header, body []byte) answer {
	f.t.Helper()
	header := http.Header(h).Clone()
	if header == nil {
		header = http.Header{}
	}
	if header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/json")
	}
	return f.send("POST", "/v1/hooks/"+hook, header, body)
}

func shopEvent(event, order, refund string, amount int) []byte {
	b, _ := json.Marshal(map[string]any{"type": event, "timestamp": "2026-12-07T12:00:00Z",
		"data": map[string]any{"order": order, "refund_id": refund, "amount": amount, "customer": "bob"}})
	return b
}

func TestWebhooks(t *testing.T) {
	f := webhookFixture(t)
	now := time.Now()
	shop := func(id string, body []byte) (webhook.Header, []byte) {
		return webhook.Sign(webhook.Standard, shopSecret, webhook.Delivery{ID: id, Timestamp: now.Unix()}, body), body
	}
	tracker := func(id, action, run string) (webhook.Header, []byte) {
		b, _ := json.Marshal(map[string]any{"action": action, "issue": map[string]any{"run": run, "refund": "r-t1", "amount": 950, "payee": "carol"}})
		return webhook.Sign(webhook.GitHub, trackerSecret, webhook.Delivery{ID: id, Event: "issues"}, b), b
	}
	stripe := func(secret []byte, id string, at time.Time) (webhook.Header, []byte) {
		b, _ := json.Marshal(map[string]any{"id": id, "type": "charge.refund.requested", "data": map[string]any{"object": map[string]any{"id": "r-s1", "amount": 30, "customer": "dave"}}})
		return webhook.Sign(webhook.Stripe, secret, webhook.Delivery{Timestamp: at.Unix()}, b), b
	}
	large := shopEvent("refund.requested", "o1", "r-1", 900)
	type delivery = func() (webhook.Header, []byte)
	shopAs := func(id string, body []byte) delivery {
		return func() (webhook.Header, []byte) { return shop(id, body) }
	}
	bent := func(h webhook.Header, body []byte) delivery {
		return func() (webhook.Header, []byte) { return h, body }
	}
	steps := []struct {
		name   string
		hook   string
		make   delivery
		status int
		want   map[string]any // members of the answer
		words  string         // in an error's message
	}{
		{"a delivery starts its run", "shop", shopAs("m-1", large), 201, map[string]any{"run_id": "refund-o1", "started": true, "again": false}, ""},
		{"the same delivery again", "shop", shopAs("m-1", large), 200, map[string]any{"run_id": "refund-o1", "started": true, "again": true}, ""},
		{"another delivery for the same order is its input", "shop", shopAs("m-2", shopEvent("refund.requested", "o1", "r-2", 800)), 202, map[string]any{"run_id": "refund-o1", "started": false, "again": false}, ""},
		{"an event the webhook does not act on", "shop", shopAs("m-3", shopEvent("refund.cancelled", "o1", "r-1", 900)), 200, map[string]any{"ignored": `the event "refund.cancelled" is not one this webhook acts on`}, ""},
		{"the first delivery's id with other content", "shop", shopAs("m-1", shopEvent("refund.requested", "o1", "r-1", 901)), 409, nil, `delivery \"shop:m-1\" came before with other content`},
		{"a body without what the input takes", "shop", shopAs("m-4", []byte(`{"type":"refund.requested","data":{"order":"o3","refund_id":"r-3","customer":"bob"}}`)), 422, nil, "/refunds/0/amount: the body has nothing at {/data/amount}"},
		{"a run id that is not an id", "shop", shopAs("m-5", shopEvent("refund.requested", "o 4", "r-4", 10)), 422, nil, `the run id \"refund-o 4\"`},
		{"a label the delivery leaves empty", "shop", shopAs("m-8", []byte(`{"type":"refund.requested","data":{"order":"o8","refund_id":"r-8","amount":5,"customer":""}}`)), 422, nil,
			`the delivery gives label \"customer\": the value is empty`},
		{"an amount the workflow refuses", "shop", shopAs("m-6", shopEvent("refund.requested", "o5", "r-5", -3)), 422, nil, ""},
		{"a tracker issue opened for the run", "tracker", func() (webhook.Header, []byte) { return tracker("gh-1", "opened", "refund-o1") }, 202, map[string]any{"run_id": "refund-o1", "started": false}, ""},
		{"a tracker issue closed", "tracker", func() (webhook.Header, []byte) { return tracker("gh-2", "closed", "refund-o1") }, 200, map[string]any{"ignored": "the body does not hold the webhook's value at /action"}, ""},
		{"a tracker issue for a run that does not exist", "tracker", func() (webhook.Header, []byte) { return tracker("gh-3", "opened", "nope") }, 404, nil, "nope"},
		{"stripe, under the old secret", "stripe", func() (webhook.Header, []byte) { return stripe(stripeOld, "evt_1", now) }, 201, map[string]any{"run_id": "stripe-evt_1", "started": true}, ""},
		{"stripe, signed two minutes ago (60 s tolerance)", "stripe", func() (webhook.Header, []byte) { return stripe(stripeNew, "evt_2", now.Add(-2*time.Minute)) }, 401, nil, "tolerance is 1m0s"},
		{"a signature under another secret", "shop", bent(webhook.Sign(webhook.Standard, []byte("not-the-shop-secret-at-all"), webhook.Delivery{ID: "m-x", Timestamp: now.Unix()}, large), large), 401, nil, "no v1 signature matches"},
		{"a bearer token is no signature", "shop", bent(webhook.Header{"Authorization": {"Bearer " + tokOperator}}, large), 401, nil, "Webhook-Id: the header is missing"},
		{"a Shopify refund starts a run", "store", bent(webhook.Sign(webhook.Shopify, shopifySecret, webhook.Delivery{ID: "sh-1", Event: "refunds/create"}, []byte(`{"id":"r-sh1","amount":25,"customer":"fay"}`)), []byte(`{"id":"r-sh1","amount":25,"customer":"fay"}`)), 201, map[string]any{"run_id": "store-sh-1", "started": true}, ""},
		{"a GitLab event feeds refund-o1", "repo", bent(webhook.Sign(webhook.GitLab, gitlabToken, webhook.Delivery{ID: "gl-1", Event: "Issue Hook"}, []byte(`{"run":"refund-o1","refund":"r-gl1"}`)), []byte(`{"run":"refund-o1","refund":"r-gl1"}`)), 202, map[string]any{"run_id": "refund-o1", "started": false}, ""},
		{"a GitLab event with another token", "repo", bent(webhook.Sign(webhook.GitLab, []byte("not-the-token-0123456789"), webhook.Delivery{ID: "gl-2", Event: "Issue Hook"}, []byte(`{"run":"refund-o1","refund":"r-gl2"}`)), []byte(`{"run":"refund-o1","refund":"r-gl2"}`)), 401, nil, "the token is none of the hook's secrets"},
		{"no such webhook", "nobody", shopAs("m-7", large), 404, nil, "no webhook nobody"},
		{"not JSON", "shop", bent(webhook.Header{"Content-Type": {"text/plain"}}, large), 415, nil, ""},
	}
	for _, s := range steps {
		h, body := s.make()
		a := f.deliver(s.hook, h, body)
		if a.status != s.status {
			t.Fatalf("%s: %d %s; want %d", s.name, a.status, a.body, s.status)
		}
		if s.want == nil {
			a.errorOf(t)
			if !strings.Contains(string(a.body), s.words) {
				t.Fatalf("%s: %s; want it to say %q", s.name, a.body, s.words)
			}
			continue
		}
		got := a.json(t)
		for k, v := range s.want {
			if got[k] != v {
				t.Fatalf("%s: %s = %v, want %v (%s)", s.name, k, got[k], v, a.body)
			}
		}
	}

	// What the deliveries made: refund-o1 with three inputs recorded once
	// each, under the hooks' names; stripe's run; nothing for the rest.
	ctx := context.Background()
	in, err := f.store.Inbox(ctx, "refund-o1", false)
	if err != nil || len(in) != 4 {
		t.Fatalf("refund-o1's inbox: %d entries, %v", len(in), err)
	}
	for i, want := range []string{"hook:shop", "hook:shop", "tracker-bot", "hook:repo"} {
		if in[i].Actor != want || in[i].ActorRole != "agent" {
			t.Errorf("entry %d recorded as %s (%s), want %s as an agent", i, in[i].Actor, in[i].ActorRole, want)
		}
	}
	if !strings.Contains(string(in[0].Body), `"reason":"refund.requested via shop"`) {
		t.Errorf("the first input: %s", in[0].Body)
	}
	runs, _ := f.store.Runs(ctx, "", 100)
	if len(runs) != 3 {
		t.Errorf("%d runs, want refund-o1, stripe-evt_1 and store-sh-1: %+v", len(runs), runs)
	}
	// The runs bear the webhook's name, and the labels its deliveries
	// gave: the first one's, which started the run.
	for _, r := range runs {
		want := map[string]string{"flrh.webhook": strings.Split(r.ID, "-")[0]}
		if r.ID == "refund-o1" {
			want = map[string]string{"flrh.webhook": "shop", "order": "o1", "customer": "bob"}
		}
		if !maps.Equal(r.Labels, want) {
			t.Errorf("run %s bears %v, want %v", r.ID, r.Labels, want)
		}
	}
	f.waitFor("stripe-evt_1", tokOperator, "paid", func(p RunPage) bool { return p.Run.Outcome != "" })

	f.metricsHolding(
		`flrh_webhook_deliveries_total{outcome="started",webhook="shop"} 1`,
		`flrh_webhook_deliveries_total{outcome="again",webhook="shop"} 1`,
		`flrh_webhook_deliveries_total{outcome="input",webhook="shop"} 1`,
		`flrh_webhook_deliveries_total{outcome="ignored",webhook="shop"} 1`,
		`flrh_webhook_deliveries_total{outcome="failed",webhook="shop"} 5`,
		`flrh_webhook_deliveries_total{outcome="refused",webhook="shop"} 3`,
		`flrh_webhook_deliveries_total{outcome="input",webhook="tracker"} 1`,
		`flrh_webhook_deliveries_total{outcome="refused",webhook="stripe"} 1`,
	)
}

// Slack's requests (its handshake, events, slash commands), Linear's
// events, Discord's interactions, and Standard Webhooks signed with an
// Ed25519 key the server holds only the public half of.
func TestWebhooksFromSlackLinearAndPublicKeys(t *testing.T) {
	signer := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	app := ed25519.NewKeyFromSeed([]byte("the discord application's seed!!"))
	f := hooksFixture(t, `{"webhooks": [
 {"name": "chat", "scheme": "slack", "secret_env": "SLACK_SECRET", "workflow": "refund-agent", "events": ["/refund-small", "app_mention"],
  "run_id": "chat-{$delivery}", "input": {"refunds": [{"id": "r-{$delivery}", "amount": 15, "payee": "{/user_name}", "reason": "{$event}"}]}},
 {"name": "mentions", "scheme": "slack", "secret_env": "SLACK_SECRET", "workflow": "refund-agent",
  "input": {"refunds": [{"id": "r-{$delivery}", "amount": 12, "payee": "{/event/user}", "reason": "{/event/text}"}]}},
 {"name": "issues", "scheme": "linear", "secret_env": "LINEAR_SECRET", "workflow": "refund-agent", "events": ["Issue"], "when": {"/action": "create"},
  "input": {"refunds": [{"id": "{/data/identifier}", "amount": "{/data/estimate}", "payee": "gus", "reason": "{/data/title}"}]}},
 {"name": "signed", "scheme": "standard", "secret_env": "SENDER_PUBLIC_KEY", "workflow": "refund-agent",
  "input": {"refunds": [{"id": "{/id}", "amount": "{/amount}", "payee": "hal", "reason": "{$event}"}]}},
 {"name": "bot", "scheme": "discord", "secret_env": "DISCORD_KEY", "workflow": "refund-agent", "rate": "2/h",
  "input": {"refunds": [{"id": "r-{$delivery}", "amount": "{/data/options/0/value}", "payee": "{/member/user/id}", "reason": "{$event}"}]}},
 {"name": "installs", "scheme": "discord", "secret_env": "DISCORD_KEY", "workflow": "refund-agent", "events": ["APPLICATION_AUTHORIZED"],
  "run_id": "install-{/event/data/user/id}", "input": {"refunds": [{"id": "welcome-{/event/data/user/id}", "amount": 5, "payee": "{/event/data/user/id}", "reason": "{$event}"}]}},
 {"name": "sms", "scheme": "twilio", "secret_env": "TWILIO_TOKEN", "url": "https://flrh.example.com/v1/hooks/sms", "workflow": "refund-agent",
  "events": ["message.received"], "run_id": "sms-{/MessageSid}",
  "input": {"refunds": [{"id": "r-{/MessageSid}", "amount": 10, "payee": "{/From}", "reason": "{/Body}"}]}}
]}`, map[string]string{"SLACK_SECRET": "8f742231b10e8888abcd99yyyzzz85a5", "LINEAR_SECRET": "lin_wh_0123456789abcdef",
		"SENDER_PUBLIC_KEY": "whpk_" + base64.StdEncoding.EncodeToString(signer.Public().(ed25519.PublicKey)),
		"DISCORD_KEY":       hex.EncodeToString(app.Public().(ed25519.PublicKey)),
		"TWILIO_TOKEN":      "twilio-auth-token-0123456789"})
	now := time.Now()
	slack := func(body, contentType string, secret string) (webhook.Header, []byte) {
		h := webhook.Sign(webhook.Slack, []byte(secret), webhook.Delivery{Timestamp: now.Unix()}, []byte(body))
		h["Content-Type"] = []string{contentType}
		return h, []byte(body)
	}
	const slackSecret, form = "8f742231b10e8888abcd99yyyzzz85a5", "application/x-www-form-urlencoded"
	command := "token=x&team_id=T1&user_name=roadrunner&command=%2Frefund-small&text=&trigger_id=398.474.803a"
	linear := func(id, action string, at time.Time) (webhook.Header, []byte) {
		b := []byte(`{"action":"` + action + `","type":"Issue","data":{"identifier":"ENG-7","estimate":40,"title":"refund the broken kettle"},"webhookTimestamp":` + strconv.FormatInt(at.UnixMilli(), 10) + `}`)
		return webhook.Sign(webhook.Linear, []byte("lin_wh_0123456789abcdef"), webhook.Delivery{ID: id, Event: "Issue"}, b), b
	}
	signed := []byte(`{"type":"refund.requested","id":"r-ed1","amount":35}`)
	discord := func(key ed25519.PrivateKey, body string) webhook.Header {
		return webhook.SignEd25519(webhook.Discord, key, webhook.Delivery{Timestamp: now.Unix()}, []byte(body))
	}
	const refundCommand = `{"type":2,"id":"111","data":{"name":"refund","options":[{"name":"amount","value":25}]},"member":{"user":{"id":"u-7"}}}`
	const emptyCommand = `{"type":2,"id":"112","data":{"name":"refund"},"member":{"user":{"id":"u-7"}}}`
	const thirdCommand = `{"type":2,"id":"114","data":{"name":"refund","options":[{"name":"amount","value":26}]},"member":{"user":{"id":"u-7"}}}`
	const eventPing = `{"version":1,"application_id":"11","type":0}`
	const installed = `{"version":1,"application_id":"11","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2026-12-07T12:00:00.000000","data":{"user":{"id":"u-9"}}}}`
	const entitled = `{"version":1,"application_id":"11","type":1,"event":{"type":"ENTITLEMENT_CREATE","timestamp":"2026-12-07T12:00:01.000000","data":{"user_id":"u-9"}}}`
	twilio := func(token, body string) webhook.Header {
		return webhook.SignTwilio([]byte(token), "https://flrh.example.com/v1/hooks/sms", webhook.Delivery{}, []byte(body))
	}
	const sms, delivered = "MessageSid=SM9&SmsStatus=received&From=%2B15551230000&Body=refund+please", "MessageSid=SM9&MessageStatus=delivered"
	const twiml = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`
	steps := []struct {
		name   string
		hook   string
		h      webhook.Header
		body   []byte
		status int
		answer string // the whole answer, or, between …, a part of it
	}{
		{"slack's handshake is answered with its challenge", "chat", nil, nil, 200, `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`},
		{"a handshake under another secret", "chat", nil, nil, 401, `…the signature does not match`},
		{"a slash command starts a run, said to its sender alone", "chat", nil, nil, 200, `{"response_type":"ephemeral","text":"Started run chat-398.474.803a."}`},
		{"the same command delivered again", "chat", nil, nil, 200, `{"response_type":"ephemeral","text":"Taken already: run chat-398.474.803a."}`},
		{"a command the hook does not act on", "chat", nil, nil, 200, `{"response_type":"ephemeral","text":"Not acted on: the event \"/deploy\" is not one this webhook acts on."}`},
		{"a mention starts a run", "mentions", nil, nil, 201, `…"run_id":"mentions-Ev42"…`},
		{"a form where only JSON is sent", "issues", nil, nil, 415, `…application/json…`},
		{"a Linear issue created", "issues", nil, nil, 201, `…"run_id":"issues-lin-1"…`},
		{"a Linear issue updated", "issues", nil, nil, 200, `…"ignored":"the body does not hold the webhook's value at /action"…`},
		{"a Linear delivery sent six minutes ago", "issues", nil, nil, 401, `…tolerance is 5m0s…`},
		{"v1a under the sender's key", "signed", webhook.SignEd25519(webhook.Standard, signer, webhook.Delivery{ID: "ed-1", Timestamp: now.Unix()}, signed), signed, 201, `…"run_id":"signed-ed-1"…`},
		{"v1 under a secret the server does not hold", "signed", webhook.Sign(webhook.Standard, []byte("0123456789abcdef"), webhook.Delivery{ID: "ed-2", Timestamp: now.Unix()}, signed), signed, 401, `…offers no v1a signature…`},
		{"discord's PING", "bot", discord(app, `{"type":1}`), []byte(`{"type":1}`), 200, `{"type":1}`},
		{"a PING under another key", "bot", discord(signer, `{"type":1}`), []byte(`{"type":1}`), 401, `…public keys…`},
		{"an autocompletion, answered with no choices", "bot", discord(app, `{"type":4,"id":"113","data":{"name":"refund"}}`), []byte(`{"type":4,"id":"113","data":{"name":"refund"}}`), 200, `{"data":{"choices":[]},"type":8}`},
		{"a discord command starts a run", "bot", discord(app, refundCommand), []byte(refundCommand), 200, `{"data":{"content":"Started run bot-111.","flags":64},"type":4}`},
		{"a command without its amount is refused, said to its sender", "bot", discord(app, emptyCommand), []byte(emptyCommand), 200, `…"content":"Refused: the input: /refunds/0/amount: the body has nothing at {/data/options/0/value}"…`},
		{"a command past the hook's rate (2/h; the PING and the autocompletion not counted), said to its sender", "bot", discord(app, thirdCommand), []byte(thirdCommand), 200,
			`…"content":"Refused: webhook bot took more deliveries than its rate, 2/h (burst 2), allows: deliver it again in 30m0s"…`},
		{"discord's webhook events' PING, answered with nothing", "installs", discord(app, eventPing), []byte(eventPing), 204, ``},
		{"an install starts a run, answered with nothing", "installs", discord(app, installed), []byte(installed), 204, ``},
		{"the same event delivered again", "installs", discord(app, installed), []byte(installed), 204, ``},
		{"an event the hook does not act on", "installs", discord(app, entitled), []byte(entitled), 204, ``},
		{"an event under another key", "installs", discord(signer, installed), []byte(installed), 401, `…public keys…`},
		{"an SMS starts a run, answered with empty TwiML", "sms", twilio("twilio-auth-token-0123456789", sms), []byte(sms), 200, twiml},
		{"its status callback, not acted on", "sms", twilio("twilio-auth-token-0123456789", delivered), []byte(delivered), 200, twiml},
		{"an SMS under another token", "sms", twilio("not-the-twilio-token-000000", sms), []byte(sms), 401, `…the URL and the form…`},
	}
	steps[0].h, steps[0].body = slack(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`, "application/json", slackSecret)
	steps[1].h, steps[1].body = slack(`{"token":"x","challenge":"c","type":"url_verification"}`, "application/json", "another-slack-secret-0123")
	steps[2].h, steps[2].body = slack(command, form+"; charset=utf-8", slackSecret)
	steps[3].h, steps[3].body = slack(command, form, slackSecret)
	steps[4].h, steps[4].body = slack("command=%2Fdeploy&user_name=roadrunner&trigger_id=399.1", form, slackSecret)
	steps[5].h, steps[5].body = slack(`{"type":"event_callback","event_id":"Ev42","event":{"type":"app_mention","user":"U2","text":"refund please"}}`, "application/json", slackSecret)
	steps[6].h, steps[6].body = slack(command, form, slackSecret)
	steps[7].h, steps[7].body = linear("lin-1", "create", now)
	steps[8].h, steps[8].body = linear("lin-2", "update", now)
	steps[9].h, steps[9].body = linear("lin-3", "create", now.Add(-6*time.Minute))
	steps = append(steps, struct {
		name   string
		hook   string
		h      webhook.Header
		body   []byte
		status int
		answer string
	}{"slack checking its certificate", "chat", nil, nil, 200, `{}`})
	steps[len(steps)-1].h, steps[len(steps)-1].body = slack("ssl_check=1&token=x", form, slackSecret)
	for _, s := range steps {
		a := f.deliver(s.hook, s.h, s.body)
		got := strings.TrimSpace(string(a.body))
		want := strings.Trim(s.answer, "…")
		part := want != s.answer
		if a.status != s.status || (part && !strings.Contains(got, want)) || (!part && got != want) {
			t.Fatalf("%s: %d %s; want %d %s", s.name, a.status, got, s.status, s.answer)
		}
	}

	ctx := context.Background()
	runs, _ := f.store.Runs(ctx, "", 100)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if want := []string{"bot-111", "chat-398.474.803a", "install-u-9", "issues-lin-1", "mentions-Ev42", "signed-ed-1", "sms-SM9"}; !slices.Equal(ids, want) {
		t.Fatalf("runs %v, want %v", ids, want)
	}
	in, err := f.store.Inbox(ctx, "chat-398.474.803a", false)
	if err != nil || len(in) != 1 || !strings.Contains(string(in[0].Body), `"payee":"roadrunner","reason":"/refund-small"`) {
		t.Fatalf("the command's run's input: %+v, %v", in, err)
	}
	f.metricsHolding(
		`flrh_webhook_deliveries_total{outcome="handshake",webhook="chat"} 2`,
		`flrh_webhook_deliveries_total{outcome="started",webhook="chat"} 1`,
		`flrh_webhook_deliveries_total{outcome="again",webhook="chat"} 1`,
		`flrh_webhook_deliveries_total{outcome="ignored",webhook="chat"} 1`,
		`flrh_webhook_deliveries_total{outcome="refused",webhook="chat"} 1`,
		`flrh_webhook_deliveries_total{outcome="refused",webhook="issues"} 2`,
		`flrh_webhook_deliveries_total{outcome="handshake",webhook="bot"} 2`,
		`flrh_webhook_deliveries_total{outcome="failed",webhook="bot"} 1`,
		`flrh_webhook_parked_total{webhook="bot"} 1`,
		`flrh_webhook_deliveries_total{outcome="started",webhook="sms"} 1`,
		`flrh_webhook_deliveries_total{outcome="handshake",webhook="installs"} 1`,
		`flrh_webhook_deliveries_total{outcome="started",webhook="installs"} 1`,
		`flrh_webhook_deliveries_total{outcome="again",webhook="installs"} 1`,
		`flrh_webhook_deliveries_total{outcome="ignored",webhook="installs"} 1`,
		`flrh_webhook_deliveries_total{outcome="ignored",webhook="sms"} 1`,
	)
	// The list names the URL Twilio signs, and no key.
	if a := f.get("/v1/hooks", tokOperator); a.status != 200 || !strings.Contains(string(a.body), `"name":"sms","scheme":"twilio","workflow":"refund-agent","events":["message.received"],"start":true,"keep_refused":1000,"url":"https://flrh.example.com/v1/hooks/sms"`) ||
		strings.Contains(string(a.body), "twilio-auth-token") {
		t.Fatalf("GET /v1/hooks: %d %s", a.status, a.body)
	}
}

func TestParseWebhooksRefuses(t *testing.T) {
	hook := func(extra string) string {
		return `{"webhooks":[{"name":"shop","scheme":"standard","secret_env":"S","workflow":"refund-agent"` + extra + `}]}`
	}
	cases := []struct{ name, text, words string }{
		{"no secret", `{"webhooks":[{"name":"shop","scheme":"standard","workflow":"refund-agent"}]}`, "secret_env or secret_file"},
		{"an unknown scheme", `{"webhooks":[{"name":"shop","scheme":"gitea","secret_env":"S","workflow":"refund-agent"}]}`, "/webhooks/0/scheme"},
		{"a name that is no path segment", `{"webhooks":[{"name":"Shop/1","scheme":"standard","secret_env":"S","workflow":"w"}]}`, "/webhooks/0/name"},
		{"an unknown member", hook(`,"secret":"x"`), "secret"},
		{"twilio without its url", `{"webhooks":[{"name":"sms","scheme":"twilio","secret_env":"S","workflow":"w"}]}`, "required for a twilio webhook"},
		{"a url where nothing signs it", hook(`,"url":"https://flrh.example.com/v1/hooks/shop"`), "and for no other"},
		{"a follow-up where no one waits", hook(`,"follow_up":true`), "slack and discord webhooks only"},
		{"a follow-up not a boolean", hook(`,"follow_up":"yes"`), "/webhooks/0/follow_up"},
		{"two of one name", `{"webhooks":[` + hook("")[13:len(hook(""))-2] + `,` + hook("")[13:len(hook(""))-2] + `]}`, "a second webhook named shop"},
		{"a run id template unclosed", hook(`,"run_id":"run-{/id"`), "run_id: /: the { at byte 4 is not closed"},
		{"an input placeholder unknown", hook(`,"input":{"a":"{$run}"}`), "input: /a: no placeholder {$run}"},
		{"a condition on no pointer", hook(`,"when":{"action":"opened"}`), "/webhooks/0 (shop): when: action: a condition's key is a JSON pointer"},
		{"a rate that is none", hook(`,"rate":"fast"`), `rate: rate limit "fast"`},
		{"a burst without a rate", hook(`,"burst":5`), "burst: a burst is of a rate"},
		{"a bad label", hook(`,"labels":{"Order":"{/id}"}`), `labels: label "Order": a key is lower-case`},
		{"flrh's own label", hook(`,"labels":{"flrh.webhook":"x"}`), `keys beginning "flrh." are flrh's own`},
		{"a label's unknown placeholder", hook(`,"labels":{"order":"{$run}"}`), "labels: order: /: no placeholder {$run}"},
		{"an empty label", hook(`,"labels":{"order":""}`), "/webhooks/0/labels/order"},
		{"a tolerance of nothing", hook(`,"tolerance_seconds":0`), "tolerance_seconds"},
		{"no webhooks", `{"webhooks":[]}`, "/webhooks"},
		{"not JSON", `{"webhooks":`, "malformed"},
	}
	for _, c := range cases {
		_, err := ParseWebhooks([]byte(c.text), false)
		if err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %v; want an error saying %q", c.name, err, c.words)
		}
	}
	// YAML reads the same.
	specs, err := ParseWebhooks([]byte("webhooks:\n  - name: shop\n    scheme: github\n    secret_env: [A, B]\n    workflow: refund-agent\n    input: {x: \"{/a}\"}\n"), true)
	if err != nil || len(specs) != 1 || len(specs[0].SecretEnv) != 2 || string(specs[0].Input) != `{"x":"{/a}"}` {
		t.Fatalf("YAML: %+v, %v", specs, err)
	}
}

func TestLoadWebhooksRefuses(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "short.secret"), []byte("short\n"), 0o600)
	specs := func(text string) []WebhookSpec {
		s, err := ParseWebhooks([]byte(text), false)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	env := map[string]string{"GOOD": "a-good-secret-of-enough-bytes", "NOT_B64": "whsec_***"}
	cases := []struct{ text, words string }{
		{`{"webhooks":[{"name":"a","scheme":"github","secret_env":"UNSET","workflow":"w"}]}`, "webhook a: the environment variable UNSET is unset or empty"},
		{`{"webhooks":[{"name":"a","scheme":"standard","secret_env":"NOT_B64","workflow":"w"}]}`, "webhook a: the secret in $NOT_B64: webhook: a Standard Webhooks secret is base64"},
		{`{"webhooks":[{"name":"a","scheme":"github","secret_file":"short.secret","workflow":"w"}]}`, "a secret of 5 bytes is too short"},
		{`{"webhooks":[{"name":"a","scheme":"github","secret_file":"missing.secret","workflow":"w"}]}`, "missing.secret"},
	}
	for _, c := range cases {
		_, err := LoadWebhooks(specs(c.text), dir, func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %v; want an error saying %q", c.text, err, c.words)
		}
		if err != nil && strings.Contains(err.Error(), "***") {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
	// A webhook of a workflow the server does not run is refused, and the
	// webhooks in place stay.
	f := webhookFixture(t)
	w, err := LoadWebhooks(specs(`{"webhooks":[{"name":"a","scheme":"github","secret_env":"GOOD","workflow":"payroll"}]}`), dir, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetWebhooks(w); err == nil || !strings.Contains(err.Error(), "webhook a:") || !strings.Contains(err.Error(), "payroll") {
		t.Fatalf("SetWebhooks: %v", err)
	}
	if got := f.server.webhooks.Load().Names(); strings.Join(got, ",") != "shop,tracker,store,repo,stripe" {
		t.Fatalf("webhooks in place: %v", got)
	}
}

func FuzzParseWebhooks(f *testing.F) {
	f.Add([]byte(webhooksText))
	f.Add([]byte(`{"webhooks":[{"name":"a","scheme":"github","secret_env":["A","B"],"workflow":"w","when":{"/a/0":[1,{"b":null}]},"input":"{{x}} {$body}"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := ParseWebhooks(data, false)
		if err != nil {
			return
		}
		// Whatever parses loads, given its secrets.
		_, err = LoadWebhooks(specs, t.TempDir(), func(string) string { return "0123456789abcdef0123456789abcdef" })
		var secretFile bool
		for _, s := range specs {
			secretFile = secretFile || len(s.SecretFile) > 0
		}
		if err != nil && !secretFile {
			t.Fatalf("parsed but does not load: %v", err)
		}
	})
}

// A webhook with a rate takes that many signed deliveries and answers
// the next 429 with when to deliver it again, taking nothing of it: no
// run, nothing parked. A delivery whose signature fails spends nothing,
// so no one but the sender can use up its rate; a reload keeps what was
// spent.
func TestWebhookRate(t *testing.T) {
	text := `{"webhooks": [{"name": "shop", "scheme": "standard", "secret_env": "SHOP_SECRET", "workflow": "refund-agent", "rate": "2/m",
  "run_id": "refund-{/data/order}",
  "input": {"refunds": [{"id": "{/data/refund_id}", "amount": "{/data/amount}", "payee": "{/data/customer}", "reason": "{$event}"}]}}]}`
	env := map[string]string{"SHOP_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(shopSecret)}
	f := hooksFixture(t, text, env)
	now := time.Now()
	send := func(id, order string, secret []byte) answer {
		body := shopEvent("refund.requested", order, "r-"+order, 20)
		return f.deliver("shop", webhook.Sign(webhook.Standard, secret, webhook.Delivery{ID: id, Timestamp: now.Unix()}, body), body)
	}
	if a := send("m-0", "o0", []byte("not-the-shop-secret-at-all")); a.status != 401 {
		t.Fatalf("a forged delivery: %d %s", a.status, a.body)
	}
	for i, order := range []string{"o1", "o2"} {
		if a := send(fmt.Sprintf("m-%d", i+1), order, shopSecret); a.status != 201 {
			t.Fatalf("delivery %d within the rate: %d %s", i+1, a.status, a.body)
		}
	}
	a := send("m-3", "o3", shopSecret)
	retry, _ := strconv.Atoi(a.header.Get("Retry-After"))
	if a.status != 429 || !strings.Contains(string(a.body), `"type":"rate_limited"`) || !strings.Contains(string(a.body), "webhook shop took more deliveries than its rate, 2/m (burst 2), allows: deliver it again in ") ||
		retry < 25 || retry > 30 {
		t.Fatalf("past the rate: %d Retry-After %q %s", a.status, a.header.Get("Retry-After"), a.body)
	}
	ctx := context.Background()
	if _, err := f.store.Run(ctx, "refund-o3"); store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a delivery past the rate started its run: %v", err)
	}
	if a := f.get("/v1/hooks/shop/parked", tokOperator); strings.Contains(string(a.body), "m-3") {
		t.Fatalf("a delivery past the rate was parked: %s", a.body)
	}
	// Reloaded, the webhook's rate is spent still.
	specs, err := ParseWebhooks([]byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := LoadWebhooks(specs, t.TempDir(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetWebhooks(hooks); err != nil {
		t.Fatal(err)
	}
	if a := send("m-3", "o3", shopSecret); a.status != 429 {
		t.Fatalf("after a reload: %d %s", a.status, a.body)
	}
	f.metricsHolding(`flrh_webhook_deliveries_total{outcome="rate_limited",webhook="shop"} 2`, `flrh_webhook_deliveries_total{outcome="started",webhook="shop"} 2`)
}

// A label rendered from a delivery is put in NFC, whatever form the
// sender wrote its text in; one the rules refuse otherwise (empty, a
// control character) refuses the delivery, naming the label.
func TestWebhookLabelsRendered(t *testing.T) {
	h, err := compileWebhook(WebhookSpec{Name: "shop", Scheme: webhook.Standard, SecretEnv: NameList{"S"}, Workflow: "w",
		Labels: map[string]string{"customer": "{/customer}", "order": "o-{/order}"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body  map[string]any
		want  map[string]string
		words string
	}{
		{map[string]any{"customer": "Ame\u0301lie", "order": int64(7)}, map[string]string{"customer": "Am\u00e9lie", "order": "o-7", "flrh.webhook": "shop"}, ""},
		{map[string]any{"customer": "", "order": int64(7)}, nil, `label "customer": the value is empty`},
		{map[string]any{"customer": "a\nb", "order": int64(7)}, nil, `label "customer": the value holds a control character`},
		{map[string]any{"order": int64(7)}, nil, "the label customer:"},
	} {
		got, err := h.renderLabels(jsontemplate.Values{Body: c.body})
		if c.words != "" {
			if err == nil || !strings.Contains(err.Error(), c.words) {
				t.Errorf("%s: %v, %v; want an error saying %q", c.body, got, err, c.words)
			}
			continue
		}
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.body, got, err, c.want)
		}
	}
}
