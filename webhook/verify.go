package webhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"flrh.dev/flrh/jsontemplate"
)

// Scheme is how a sender signs its deliveries.
type Scheme string

const (
	// Standard is Standard Webhooks (and Svix, its svix- headers).
	Standard Scheme = "standard"
	// GitHub is GitHub's X-Hub-Signature-256.
	GitHub Scheme = "github"
	// Stripe is Stripe's Stripe-Signature.
	Stripe Scheme = "stripe"
	// Shopify is Shopify's X-Shopify-Hmac-Sha256.
	Shopify Scheme = "shopify"
	// GitLab is GitLab's X-Gitlab-Token: the secret itself, not a
	// signature of the body (which TLS alone protects).
	GitLab Scheme = "gitlab"
	// Slack is Slack's X-Slack-Signature (v0), for the Events API, slash
	// commands and interactions.
	Slack Scheme = "slack"
	// Linear is Linear's Linear-Signature, with the time the body signs.
	Linear Scheme = "linear"
	// Discord is Discord's interactions (X-Signature-Ed25519): slash
	// commands, buttons and modals, signed with the application's key
	// and verified with its public key.
	Discord Scheme = "discord"
	// Twilio is Twilio's X-Twilio-Signature, over the URL it posts to and
	// its form.
	Twilio Scheme = "twilio"
)

// Schemes lists the schemes Verify understands.
var Schemes = []Scheme{Standard, GitHub, Stripe, Shopify, GitLab, Slack, Linear, Discord, Twilio}

// schemeList names the schemes in a refusal.
const schemeList = "standard, github, stripe, shopify, gitlab, slack, linear, discord or twilio"

// DefaultTolerance is how far a signed timestamp may be from the time a
// delivery is judged at, either way, when the verifier does not say: the
// five minutes Standard Webhooks and Stripe's own libraries allow.
const DefaultTolerance = 5 * time.Minute

// MinSecretBytes is the shortest secret accepted: an HMAC key guessable
// by enumeration signs for anyone.
const MinSecretBytes = 16

// maxSignatures bounds the signatures one header may offer: a sender
// offers one per secret it holds, two while it rotates.
const maxSignatures = 16

// maxIDBytes bounds a delivery's id.
const maxIDBytes = 200

// Header is a delivery's header fields, keyed as net/http keeps them
// (canonical MIME form); http.Header converts to it.
type Header map[string][]string

// Get is the first value of the field named key, in any case; "" when
// it is absent.
func (h Header) Get(key string) string {
	if v := h[canonicalKey(key)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// canonicalKey is key in canonical MIME form: the first letter and every
// letter after a hyphen upper case, the rest lower case.
func canonicalKey(key string) string {
	b := []byte(key)
	upper := true
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
		upper = c == '-'
	}
	return string(b)
}

// ParseSecret reads a secret as the scheme's senders hand it out:
// Standard Webhooks' is base64, after an optional "whsec_" prefix;
// GitHub's and Stripe's are used as written (Stripe's "whsec_…"
// included). It must give at least MinSecretBytes.
func ParseSecret(s Scheme, text string) ([]byte, error) {
	key := []byte(text)
	switch s {
	case Standard:
		var err error
		if key, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(text, "whsec_")); err != nil {
			return nil, refuse(ReasonSecret, "", "a Standard Webhooks secret is base64 (whsec_ then base64), and this one does not decode")
		}
	case GitHub, Stripe, Shopify, GitLab, Slack, Linear, Twilio:
	case Discord:
		return nil, refuse(ReasonSecret, "", "a Discord application is verified with its public key (64 hex digits), which holds no secret")
	default:
		return nil, refuse(ReasonSecret, "", "no signing scheme %q (%s)", s, schemeList)
	}
	if len(key) < MinSecretBytes {
		return nil, refuse(ReasonSecret, "", "a secret of %d bytes is too short: at least %d", len(key), MinSecretBytes)
	}
	return key, nil
}

