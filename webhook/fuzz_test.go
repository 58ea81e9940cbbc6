package webhook_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"flrh.dev/flrh/webhook"
)

// FuzzVerify: no header and body panic the verifier, and whatever it
// accepts carries a signature it can make itself.
func FuzzVerify(f *testing.F) {
	for _, s := range webhook.Schemes {
		h := webhook.Sign(s, secret, signed, body)
		for _, v := range h {
			f.Add(string(s), v[0], string(body))
		}
	}
	f.Add("standard", "v1,", "{}")
	f.Add("slack", "v0=", `{"type":"url_verification","challenge":"c"}`)
	f.Add("linear", "", `{"webhookTimestamp":1800000000000}`)
	f.Add("discord", "00", `{"type":1}`)
	f.Add("twilio", "AAAA", "MessageSid=SM1&SmsStatus=received")
	f.Add("stripe", "t=1800000000,v1=", `{"id":"x","type":"y"}`)
	f.Fuzz(func(t *testing.T, scheme, sig, b string) {
		s := webhook.Scheme(scheme)
		h := webhook.Sign(s, secret, signed, []byte(b))
		for _, name := range signatureHeaders {
			if _, ok := h[name]; ok {
				h[name] = []string{sig}
			}
		}
		v := webhook.Verifier{Scheme: s, Secrets: [][]byte{secret}}
		d, err := v.Verify(h, []byte(b), now)
		if err != nil {
			return
		}
		if (d.ID == "") == (d.Handshake == nil) || d.Body == nil {
			t.Fatalf("accepted without an id or a challenge, or without a body: %+v", d)
		}
		want := webhook.Sign(s, secret, webhook.Delivery{ID: signed.ID, Event: signed.Event, Timestamp: signed.Timestamp}, []byte(b))
		for _, name := range []string{"X-Hub-Signature-256", "X-Shopify-Hmac-Sha256", "X-Gitlab-Token", "X-Slack-Signature", "Linear-Signature"} {
			if w, ok := want[name]; ok && w[0] != sig {
				t.Fatalf("accepted %s %q that is not the body's", name, sig)
			}
		}
	})
}

// signatureHeaders are the headers that carry each scheme's signature.
var signatureHeaders = []string{"Webhook-Signature", "X-Hub-Signature-256", "Stripe-Signature", "X-Shopify-Hmac-Sha256", "X-Gitlab-Token", "X-Slack-Signature", "Linear-Signature", "X-Signature-Ed25519"}

// FuzzSlackBody: whatever body a Slack request signs, JSON or form,
// reading it panics nothing, and what is accepted is named by an id or is
// the handshake.
func FuzzSlackBody(f *testing.F) {
	f.Add(`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}`, false)
	f.Add(`{"type":"url_verification","challenge":"c"}`, false)
	f.Add("command=%2Frefund&text=900&trigger_id=t.1", true)
	f.Add("payload=%7B%22type%22%3A%22block_actions%22%2C%22trigger_id%22%3A%22t%22%7D", true)
	f.Add("command=%2Frefund&trigger_id=t.1&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1%2F1%2Fabc", true)
	v := webhook.Verifier{Scheme: webhook.Slack, Secrets: [][]byte{secret}}
	f.Fuzz(func(t *testing.T, b string, form bool) {
		h := webhook.Sign(webhook.Slack, secret, signed, []byte(b))
		if form {
			h["Content-Type"] = []string{"application/x-www-form-urlencoded"}
		}
		d, err := v.Verify(h, []byte(b), now)
		if err != nil {
			return
		}
		if (d.ID == "") == (d.Handshake == nil) || d.Body == nil || d.Interactive != form || (d.ID != "" && d.Event == "") {
			t.Fatalf("accepted %q as %+v", b, d)
		}
		checkFollowUp(t, d, "https://hooks.slack.com/", "https://hooks.slack-gov.com/")
	})
}

// FuzzDiscordBody: whatever body a Discord interaction signs, reading it
// panics nothing, and what is accepted is named by an id and a person
// waits on it, or is the PING.
func FuzzDiscordBody(f *testing.F) {
	f.Add(`{"type":1}`)
	f.Add(`{"type":2,"id":"1","data":{"name":"refund"}}`)
	f.Add(`{"type":3,"id":"2","data":{"custom_id":"ok"}}`)
	f.Add(`{"type":5,"id":"3","data":{"custom_id":"form"}}`)
	f.Add(`{"type":2,"id":"4","application_id":"11","token":"tok.en_-1","data":{"name":"refund"}}`)
	f.Add(`{"version":1,"application_id":"11","type":0}`)
	f.Add(`{"version":1,"type":1,"event":{"type":"ENTITLEMENT_CREATE","data":{}}}`)
	key := ed25519.NewKeyFromSeed(seed([]byte("discord app")))
	v := webhook.Verifier{Scheme: webhook.Discord, PublicKeys: []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}}
	f.Fuzz(func(t *testing.T, b string) {
		d, err := v.Verify(webhook.SignEd25519(webhook.Discord, key, signed, []byte(b)), []byte(b), now)
		if err != nil {
			return
		}
		if (d.ID == "") == (d.Handshake == nil) || d.Body == nil || d.Interactive != (d.ID != "" && !d.Quiet) || (d.ID != "" && d.Event == "") {
			t.Fatalf("accepted %q as %+v", b, d)
		}
		checkFollowUp(t, d, webhook.DiscordAPI+"/webhooks/")
	})
}

// checkFollowUp fails t unless d's follow-up is none, or an interactive
// delivery's at one of the prefixes, with nothing after it that could
// leave the sender's host or path: no dot segment, query, fragment,
// space or control character.
func checkFollowUp(t *testing.T, d webhook.Delivery, prefixes ...string) {
	t.Helper()
	u := d.FollowUp.URL
	if u == "" {
		if d.FollowUp.TTL != 0 {
			t.Fatalf("no follow-up, for %s", d.FollowUp.TTL)
		}
		return
	}
	ok := false
	for _, p := range prefixes {
		ok = ok || strings.HasPrefix(u, p)
	}
	if !ok || !d.Interactive || d.FollowUp.TTL <= 0 || strings.ContainsAny(u, "?#%@ \\\x00\r\n\t") || strings.Contains(u, "/../") || strings.HasSuffix(u, "/..") || strings.Contains(u, "/./") {
		t.Fatalf("follow-up %+v", d.FollowUp)
	}
}
