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
		for _, name := range []string{"Webhook-Signature", "X-Hub-Signature-256", "Stripe-Signature"} {
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
		if s == webhook.GitHub && want["X-Hub-Signature-256"][0] != sig {
			t.Fatalf("accepted a GitHub signature %q that is not the body's", sig)
		}
	})
}

// FuzzTemplate: no template and body panic compiling or rendering, and a
// rendered value holds only the input value model.
func FuzzTemplate(f *testing.F) {
	f.Add(`{"type":"t/1","payload":{"a":"{/a}","b":"x-{/b/0}-{$delivery}"}}`, `{"a":1,"b":["q"]}`)
	f.Add(`"{{{/a}}}"`, `{"a":"z"}`)
	f.Add(`"{$body}"`, `[1,2.5]`)
	f.Fuzz(func(t *testing.T, tmpl, b string) {
		tp, err := webhook.CompileTemplate([]byte(tmpl))
		if err != nil {
			return
		}
		h := webhook.Sign(webhook.GitHub, secret, signed, []byte(b))
		d, err := webhook.Verifier{Scheme: webhook.GitHub, Secrets: [][]byte{secret}}.Verify(h, []byte(b), now)
		if err != nil {
			return
		}
		v, err := tp.Render(webhook.Values{Hook: "h", Delivery: d})
		if err != nil {
			return
		}
		if bad := numbersAsFloat(v); hasStruct(bad) {
			t.Fatalf("rendered a value outside the model: %#v", v)
		}
	})
}

func hasStruct(v any) bool {
	switch x := v.(type) {
	case struct{}:
		return true
	case map[string]any:
		for _, e := range x {
			if hasStruct(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasStruct(e) {
				return true
			}
		}
	}
	return false
}