// ParsePublicKey reads a sender's Ed25519 public key as the scheme's
// senders hand it out, keeping the key that signs to themselves: a
// Standard Webhooks sender's (whpk_ and base64, for v1a signatures), a
// Discord application's (64 lower-case hex digits).
func ParsePublicKey(s Scheme, text string) (ed25519.PublicKey, error) {
	var key []byte
	var err error
	switch s {
	case Standard:
		b64, ok := strings.CutPrefix(text, "whpk_")
		if key, err = base64.StdEncoding.DecodeString(b64); !ok || err != nil || len(key) != ed25519.PublicKeySize {
			return nil, refuse(ReasonSecret, "", "a Standard Webhooks public key is whpk_ then the base64 of %d bytes", ed25519.PublicKeySize)
		}
	case Discord:
		if key, err = lowerHex(text); err != nil || len(key) != ed25519.PublicKeySize {
			return nil, refuse(ReasonSecret, "", "a Discord application's public key is %d lower-case hex digits", 2*ed25519.PublicKeySize)
		}
	default:
		return nil, refuse(ReasonSecret, "", "%s signs with no public key", s)
	}
	return ed25519.PublicKey(key), nil
}

// AddKey reads a key as the scheme's senders hand it out and adds it to
// the verifier's: a Standard Webhooks public key (whpk_…) or a Discord
// application's to PublicKeys (ParsePublicKey), any other to Secrets
// (ParseSecret).
func (v *Verifier) AddKey(text string) error {
	if v.Scheme == Discord || (v.Scheme == Standard && strings.HasPrefix(text, "whpk_")) {
		key, err := ParsePublicKey(v.Scheme, text)
		if err != nil {
			return err
		}
		v.PublicKeys = append(v.PublicKeys, key)
		return nil
	}
	key, err := ParseSecret(v.Scheme, text)
	if err != nil {
		return err
	}
	v.Secrets = append(v.Secrets, key)
	return nil
}

// Verifier checks deliveries signed with one scheme. The zero Tolerance
// is DefaultTolerance.
type Verifier struct {
	Scheme Scheme
	// Secrets are the keys a delivery may be signed with: one, or the old
	// and the new while the sender rotates. Any one verifies.
	Secrets [][]byte
	// PublicKeys verify Ed25519 signatures (Standard Webhooks' v1a,
	// Discord's), which only the sender can make: a receiver holding them
	// cannot sign, so a leaked key forges nothing. Any one verifies, as
	// any secret does.
	PublicKeys []ed25519.PublicKey
	// Tolerance is how far a signed timestamp may be from now, either
	// way; 0 means DefaultTolerance. GitHub signs none.
	Tolerance time.Duration
	// URL is the URL the sender posts to as it was given it, for the
	// schemes that sign it (Twilio).
	URL string
}

// Delivery is what a verified delivery says.
type Delivery struct {
	// ID names the delivery: the sender sends the same id again when it
	// retries one, so it is what a delivery is recognised by.
	ID string
	// Event is the kind of event the sender says it is ("issues",
	// "charge.dispute.created"); empty when the scheme and body name
	// none.
	Event string
	// Timestamp is the signed time, in Unix seconds; 0 when the scheme
	// signs none.
	Timestamp int64
	// Body is the body decoded (jsontemplate.Decode): objects as
	// map[string]any, arrays as []any, numbers as json.Number, so a
	// template reads them exactly. A Slack form (a slash command) is an
	// object of its fields' strings; an interaction, its payload.
	Body any
	// Handshake, when not nil, is what a receiver answers (as JSON, or
	// nothing when Quiet) to a
	// sender's check of its endpoint rather than an event, acting on it
	// no further: Slack's url_verification ({"challenge": …}), Discord's
	// PING ({"type": 1}). ID is then empty.
	Handshake any
	// Quiet reports that the sender wants an empty 204 answer, to a
	// handshake and to an event alike (Discord's webhook events).
	Quiet bool
	// Interactive reports that a person waits on the answer (a Slack
	// slash command or interaction, a Discord interaction): the sender
	// shows them what the receiver answers, which Reply writes.
	Interactive bool
	// FollowUp, on an interactive delivery, is where the sender takes
	// messages to the person afterwards, for a while; its URL is "" when
	// the delivery names none (or none this package would post to).
	FollowUp FollowUp
}

