package webhook_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"flrh.dev/flrh/webhook"
)

// A command's or interaction's follow-up is read from what its sender
// sends, and only where the sender takes messages: an address elsewhere
// (or malformed) gives no follow-up, and the delivery is taken as it is.
func TestFollowUp(t *testing.T) {
	slack := webhook.Verifier{Scheme: webhook.Slack, Secrets: [][]byte{secret}}
	const form = "application/x-www-form-urlencoded"
	command := func(responseURL string) string {
		v := url.Values{"command": {"/refund"}, "trigger_id": {"t.1"}, "text": {"40"}}
		if responseURL != "" {
			v.Set("response_url", responseURL)
		}
		return v.Encode()
	}
	interaction := func(responseURL string) string {
		return url.Values{"payload": {`{"type":"block_actions","trigger_id":"t.2","response_url":"` + responseURL + `"}`}}.Encode()
	}
	app := ed25519.NewKeyFromSeed(seed([]byte("discord app")))
	discord := webhook.Verifier{Scheme: webhook.Discord}
	if err := discord.AddKey(hex.EncodeToString(app.Public().(ed25519.PublicKey))); err != nil {
		t.Fatal(err)
	}
	interactionOf := func(application, token string) string {
		return `{"type":2,"id":"1234","application_id":"` + application + `","token":"` + token + `","data":{"name":"refund"}}`
	}
	const token = "aW50ZXJhY3Rpb246MTIzNDp0b2tlbg.x_y-z"
	cases := []struct {
		name   string
		v      webhook.Verifier
		body   string
		want   string // the follow-up's URL, "" for none
		minute int    // its TTL in minutes
	}{
		{"a slash command", slack, command("https://hooks.slack.com/commands/T1/2/abc"), "https://hooks.slack.com/commands/T1/2/abc", 30},
		{"GovSlack", slack, command("https://hooks.slack-gov.com/commands/T1/2/abc"), "https://hooks.slack-gov.com/commands/T1/2/abc", 30},
		{"an interaction", slack, interaction("https://hooks.slack.com/actions/T1/2/abc"), "https://hooks.slack.com/actions/T1/2/abc", 30},
		{"a command without one", slack, command(""), "", 0},
		{"a modal submitted, with its channels' response_urls", slack, url.Values{"payload": {`{"type":"view_submission","trigger_id":"t.3","response_urls":[{"channel_id":"C1","response_url":"https://hooks.slack.com/app/T1/3/abc"},{"channel_id":"C2","response_url":"https://hooks.slack.com/app/T1/4/abc"}]}`}}.Encode(), "https://hooks.slack.com/app/T1/3/abc", 30},
		{"a modal's response_url elsewhere", slack, url.Values{"payload": {`{"type":"view_submission","trigger_id":"t.3","response_urls":[{"channel_id":"C1","response_url":"https://hooks.example.com/app/T1/3/abc"}]}`}}.Encode(), "", 0},
		{"a modal with none", slack, url.Values{"payload": {`{"type":"view_submission","trigger_id":"t.3","response_urls":[]}`}}.Encode(), "", 0},
		{"another host", slack, command("https://evil.example.com/commands/T1/2/abc"), "", 0},
		{"a host that ends like Slack's", slack, command("https://hooks.slack.com.evil.example/commands/x"), "", 0},
		{"plain http", slack, command("http://hooks.slack.com/commands/T1/2/abc"), "", 0},
		{"with a user", slack, command("https://u:p@hooks.slack.com/commands/x"), "", 0},
		{"with a query", slack, command("https://hooks.slack.com/commands/x?redirect=1"), "", 0},
		{"another path", slack, command("https://hooks.slack.com/services/T1/B1/x"), "", 0},
		{"a dot segment", slack, command("https://hooks.slack.com/commands/../services/T1/B1/x"), "", 0},
		{"an escaped dot segment", slack, command("https://hooks.slack.com/commands/%2e%2e/services/x"), "", 0},
		{"a space", slack, command("https://hooks.slack.com/commands/a b"), "", 0},
		{"a token of dots", discord, interactionOf("11", ".."), "", 0},
		{"too long", slack, command("https://hooks.slack.com/commands/" + strings.Repeat("a", 1100)), "", 0},
		{"a Discord command", discord, interactionOf("1100000000000000000", token), webhook.DiscordAPI + "/webhooks/1100000000000000000/" + token, 15},
		{"an application id not a snowflake", discord, interactionOf("../../users/@me", token), "", 0},
		{"a token with a slash", discord, interactionOf("11", "a/../b"), "", 0},
		{"no token", discord, interactionOf("11", ""), "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h webhook.Header
			if c.v.Scheme == webhook.Slack {
				h = webhook.Sign(webhook.Slack, secret, signed, []byte(c.body))
				h["Content-Type"] = []string{form}
			} else {
				h = webhook.SignEd25519(webhook.Discord, app, webhook.Delivery{Timestamp: now.Unix()}, []byte(c.body))
			}
			d, err := c.v.Verify(h, []byte(c.body), now)
			if err != nil || !d.Interactive {
				t.Fatalf("refused: %v", err)
			}
			if d.FollowUp.URL != c.want || int(d.FollowUp.TTL.Minutes()) != c.minute {
				t.Fatalf("follow-up %+v, want %q for %d minutes", d.FollowUp, c.want, c.minute)
			}
		})
	}
	// An event of the Events API has no one waiting, and no follow-up,
	// whatever its body says.
	ev := `{"type":"event_callback","event_id":"Ev1","event":{"type":"message"},"response_url":"https://hooks.slack.com/commands/x"}`
	d, err := slack.Verify(webhook.Sign(webhook.Slack, secret, signed, []byte(ev)), []byte(ev), now)
	if err != nil || d.FollowUp.URL != "" {
		t.Fatalf("an event: %+v, %v", d.FollowUp, err)
	}
}

func TestFollowUpMessage(t *testing.T) {
	cases := []struct {
		scheme webhook.Scheme
		text   string
		want   string
	}{
		{webhook.Slack, "Run *r-1* ended: completed.", `{"replace_original":false,"response_type":"ephemeral","text":"Run *r-1* ended: completed."}`},
		{webhook.Discord, "Run r-1 ended.", `{"content":"Run r-1 ended.","flags":64}`},
		{webhook.Discord, strings.Repeat("x", 2001), `{"content":"` + strings.Repeat("x", 1999) + `…","flags":64}`},
		{webhook.GitHub, "no follow-ups", ``},
	}
	for _, c := range cases {
		if got := webhook.FollowUpMessage(c.scheme, c.text); string(got) != c.want {
			t.Errorf("%s: %s, want %s", c.scheme, got, c.want)
		}
	}
}
