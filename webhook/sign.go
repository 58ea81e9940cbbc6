package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// Sign writes the header fields a sender of the scheme sends with body:
// what a delivery signed under secret carries. d gives the id and event
// the scheme carries in its headers (Standard's id; GitHub's, Shopify's
// and GitLab's id and event) and the signed timestamp (Standard's and
// Stripe's); Stripe's id and event are the body's own. A GitLab delivery
// carries the secret itself. It is how flrh's tests, and an operator
// trying a hook, make a delivery.
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
	}
	return Header{}
}
