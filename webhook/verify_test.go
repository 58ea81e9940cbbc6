package webhook_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/webhook"
)

// The published vectors: Standard Webhooks' libraries' own test delivery,
// and the example of GitHub's documentation on validating deliveries.
func TestPublishedVectors(t *testing.T) {
	key, err := webhook.ParseSecret(webhook.Standard, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.Header{
		"Webhook-Id":        {"msg_p5jXN8AQM9LWM0D4loKWxJek"},
		"Webhook-Timestamp": {"1614265330"},
		"Webhook-Signature": {"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	}
	v := webhook.Verifier{Scheme: webhook.Standard, Secrets: [][]byte{key}}
	d, err := v.Verify(h, []byte(`{"test": 2432232314}`), time.Unix(1614265330, 0))
	if err != nil || d.ID != "msg_p5jXN8AQM9LWM0D4loKWxJek" || d.Timestamp != 1614265330 {
		t.Fatalf("standard vector: %+v, %v", d, err)
	}
	if d.Body.(map[string]any)["test"] == nil {
		t.Fatalf("body not read: %#v", d.Body)
	}

	// GitHub's example body is not JSON: the signature holds, and the
	// body is refused after it.
	gh := webhook.Verifier{Scheme: webhook.GitHub, Secrets: [][]byte{[]byte("It's a Secret to Everybody")}}
	_, err = gh.Verify(webhook.Header{
		"X-Hub-Signature-256": {"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
		"X-Github-Delivery":   {"d-1"}, "X-Github-Event": {"ping"},
	}, []byte("Hello, World!"), time.Now())
	if !errors.Is(err, &webhook.Error{Reason: webhook.ReasonMalformed}) || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("github vector: %v", err)
	}

	// Slack's documentation's worked example: a slash command's form.
	sl := webhook.Verifier{Scheme: webhook.Slack, Secrets: [][]byte{[]byte("8f742231b10e8888abcd99yyyzzz85a5")}}
	d, err = sl.Verify(webhook.Header{
		"X-Slack-Signature":         {"v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"},
		"X-Slack-Request-Timestamp": {"1531420618"},
		"Content-Type":              {"application/x-www-form-urlencoded"},
	}, []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"),
		time.Unix(1531420618, 0).Add(time.Minute))
	if err != nil || d.ID != "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c" || d.Event != "/webhook-collect" || !d.Interactive ||
		d.Body.(map[string]any)["user_name"] != "roadrunner" || d.Body.(map[string]any)["text"] != "" {
		t.Fatalf("slack vector: %+v, %v", d, err)
	}
}

var (
	secret  = []byte("0123456789abcdef0123456789abcdef")
	other   = []byte("fedcba9876543210fedcba9876543210")
	now     = time.Unix(1_800_000_000, 0)
	body    = []byte(`{"id":"evt_1","type":"refund.requested","data":{"amount":900}}`)
	signed  = webhook.Delivery{ID: "msg_1", Event: "issues", Timestamp: now.Unix()}
	minutes = func(n int) int64 { return now.Add(time.Duration(n) * time.Minute).Unix() }
)

func with(h webhook.Header, k string, v ...string) webhook.Header {
	out := webhook.Header{}
	for key, val := range h {
		out[key] = val
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func TestVerify(t *testing.T) {
	std := webhook.Sign(webhook.Standard, secret, signed, body)
	gh := webhook.Sign(webhook.GitHub, secret, signed, body)
	st := webhook.Sign(webhook.Stripe, secret, signed, body)
	sh := webhook.Sign(webhook.Shopify, secret, signed, body)
	gl := webhook.Sign(webhook.GitLab, secret, signed, body)
	slackEvent := []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention","text":"refund 900"}}`)
	sl := webhook.Sign(webhook.Slack, secret, signed, slackEvent)
	slSig := sl["X-Slack-Signature"][0]
	slackSigned := func(b string) (webhook.Header, []byte) {
		return webhook.Sign(webhook.Slack, secret, signed, []byte(b)), []byte(b)
	}
	linearBody := func(ms int64) []byte {
		return []byte(`{"action":"create","type":"Issue","data":{"id":"i1"},"webhookTimestamp":` + strconv.FormatInt(ms, 10) + `}`)
	}
	linearNow := linearBody(now.UnixMilli())
	li := webhook.Sign(webhook.Linear, secret, webhook.Delivery{ID: "d-1", Event: "Issue"}, linearNow)
	linearAt := func(ms int64) (webhook.Header, []byte) {
		return webhook.Sign(webhook.Linear, secret, webhook.Delivery{ID: "d-1", Event: "Issue"}, linearBody(ms)), linearBody(ms)
	}
	stale, staleBody := linearAt(now.UnixMilli() - 300_001)
	edge, edgeBody := linearAt(now.UnixMilli() + 300_000)
	noTime, noTimeBody := slackSigned(`{"type":"event_callback","event_id":"Ev1"}`)
	challenge, challengeBody := slackSigned(`{"type":"url_verification","challenge":"   "}`)
	stdSig := std["Webhook-Signature"][0]
	cases := []struct {
		name    string
		scheme  webhook.Scheme
		secrets [][]byte
		h       webhook.Header
		body    []byte
		tol     time.Duration
		id      string
		event   string
		reason  webhook.Reason // "" accepts
		words   string
	}{
		{"standard", webhook.Standard, nil, std, body, 0, "msg_1", "refund.requested", "", ""},
		{"standard, header names in any case", webhook.Standard, nil, webhook.Header{"Webhook-Id": std["Webhook-Id"], "Webhook-Timestamp": std["Webhook-Timestamp"], "Webhook-Signature": std["Webhook-Signature"]}, body, 0, "msg_1", "refund.requested", "", ""},
		{"standard as svix sends it", webhook.Standard, nil, webhook.Header{"Svix-Id": std["Webhook-Id"], "Svix-Timestamp": std["Webhook-Timestamp"], "Svix-Signature": std["Webhook-Signature"]}, body, 0, "msg_1", "refund.requested", "", ""},
		{"standard, the new secret among old signatures", webhook.Standard, nil, with(std, "Webhook-Signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))+" v1a,xyz "+stdSig), body, 0, "msg_1", "refund.requested", "", ""},
		{"standard, the old secret while rotating", webhook.Standard, [][]byte{other, secret}, std, body, 0, "msg_1", "refund.requested", "", ""},
		{"standard, another secret", webhook.Standard, [][]byte{other}, std, body, 0, "", "", webhook.ReasonSignature, "no v1 signature matches"},
		{"standard, the body changed", webhook.Standard, nil, std, []byte(`{"id":"evt_1","type":"refund.requested","data":{"amount":9000}}`), 0, "", "", webhook.ReasonSignature, ""},
		{"standard, the id changed", webhook.Standard, nil, with(std, "Webhook-Id", "msg_2"), body, 0, "", "", webhook.ReasonSignature, ""},
		{"standard, the time changed", webhook.Standard, nil, with(std, "Webhook-Timestamp", "1800000001"), body, 0, "", "", webhook.ReasonSignature, ""},
		{"standard, no id", webhook.Standard, nil, with(std, "Webhook-Id"), body, 0, "", "", webhook.ReasonMissing, "Webhook-Id"},
		{"standard, no signature", webhook.Standard, nil, with(std, "Webhook-Signature"), body, 0, "", "", webhook.ReasonMissing, "Webhook-Signature"},
		{"standard, no time", webhook.Standard, nil, with(std, "Webhook-Timestamp"), body, 0, "", "", webhook.ReasonMissing, "Webhook-Timestamp"},
		{"standard, a time in milliseconds' clothing", webhook.Standard, nil, with(std, "Webhook-Timestamp", "1.8e9"), body, 0, "", "", webhook.ReasonMalformed, "Unix seconds"},
		{"standard, a signature not base64", webhook.Standard, nil, with(std, "Webhook-Signature", "v1,***"), body, 0, "", "", webhook.ReasonMalformed, "base64"},
		{"standard, spare bits set in the last character", webhook.Standard, nil, with(std, "Webhook-Signature", stdSig[:len(stdSig)-2]+string(stdSig[len(stdSig)-2]^1)+"="), body, 0, "", "", webhook.ReasonMalformed, "canonical base64"},
		{"github, upper-case hex", webhook.GitHub, nil, with(gh, "X-Hub-Signature-256", "sha256="+strings.ToUpper(gh["X-Hub-Signature-256"][0][7:])), body, 0, "", "", webhook.ReasonMalformed, "64 hex digits"},
		{"standard, a signature without a version", webhook.Standard, nil, with(std, "Webhook-Signature", stdSig[3:]), body, 0, "", "", webhook.ReasonMalformed, "version,signature"},
		{"standard, only another version", webhook.Standard, nil, with(std, "Webhook-Signature", "v1a,"+stdSig[3:]), body, 0, "", "", webhook.ReasonMalformed, "no v1 signature"},
		{"standard, seventeen signatures", webhook.Standard, nil, with(std, "Webhook-Signature", strings.Repeat(stdSig+" ", 17)), body, 0, "", "", webhook.ReasonMalformed, "at most 16"},
		{"standard, an id with a space", webhook.Standard, nil, with(std, "Webhook-Id", "msg 1"), body, 0, "", "", webhook.ReasonMalformed, "visible ASCII"},
		{"standard, five minutes old", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, webhook.Delivery{ID: "m", Timestamp: minutes(-5)}, body), body, 0, "m", "refund.requested", "", ""},
		{"standard, five minutes and a second old", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, webhook.Delivery{ID: "m", Timestamp: minutes(-5) - 1}, body), body, 0, "", "", webhook.ReasonStale, "tolerance is 5m0s"},
		{"standard, five minutes ahead", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, webhook.Delivery{ID: "m", Timestamp: minutes(5)}, body), body, 0, "m", "refund.requested", "", ""},
		{"standard, more than five minutes ahead", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, webhook.Delivery{ID: "m", Timestamp: minutes(5) + 1}, body), body, 0, "", "", webhook.ReasonStale, ""},
		{"standard, an hour old within an hour's tolerance", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, webhook.Delivery{ID: "m", Timestamp: minutes(-60)}, body), body, time.Hour, "m", "refund.requested", "", ""},
		{"standard, a body that is not JSON", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, signed, []byte("{")), []byte("{"), 0, "", "", webhook.ReasonMalformed, "not JSON"},
		{"standard, a member named twice", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, signed, []byte(`{"a":1,"a":2}`)), []byte(`{"a":1,"a":2}`), 0, "", "", webhook.ReasonMalformed, `"a" named twice`},
		{"standard, two values", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, signed, []byte(`{} {}`)), []byte(`{} {}`), 0, "", "", webhook.ReasonMalformed, "more than one value"},
		{"standard, a body that is not an object", webhook.Standard, nil, webhook.Sign(webhook.Standard, secret, signed, []byte(`[1]`)), []byte(`[1]`), 0, "msg_1", "", "", ""},

		{"github", webhook.GitHub, nil, gh, body, 0, "msg_1", "issues", "", ""},
		{"github, whatever the time", webhook.GitHub, nil, gh, body, time.Second, "msg_1", "issues", "", ""},
		{"github, another secret", webhook.GitHub, [][]byte{other}, gh, body, 0, "", "", webhook.ReasonSignature, "does not match"},
		{"github, the body changed", webhook.GitHub, nil, gh, []byte(`{}`), 0, "", "", webhook.ReasonSignature, ""},
		{"github, SHA-1 alone", webhook.GitHub, nil, webhook.Header{"X-Hub-Signature": {"sha1=00"}, "X-Github-Delivery": {"d"}, "X-Github-Event": {"e"}}, body, 0, "", "", webhook.ReasonMissing, "SHA-1"},
		{"github, a short signature", webhook.GitHub, nil, with(gh, "X-Hub-Signature-256", gh["X-Hub-Signature-256"][0][:20]), body, 0, "", "", webhook.ReasonMalformed, "64 hex digits"},
		{"github, no prefix", webhook.GitHub, nil, with(gh, "X-Hub-Signature-256", gh["X-Hub-Signature-256"][0][7:]), body, 0, "", "", webhook.ReasonMalformed, "sha256="},
		{"github, no delivery id", webhook.GitHub, nil, with(gh, "X-Github-Delivery"), body, 0, "", "", webhook.ReasonMissing, "X-GitHub-Delivery"},
		{"github, no event", webhook.GitHub, nil, with(gh, "X-Github-Event"), body, 0, "", "", webhook.ReasonMissing, "X-GitHub-Event"},

		{"stripe", webhook.Stripe, nil, st, body, 0, "evt_1", "refund.requested", "", ""},
		{"stripe, a test signature beside", webhook.Stripe, nil, with(st, "Stripe-Signature", st["Stripe-Signature"][0]+",v0=abc"), body, 0, "evt_1", "refund.requested", "", ""},
		{"stripe, two v1 while rolling", webhook.Stripe, [][]byte{other}, with(st, "Stripe-Signature", webhook.Sign(webhook.Stripe, other, signed, body)["Stripe-Signature"][0]+","+strings.Split(st["Stripe-Signature"][0], ",")[1]), body, 0, "evt_1", "refund.requested", "", ""},
		{"stripe, another secret", webhook.Stripe, [][]byte{other}, st, body, 0, "", "", webhook.ReasonSignature, ""},
		{"stripe, the time changed", webhook.Stripe, nil, with(st, "Stripe-Signature", strings.Replace(st["Stripe-Signature"][0], "t=1800000000", "t=1800000001", 1)), body, 0, "", "", webhook.ReasonSignature, ""},
		{"stripe, two times", webhook.Stripe, nil, with(st, "Stripe-Signature", "t=1,"+st["Stripe-Signature"][0]), body, 0, "", "", webhook.ReasonMalformed, "twice"},
		{"stripe, no time", webhook.Stripe, nil, with(st, "Stripe-Signature", strings.Split(st["Stripe-Signature"][0], ",")[1]), body, 0, "", "", webhook.ReasonMalformed, "t is not"},
		{"stripe, no v1", webhook.Stripe, nil, with(st, "Stripe-Signature", "t=1800000000,v0=00"), body, 0, "", "", webhook.ReasonMalformed, "no v1"},
		{"stripe, not key=value", webhook.Stripe, nil, with(st, "Stripe-Signature", "t"), body, 0, "", "", webhook.ReasonMalformed, "key=value"},
		{"stripe, old", webhook.Stripe, nil, webhook.Sign(webhook.Stripe, secret, webhook.Delivery{Timestamp: minutes(-6)}, body), body, 0, "", "", webhook.ReasonStale, ""},
		{"stripe, an event without an id", webhook.Stripe, nil, webhook.Sign(webhook.Stripe, secret, signed, []byte(`{"type":"x"}`)), []byte(`{"type":"x"}`), 0, "", "", webhook.ReasonMalformed, `"id"`},
		{"stripe, no header", webhook.Stripe, nil, webhook.Header{}, body, 0, "", "", webhook.ReasonMissing, "Stripe-Signature"},

		{"shopify", webhook.Shopify, nil, sh, body, 0, "msg_1", "issues", "", ""},
		{"shopify, whatever the time", webhook.Shopify, nil, sh, body, time.Second, "msg_1", "issues", "", ""},
		{"shopify, another secret", webhook.Shopify, [][]byte{other}, sh, body, 0, "", "", webhook.ReasonSignature, "does not match"},
		{"shopify, the body changed", webhook.Shopify, nil, sh, []byte(`{}`), 0, "", "", webhook.ReasonSignature, ""},
		{"shopify, hex instead of base64", webhook.Shopify, nil, with(sh, "X-Shopify-Hmac-Sha256", strings.Repeat("ab", 32)), body, 0, "", "", webhook.ReasonMalformed, "base64 of 32 bytes"},
		{"shopify, no topic", webhook.Shopify, nil, with(sh, "X-Shopify-Topic"), body, 0, "", "", webhook.ReasonMissing, "X-Shopify-Topic"},
		{"shopify, no id", webhook.Shopify, nil, with(sh, "X-Shopify-Webhook-Id"), body, 0, "", "", webhook.ReasonMissing, "X-Shopify-Webhook-Id"},
		{"shopify, no signature", webhook.Shopify, nil, with(sh, "X-Shopify-Hmac-Sha256"), body, 0, "", "", webhook.ReasonMissing, "X-Shopify-Hmac-Sha256"},

		{"gitlab", webhook.GitLab, nil, gl, body, 0, "msg_1", "issues", "", ""},
		{"gitlab, the old token while rotating", webhook.GitLab, [][]byte{other, secret}, gl, body, 0, "msg_1", "issues", "", ""},
		{"gitlab, an older GitLab's event id", webhook.GitLab, nil, with(with(gl, "X-Gitlab-Idempotency-Key"), "X-Gitlab-Event-Uuid", "ev-1"), body, 0, "ev-1", "issues", "", ""},
		{"gitlab, another token", webhook.GitLab, [][]byte{other}, gl, body, 0, "", "", webhook.ReasonSignature, "none of the hook's secrets"},
		{"gitlab, the token's prefix", webhook.GitLab, nil, with(gl, "X-Gitlab-Token", string(secret[:20])), body, 0, "", "", webhook.ReasonSignature, ""},
		{"gitlab, no token", webhook.GitLab, nil, with(gl, "X-Gitlab-Token"), body, 0, "", "", webhook.ReasonMissing, "X-Gitlab-Token"},
		{"gitlab, no id", webhook.GitLab, nil, with(gl, "X-Gitlab-Idempotency-Key"), body, 0, "", "", webhook.ReasonMissing, "X-Gitlab-Event-Uuid"},
		{"gitlab, a body not JSON", webhook.GitLab, nil, gl, []byte("{"), 0, "", "", webhook.ReasonMalformed, "not JSON"},

		{"slack, an event", webhook.Slack, nil, sl, slackEvent, 0, "Ev1", "app_mention", "", ""},
		{"slack, the old secret while rotating", webhook.Slack, [][]byte{other, secret}, sl, slackEvent, 0, "Ev1", "app_mention", "", ""},
		{"slack, another secret", webhook.Slack, [][]byte{other}, sl, slackEvent, 0, "", "", webhook.ReasonSignature, "does not match"},
		{"slack, the time changed", webhook.Slack, nil, with(sl, "X-Slack-Request-Timestamp", "1800000001"), slackEvent, 0, "", "", webhook.ReasonSignature, ""},
		{"slack, no v0=", webhook.Slack, nil, with(sl, "X-Slack-Signature", slSig[3:]), slackEvent, 0, "", "", webhook.ReasonMalformed, "v0= and 64 hex digits"},
		{"slack, a v1 Slack does not send", webhook.Slack, nil, with(sl, "X-Slack-Signature", "v1="+slSig[3:]), slackEvent, 0, "", "", webhook.ReasonMalformed, "v0="},
		{"slack, no signature", webhook.Slack, nil, with(sl, "X-Slack-Signature"), slackEvent, 0, "", "", webhook.ReasonMissing, "X-Slack-Signature"},
		{"slack, no time", webhook.Slack, nil, with(sl, "X-Slack-Request-Timestamp"), slackEvent, 0, "", "", webhook.ReasonMissing, "X-Slack-Request-Timestamp"},
		{"slack, a time not in seconds", webhook.Slack, nil, with(sl, "X-Slack-Request-Timestamp", "-1"), slackEvent, 0, "", "", webhook.ReasonMalformed, "Unix seconds"},
		{"slack, old", webhook.Slack, nil, webhook.Sign(webhook.Slack, secret, webhook.Delivery{Timestamp: minutes(-6)}, slackEvent), slackEvent, 0, "", "", webhook.ReasonStale, ""},
		{"slack, an event without its type", webhook.Slack, nil, noTime, noTimeBody, 0, "", "", webhook.ReasonMalformed, "event_callback"},
		{"slack, a challenge of spaces", webhook.Slack, nil, challenge, challengeBody, 0, "", "", webhook.ReasonMalformed, "challenge"},

		{"linear", webhook.Linear, nil, li, linearNow, 0, "d-1", "Issue", "", ""},
		{"linear, five minutes ahead to the millisecond", webhook.Linear, nil, edge, edgeBody, 0, "d-1", "Issue", "", ""},
		{"linear, five minutes and a millisecond old", webhook.Linear, nil, stale, staleBody, 0, "", "", webhook.ReasonStale, "tolerance is 5m0s"},
		{"linear, the time changed", webhook.Linear, nil, li, linearBody(now.UnixMilli() + 1), 0, "", "", webhook.ReasonSignature, ""},
		{"linear, another secret", webhook.Linear, [][]byte{other}, li, linearNow, 0, "", "", webhook.ReasonSignature, ""},
		{"linear, no time in the body", webhook.Linear, nil, webhook.Sign(webhook.Linear, secret, signed, body), body, 0, "", "", webhook.ReasonMalformed, "webhookTimestamp"},
		{"linear, a time in seconds' clothing", webhook.Linear, nil, webhook.Sign(webhook.Linear, secret, signed, []byte(`{"webhookTimestamp":1.8e12}`)), []byte(`{"webhookTimestamp":1.8e12}`), 0, "", "", webhook.ReasonMalformed, "milliseconds"},
		{"linear, sha256= before the hex", webhook.Linear, nil, with(li, "Linear-Signature", "sha256="+li["Linear-Signature"][0]), linearNow, 0, "", "", webhook.ReasonMalformed, "64 hex digits"},
		{"linear, no delivery id", webhook.Linear, nil, with(li, "Linear-Delivery"), linearNow, 0, "", "", webhook.ReasonMissing, "Linear-Delivery"},
		{"linear, no signature", webhook.Linear, nil, with(li, "Linear-Signature"), linearNow, 0, "", "", webhook.ReasonMissing, "Linear-Signature"},

		{"no secret", webhook.Stripe, [][]byte{}, st, body, 0, "", "", webhook.ReasonSecret, "no secret"},
		{"no scheme", "svix", nil, st, body, 0, "", "", webhook.ReasonSecret, `"svix"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			secrets := c.secrets
			if secrets == nil {
				secrets = [][]byte{secret}
			}
			v := webhook.Verifier{Scheme: c.scheme, Secrets: secrets, Tolerance: c.tol}
			d, err := v.Verify(c.h, c.body, now)
			if c.reason == "" {
				if err != nil || d.ID != c.id || d.Event != c.event || d.Body == nil {
					t.Fatalf("got %+v, %v; want id %q event %q", d, err, c.id, c.event)
				}
				return
			}
			var we *webhook.Error
			if !errors.As(err, &we) || we.Reason != c.reason || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("got %+v, %v; want a %s refusal saying %q", d, err, c.reason, c.words)
			}
			if d.ID != "" || d.Body != nil {
				t.Fatalf("a refusal gave a delivery: %+v", d)
			}
			for _, s := range [][]byte{secret, other, secret[:20]} {
				if strings.Contains(err.Error(), string(s)) {
					t.Fatalf("the refusal repeats a secret: %v", err)
				}
			}
		})
	}
}

func TestParseSecret(t *testing.T) {
	cases := []struct {
		scheme webhook.Scheme
		text   string
		want   string // "" refuses
	}{
		{webhook.Standard, "whsec_" + base64.StdEncoding.EncodeToString(secret), string(secret)},
		{webhook.Standard, base64.StdEncoding.EncodeToString(secret), string(secret)},
		{webhook.Standard, "whsec_not*base64", ""},
		{webhook.Standard, "whsec_" + base64.StdEncoding.EncodeToString([]byte("short")), ""},
		{webhook.GitHub, "It's a Secret to Everybody", "It's a Secret to Everybody"},
		{webhook.GitHub, "fifteen bytes!!", ""},
		{webhook.Stripe, "whsec_abcdefghijklmnop", "whsec_abcdefghijklmnop"},
		{"gitea", "whatever-whatever-whatever", ""},
		{webhook.Shopify, "shpss_0123456789abcdef", "shpss_0123456789abcdef"},
		{webhook.GitLab, "short-token", ""},
		{webhook.Discord, "a-secret-of-sixteen-bytes-or-more", ""},
		{webhook.Twilio, "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"},
	}
	for _, c := range cases {
		got, err := webhook.ParseSecret(c.scheme, c.text)
		if c.want == "" {
			if !errors.Is(err, &webhook.Error{Reason: webhook.ReasonSecret}) || got != nil {
				t.Errorf("%s %q: %q, %v; want a secret refusal", c.scheme, c.text, got, err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s %q: %q, %v; want %q", c.scheme, c.text, got, err, c.want)
		}
	}
}

// Slack's three kinds of request: the Events API's (and its handshake),
// a slash command's form, an interaction's payload.
func TestVerifySlack(t *testing.T) {
	v := webhook.Verifier{Scheme: webhook.Slack, Secrets: [][]byte{secret}}
	const form = "application/x-www-form-urlencoded"
	interaction := url.Values{"payload": {`{"type":"block_actions","trigger_id":"t.2","actions":[{"value":"approve"}]}`}}.Encode()
	cases := []struct {
		name        string
		contentType string
		body        string
		id, event   string
		challenge   string
		interactive bool
		words       string // a refusal saying it
	}{
		{"the handshake", "application/json", `{"token":"x","challenge":"3eZbrw1aBm2rZgRN","type":"url_verification"}`, "", "", "3eZbrw1aBm2rZgRN", false, ""},
		{"an event, no content type", "", `{"type":"event_callback","event_id":"Ev9","event":{"type":"message"}}`, "Ev9", "message", "", false, ""},
		{"a slash command", form + "; charset=utf-8", "command=%2Frefund&text=900+to+acme&trigger_id=t.1", "t.1", "/refund", "", true, ""},
		{"an interaction", form, interaction, "t.2", "block_actions", "", true, ""},
		{"a handshake without its challenge", "application/json", `{"type":"url_verification"}`, "", "", "", false, "challenge"},
		{"an app_rate_limited notice", "application/json", `{"type":"app_rate_limited","minute_rate_limited":1518467820}`, "", "", "", false, "event_callback"},
		{"slack checking the certificate", form, "ssl_check=1&token=x", "", "", "ssl_check", false, ""},
		{"a command named twice", form, "command=%2Fa&command=%2Fb&trigger_id=t", "", "", "", false, `"command" 2 times`},
		{"a form that does not parse", form, "command=%zz&trigger_id=t", "", "", "", false, "not a form"},
		{"a form field not UTF-8", form, "command=%2Fa&text=%ff&trigger_id=t", "", "", "", false, "not UTF-8"},
		{"a command without its trigger", form, "command=%2Fa", "", "", "", false, "trigger_id"},
		{"an interaction's payload not JSON", form, "payload=%7B", "", "", "", false, "payload is not JSON"},
		{"an interaction without its trigger", form, url.Values{"payload": {`{"type":"view_closed"}`}}.Encode(), "", "", "", false, "trigger_id"},
		{"a JSON body sent as a form", form, `{"type":"event_callback"}`, "", "", "", false, "trigger_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := webhook.Sign(webhook.Slack, secret, signed, []byte(c.body))
			if c.contentType != "" {
				h["Content-Type"] = []string{c.contentType}
			}
			d, err := v.Verify(h, []byte(c.body), now)
			if c.words != "" {
				if !errors.Is(err, &webhook.Error{Reason: webhook.ReasonMalformed}) || !strings.Contains(err.Error(), c.words) || d.Body != nil {
					t.Fatalf("got %+v, %v; want a refusal saying %q", d, err, c.words)
				}
				return
			}
			var handshake any
			switch c.challenge {
			case "":
			case "ssl_check":
				handshake = map[string]any{}
			default:
				handshake = map[string]any{"challenge": c.challenge}
			}
			if err != nil || d.ID != c.id || d.Event != c.event || !reflect.DeepEqual(d.Handshake, handshake) || d.Interactive != c.interactive || d.Body == nil || d.Timestamp != now.Unix() {
				t.Fatalf("got %+v, %v", d, err)
			}
		})
	}
}

// Standard Webhooks' v1a: Ed25519 signatures, verified with the sender's
// public key, beside or instead of v1's secrets.
func TestVerifyEd25519(t *testing.T) {
	signer := ed25519.NewKeyFromSeed(seed([]byte("signer")))
	stranger := ed25519.NewKeyFromSeed(seed([]byte("stranger")))
	pub := signer.Public().(ed25519.PublicKey)
	v1a := webhook.SignEd25519(webhook.Standard, signer, signed, body)
	v1 := webhook.Sign(webhook.Standard, secret, signed, body)
	sigA := v1a["Webhook-Signature"][0]
	both := with(v1a, "Webhook-Signature", v1["Webhook-Signature"][0]+" "+sigA)
	cases := []struct {
		name    string
		secrets [][]byte
		public  []ed25519.PublicKey
		h       webhook.Header
		reason  webhook.Reason
		words   string
	}{
		{"v1a", nil, []ed25519.PublicKey{pub}, v1a, "", ""},
		{"v1a, the old key while rotating", nil, []ed25519.PublicKey{stranger.Public().(ed25519.PublicKey), pub}, v1a, "", ""},
		{"v1 and v1a offered, the secret held", [][]byte{secret}, nil, both, "", ""},
		{"v1 and v1a offered, the key held", nil, []ed25519.PublicKey{pub}, both, "", ""},
		{"v1a offered, secret and key held", [][]byte{other}, []ed25519.PublicKey{pub}, v1a, "", ""},
		{"v1a under another key", nil, []ed25519.PublicKey{stranger.Public().(ed25519.PublicKey)}, v1a, webhook.ReasonSignature, "no v1a signature matches"},
		{"v1a of another id", nil, []ed25519.PublicKey{pub}, with(v1a, "Webhook-Id", "msg_2"), webhook.ReasonSignature, ""},
		{"v1 offered, only the key held", nil, []ed25519.PublicKey{pub}, v1, webhook.ReasonMalformed, "no v1a signature"},
		{"v1a offered, only a secret held", [][]byte{secret}, nil, v1a, webhook.ReasonMalformed, "no v1 signature"},
		{"neither offered", [][]byte{secret}, []ed25519.PublicKey{pub}, with(v1a, "Webhook-Signature", "v2,abc"), webhook.ReasonMalformed, "no v1 or v1a signature"},
		{"v1a not base64", nil, []ed25519.PublicKey{pub}, with(v1a, "Webhook-Signature", "v1a,***"), webhook.ReasonMalformed, "a v1a signature is canonical base64"},
		{"v1a too short", nil, []ed25519.PublicKey{pub}, with(v1a, "Webhook-Signature", "v1a,"+base64.StdEncoding.EncodeToString(make([]byte, 32))), webhook.ReasonSignature, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := webhook.Verifier{Scheme: webhook.Standard, Secrets: c.secrets, PublicKeys: c.public}
			d, err := v.Verify(c.h, body, now)
			if c.reason == "" {
				if err != nil || d.ID != "msg_1" {
					t.Fatalf("got %+v, %v", d, err)
				}
				return
			}
			if !errors.Is(err, &webhook.Error{Reason: c.reason}) || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("got %+v, %v; want a %s refusal saying %q", d, err, c.reason, c.words)
			}
		})
	}
	// Only Standard Webhooks signs with a public key.
	gh := webhook.Verifier{Scheme: webhook.GitHub, Secrets: [][]byte{secret}, PublicKeys: []ed25519.PublicKey{pub}}
	if _, err := gh.Verify(webhook.Sign(webhook.GitHub, secret, signed, body), body, now); !errors.Is(err, &webhook.Error{Reason: webhook.ReasonSecret}) {
		t.Fatalf("github with a public key: %v", err)
	}
}

func TestAddKey(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(seed([]byte("signer"))).Public().(ed25519.PublicKey)
	whpk := "whpk_" + base64.StdEncoding.EncodeToString(pub)
	cases := []struct {
		scheme          webhook.Scheme
		text            string
		secrets, public int // how many of each it holds after; -1 refuses
	}{
		{webhook.Standard, whpk, 0, 1},
		{webhook.Standard, "whsec_" + base64.StdEncoding.EncodeToString(secret), 1, 0},
		{webhook.Standard, "whpk_" + base64.StdEncoding.EncodeToString(pub[:31]), -1, -1},
		{webhook.Standard, "whpk_***", -1, -1},
		{webhook.GitHub, whpk, 1, 0}, // GitHub's secrets are any text: this one is a secret to it
		{webhook.Slack, "short", -1, -1},
	}
	for _, c := range cases {
		v := webhook.Verifier{Scheme: c.scheme}
		err := v.AddKey(c.text)
		if c.secrets < 0 {
			if !errors.Is(err, &webhook.Error{Reason: webhook.ReasonSecret}) || len(v.Secrets)+len(v.PublicKeys) != 0 {
				t.Errorf("%s %q: %v; want a secret refusal, nothing added", c.scheme, c.text, err)
			}
			continue
		}
		if err != nil || len(v.Secrets) != c.secrets || len(v.PublicKeys) != c.public {
			t.Errorf("%s %q: %d secrets, %d public keys, %v", c.scheme, c.text, len(v.Secrets), len(v.PublicKeys), err)
		}
	}
	if got, err := webhook.ParsePublicKey(webhook.Standard, whpk); err != nil || !got.Equal(pub) {
		t.Fatalf("ParsePublicKey: %v", err)
	}
}

// appAuthorized is a Discord webhook event, and appAuthorizedID the
// delivery id its body's digest makes.
const (
	appAuthorized   = `{"version":1,"application_id":"11","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2026-12-07T12:00:00.000000","data":{"integration_type":0,"user":{"id":"u1"},"scopes":["applications.commands"]}}}`
	appAuthorizedID = "body:f1a500378da509abb41c6a8cf850b03d" // the SHA-256 of appAuthorized, its first 16 bytes
)

// Discord's interactions: its PING answered, commands, components and
// modals named by their ids, everything else refused; its webhook
// events: a ping answered quietly, an event named by its type and its
// body's digest.
func TestVerifyDiscord(t *testing.T) {
	app := ed25519.NewKeyFromSeed(seed([]byte("discord app")))
	other := ed25519.NewKeyFromSeed(seed([]byte("another app")))
	v := webhook.Verifier{Scheme: webhook.Discord}
	if err := v.AddKey(hex.EncodeToString(app.Public().(ed25519.PublicKey))); err != nil {
		t.Fatal(err)
	}
	at := func(body string, when int64, key ed25519.PrivateKey) webhook.Header {
		return webhook.SignEd25519(webhook.Discord, key, webhook.Delivery{Timestamp: when}, []byte(body))
	}
	const command = `{"type":2,"id":"1234567890","application_id":"a","data":{"name":"refund","options":[{"name":"amount","value":40}]},"member":{"user":{"id":"u1"}}}`
	cases := []struct {
		name      string
		h         webhook.Header
		body      string
		id, event string
		handshake any
		reason    webhook.Reason
		words     string
	}{
		{"a ping", at(`{"type":1}`, now.Unix(), app), `{"type":1}`, "", "", map[string]any{"type": 1}, "", ""},
		{"a command", at(command, now.Unix(), app), command, "1234567890", "refund", nil, "", ""},
		{"a button", at(`{"type":3,"id":"99","data":{"custom_id":"approve:r-1"}}`, now.Unix(), app), `{"type":3,"id":"99","data":{"custom_id":"approve:r-1"}}`, "99", "approve:r-1", nil, "", ""},
		{"a modal", at(`{"type":5,"id":"98","data":{"custom_id":"refund-form"}}`, now.Unix(), app), `{"type":5,"id":"98","data":{"custom_id":"refund-form"}}`, "98", "refund-form", nil, "", ""},
		{"an autocompletion, answered with no choices", at(`{"type":4,"id":"97","data":{"name":"refund"}}`, now.Unix(), app), `{"type":4,"id":"97","data":{"name":"refund"}}`, "", "", map[string]any{"type": 8, "data": map[string]any{"choices": []any{}}}, "", ""},
		{"a type flrh does not know", at(`{"type":9,"id":"96"}`, now.Unix(), app), `{"type":9,"id":"96"}`, "", "", nil, webhook.ReasonMalformed, "type 9"},
		{"a command without its name", at(`{"type":2,"id":"95","data":{}}`, now.Unix(), app), `{"type":2,"id":"95","data":{}}`, "", "", nil, webhook.ReasonMalformed, `"name"`},
		{"a type that is a string", at(`{"type":"2","id":"94"}`, now.Unix(), app), `{"type":"2","id":"94"}`, "", "", nil, webhook.ReasonMalformed, "integer"},
		{"another application's key", at(command, now.Unix(), other), command, "", "", nil, webhook.ReasonSignature, "public keys"},
		{"the body changed", at(command, now.Unix(), app), strings.Replace(command, "40", "400", 1), "", "", nil, webhook.ReasonSignature, ""},
		{"the time changed", with(at(command, now.Unix(), app), "X-Signature-Timestamp", "1800000001"), command, "", "", nil, webhook.ReasonSignature, ""},
		{"six minutes old", at(command, minutes(-6), app), command, "", "", nil, webhook.ReasonStale, ""},
		{"upper-case hex", with(at(command, now.Unix(), app), "X-Signature-Ed25519", strings.ToUpper(at(command, now.Unix(), app)["X-Signature-Ed25519"][0])), command, "", "", nil, webhook.ReasonMalformed, "128 hex digits"},
		{"no signature", with(at(command, now.Unix(), app), "X-Signature-Ed25519"), command, "", "", nil, webhook.ReasonMissing, "X-Signature-Ed25519"},
		{"no time", with(at(command, now.Unix(), app), "X-Signature-Timestamp"), command, "", "", nil, webhook.ReasonMissing, "X-Signature-Timestamp"},
		{"a webhook event's ping", at(`{"version":1,"application_id":"11","type":0}`, now.Unix(), app), `{"version":1,"application_id":"11","type":0}`, "", "", struct{}{}, "", ""},
		{"a webhook event", at(appAuthorized, now.Unix(), app), appAuthorized, appAuthorizedID, "APPLICATION_AUTHORIZED", nil, "", ""},
		{"an event of another version", at(`{"version":2,"type":1,"event":{"type":"X"}}`, now.Unix(), app), `{"version":2,"type":1,"event":{"type":"X"}}`, "", "", nil, webhook.ReasonMalformed, "version 1"},
		{"an event without its type", at(`{"version":1,"type":1,"event":{"data":{}}}`, now.Unix(), app), `{"version":1,"type":1,"event":{"data":{}}}`, "", "", nil, webhook.ReasonMalformed, `a string "type"`},
		{"an event's payload of type 2", at(`{"version":1,"type":2,"event":{"type":"X"}}`, now.Unix(), app), `{"version":1,"type":2,"event":{"type":"X"}}`, "", "", nil, webhook.ReasonMalformed, "type 2 is not one flrh takes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := v.Verify(c.h, []byte(c.body), now)
			if c.reason != "" {
				if !errors.Is(err, &webhook.Error{Reason: c.reason}) || !strings.Contains(err.Error(), c.words) || d.Body != nil {
					t.Fatalf("got %+v, %v; want a %s refusal saying %q", d, err, c.reason, c.words)
				}
				return
			}
			event := strings.HasPrefix(c.body, `{"version"`)
			if err != nil || d.ID != c.id || d.Event != c.event || !reflect.DeepEqual(d.Handshake, c.handshake) || d.Interactive != (c.handshake == nil && !event) ||
				d.Quiet != event || d.Body == nil {
				t.Fatalf("got %+v, %v", d, err)
			}
		})
	}
	// Keys: the application's public key in hex, and nothing else.
	for _, bad := range []string{"", "zz", strings.Repeat("AB", 32), hex.EncodeToString(app.Public().(ed25519.PublicKey))[:62]} {
		w := webhook.Verifier{Scheme: webhook.Discord}
		if err := w.AddKey(bad); !errors.Is(err, &webhook.Error{Reason: webhook.ReasonSecret}) || len(w.PublicKeys) != 0 {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	if _, err := (webhook.Verifier{Scheme: webhook.Discord, Secrets: [][]byte{secret}}).Verify(at(command, now.Unix(), app), []byte(command), now); !errors.Is(err, &webhook.Error{Reason: webhook.ReasonSecret}) {
		t.Errorf("a Discord verifier holding a secret: %v", err)
	}
}

// What a person who sent an interactive delivery is shown.
func TestReply(t *testing.T) {
	cases := []struct {
		scheme webhook.Scheme
		event  string
		text   string
		body   string
	}{
		{webhook.Slack, "/refund", "Started run chat-1.", `{"response_type":"ephemeral","text":"Started run chat-1."}`},
		{webhook.Slack, "block_actions", "Started run chat-1.", ``},
		{webhook.Slack, "view_submission", "Refused: no amount.", ``},
		{webhook.Discord, "refund", "Started run d-1.", `{"data":{"content":"Started run d-1.","flags":64},"type":4}`},
		{webhook.Discord, "refund", strings.Repeat("é", 2100), `{"data":{"content":"` + strings.Repeat("é", 1999) + `…","flags":64},"type":4}`},
	}
	for _, c := range cases {
		status, ctype, body := webhook.Reply(c.scheme, webhook.Delivery{Event: c.event, Interactive: true}, c.text)
		if status != 200 || string(body) != c.body || (ctype == "") != (c.body == "") {
			t.Errorf("%s %s: %d %q %s; want %s", c.scheme, c.event, status, ctype, body, c.body)
		}
	}
}

// Twilio's forms: the published example, and each way a delivery is
// named, bent or refused.
func TestVerifyTwilio(t *testing.T) {
	const docURL = "https://mycompany.com/myapp.php?foo=1&bar=2"
	doc := webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{[]byte("12345")}, URL: docURL}
	form := webhook.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	docBody := []byte("CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212")
	d, err := doc.Verify(with(form, "X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8="), docBody, now)
	if err != nil || d.ID != "CA1234567890ABCDE" || d.Event != "call" || d.Body.(map[string]any)["Caller"] != "+14158675309" || !d.Interactive {
		t.Fatalf("Twilio's example: %+v, %v", d, err)
	}

	const to = "https://flrh.example.com/v1/hooks/sms"
	v := webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{other, secret}, URL: to}
	sms := []byte("MessageSid=SM1&SmsStatus=received&From=%2B15551230000&Body=refund+order+17")
	signedSMS := webhook.SignTwilio(secret, to, webhook.Delivery{}, sms)
	status := []byte("MessageSid=SM1&MessageStatus=delivered")
	events := []byte(`[{"specversion":"1.0","type":"com.twilio.messaging.message.delivered","id":"EZ1","data":{"messageSid":"SM1"}}]`)
	sum := sha256.Sum256(events)
	eventsDigest := hex.EncodeToString(sum[:16])
	cases := []struct {
		name      string
		v         webhook.Verifier
		h         webhook.Header
		body      []byte
		id, event string
		reason    webhook.Reason
		words     string
	}{
		{"an SMS", v, signedSMS, sms, "SM1:received", "message.received", "", ""},
		{"an SMS retried, its token kept", v, webhook.SignTwilio(secret, to, webhook.Delivery{ID: "idem-1"}, sms), sms, "idem-1", "message.received", "", ""},
		{"a status callback", v, webhook.SignTwilio(secret, to, webhook.Delivery{}, status), status, "SM1:delivered", "message.delivered", "", ""},
		{"fields in another order", v, signedSMS, []byte("Body=refund+order+17&From=%2B15551230000&SmsStatus=received&MessageSid=SM1"), "SM1:received", "message.received", "", ""},
		{"another token", webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{other}, URL: to}, signedSMS, sms, "", "", webhook.ReasonSignature, "URL and the form"},
		{"signed for another URL", webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{secret}, URL: "https://flrh.example.com:8443/v1/hooks/sms"}, signedSMS, sms, "", "", webhook.ReasonSignature, ""},
		{"signed with the default port written", v, webhook.SignTwilio(secret, "https://flrh.example.com:443/v1/hooks/sms", webhook.Delivery{}, sms), sms, "SM1:received", "message.received", "", ""},
		{"signed with the default port left out", webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{secret}, URL: "https://flrh.example.com:443/v1/hooks/sms"}, signedSMS, sms, "SM1:received", "message.received", "", ""},
		{"http signed with port 80", webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{secret}, URL: "http://flrh.example.com/v1/hooks/sms?a=1"},
			webhook.SignTwilio(secret, "http://flrh.example.com:80/v1/hooks/sms?a=1", webhook.Delivery{}, sms), sms, "SM1:received", "message.received", "", ""},
		{"https signed with port 80", v, webhook.SignTwilio(secret, "https://flrh.example.com:80/v1/hooks/sms", webhook.Delivery{}, sms), sms, "", "", webhook.ReasonSignature, ""},
		{"a field changed", v, signedSMS, []byte("MessageSid=SM1&SmsStatus=received&From=%2B15551230000&Body=refund+order+18"), "", "", webhook.ReasonSignature, ""},
		{"a field added", v, signedSMS, append(append([]byte(nil), sms...), "&X=1"...), "", "", webhook.ReasonSignature, ""},
		{"a field named twice", v, webhook.SignTwilio(secret, to, webhook.Delivery{}, sms), append(append([]byte(nil), sms...), "&Body=again"...), "", "", webhook.ReasonMalformed, `"Body" 2 times`},
		{"neither message nor call", v, webhook.SignTwilio(secret, to, webhook.Delivery{}, []byte("AccountSid=AC1")), []byte("AccountSid=AC1"), "", "", webhook.ReasonMalformed, "MessageSid or its CallSid"},
		{"a form's signature on a JSON body", v, with(signedSMS, "Content-Type", "application/json"), []byte(`{"MessageSid":"SM1"}`), "", "", webhook.ReasonSignature, "bodySHA256"},
		{"an Event Streams batch", v, webhook.SignTwilioJSON(secret, to, webhook.Delivery{}, events), events, "body:" + eventsDigest, "com.twilio.messaging.message.delivered", "", ""},
		{"JSON with its idempotency token", v, webhook.SignTwilioJSON(secret, to, webhook.Delivery{ID: "idem-9"}, []byte(`{"type":"x.y"}`)), []byte(`{"type":"x.y"}`), "idem-9", "x.y", "", ""},
		{"JSON signed with the default port", v, webhook.SignTwilioJSON(secret, "https://flrh.example.com:443/v1/hooks/sms", webhook.Delivery{}, events), events, "body:" + eventsDigest, "com.twilio.messaging.message.delivered", "", ""},
		{"JSON changed", v, webhook.SignTwilioJSON(secret, to, webhook.Delivery{}, events), []byte(strings.Replace(string(events), "SM1", "SM2", 1)), "", "", webhook.ReasonSignature, "bodySHA256"},
		{"JSON signed without its bodySHA256", v, with(webhook.SignTwilio(secret, to, webhook.Delivery{}, nil), "Content-Type", "application/json"), events, "", "", webhook.ReasonSignature, ""},
		{"JSON under another token", v, webhook.SignTwilioJSON(other[:len(other)-1], to, webhook.Delivery{}, events), events, "", "", webhook.ReasonSignature, ""},
		{"signed, and not JSON", v, webhook.SignTwilioJSON(secret, to, webhook.Delivery{}, []byte(`{"a":`)), []byte(`{"a":`), "", "", webhook.ReasonMalformed, "not JSON"},
		{"neither a form nor JSON", v, with(signedSMS, "Content-Type", "text/plain"), sms, "", "", webhook.ReasonMalformed, "a form, or JSON"},
		{"no signature", v, with(signedSMS, "X-Twilio-Signature"), sms, "", "", webhook.ReasonMissing, "X-Twilio-Signature"},
		{"a signature of SHA-256's length", v, with(signedSMS, "X-Twilio-Signature", base64.StdEncoding.EncodeToString(make([]byte, 32))), sms, "", "", webhook.ReasonMalformed, "base64 of 20 bytes"},
		{"a verifier told no URL", webhook.Verifier{Scheme: webhook.Twilio, Secrets: [][]byte{secret}}, signedSMS, sms, "", "", webhook.ReasonSecret, "URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.v.Verify(c.h, c.body, now)
			if c.reason != "" {
				if !errors.Is(err, &webhook.Error{Reason: c.reason}) || !strings.Contains(err.Error(), c.words) || d.Body != nil {
					t.Fatalf("got %+v, %v; want a %s refusal saying %q", d, err, c.reason, c.words)
				}
				return
			}
			// A form is a person's message or call; JSON is Twilio's events.
			if err != nil || d.ID != c.id || d.Event != c.event || d.Interactive != (c.h.Get("Content-Type") != "application/json") {
				t.Fatalf("got %+v, %v; want %s %s", d, err, c.id, c.event)
			}
		})
	}
	if status, ctype, body := webhook.Reply(webhook.Twilio, d, "Started run sms-1."); status != 200 || ctype != "text/xml" || !strings.Contains(string(body), "<Response></Response>") {
		t.Fatalf("Twilio's reply: %d %s %s", status, ctype, body)
	}
}
