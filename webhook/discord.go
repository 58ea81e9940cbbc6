package webhook

import (
	"crypto/ed25519"
	"encoding/json"

	"flrh.dev/flrh/jsontemplate"
)

// Discord sends an application's interactions to its endpoint, each a
// JSON object signed with the application's Ed25519 key over the
// timestamp and the body:
//
//   - a PING (type 1), when the endpoint is set and now and then after,
//     answered {"type": 1};
//   - an application command (type 2: a slash command), its event the
//     command's name;
//   - a message component (type 3: a button, a select) or a modal's
//     submission (type 5), its event the component's custom_id.
//
// Each is named by its id; a person waits on the answer to all but the
// PING. Autocompletion (type 4) asks for choices flrh does not make: it is
// answered with none, and starts nothing.
//
// Discord also sends an application's events (webhook events: an
// install, an entitlement bought) to another endpoint, signed alike: an
// object with "version" 1 and a "type" of 0 (a PING) or 1 (an event,
// "event" holding its "type", "timestamp" and "data"). Its event is the
// event's type (APPLICATION_AUTHORIZED); having no id, it is named by its
// body's digest. No person waits on it, and Discord wants an empty 204
// for both (Delivery.Quiet).

const (
	discordPing         = 1
	discordCommand      = 2
	discordComponent    = 3
	discordAutocomplete = 4
	discordModal        = 5

	// discordAutocompleteResult answers an autocompletion with choices.
	discordAutocompleteResult = 8
)

// discord checks a Discord interaction's signature: the hex Ed25519
// signature of the timestamp and the body under one of the public keys.
func (v Verifier) discord(h Header, body []byte) (Delivery, error) {
	const name = "X-Signature-Ed25519"
	sig, ts, t, err := signedAt(h, name, "X-Signature-Timestamp")
	if err != nil {
		return Delivery{}, err
	}
	b, err := lowerHex(sig)
	if err != nil || len(b) != ed25519.SignatureSize {
		return Delivery{}, refuse(ReasonMalformed, name, "the header is %d hex digits", 2*ed25519.SignatureSize)
	}
	msg := make([]byte, 0, len(ts)+len(body))
	msg = append(append(msg, ts...), body...)
	for _, key := range v.PublicKeys {
		if ed25519.Verify(key, msg, b) {
			return Delivery{Timestamp: t}, nil
		}
	}
	return Delivery{}, refuse(ReasonSignature, "", "the signature does not match the body under the application's public keys")
}

// discordBody reads a verified interaction into d.
func discordBody(body []byte, d Delivery) (Delivery, error) {
	doc, err := jsontemplate.Decode(body)
	if err != nil {
		return Delivery{}, refuse(ReasonMalformed, "", "the body is not JSON: %v", err)
	}
	obj, _ := doc.(map[string]any)
	kind, _ := obj["type"].(json.Number)
	typ, err := kind.Int64()
	if obj == nil || err != nil {
		return Delivery{}, refuse(ReasonMalformed, "", "an interaction is an object with an integer \"type\"")
	}
	d.Body = doc
	if _, events := obj["version"]; events {
		return discordEvent(obj, typ, body, d)
	}
	if typ == discordPing {
		d.Handshake = map[string]any{"type": discordPing}
		return d, nil
	}
	id, _ := obj["id"].(string)
	data, _ := obj["data"].(map[string]any)
	switch typ {
	case discordCommand:
		d.Event, _ = data["name"].(string)
	case discordComponent, discordModal:
		d.Event, _ = data["custom_id"].(string)
	case discordAutocomplete:
		// Choices for an option being typed: flrh makes none, and says so
		// as Discord wants (an empty list), rather than fail the person's
		// typing with an error.
		d.Handshake = map[string]any{"type": discordAutocompleteResult, "data": map[string]any{"choices": []any{}}}
		return d, nil
	default:
		return Delivery{}, refuse(ReasonMalformed, "", "an interaction of type %d is not one flrh takes", typ)
	}
	if !validID(id) || d.Event == "" {
		return Delivery{}, refuse(ReasonMalformed, "", "an interaction has a string \"id\", and a command its data's \"name\", a component or modal its \"custom_id\"")
	}
	d.ID, d.Interactive = id, true
	d.FollowUp = discordFollowUp(obj["application_id"], obj["token"])
	return d, nil
}

// Types of a Discord webhook event's payload.
const (
	discordEventPing = 0
	discordEventBody = 1
)

// discordEvent reads a verified webhook event's payload (obj, of type
// typ) into d.
func discordEvent(obj map[string]any, typ int64, body []byte, d Delivery) (Delivery, error) {
	version, _ := obj["version"].(json.Number)
	if v, err := version.Int64(); err != nil || v != 1 {
		return Delivery{}, refuse(ReasonMalformed, "", "a webhook event's payload is of version 1, not %v", obj["version"])
	}
	d.Quiet = true
	switch typ {
	case discordEventPing:
		d.Handshake = struct{}{}
		return d, nil
	case discordEventBody:
	default:
		return Delivery{}, refuse(ReasonMalformed, "", "a webhook event's payload of type %d is not one flrh takes (0, a ping; 1, an event)", typ)
	}
	event, _ := obj["event"].(map[string]any)
	d.Event, _ = event["type"].(string)
	if d.Event == "" {
		return Delivery{}, refuse(ReasonMalformed, "", "a webhook event's payload holds an \"event\" object with a string \"type\"")
	}
	d.ID = bodyID(body)
	return d, nil
}

// discordEphemeral is the flag of a message only its addressee sees.
const discordEphemeral = 64

// maxDiscordContent is the longest message content Discord takes.
const maxDiscordContent = 2000

// discordContent is text cut to what a Discord message holds.
func discordContent(text string) string {
	if r := []rune(text); len(r) > maxDiscordContent {
		return string(r[:maxDiscordContent-1]) + "…"
	}
	return text
}

// Reply is what a receiver answers an interactive delivery with to tell
// the person who sent it text, as the delivery's sender shows it: the
// status, the content type ("" with no body) and the body.
//
//   - A Slack slash command (its event the command, which starts with
//     "/"): a message only they see ({"response_type": "ephemeral"}).
//   - A Slack interaction: nothing, which Slack wants (a submitted modal
//     closes; a button's message stays as it was).
//   - A Discord interaction: a message only they see (type 4, ephemeral).
//   - Twilio: empty TwiML (no message sent back).
func Reply(s Scheme, d Delivery, text string) (status int, contentType string, body []byte) {
	var v any
	switch {
	case s == Slack && len(d.Event) > 0 && d.Event[0] == '/':
		v = map[string]any{"response_type": "ephemeral", "text": text}
	case s == Discord:
		v = map[string]any{"type": 4, "data": map[string]any{"content": discordContent(text), "flags": discordEphemeral}}
	case s == Twilio:
		// TwiML that does nothing: Twilio sends no reply, and is told
		// the request was taken.
		return 200, "text/xml", []byte(`<?xml version="1.0" encoding="UTF-8"?><Response></Response>`)
	default:
		return 200, "", nil
	}
	b, _ := json.Marshal(v)
	return 200, "application/json", b
}
