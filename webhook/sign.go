package webhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// Sign writes the header fields a sender of the scheme sends with body:
// what a delivery signed under secret carries. d gives the id and event
// the scheme carries in its headers (Standard's id; GitHub's, Shopify's,
// GitLab's and Linear's id and event) and the signed timestamp
// (Standard's, Stripe's and Slack's); Stripe's and Slack's id and event
// are the body's own, as is the time Linear signs (webhookTimestamp, in
// milliseconds). A GitLab delivery carries the secret itself. It is how
// flrh's tests, and an operator trying a hook, make a delivery.
func Sign(s Scheme, secret []byte, d Delivery, body []byte) Header {
	mac := func(prefix string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(prefix))
		m.Write(body)
		return m.Sum(nil)
	}
	ts := strconv.FormatInt(d.Timestamp, 10)
	switch s {
	case Standard:
		return Header{
			"Webhook-Id":        {d.ID},
			"Webhook-Timestamp": {ts},
			"Webhook-Signature": {"v1," + base64.StdEncoding.EncodeToString(mac(d.ID+"."+ts+"."))},
		}
	case GitHub:
		return Header{
			"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac(""))},
			"X-Github-Delivery":   {d.ID},
			"X-Github-Event":      {d.Event},
		}
	case Stripe:
		return Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(mac(ts+"."))}}
	case Shopify:
		return Header{
			"X-Shopify-Hmac-Sha256": {base64.StdEncoding.EncodeToString(mac(""))},
			"X-Shopify-Webhook-Id":  {d.ID},
			"X-Shopify-Topic":       {d.Event},
		}
	case GitLab:
		return Header{"X-Gitlab-Token": {string(secret)}, "X-Gitlab-Idempotency-Key": {d.ID}, "X-Gitlab-Event": {d.Event}}
	case Slack:
		return Header{"X-Slack-Signature": {"v0=" + hex.EncodeToString(mac("v0:"+ts+":"))}, "X-Slack-Request-Timestamp": {ts}}
	case Linear:
		return Header{"Linear-Signature": {hex.EncodeToString(mac(""))}, "Linear-Delivery": {d.ID}, "Linear-Event": {d.Event}}
	}
	return Header{}
}

// SignTwilio writes the header fields of a Twilio delivery of a form
// body posted to url, signed under secret; d.ID, when set, is its
// I-Twilio-Idempotency-Token. A body that is not a form signs nothing.
func SignTwilio(secret []byte, url string, d Delivery, body []byte) Header {
	fields, err := readForm(body)
	if err != nil {
		return Header{}
	}
	return twilioHeader(secret, twilioSigned(url, fields), d, "application/x-www-form-urlencoded")
}

// SignTwilioJSON writes the header fields Twilio sends with a JSON body
// posted to url (TwilioBodyURL signed alone), with d.ID as its
// I-Twilio-Idempotency-Token when set.
func SignTwilioJSON(secret []byte, url string, d Delivery, body []byte) Header {
	return twilioHeader(secret, TwilioBodyURL(url, body), d, "application/json")
}

// twilioHeader is a Twilio delivery's header fields: the base64
// HMAC-SHA1 of signed under secret, the content type, and d.ID as the
// idempotency token when set.
func twilioHeader(secret []byte, signed string, d Delivery, contentType string) Header {
	m := hmac.New(sha1.New, secret)
	m.Write([]byte(signed))
	h := Header{"X-Twilio-Signature": {base64.StdEncoding.EncodeToString(m.Sum(nil))}, "Content-Type": {contentType}}
	if d.ID != "" {
		h["I-Twilio-Idempotency-Token"] = []string{d.ID}
	}
	return h
}

// SignEd25519 writes the header fields of a delivery of body signed with
// key in scheme s, which the key's public half verifies: Standard
// Webhooks' (a v1a signature) or Discord's (X-Signature-Ed25519).
func SignEd25519(s Scheme, key ed25519.PrivateKey, d Delivery, body []byte) Header {
	ts := strconv.FormatInt(d.Timestamp, 10)
	if s == Discord {
		return Header{
			"X-Signature-Ed25519":   {hex.EncodeToString(ed25519.Sign(key, append([]byte(ts), body...)))},
			"X-Signature-Timestamp": {ts},
		}
	}
	msg := append([]byte(d.ID+"."+ts+"."), body...)
	return Header{
		"Webhook-Id":        {d.ID},
		"Webhook-Timestamp": {ts},
		"Webhook-Signature": {"v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))},
	}
}
