package webhook_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/webhook"
)

// Whatever a sender signs under a secret the verifier holds, within the
// tolerance, verifies with the delivery's own id; one byte changed in
// the body or the signature header, a secret the verifier does not hold,
// or a time past the tolerance, is refused.
func TestSignedDeliveriesVerify(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		scheme := rapid.SampledFrom(webhook.Schemes).Draw(t, "scheme")
		key := rapid.SliceOfN(rapid.Byte(), webhook.MinSecretBytes, 64).Draw(t, "secret")
		wrong := rapid.SliceOfN(rapid.Byte(), webhook.MinSecretBytes, 64).Filter(func(b []byte) bool { return string(b) != string(key) }).Draw(t, "wrong")
		id := rapid.StringMatching(`[!-~]{1,40}`).Draw(t, "id")
		event := rapid.StringMatching(`[a-z._]{1,20}`).Draw(t, "event")
		skew := time.Duration(rapid.Int64Range(-300, 300).Draw(t, "skew")) * time.Second
		fields := rapid.MapOfN(rapid.StringMatching(`[a-z]{1,6}`), rapid.Int64(), 0, 4).Draw(t, "fields")
		at := now.Add(skew)
		// The body carries what each scheme reads from it: Stripe's and
		// Standard's id and type, Slack's event, Linear's signed time.
		obj := map[string]any{"id": id, "type": event, "event_id": id, "event": map[string]any{"type": event}, "webhookTimestamp": at.UnixMilli()}
		switch scheme {
		case webhook.Slack:
			obj["type"] = "event_callback"
		case webhook.Discord:
			obj["type"], obj["data"] = 2, map[string]any{"name": event}
		}
		for k, v := range fields {
			if _, taken := obj[k]; !taken {
				obj[k] = v
			}
		}
		body, _ := json.Marshal(obj)
		d := webhook.Delivery{ID: id, Event: event, Timestamp: at.Unix()}
		h := webhook.Sign(scheme, key, d, body)
		v := webhook.Verifier{Scheme: scheme, Secrets: [][]byte{wrong, key}}
		without := webhook.Verifier{Scheme: scheme, Secrets: [][]byte{wrong}}
		if scheme == webhook.Twilio {
			// A form, posted to the URL the signature covers; its event
			// is the message's status.
			form := url.Values{"MessageSid": {"SM" + strconv.Itoa(len(id))}, "SmsStatus": {"received"}, "Body": {event}}
			for k, val := range fields {
				form.Set("X"+k, strconv.FormatInt(val, 10))
			}
			body, event = []byte(form.Encode()), "message.received"
			const to = "https://flrh.example.com/v1/hooks/sms?x=1"
			h = webhook.SignTwilio(key, to, d, body)
			v.URL, without.URL = to, to
		}
		// Discord, and Standard Webhooks signed with an Ed25519 key
		// instead (v1a), verified with the key's public half.
		if scheme == webhook.Discord || (scheme == webhook.Standard && rapid.Bool().Draw(t, "ed25519")) {
			signer := ed25519.NewKeyFromSeed(seed(key))
			stranger := ed25519.NewKeyFromSeed(seed(wrong)).Public().(ed25519.PublicKey)
			h = webhook.SignEd25519(scheme, signer, d, body)
			v = webhook.Verifier{Scheme: scheme, PublicKeys: []ed25519.PublicKey{stranger, signer.Public().(ed25519.PublicKey)}}
			without = webhook.Verifier{Scheme: scheme, PublicKeys: []ed25519.PublicKey{stranger}}
		}
		got, err := v.Verify(h, body, now)
		if err != nil || got.ID != id || got.Event != event {
			t.Fatalf("signed delivery: %+v, %v", got, err)
		}

		// One byte of the body changed (GitLab's token signs no body).
		i := rapid.IntRange(0, len(body)-1).Draw(t, "at")
		changed := append([]byte(nil), body...)
		changed[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
		if got, err := v.Verify(h, changed, now); err == nil && scheme != webhook.GitLab && !(scheme == webhook.Twilio && sameForm(body, changed)) {
			t.Fatalf("a changed body verified: %q as %+v", changed, got)
		}
		// One byte of the signature header changed.
		name := map[webhook.Scheme]string{webhook.Standard: "Webhook-Signature", webhook.GitHub: "X-Hub-Signature-256", webhook.Stripe: "Stripe-Signature",
			webhook.Shopify: "X-Shopify-Hmac-Sha256", webhook.GitLab: "X-Gitlab-Token", webhook.Slack: "X-Slack-Signature", webhook.Linear: "Linear-Signature", webhook.Discord: "X-Signature-Ed25519", webhook.Twilio: "X-Twilio-Signature"}[scheme]
		sig := []byte(h[name][0])
		j := rapid.IntRange(0, len(sig)-1).Draw(t, "sigAt")
		sig[j] ^= byte(rapid.IntRange(1, 127).Draw(t, "sigXor"))
		bent := webhook.Header{}
		for k, val := range h {
			bent[k] = val
		}
		bent[name] = []string{string(sig)}
		if _, err := v.Verify(bent, body, now); err == nil {
			t.Fatalf("a changed signature header verified: %q", sig)
		}
		// A verifier without the key.
		if _, err := without.Verify(h, body, now); !errors.Is(err, &webhook.Error{Reason: webhook.ReasonSignature}) {
			t.Fatalf("another secret: %v", err)
		}
		// Past the tolerance (GitHub, Shopify and GitLab sign no time).
		late := now.Add(skew + 301*time.Second)
		untimed := scheme == webhook.GitHub || scheme == webhook.Shopify || scheme == webhook.GitLab || scheme == webhook.Twilio
		if _, err := v.Verify(h, body, late); (err == nil) != untimed {
			t.Fatalf("judged %s later: %v", late.Sub(now), err)
		}
	})
}

// sameForm reports whether two bodies are forms of the same fields
// (Twilio signs the fields, so "%2B" and "%2b" sign alike).
func sameForm(a, b []byte) bool {
	fa, errA := url.ParseQuery(string(a))
	fb, errB := url.ParseQuery(string(b))
	return errA == nil && errB == nil && reflect.DeepEqual(fa, fb)
}

// seed makes an Ed25519 seed of any bytes.
func seed(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
