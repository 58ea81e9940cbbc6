package webhook

import (
	"mime"

	"flrh.dev/flrh/jsontemplate"
)

// Slack sends three kinds of request to one URL, all signed alike:
//
//   - the Events API's, a JSON event_callback whose event_id names the
//     event (the same on every retry) and whose event.type is the event;
//     its url_verification handshake, answered with its challenge;
//   - a slash command's, a form (application/x-www-form-urlencoded)
//     whose trigger_id names the invocation and whose command is the
//     event;
//   - an interaction's (a button pressed, a modal submitted), a form
//     whose one field, payload, is the JSON of the interaction: its
//     trigger_id names it and its type is the event.
//
// A person waits on the answer to the last two, which Slack shows them.
// Slack also posts a form with ssl_check=1 now and then, checking the
// endpoint's certificate for a slash command: a handshake, answered 200.

// slackBody reads a verified Slack request's body into d.
func slackBody(h Header, body []byte, d Delivery) (Delivery, error) {
	media, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if media != "application/x-www-form-urlencoded" {
		doc, err := jsontemplate.Decode(body)
		if err != nil {
			return Delivery{}, refuse(ReasonMalformed, "", "the body is not JSON: %v", err)
		}
		obj, _ := doc.(map[string]any)
		typ, _ := obj["type"].(string)
		if typ == "url_verification" {
			challenge, _ := obj["challenge"].(string)
			if !validID(challenge) {
				return Delivery{}, refuse(ReasonMalformed, "", "a url_verification carries a challenge of 1 to %d visible ASCII characters", maxIDBytes)
			}
			d.Body, d.Handshake = doc, map[string]any{"challenge": challenge}
			return d, nil
		}
		id, _ := obj["event_id"].(string)
		event, _ := obj["event"].(map[string]any)
		d.Event, _ = event["type"].(string)
		if typ != "event_callback" || !validID(id) || d.Event == "" {
			return Delivery{}, refuse(ReasonMalformed, "", "a Slack event is an event_callback with a string \"event_id\" and an \"event\" with a \"type\"")
		}
		d.ID, d.Body = id, doc
		return d, nil
	}
	fields, err := readForm(body)
	if err != nil {
		return Delivery{}, err
	}
	if fields["ssl_check"] == "1" {
		// Slack checking the endpoint's certificate for a slash command:
		// answered 200, and no command.
		d.Body, d.Handshake = fields, map[string]any{}
		return d, nil
	}
	d.Interactive = true
	if payload, ok := fields["payload"].(string); ok && len(fields) == 1 {
		doc, err := jsontemplate.Decode([]byte(payload))
		if err != nil {
			return Delivery{}, refuse(ReasonMalformed, "", "the interaction's payload is not JSON: %v", err)
		}
		obj, _ := doc.(map[string]any)
		id, _ := obj["trigger_id"].(string)
		d.Event, _ = obj["type"].(string)
		if !validID(id) || d.Event == "" {
			return Delivery{}, refuse(ReasonMalformed, "", "a Slack interaction has a string \"trigger_id\" and \"type\"")
		}
		responseURL := obj["response_url"]
		if urls, _ := obj["response_urls"].([]any); responseURL == nil && len(urls) > 0 {
			// A modal submitted, whose app asked for a channel to answer
			// in: the first channel the person chose.
			first, _ := urls[0].(map[string]any)
			responseURL = first["response_url"]
		}
		d.ID, d.Body, d.FollowUp = id, doc, slackFollowUp(responseURL)
		return d, nil
	}
	id, _ := fields["trigger_id"].(string)
	d.Event, _ = fields["command"].(string)
	if !validID(id) || d.Event == "" {
		return Delivery{}, refuse(ReasonMalformed, "", "a Slack slash command has a trigger_id and a command")
	}
	d.ID, d.Body, d.FollowUp = id, fields, slackFollowUp(fields["response_url"])
	return d, nil
}