// Verify checks that the delivery carries a signature of its body under
// one of the verifier's secrets, that its timestamp, if signed, is
// within the tolerance of now, and that its body is JSON; it then reads
// the delivery's id and event. The body is read only once its signature
// holds.
func (v Verifier) Verify(h Header, body []byte, now time.Time) (Delivery, error) {
	if len(v.Secrets) == 0 && len(v.PublicKeys) == 0 {
		return Delivery{}, refuse(ReasonSecret, "", "the verifier holds no secret")
	}
	if len(v.PublicKeys) > 0 && v.Scheme != Standard && v.Scheme != Discord {
		return Delivery{}, refuse(ReasonSecret, "", "only Standard Webhooks and Discord sign with a public key, not %s", v.Scheme)
	}
	if v.Scheme == Discord && len(v.PublicKeys) == 0 {
		return Delivery{}, refuse(ReasonSecret, "", "a Discord webhook is verified with the application's public key, and holds none")
	}
	var d Delivery
	var err error
	switch v.Scheme {
	case Standard:
		d, err = v.standard(h, body)
	case GitHub:
		d, err = v.github(h, body)
	case Stripe:
		d, err = v.stripe(h, body)
	case Shopify:
		d, err = v.shopify(h, body)
	case GitLab:
		d, err = v.gitlab(h)
	case Slack:
		d, err = v.slack(h, body)
	case Linear:
		d, err = v.linear(h, body)
	case Discord:
		d, err = v.discord(h, body)
	case Twilio:
		return v.twilio(h, body)
	default:
		return Delivery{}, refuse(ReasonSecret, "", "no signing scheme %q (%s)", v.Scheme, schemeList)
	}
	if err != nil {
		return Delivery{}, err
	}
	if v.Scheme.signsTime() {
		if err := v.within(time.Unix(d.Timestamp, 0), now); err != nil {
			return Delivery{}, err
		}
	}
	switch v.Scheme {
	case Slack:
		return slackBody(h, body, d)
	case Discord:
		return discordBody(body, d)
	}
	if d.Body, err = jsontemplate.Decode(body); err != nil {
		return Delivery{}, refuse(ReasonMalformed, "", "the body is not JSON: %v", err)
	}
	obj, _ := d.Body.(map[string]any)
	typ, _ := obj["type"].(string)
	switch v.Scheme {
	case Stripe:
		id, _ := obj["id"].(string)
		if obj == nil || !validID(id) || typ == "" {
			return Delivery{}, refuse(ReasonMalformed, "", "a Stripe event is an object with a string \"id\" and \"type\"")
		}
		d.ID = id
		fallthrough
	case Standard:
		d.Event = typ
	case Linear:
		// Linear signs its time in the body, in milliseconds.
		ms, ok := obj["webhookTimestamp"].(json.Number)
		n, err := ms.Int64()
		if !ok || err != nil || n <= 0 {
			return Delivery{}, refuse(ReasonMalformed, "", "a Linear event is an object with a webhookTimestamp in Unix milliseconds")
		}
		if err := v.within(time.UnixMilli(n), now); err != nil {
			return Delivery{}, err
		}
		d.Timestamp = n / 1000
	}
	return d, nil
}

// within refuses a delivery signed at a time further from now than the
// tolerance, either way.
func (v Verifier) within(at, now time.Time) error {
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if skew := now.Sub(at); skew > tol || skew < -tol {
		return refuse(ReasonStale, "", "signed at %s, %s from now; the tolerance is %s", at.UTC().Format(time.RFC3339), skew.Round(time.Second), tol)
	}
	return nil
}

