package webhook

import (
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
)

// FollowUp is where the sender of an interactive delivery takes
// messages to the person it came from after the answer, for a while:
// a Slack command's or interaction's response_url (30 minutes), a
// Discord interaction's follow-up webhook (15 minutes). What is posted
// there, FollowUpMessage writes.
type FollowUp struct {
	// URL is where messages are posted. It is a credential: whoever holds
	// it may write to the person until it expires.
	URL string
	// TTL is how long the sender takes messages there.
	TTL time.Duration
}

// How long each sender takes follow-up messages.
const (
	SlackFollowUpTTL   = 30 * time.Minute
	DiscordFollowUpTTL = 15 * time.Minute
)

// DiscordAPI is the Discord API base a follow-up webhook is made of.
const DiscordAPI = "https://discord.com/api/v10"

// slackHooks are the hosts a Slack response_url may name: Slack's, and
// GovSlack's.
var slackHooks = []string{"hooks.slack.com", "hooks.slack-gov.com"}

// slackPaths are where Slack's response_urls are: a command's, a
// button's, and a shortcut's or a modal's.
var slackPaths = []string{"/commands/", "/actions/", "/app/"}

// slackFollowUp is the follow-up of a Slack command's or interaction's
// response_url, or none when it is missing or is not an https URL of
// Slack's hooks: an address the body names is posted to later, and a
// body, signed or not, is no reason to post anywhere else.
func slackFollowUp(responseURL any) FollowUp {
	s, _ := responseURL.(string)
	u, err := url.Parse(s)
	if err != nil || len(s) > maxFollowUpURL || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.RawQuery != "" || u.ForceQuery ||
		!slices.Contains(slackHooks, u.Host) || !slices.ContainsFunc(slackPaths, func(p string) bool { return strings.HasPrefix(u.Path, p) }) ||
		u.RawPath != "" || path.Clean(u.Path) != u.Path || strings.Trim(u.Path, urlSafe+"/") != "" {
		return FollowUp{}
	}
	return FollowUp{URL: s, TTL: SlackFollowUpTTL}
}

// urlSafe are the characters a follow-up's path segments are made of.
const urlSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

// maxFollowUpURL bounds a follow-up's URL.
const maxFollowUpURL = 1024

// discordFollowUp is the follow-up webhook of an interaction of the
// application, with the interaction's token; none when either is not
// what Discord sends (a snowflake; a token of URL-safe characters).
func discordFollowUp(application, token any) FollowUp {
	app, _ := application.(string)
	tok, _ := token.(string)
	if app == "" || len(app) > 20 || strings.Trim(app, "0123456789") != "" || tok == "" || len(tok) > 512 ||
		strings.Trim(tok, urlSafe) != "" || strings.Trim(tok, ".") == "" {
		return FollowUp{}
	}
	return FollowUp{URL: DiscordAPI + "/webhooks/" + app + "/" + tok, TTL: DiscordFollowUpTTL}
}

// FollowUpMessage is the JSON body that posts text to a follow-up of
// scheme s, seen by the person alone: Slack's ephemeral response (the
// message they answered is left as it is), Discord's ephemeral
// follow-up message (cut to Discord's 2,000 characters). It is nil for
// a scheme that has no follow-ups.
func FollowUpMessage(s Scheme, text string) []byte {
	var v any
	switch s {
	case Slack:
		v = map[string]any{"response_type": "ephemeral", "replace_original": false, "text": text}
	case Discord:
		v = map[string]any{"content": discordContent(text), "flags": discordEphemeral}
	default:
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}
