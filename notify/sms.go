package notify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"flrh.dev/flrh/store"
)

// FormatSMS is a route that texts a phone through Twilio's Messages API:
// its URL is the account's Messages resource
// (https://api.twilio.com/2010-04-01/Accounts/AC…/Messages.json), its
// Secret the account's auth token (HTTP Basic, the account's SID the
// user), From the sending number (E.164) or a messaging service's SID
// (MG…), To the one number it texts. A routes file's SMS route may name
// several numbers: it becomes a route per number (SMSRoutes), so that a
// notice texted to one is not texted to it again when another fails.
const FormatSMS = "sms"

// MaxSMSRecipients bounds the numbers of a routes file's SMS route.
const MaxSMSRecipients = 10

// maxSMSChars is the longest body Twilio's Messages API takes.
const maxSMSChars = 1600

var (
	e164             = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	messagingService = regexp.MustCompile(`^MG[0-9a-f]{32}$`)
	twilioMessages   = regexp.MustCompile(`^/2010-04-01/Accounts/(AC[0-9a-f]{32})/Messages\.json$`)
)

// smsAccount is the account SID of a Messages resource's URL, or false
// when the URL is not one: https (http only to this machine, where the
// auth token does not cross a network), without credentials or query.
func smsAccount(raw string) (string, bool) {
	if !tokenURL(raw) {
		return "", false
	}
	u, _ := url.Parse(raw)
	if u.User != nil || u.RawQuery != "" {
		return "", false
	}
	m := twilioMessages.FindStringSubmatch(u.Path)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// checkSMSNumbers says which of an SMS route's members is wrong, and why.
func checkSMSNumbers(from string, to []string) (member, why string) {
	switch {
	case !e164.MatchString(from) && !messagingService.MatchString(from):
		return "from", fmt.Sprintf("%q is neither a number in E.164 (+15551234567) nor a messaging service's SID (MG and 32 hex digits)", from)
	case len(to) == 0:
		return "to", "an SMS route needs to, one number at least"
	case len(to) > MaxSMSRecipients:
		return "to", fmt.Sprintf("%d numbers, more than %d", len(to), MaxSMSRecipients)
	}
	for j, n := range to {
		if !e164.MatchString(n) {
			return "to", fmt.Sprintf("%q is not a number in E.164 (+15551234567)", n)
		}
		if slices.Contains(to[:j], n) {
			return "to", fmt.Sprintf("%q is named twice", n)
		}
	}
	return "", ""
}

// SMSRoutes is a route per number of an SMS route naming several: each
// named NAME.DIGITS (NAME.15551234567), so that the store's record of the
// routes a notice reached holds each number apart. Any other route is
// returned as it is.
func SMSRoutes(r Route) []Route {
	if r.Format != FormatSMS {
		return []Route{r}
	}
	out := make([]Route, len(r.To))
	for i, n := range r.To {
		one := r
		one.Name = r.Name + "." + n[1:]
		one.To = []string{n}
		out[i] = one
	}
	return out
}

// checkSMS checks an SMS route of the notifier's: one number.
func checkSMS(r *Route, where string) error {
	if _, ok := smsAccount(r.URL); !ok {
		// Not quoted: the URL names the account.
		return fmt.Errorf("%sthe URL is not a Twilio account's Messages resource (https://api.twilio.com/2010-04-01/Accounts/AC…/Messages.json)", where)
	}
	if member, why := checkSMSNumbers(r.From, r.To); why != "" {
		return fmt.Errorf("%s%s: %s", where, member, why)
	}
	switch {
	case len(r.To) != 1:
		return fmt.Errorf("%san SMS route texts one number (SMSRoutes makes one per number)", where)
	case len(r.Secret) == 0:
		return fmt.Errorf("%san SMS route needs the account's auth token as its secret", where)
	case r.Template != "" || r.OAuth2 != nil:
		return fmt.Errorf("%sa template and oauth2 are not an SMS route's", where)
	}
	return r.checkTakes(where)
}

// sendSMS texts the notice to r's number: the sentence a person reads,
// with the page to open, cut to what one message holds.
func (n *Notifier) sendSMS(ctx context.Context, r *Route, no store.Notice, wait time.Duration) (time.Duration, string) {
	var b store.NoticeBody
	if err := json.Unmarshal(no.Body, &b); err != nil {
		return wait, "the notice's body is not JSON: " + err.Error()
	}
	form := url.Values{"To": {r.To[0]}, "Body": {smsText(stillWaiting(PlainText(b, n.cfg.Link), r.escalatedAfter(no)))}}
	if messagingService.MatchString(r.From) {
		form.Set("MessagingServiceSid", r.From)
	} else {
		form.Set("From", r.From)
	}
	account, _ := smsAccount(r.URL)
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(account+":"+string(r.Secret))))
	a, err := n.post(ctx, r.URL, []byte(form.Encode()), h, wait)
	return a.result(err, wait, "Twilio")
}

// smsText is text cut, on a character's boundary, to what one message
// holds, an ellipsis marking the cut.
func smsText(text string) string {
	if utf8.RuneCountInString(text) <= maxSMSChars {
		return text
	}
	runes := []rune(text)
	return string(runes[:maxSMSChars-1]) + "…"
}
