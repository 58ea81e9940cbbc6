package webhook

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strings"

	"flrh.dev/flrh/jsontemplate"
)

// Twilio posts a form to the URL it was given (an SMS received, a call's
// or a message's status) and signs X-Twilio-Signature: the base64
// HMAC-SHA1, under the account's auth token, of that URL followed by
// each field's name and value, the fields sorted by name. The URL is
// Twilio's as it was given, scheme, host, port and query included, so the
// verifier must be told it (Verifier.URL): behind a proxy the request
// flrh sees has another.
//
// A delivery is named by I-Twilio-Idempotency-Token, the same on Twilio's
// retries, or else by its message's or call's sid and status. Its event
// is "message." or "call." and the status (message.received for an SMS
// that came in, message.delivered, call.completed, …). Twilio signs no
// time: a replay is caught by its id.

// twilio checks a Twilio delivery: its form's fields read, the signature
// of the URL and the sorted fields under one of the secrets.
func (v Verifier) twilio(h Header, body []byte) (Delivery, error) {
	const name = "X-Twilio-Signature"
	if v.URL == "" {
		return Delivery{}, refuse(ReasonSecret, "", "a Twilio verifier needs the URL Twilio posts to, which it signs")
	}
	sig := h.Get(name)
	if sig == "" {
		return Delivery{}, refuse(ReasonMissing, name, "the header is missing")
	}
	b, err := signatureBase64.DecodeString(sig)
	if err != nil || len(b) != sha1.Size {
		return Delivery{}, refuse(ReasonMalformed, name, "the header is the canonical base64 of %d bytes", sha1.Size)
	}
	// Twilio signs the URL as it was given, or with the scheme's default
	// port written or left out (its own libraries try both).
	urls := []string{v.URL}
	if pv := portVariant(v.URL); pv != "" {
		urls = append(urls, pv)
	}
	media, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if media == "application/json" {
		return v.twilioJSON(h, b, urls, body)
	}
	if media != "application/x-www-form-urlencoded" {
		return Delivery{}, refuse(ReasonMalformed, "", "a Twilio delivery is a form, or JSON")
	}
	fields, err := readForm(body)
	if err != nil {
		return Delivery{}, err
	}
	if !slices.ContainsFunc(urls, func(u string) bool { return v.matchesSHA1(b, twilioSigned(u, fields)) }) {
		return Delivery{}, refuse(ReasonSignature, "", "the signature does not match the URL and the form under the hook's secrets")
	}
	d := Delivery{Body: fields, Interactive: true}
	kind, sid, status := "message", str(fields, "MessageSid", "SmsSid"), str(fields, "MessageStatus", "SmsStatus")
	if sid == "" {
		kind, sid, status = "call", str(fields, "CallSid"), str(fields, "CallStatus")
	}
	if sid == "" {
		return Delivery{}, refuse(ReasonMalformed, "", "a Twilio delivery names its MessageSid or its CallSid")
	}
	d.ID, d.Event = h.Get("I-Twilio-Idempotency-Token"), kind
	if status != "" {
		d.Event += "." + status
	}
	if d.ID == "" {
		d.ID = sid
		if status != "" {
			d.ID += ":" + status
		}
	}
	if !validID(d.ID) {
		return Delivery{}, refuse(ReasonMalformed, "", "a delivery id is 1 to %d visible ASCII characters", maxIDBytes)
	}
	return d, nil
}

// twilioJSON checks a Twilio delivery of a JSON body (Event Streams'
// webhooks, and Twilio's newer ones): Twilio adds the hex SHA-256 of the
// body to the URL it posts to, as its bodySHA256 query parameter, and
// signs that URL alone. The URL is made here of the hook's and the body
// as received, so a body changed changes what was signed; it is read only
// once the signature holds. Its id is I-Twilio-Idempotency-Token, or else
// the body's digest (the same bytes sent again are the same delivery);
// its event the "type" of the object, or of an array's first element (a
// CloudEvent's, such as com.twilio.messaging.message.delivered). No person
// waits on it.
func (v Verifier) twilioJSON(h Header, sig []byte, urls []string, body []byte) (Delivery, error) {
	if !slices.ContainsFunc(urls, func(u string) bool { return v.matchesSHA1(sig, TwilioBodyURL(u, body)) }) {
		return Delivery{}, refuse(ReasonSignature, "", "the signature does not match the URL with the body's bodySHA256 under the hook's secrets")
	}
	doc, err := jsontemplate.Decode(body)
	if err != nil {
		return Delivery{}, refuse(ReasonMalformed, "", "the body is not JSON: %v", err)
	}
	d := Delivery{Body: doc, ID: cmp.Or(h.Get("I-Twilio-Idempotency-Token"), bodyID(body))}
	first := doc
	if list, ok := doc.([]any); ok && len(list) > 0 {
		first = list[0]
	}
	if obj, ok := first.(map[string]any); ok {
		d.Event, _ = obj["type"].(string)
	}
	if !validID(d.ID) {
		return Delivery{}, refuse(ReasonMalformed, "", "a delivery id is 1 to %d visible ASCII characters", maxIDBytes)
	}
	return d, nil
}

// bodyID names a delivery whose sender names none by its body's digest:
// the same bytes sent again are the same delivery.
func bodyID(body []byte) string {
	sum := sha256.Sum256(body)
	return "body:" + hex.EncodeToString(sum[:16])
}

// TwilioBodyURL is the URL Twilio signs for a JSON body posted to url:
// url with the body's hex SHA-256 added as its bodySHA256 query
// parameter.
func TwilioBodyURL(url string, body []byte) string {
	sum := sha256.Sum256(body)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "bodySHA256=" + hex.EncodeToString(sum[:])
}

// portVariant is u with its scheme's default port (443 for https, 80
// for http) written when u leaves it out, or left out when u writes it;
// "" when u names another port, or does not parse.
func portVariant(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	def := map[string]string{"https": "443", "http": "80"}[p.Scheme]
	switch port := p.Port(); {
	case def == "":
		return ""
	case port == "":
		p.Host += ":" + def
	case port == def:
		p.Host = strings.TrimSuffix(p.Host, ":"+def)
	default:
		return ""
	}
	return p.String()
}

// twilioSigned is what Twilio signs: the URL, then each field's name and
// value, sorted by name.
func twilioSigned(url string, fields map[string]any) string {
	var b strings.Builder
	b.WriteString(url)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		b.WriteString(k)
		b.WriteString(fields[k].(string))
	}
	return b.String()
}

// matchesSHA1 reports whether sig is the HMAC-SHA1 of signed under one
// of the secrets, in constant time.
func (v Verifier) matchesSHA1(sig []byte, signed string) bool {
	found := false
	for _, key := range v.Secrets {
		m := hmac.New(sha1.New, key)
		m.Write([]byte(signed))
		if hmac.Equal(sig, m.Sum(nil)) {
			found = true
		}
	}
	return found
}

// str is the first of the form's fields named that is set.
func str(fields map[string]any, names ...string) string {
	for _, n := range names {
		if s, _ := fields[n].(string); s != "" {
			return s
		}
	}
	return ""
}