// standard checks a Standard Webhooks delivery: webhook-* headers, or
// svix-* ones when webhook-id is absent.
func (v Verifier) standard(h Header, body []byte) (Delivery, error) {
	prefix := "Webhook-"
	if h.Get("Webhook-Id") == "" && h.Get("Svix-Id") != "" {
		prefix = "Svix-"
	}
	id, ts, sigs := h.Get(prefix+"Id"), h.Get(prefix+"Timestamp"), h.Get(prefix+"Signature")
	for _, f := range []struct{ name, v string }{{"Id", id}, {"Timestamp", ts}, {"Signature", sigs}} {
		if f.v == "" {
			return Delivery{}, refuse(ReasonMissing, prefix+f.name, "the header is missing")
		}
	}
	if !validID(id) {
		return Delivery{}, refuse(ReasonMalformed, prefix+"Id", "a delivery id is 1 to %d visible ASCII characters", maxIDBytes)
	}
	t, ok := unixSeconds(ts)
	if !ok {
		return Delivery{}, refuse(ReasonMalformed, prefix+"Timestamp", "not a time in Unix seconds")
	}
	// v1 signatures are checked with the secrets, v1a with the public
	// keys; a version the verifier holds no key for is passed over, as
	// are versions the specification may add.
	var offered, offeredA [][]byte
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok {
			return Delivery{}, refuse(ReasonMalformed, prefix+"Signature", "a signature is written version,signature")
		}
		into := map[string]*[][]byte{"v1": &offered, "v1a": &offeredA}[version]
		if into == nil || (version == "v1" && len(v.Secrets) == 0) || (version == "v1a" && len(v.PublicKeys) == 0) {
			continue
		}
		b, err := signatureBase64.DecodeString(sig)
		if err != nil {
			return Delivery{}, refuse(ReasonMalformed, prefix+"Signature", "a %s signature is canonical base64, and one is not", version)
		}
		*into = append(*into, b)
	}
	held := "v1"
	switch {
	case len(v.Secrets) == 0:
		held = "v1a"
	case len(v.PublicKeys) > 0:
		held = "v1 or v1a"
	}
	if err := countOffered(len(offered)+len(offeredA), prefix+"Signature", held); err != nil {
		return Delivery{}, err
	}
	signed := id + "." + ts + "."
	if !v.matches(offered, signed, body) && !v.matchesPublic(offeredA, signed, body) {
		return Delivery{}, refuse(ReasonSignature, "", "no %s signature matches the body under the hook's keys", held)
	}
	return Delivery{ID: id, Timestamp: t}, nil
}

// matchesPublic reports whether one of the offered signatures is an
// Ed25519 signature of prefix and body under one of the public keys.
func (v Verifier) matchesPublic(offered [][]byte, prefix string, body []byte) bool {
	if len(offered) == 0 {
		return false
	}
	msg := make([]byte, 0, len(prefix)+len(body))
	msg = append(append(msg, prefix...), body...)
	for _, key := range v.PublicKeys {
		for _, sig := range offered {
			if len(sig) == ed25519.SignatureSize && ed25519.Verify(key, msg, sig) {
				return true
			}
		}
	}
	return false
}

// TakesForms reports whether the scheme's senders post forms
// (application/x-www-form-urlencoded) besides, or instead of, JSON:
// Slack's slash commands and interactions, Twilio's messages and calls.
func (s Scheme) TakesForms() bool { return s == Slack || s == Twilio }

// signsTime reports whether the scheme signs the time a delivery was
// sent: the others' replays are caught by their ids alone.
func (s Scheme) signsTime() bool { return s == Standard || s == Stripe || s == Slack || s == Discord }

// shopify checks a Shopify delivery: the base64 HMAC-SHA256 of the body.
func (v Verifier) shopify(h Header, body []byte) (Delivery, error) {
	const name = "X-Shopify-Hmac-Sha256"
	sig := h.Get(name)
	if sig == "" {
		return Delivery{}, refuse(ReasonMissing, name, "the header is missing")
	}
	b, err := signatureBase64.DecodeString(sig)
	if err != nil || len(b) != sha256.Size {
		return Delivery{}, refuse(ReasonMalformed, name, "the header is the canonical base64 of 32 bytes")
	}
	if !v.matches([][]byte{b}, "", body) {
		return Delivery{}, refuse(ReasonSignature, "", "the signature does not match the body under the hook's secrets")
	}
	return deliveryHeaders(h, "X-Shopify-Webhook-Id", "X-Shopify-Topic")
}

