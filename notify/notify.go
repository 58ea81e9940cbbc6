package notify

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/store"
)

// Defaults of Config's zero members.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultPoll     = time.Second
	DefaultBatch    = 16
	DefaultMinDelay = time.Second
	DefaultMaxDelay = 10 * time.Minute
	DefaultGiveUp   = 72 * time.Hour
)

// Config configures a Notifier.
type Config struct {
	Board store.Noticeboard
	// Routes are the webhooks notices go to, each with the kinds and
	// workflows it takes; a notice goes to every route that takes it.
	// Without Routes, URL, Secret, Format and Kinds make one route,
	// named DefaultRoute; giving both is an error.
	Routes []Route
	URL    string // http or https
	Secret []byte // the HMAC key deliveries are signed with; required
	// Format is the body's shape: FormatFlrh (the default) or
	// FormatSlack.
	Format string
	// Link is the server's address as people reach it
	// (https://flrh.example.com): deliveries then link to the run's page
	// in the web UI. "" links nothing.
	Link string
	// Kinds are the kinds of notice delivered; others are deleted
	// unsent (counted "skipped"). Nil delivers every kind.
	Kinds []string
	// Holder names this deliverer to the store; several sharing a store
	// need different ones.
	Holder string
	// Timeout bounds one delivery, from sending to the end of the
	// answer's headers; DefaultTimeout when zero. A claim holds its
	// notices for a delivery to each route of each notice it claimed,
	// and one more.
	Timeout time.Duration
	// Poll is how long an idle notifier waits before it looks again;
	// DefaultPoll when zero. Wake looks at once.
	Poll time.Duration
	// Batch is how many notices a pass claims; DefaultBatch when zero.
	Batch int
	// MinDelay and MaxDelay bound the wait before a failed delivery is
	// tried again: MinDelay doubled with each attempt, or the receiver's
	// Retry-After, at most MaxDelay.
	MinDelay, MaxDelay time.Duration
	// GiveUp is the age past which a notice that could not be delivered
	// is dropped (logged, counted); DefaultGiveUp when zero.
	GiveUp time.Duration
	// Transport sends the requests; http.DefaultTransport when nil.
	Transport http.RoundTripper
	Clock     func() time.Time
	Logger    *slog.Logger
	// OnTaken, when set, is called when this notifier has taken the
	// store's notify duty that no one held, before it delivers anything,
	// with when the last hold lapsed (since; zero when no one ever held
	// it) and when this notifier took it (until), and again at later
	// passes until it succeeds: runners wrote no notices while no one
	// held it, so runs that came to wait for people meanwhile were not
	// told of (runner.TellWaiting tells them).
	OnTaken func(ctx context.Context, since, until time.Time) error
	// Observe, when set, is told each notice's outcome at each route:
	// "delivered", "failed" (to be tried again), "dropped" (too old),
	// "skipped" (a kind or workflow the route does not take) or "moot"
	// (an escalation route's run moved on before its wait passed).
	Observe func(route, kind, outcome string)
	// RootCAs are the authorities an e-mail route's mail server is
	// checked against; nil: the system's (SSL_CERT_FILE adds one).
	RootCAs *x509.CertPool
	// Hostname is the name an e-mail route's EHLO gives; "localhost"
	// when empty.
	Hostname string
	// StillWaits reports whether run runID still stands where a notice
	// written at its event seq found it: live, with no event accepted
	// since. A run gone (pruned) does not. Required by routes with After.
	StillWaits func(ctx context.Context, runID string, seq int64) (bool, error)
	// FollowUps, when set, are the store's follow-ups (store.FollowUps):
	// each notice of a run also goes to the follow-ups the run has then,
	// the people who started or fed it from a chat (followup.go). With
	// FollowUps, Routes and URL may both be empty.
	FollowUps store.FollowUps
}

// Notifier delivers a store's notices to its routes.
type Notifier struct {
	cfg    Config
	mu     sync.Mutex // guards routes, which SetRoutes replaces
	routes []Route
	client *http.Client
	wake   chan struct{}
	duties store.Duties // the store's, to say that it is delivered from; nil: it has none
	held   time.Time    // when the notify duty was last renewed
	// taken, once this notifier took a duty no one held, is the lapse
	// OnTaken is to be given; nil when nothing is to be told.
	taken *takenDuty
	// tokens are the access tokens e-mail routes with OAuth2 were given.
	tokens tokenCache
}

