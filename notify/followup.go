package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/webhook"
)

// A follow-up (store.FollowUp) is where a person who started or fed a
// run from a chat is told what becomes of it. For each notice of a run
// the notifier makes a route of each follow-up the run has then, beside
// the configured routes: it takes every kind of notice, is tried again
// as any route is when its chat service fails or asks for time, and is
// told no more once the service refuses it (an address expired or used
// up). Its name, the address's digest, is what the store keeps of it
// among the routes a notice reached; its metrics' route is "follow-up".

// FollowUpLabel is a follow-up's route in Observe's calls.
const FollowUpLabel = "follow-up"

// label is the route's name in Observe's calls.
func (r *Route) label() string {
	if r.followUp != "" {
		return FollowUpLabel
	}
	return r.Name
}

// followUpRoom is how many follow-ups a claim's hold allows each notice
// besides the routes: one, the person who started the run. A hold long
// enough for every follow-up a run may keep (four) would keep the
// notices of a deliverer that died for minutes more, of the quarter hour
// Discord's address lives; a pass that does send to more may outlast its
// hold, and a follow-up may then be sent twice.
func (n *Notifier) followUpRoom() int {
	if n.cfg.FollowUps == nil {
		return 0
	}
	return 1
}

// withFollowUps returns routes and a route for each follow-up of the
// notice's run, as many as the store keeps the names of beside the
// routes. The error is the store's: the notice is then not delivered
// at all, and is claimed again later.
func (n *Notifier) withFollowUps(ctx context.Context, no store.Notice, routes []Route, log *slog.Logger) ([]Route, error) {
	if n.cfg.FollowUps == nil || no.RunID == "" {
		return routes, nil
	}
	fus, err := n.cfg.FollowUps.FollowUps(ctx, no.RunID)
	if err != nil || len(fus) == 0 {
		return routes, err
	}
	if room := store.MaxNoticeRoutes - len(routes); len(fus) > room {
		log.Warn("notice not sent to every follow-up: the routes leave room for fewer", "follow_ups", len(fus), "room", room)
		fus = fus[len(fus)-max(room, 0):] // the most recently added
	}
	out := make([]Route, len(routes), len(routes)+len(fus))
	copy(out, routes)
	for _, f := range fus {
		out = append(out, Route{Name: f.Name, URL: f.Address, followUp: f.Scheme})
	}
	return out, nil
}

// sendFollowUp posts the notice to follow-up r as its chat service shows
// a message to the person: a wait below zero says the service refused it
// for good (a 4xx other than 408 and 429).
func (n *Notifier) sendFollowUp(ctx context.Context, r *Route, no store.Notice, attempt int) (wait time.Duration, why string) {
	wait = n.delay(attempt)
	var b store.NoticeBody
	if err := json.Unmarshal(no.Body, &b); err != nil {
		return wait, "the notice's body is not JSON: " + err.Error()
	}
	text := PlainText(b, n.cfg.Link)
	if r.followUp == store.FollowUpSlack {
		text = SlackText(b, n.cfg.Link)
	}
	body := webhook.FollowUpMessage(webhook.Scheme(r.followUp), text)
	if body == nil {
		return -1, "a follow-up of " + strconv.Quote(r.followUp) + ", which no chat service flrh knows takes"
	}
	a, err := n.post(ctx, r.URL, body, http.Header{}, wait)
	switch c := a.code; {
	case err != nil:
		return -1, "the follow-up's address is not a URL"
	case a.why != "":
		return wait, a.why
	case c >= 200 && c < 300:
		return 0, ""
	case c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests:
		return -1, "the chat service answered " + a.status
	}
	return a.wait, "the chat service answered " + a.status
}