// gitlab checks a GitLab delivery: its token is one of the secrets. The
// delivery is named by its idempotency key (the same on every retry),
// or, from GitLab versions before it, its event's id.
func (v Verifier) gitlab(h Header) (Delivery, error) {
	const name = "X-Gitlab-Token"
	token := h.Get(name)
	if token == "" {
		return Delivery{}, refuse(ReasonMissing, name, "the header is missing")
	}
	// Compared as digests, so that the time taken says nothing of a
	// secret's length either.
	got := sha256.Sum256([]byte(token))
	found := false
	for _, key := range v.Secrets {
		want := sha256.Sum256(key)
		if hmac.Equal(got[:], want[:]) {
			found = true
		}
	}
	if !found {
		return Delivery{}, refuse(ReasonSignature, "", "the token is none of the hook's secrets")
	}
	idHeader := "X-Gitlab-Idempotency-Key"
	if h.Get(idHeader) == "" {
		idHeader = "X-Gitlab-Event-Uuid"
	}
	return deliveryHeaders(h, idHeader, "X-Gitlab-Event")
}

// deliveryHeaders reads a delivery's id and event from its headers.
func deliveryHeaders(h Header, idHeader, eventHeader string) (Delivery, error) {
	id, event := h.Get(idHeader), h.Get(eventHeader)
	switch {
	case id == "":
		return Delivery{}, refuse(ReasonMissing, idHeader, "the header is missing")
	case !validID(id):
		return Delivery{}, refuse(ReasonMalformed, idHeader, "a delivery id is 1 to %d visible ASCII characters", maxIDBytes)
	case event == "":
		return Delivery{}, refuse(ReasonMissing, eventHeader, "the header is missing")
	}
	return Delivery{ID: id, Event: event}, nil
}

// github checks a GitHub delivery.
func (v Verifier) github(h Header, body []byte) (Delivery, error) {
	sig := h.Get("X-Hub-Signature-256")
	if sig == "" {
		detail := "the header is missing"
		if h.Get("X-Hub-Signature") != "" {
			detail = "the header is missing; the SHA-1 X-Hub-Signature alone is not accepted"
		}
		return Delivery{}, refuse(ReasonMissing, "X-Hub-Signature-256", "%s", detail)
	}
	if err := v.hexSignature("X-Hub-Signature-256", "sha256=", sig, "", body); err != nil {
		return Delivery{}, err
	}
	return deliveryHeaders(h, "X-GitHub-Delivery", "X-GitHub-Event")
}

// hexSignature checks a header that is prefix and the lower-case hex
// HMAC-SHA256 of signed and body.
func (v Verifier) hexSignature(name, prefix, header, signed string, body []byte) error {
	hexSig, ok := strings.CutPrefix(header, prefix)
	b, err := lowerHex(hexSig)
	if !ok || err != nil || len(b) != sha256.Size {
		if prefix != "" {
			return refuse(ReasonMalformed, name, "the header is %s and 64 hex digits", prefix)
		}
		return refuse(ReasonMalformed, name, "the header is 64 hex digits")
	}
	if !v.matches([][]byte{b}, signed, body) {
		return refuse(ReasonSignature, "", "the signature does not match the body under the hook's secrets")
	}
	return nil
}

// linear checks a Linear delivery's signature, the hex HMAC-SHA256 of
// the body; Verify reads the time it signs from the body.
func (v Verifier) linear(h Header, body []byte) (Delivery, error) {
	const name = "Linear-Signature"
	sig := h.Get(name)
	if sig == "" {
		return Delivery{}, refuse(ReasonMissing, name, "the header is missing")
	}
	if err := v.hexSignature(name, "", sig, "", body); err != nil {
		return Delivery{}, err
	}
	return deliveryHeaders(h, "Linear-Delivery", "Linear-Event")
}