// takenDuty is an OnTaken call due for a duty lapsed at since and taken
// at until.
type takenDuty struct{ since, until time.Time }

// dutyRenewal is how often a notifier renews its hold of the store's
// notify duty.
const dutyRenewal = time.Minute

// New checks cfg and returns its Notifier.
func New(cfg Config) (*Notifier, error) {
	switch {
	case cfg.Board == nil:
		return nil, errors.New("notify: the store keeps no notices")
	case cfg.Holder == "":
		return nil, errors.New("notify: no holder name")
	}
	n, err := newNotifier(cfg)
	if err != nil {
		return nil, err
	}
	if err := n.checkStill(n.routes); err != nil {
		return nil, err
	}
	return n, nil
}

// checkStill refuses escalation routes when nothing can tell whether a
// run still waits.
func (n *Notifier) checkStill(routes []Route) error {
	for _, r := range routes {
		if r.After > 0 && n.cfg.StillWaits == nil {
			return fmt.Errorf("notify: route %q is told after a wait, and Config.StillWaits is not set", r.Name)
		}
	}
	return nil
}

// newNotifier is New without a store: what Test needs.
func newNotifier(cfg Config) (*Notifier, error) {
	routes := slices.Clone(cfg.Routes)
	switch {
	case len(routes) > 0 && (cfg.URL != "" || cfg.Secret != nil || cfg.Format != "" || cfg.Kinds != nil):
		return nil, errors.New("notify: give routes, or one webhook's URL, secret, format and kinds, not both")
	case len(routes) == 0 && (cfg.URL != "" || cfg.FollowUps == nil):
		routes = []Route{{Name: DefaultRoute, URL: cfg.URL, Secret: cfg.Secret, Format: cfg.Format, Kinds: cfg.Kinds}}
	}
	if err := checkRoutes(routes); err != nil {
		return nil, err
	}
	if cfg.Link != "" {
		if l, err := url.Parse(cfg.Link); err != nil || (l.Scheme != "http" && l.Scheme != "https") || l.Host == "" || l.User != nil ||
			l.RawQuery != "" || l.Fragment != "" {
			return nil, fmt.Errorf("notify: the link %q is not an http or https address without credentials, query or fragment", cfg.Link)
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.MinDelay <= 0 {
		cfg.MinDelay = DefaultMinDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	cfg.MaxDelay = max(cfg.MaxDelay, cfg.MinDelay)
	if cfg.GiveUp <= 0 {
		cfg.GiveUp = DefaultGiveUp
	}
	if err := checkAfter(routes, cfg.GiveUp); err != nil {
		return nil, err
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observe == nil {
		cfg.Observe = func(string, string, string) {}
	}
	client := &http.Client{Transport: cfg.Transport, Timeout: cfg.Timeout,
		// A receiver that moved says so to its operator, not to us: a
		// redirect is a failed delivery.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	duties, _ := cfg.Board.(store.Duties)
	return &Notifier{cfg: cfg, routes: routes, client: client, wake: make(chan struct{}, 1), duties: duties}, nil
}

// Test posts one notice of kind "test", not from any store, to each
// route cfg names, as it would deliver one (URL, secret, format and
// timeout; Board and Holder are not needed), and says whether every
// receiver took it: what an operator runs to check webhooks before runs
// depend on them. The error names each route that did not take it, and
// no part of any URL.
func Test(ctx context.Context, cfg Config) error {
	n, err := newNotifier(cfg)
	if err != nil {
		return err
	}
	now := n.cfg.Clock()
	body, _ := json.Marshal(store.NoticeBody{Kind: TestKind})
	no := store.Notice{Kind: TestKind, Body: body, ID: "test/" + strconv.FormatInt(now.UnixNano(), 10), CreatedAt: now, Attempts: 1}
	var whys []string
	for i := range n.routes {
		if _, why := n.send(ctx, &n.routes[i], no, 1); why != "" {
			whys = append(whys, n.routes[i].said(why))
		}
	}
	if whys != nil {
		return errors.New("notify: " + strings.Join(whys, "; "))
	}
	return nil
}

// Check checks cfg as New does, but for the store, and returns the
// routes notices would go to, without sending anything: what an operator
// runs to check a routes file before a server reads it.
func Check(cfg Config) ([]Route, error) {
	n, err := newNotifier(cfg)
	if err != nil {
		return nil, err
	}
	return n.Routes(), nil
}

// TestKind is the kind of the notice Test sends; runs never write it.
const TestKind = "test"

// Wake has a running notifier look for notices at once.
func (n *Notifier) Wake() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run delivers notices until ctx ends, and returns nil then. A store
// that fails is logged and tried again after the poll interval. A store
// that is a store.NoticeWatcher wakes it whenever any process writes a
// notice; it still looks every poll interval.
func (n *Notifier) Run(ctx context.Context) error {
	if nw, ok := n.cfg.Board.(store.NoticeWatcher); ok {
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { stop(); <-done }()
		go func() {
			defer close(done)
			w := nw.WatchNotices(wctx)
			defer w.Close()
			for {
				id, err := w.Wait(wctx, n.cfg.Poll)
				if err != nil {
					return // ctx ended
				}
				if id != "" {
					n.Wake()
				}
			}
		}()
	}
	for {
		claimed, err := n.Pass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			n.cfg.Logger.Warn("notices: the store failed", "err", err)
		}
		if claimed == n.cfg.Batch && err == nil {
			continue // more may be due
		}
		timer := time.NewTimer(n.cfg.Poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-n.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Pass claims one batch of due notices, delivers each, and settles it
// in the store; it returns how many it claimed.
//
// It also renews, at most every minute, its hold of the store's notify
// duty (store.NotifyDuty), which tells the store's other runners that
// notices are delivered, so that they write them too. Another notifier
// holding it is as good.
func (n *Notifier) Pass(ctx context.Context) (int, error) {
	now := n.cfg.Clock()
	if n.duties != nil && (n.held.IsZero() || now.Sub(n.held) >= dutyRenewal || now.Before(n.held)) {
		lapsed, fresh := n.lapsed(ctx, now)
		if d, err := n.duties.HoldDuty(ctx, store.NotifyDuty, n.cfg.Holder, store.NotifyDutyTTL); err != nil {
			n.cfg.Logger.Warn("the notify duty not renewed", "err", err)
		} else {
			n.held = now
			if fresh && d.Held && n.cfg.OnTaken != nil {
				// Both bounds on the store's clock, which runs' times are
				// written on: the lapse read from the duty, the take from
				// the lease just written.
				n.taken = &takenDuty{since: lapsed, until: d.ExpiresAt.Add(-store.NotifyDutyTTL)}
			}
		}
	}
	if t := n.taken; t != nil {
		if err := n.cfg.OnTaken(ctx, t.since, t.until); err != nil {
			n.cfg.Logger.Warn("runs waiting for people not told of yet", "err", err)
		} else {
			n.taken = nil
		}
	}
	// Held for the batch's deliveries, one after another, each up to
	// Timeout, and one more for the store's writes: a deliverer that
	// died holding them leaves them to others after that.
	routes := n.currentRoutes()
	hold := time.Duration(n.cfg.Batch*(len(routes)+n.followUpRoom())+1) * n.cfg.Timeout
	ns, err := n.cfg.Board.ClaimNotices(ctx, n.cfg.Holder, hold, n.cfg.Batch)
	if err != nil {
		return 0, err
	}
	var errs []error
	for i, no := range ns {
		if ctx.Err() != nil {
			// Shutting down: a delivery begun is finished (deliver), the
			// rest handed back, due at once to the store's other
			// deliverers, rather than held until the hold passes.
			errs = append(errs, n.release(ctx, ns[i:]))
			break
		}
		if err := n.deliver(ctx, no, routes); err != nil {
			errs = append(errs, err)
		}
	}
	return len(ns), errors.Join(errs...)
}

// release hands back claimed notices not begun, once ctx has ended,
// within one delivery's timeout; one it could not hand back is held
// until its hold passes, as a crashed deliverer's is.
func (n *Notifier) release(ctx context.Context, ns []store.Notice) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.Timeout)
	defer cancel()
	var errs []error
	for _, no := range ns {
		if err := n.cfg.Board.NoticeRelease(rctx, no.ID, n.cfg.Holder); err != nil {
			errs = append(errs, err)
			continue
		}
		n.cfg.Logger.Debug("notice handed back: shutting down", "notice_id", no.ID, "kind", no.Kind, "run_id", no.RunID)
	}
	return errors.Join(errs...)
}

// lapsed reads, for a notifier about to hold the notify duty with OnTaken
// set, whether no one holds it now (fresh), and since when (zero: never
// held, or given up). A notifier that holds it by its own reckoning looks
// no further.
func (n *Notifier) lapsed(ctx context.Context, now time.Time) (since time.Time, fresh bool) {
	if n.cfg.OnTaken == nil || (!n.held.IsZero() && now.Sub(n.held) < store.NotifyDutyTTL && !now.Before(n.held)) {
		return time.Time{}, false
	}
	d, err := n.duties.Duty(ctx, store.NotifyDuty)
	switch {
	case store.CodeOf(err) == store.CodeNotFound:
		return time.Time{}, true
	case err != nil:
		n.cfg.Logger.Warn("the notify duty not read", "err", err)
		return time.Time{}, false
	case d.Holder == "" || !d.ExpiresAt.After(now):
		return d.ExpiresAt, true
	}
	return time.Time{}, false
}

// envelope is a delivery's body.
type envelope struct {
	ID        string `json:"id"`
	CreatedAt string `json:"created_at"`
	Attempt   int    `json:"attempt"`
	Link      string `json:"link,omitempty"` // the run's page in the web UI, with Config.Link
	// EscalatedAfter is the route's After in seconds, for a route told
	// of runs that have waited that long.
	EscalatedAfter int64           `json:"escalated_after_seconds,omitempty"`
	Notice         json.RawMessage `json:"notice"`
}

// deliver sends one claimed notice to each route that takes it, has not
// yet and is not waiting to be tried again, and settles it: done once
// every such route took it, or it is too old; otherwise tried again
// later at the routes still to take it, each after its own wait. The
// error is the store's, a failed delivery being the notice's to retry.
//
// Once begun, a delivery outlives ctx: a send under way is finished
// (each bounded by Config.Timeout) and what it did is settled, for a
// receiver that took a notice is not to be sent it again because the
// deliverer was told to stop. Routes not yet sent to when ctx ends are
// left due at once, to whichever deliverer claims the notice next.
func (n *Notifier) deliver(ctx context.Context, no store.Notice, routes []Route) error {
	stopping := ctx
	ctx = context.WithoutCancel(ctx)
	log := n.cfg.Logger.With("notice_id", no.ID, "kind", no.Kind, "run_id", no.RunID, "attempt", no.Attempts)
	routes, err := n.withFollowUps(ctx, no, routes, log)
	if err != nil {
		return err
	}
	var b store.NoticeBody
	if json.Unmarshal(no.Body, &b) != nil {
		b = store.NoticeBody{} // of no workflow a route may name
	}
	// sent keeps the routes that took it and still are: a route renamed
	// or removed since is no route to skip, nor one to wait for. A route
	// still waiting (later) is sent to on a later claim; one whose wait
	// passed is sent to now, its failures counted on.
	var sent []string
	var pending, waiting []*Route
	var later []store.RouteWait
	failures := map[string]int{} // a route's failures before this claim
	age := n.cfg.Clock().Sub(no.CreatedAt)
	for i := range routes {
		r := &routes[i]
		k := slices.IndexFunc(no.Waits, func(w store.RouteWait) bool { return w.Route == r.Name })
		if k >= 0 {
			failures[r.Name] = no.Waits[k].Failures
		}
		switch {
		case slices.Contains(no.Sent, r.Name):
			sent = append(sent, r.Name)
		case !r.takes(no.Kind, b):
		case k >= 0 && no.Waits[k].After > 0:
			waiting, later = append(waiting, r), append(later, no.Waits[k])
		case r.After > age:
			// An escalation not yet due: the notice waits for it, with
			// no failure (a route made an escalation after it failed
			// starts afresh). Read from the notice's age each time, so
			// that a route added or changed since holds too.
			waiting, later = append(waiting, r), append(later, store.RouteWait{Route: r.Name, After: r.After - age})
		default:
			pending = append(pending, r)
		}
	}
	done := func() error {
		for i := range routes {
			if r := &routes[i]; !r.takes(no.Kind, b) {
				n.cfg.Observe(r.label(), no.Kind, "skipped")
			}
		}
		return n.cfg.Board.NoticeDone(ctx, no.ID, n.cfg.Holder)
	}
	if len(pending) == 0 && len(later) == 0 {
		log.Debug("notice skipped: no route still to take it takes its kind, workflow and labels")
		return done()
	}
	drop := func(rs []*Route, msg string, args ...any) error {
		for _, r := range rs {
			n.cfg.Observe(r.label(), no.Kind, "dropped")
			log.Error(msg, append([]any{"route", r.Name, "age", n.cfg.Clock().Sub(no.CreatedAt).Round(time.Second).String()}, args...)...)
		}
		return done()
	}
	if age >= n.cfg.GiveUp {
		// Written while no one delivered, long ago: news no more.
		return drop(append(pending, waiting...), "notice dropped unsent: written too long ago")
	}
	var failing, stopped []*Route
	var whys []string
	var still, asked bool
	var stillErr error
	for _, r := range pending {
		if stopping.Err() != nil {
			stopped = append(stopped, r)
			continue
		}
		if r.After > 0 {
			// An escalation tells of a run that still waits: asked once
			// for the notice, at the time it is due.
			if !asked {
				still, stillErr = n.cfg.StillWaits(ctx, no.RunID, no.Seq)
				asked = true
			}
			if stillErr == nil && !still {
				n.cfg.Observe(r.Name, no.Kind, "moot")
				log.Info("notice not escalated: the run moved on before the route's wait passed", "route", r.Name, "after", r.After.String())
				sent = append(sent, r.Name)
				continue
			}
			if stillErr != nil {
				why := "whether the run still waits was not read: " + stillErr.Error()
				failing, whys = append(failing, r), append(whys, r.said(why))
				later = append(later, store.RouteWait{Route: r.Name, After: n.delay(failures[r.Name] + 1), Failures: failures[r.Name] + 1})
				continue
			}
		}
		// The envelope says the notice's attempt (deliveries begun, a
		// crashed deliverer's included); the backoff grows with the
		// route's own failures.
		w, why := n.send(ctx, r, no, failures[r.Name]+1)
		if why == "" {
			n.cfg.Observe(r.label(), no.Kind, "delivered")
			log.Info("notice delivered", "route", r.Name)
			sent = append(sent, r.Name)
			continue
		}
		if w < 0 {
			// A follow-up its chat service no longer takes (expired,
			// used up): told no more, never tried again.
			n.cfg.Observe(r.label(), no.Kind, "dropped")
			log.Warn("notice not sent to a follow-up its chat service refused", "route", r.Name, "err", why)
			sent = append(sent, r.Name)
			continue
		}
		// Each route waits as long as it said: no receiver is asked
		// again sooner, and none holds back the others.
		failing, whys = append(failing, r), append(whys, r.said(why))
		later = append(later, store.RouteWait{Route: r.Name, After: w, Failures: failures[r.Name] + 1})
	}
	switch {
	case len(later) == 0 && stopped == nil:
		return done()
	case failing != nil && n.cfg.Clock().Sub(no.CreatedAt) >= n.cfg.GiveUp:
		return drop(slices.Concat(failing, waiting, stopped), "notice dropped: not delivered in time", "err", strings.Join(whys, "; "))
	}
	for i, r := range failing {
		n.cfg.Observe(r.label(), no.Kind, "failed")
		w := later[len(later)-len(failing)+i]
		log.Warn("notice not delivered", "route", r.Name, "route_failures", w.Failures, "err", whys[i], "retry_in", w.After.String())
	}
	for _, r := range stopped {
		later = append(later, store.RouteWait{Route: r.Name, Failures: failures[r.Name]})
		log.Info("notice left to the next deliverer: shutting down", "route", r.Name)
	}
	// The reason stays while a route that failed waits; with none
	// failing, the notice waits for escalations alone, and says nothing
	// (the store then counts it held, not late).
	reason := ""
	if failing != nil {
		reason = strings.Join(whys, "; ")
	} else if slices.ContainsFunc(later, func(w store.RouteWait) bool { return w.Failures > 0 }) {
		reason = no.LastError
	}
	return n.cfg.Board.NoticeRetry(context.WithoutCancel(ctx), no.ID, n.cfg.Holder, reason, sentOf(routes, sent), later)
}

// sentOf is sent as the store keeps it: nil for a notifier of one
// route, whose notice is never part-delivered.
func sentOf(routes []Route, sent []string) []string {
	if len(routes) == 1 {
		return nil
	}
	return sent
}

// currentRoutes are the routes a pass delivers to: those of the last
// SetRoutes, or New's.
func (n *Notifier) currentRoutes() []Route {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.routes
}

// Routes returns a copy of the routes notices go to now: Config's
// Routes, or the one route (DefaultRoute) its URL makes.
func (n *Notifier) Routes() []Route { return slices.Clone(n.currentRoutes()) }

// SetRoutes replaces the routes notices go to (a routes file read again
// on SIGHUP, say), checked as New checks them, templates compiled; on an
// error the routes are kept as they were. A pass under way finishes with
// the routes it began with; a notice a removed route had not taken yet is
// no longer sent to it, and a route added hears of every notice still
// waiting.
func (n *Notifier) SetRoutes(routes []Route) error {
	rs := slices.Clone(routes)
	if len(rs) == 0 {
		return errors.New("notify: no routes")
	}
	if err := checkRoutes(rs); err != nil {
		return err
	}
	if err := checkAfter(rs, n.cfg.GiveUp); err != nil {
		return err
	}
	if err := n.checkStill(rs); err != nil {
		return err
	}
	n.mu.Lock()
	n.routes = rs
	n.mu.Unlock()
	return nil
}

// send posts the notice to r, its attempt-th at r; why is "" when the
// receiver took it, and otherwise says why not, with the wait before the
// next attempt, or a wait below zero when a follow-up is to be tried no
// more.
func (n *Notifier) send(ctx context.Context, r *Route, no store.Notice, attempt int) (wait time.Duration, why string) {
	if r.followUp != "" {
		return n.sendFollowUp(ctx, r, no, attempt)
	}
	wait = n.delay(attempt)
	if r.Format == FormatEmail {
		if why := n.sendEmail(ctx, r, no); why != "" {
			return wait, why
		}
		return 0, ""
	}
	if r.Format == FormatSMS {
		return n.sendSMS(ctx, r, no, wait)
	}
	body, err := n.body(r, no)
	if err != nil {
		return wait, "the notice's body is not JSON: " + err.Error()
	}
	h := http.Header{}
	h.Set("Flrh-Notice-Id", no.ID)
	h.Set("Flrh-Notice-Kind", no.Kind)
	h.Set("Flrh-Notice-Attempt", strconv.Itoa(no.Attempts))
	h.Set(SignatureHeader, Sign(r.Secret, body, n.cfg.Clock().Unix()))
	a, err := n.post(ctx, r.URL, body, h, wait)
	return a.result(err, wait, "the receiver")
}

// result is what a route's delivery posted came to: no wait and no
// reason when the receiver (who) took it, else the wait before the next
// attempt and why not.
func (a posted) result(err error, wait time.Duration, who string) (time.Duration, string) {
	switch {
	case err != nil:
		return wait, err.Error()
	case a.why != "":
		return wait, a.why
	case a.code >= 200 && a.code < 300:
		return 0, ""
	}
	return a.wait, who + " answered " + a.status
}

// posted is what a POST of a notice came to: why no answer came, or the
// answer's code and status line, with the wait before another attempt.
type posted struct {
	why    string
	code   int
	status string
	wait   time.Duration
}

// post posts a body (JSON unless header says otherwise) to url with header's fields besides the content
// type and user agent. The wait is wait, lengthened to the receiver's
// Retry-After (at most MaxDelay). err is a request that cannot be made.
func (n *Notifier) post(ctx context.Context, url string, body []byte, header http.Header, wait time.Duration) (posted, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return posted{}, err
	}
	req.Header = header
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "flrh-notify/1")
	resp, err := n.client.Do(req)
	if err != nil {
		return posted{why: sendError(err), wait: wait}, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if ask, err := httpwire.ParseRetryAfter(resp.Header.Get("Retry-After"), n.cfg.Clock()); err == nil && ask > wait {
		wait = min(ask, n.cfg.MaxDelay)
	}
	return posted{code: resp.StatusCode, status: resp.Status, wait: wait}, nil
}

// sendError says why a request was not answered without naming the URL:
// a webhook's path often is its credential (chat services put their
// token there), and the reason goes to logs and to the store.
func sendError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return "POST to the webhook: " + err.Error()
}

// delay is the wait after a notice's attempt-th failed delivery.
func (n *Notifier) delay(attempt int) time.Duration {
	d := n.cfg.MinDelay
	for i := 1; i < attempt && d < n.cfg.MaxDelay; i++ {
		d *= 2
	}
	return min(d, n.cfg.MaxDelay)
}
