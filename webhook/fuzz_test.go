package webhook_test

import (
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
	f.Add("stripe", "t=1800000000,v1=", `{"id":"x","type":"y"}`)
	f.Fuzz(func(t *testing.T, scheme, sig, b string) {
		s := webhook.Scheme(scheme)
		h := webhook.Sign(s, secret, signed, []byte(b))
		for _, name := range []string{"Webhook-Signature", "X-Hub-Signature-256", "Stripe-Signature", "X-Shopify-Hmac-Sha256", "X-Gitlab-Token"} {
			if _, ok := h[name]; ok {
				h[name] = []string{sig}
			}
		}
		v := webhook.Verifier{Scheme: s, Secrets: [][]byte{secret}}
		d, err := v.Verify(h, []byte(b), now)
		if err != nil {
			return
		}
		if d.ID == "" || d.Body == nil {
			t.Fatalf("accepted without an id or a body: %+v", d)
		}
		want := webhook.Sign(s, secret, webhook.Delivery{ID: signed.ID, Event: signed.Event, Timestamp: signed.Timestamp}, []byte(b))
		for _, name := range []string{"X-Hub-Signature-256", "X-Shopify-Hmac-Sha256", "X-Gitlab-Token"} {
			if w, ok := want[name]; ok && w[0] != sig {
				t.Fatalf("accepted %s %q that is not the body's", name, sig)
			}
		}
	})
}