// slack checks a Slack request's signature: v0= and the hex
// HMAC-SHA256 of "v0:timestamp:body". Verify reads the rest from the
// body (slackBody).
func (v Verifier) slack(h Header, body []byte) (Delivery, error) {
	const name = "X-Slack-Signature"
	sig, ts, t, err := signedAt(h, name, "X-Slack-Request-Timestamp")
	if err != nil {
		return Delivery{}, err
	}
	if err := v.hexSignature(name, "v0=", sig, "v0:"+ts+":", body); err != nil {
		return Delivery{}, err
	}
	return Delivery{Timestamp: t}, nil
}

// signedAt reads a signature header and the header of the time it signs,
// both required, the time in Unix seconds.
func signedAt(h Header, name, tsName string) (sig, ts string, t int64, err error) {
	sig, ts = h.Get(name), h.Get(tsName)
	switch {
	case sig == "":
		return "", "", 0, refuse(ReasonMissing, name, "the header is missing")
	case ts == "":
		return "", "", 0, refuse(ReasonMissing, tsName, "the header is missing")
	}
	t, ok := unixSeconds(ts)
	if !ok {
		return "", "", 0, refuse(ReasonMalformed, tsName, "not a time in Unix seconds")
	}
	return sig, ts, t, nil
}

// stripe checks a Stripe delivery's signature; Verify reads its id and
// type from the body.
func (v Verifier) stripe(h Header, body []byte) (Delivery, error) {
	const name = "Stripe-Signature"
	header := h.Get(name)
	if header == "" {
		return Delivery{}, refuse(ReasonMissing, name, "the header is missing")
	}
	var ts string
	var offered [][]byte
	for _, part := range strings.Split(header, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return Delivery{}, refuse(ReasonMalformed, name, "the header is a list of key=value")
		}
		switch k {
		case "t":
			if ts != "" {
				return Delivery{}, refuse(ReasonMalformed, name, "the header names its time twice")
			}
			ts = val
		case "v1":
			b, err := lowerHex(val)
			if err != nil || len(b) != sha256.Size {
				return Delivery{}, refuse(ReasonMalformed, name, "a v1 signature is 64 hex digits")
			}
			offered = append(offered, b)
		}
	}
	t, ok := unixSeconds(ts)
	if !ok {
		return Delivery{}, refuse(ReasonMalformed, name, "t is not a time in Unix seconds")
	}
	if err := countOffered(len(offered), name, "v1"); err != nil {
		return Delivery{}, err
	}
	if !v.matches(offered, ts+".", body) {
		return Delivery{}, refuse(ReasonSignature, "", "no v1 signature matches the body under the hook's secrets")
	}
	return Delivery{Timestamp: t}, nil
}

func countOffered(n int, header, version string) error {
	switch {
	case n == 0:
		return refuse(ReasonMalformed, header, "the header offers no %s signature", version)
	case n > maxSignatures:
		return refuse(ReasonMalformed, header, "the header offers %d signatures; at most %d are read", n, maxSignatures)
	}
	return nil
}

// matches reports whether one of the offered signatures is the
// HMAC-SHA256 of prefix and body under one of the secrets. Every
// comparison takes the same time whatever the bytes.
func (v Verifier) matches(offered [][]byte, prefix string, body []byte) bool {
	found := false
	for _, key := range v.Secrets {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(prefix))
		m.Write(body)
		want := m.Sum(nil)
		for _, sig := range offered {
			if hmac.Equal(sig, want) {
				found = true
			}
		}
	}
	return found
}

// signatureBase64 reads base64 signatures strictly: padding and the
// spare bits of the last character as the encoder writes them, so that a
// signature has one spelling and a header with another is not the
// header that was signed.
var signatureBase64 = base64.StdEncoding.Strict()

// lowerHex decodes a hex signature written as its senders write it, in
// lower case: for the same reason, one spelling.
func lowerHex(s string) ([]byte, error) {
	if strings.ToLower(s) != s {
		return nil, errors.New("upper-case hex")
	}
	return hex.DecodeString(s)
}

// unixSeconds reads a time in Unix seconds written as plain decimal
// digits.
func unixSeconds(s string) (int64, bool) {
	if s == "" || len(s) > 12 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	t, err := strconv.ParseInt(s, 10, 64)
	return t, err == nil
}

// validID reports whether s may name a delivery.
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
