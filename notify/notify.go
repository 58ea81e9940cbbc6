package notify

import (
	"bytes"
	"context"
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
	Board  store.Noticeboard
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
	// notices for Batch+1 times Timeout.
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
	// Observe, when set, is told each notice's outcome: "delivered",
	// "failed" (to be tried again), "dropped" (too old) or "skipped" (a
	// kind not in Kinds).
	Observe func(kind, outcome string)
}

// Notifier delivers a store's notices to one webhook.
type Notifier struct {
	cfg    Config
	client *http.Client
	wake   chan struct{}
	duties store.Duties // the store's, to say that it is delivered from; nil: it has none
	held   time.Time    // when the notify duty was last renewed
}

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
	return newNotifier(cfg)
}

// newNotifier is New without a store: what Test needs.
func newNotifier(cfg Config) (*Notifier, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		// Not quoted: a webhook's URL may be its credential.
		return nil, errors.New("notify: the webhook URL is not an http or https URL with a host")
	case u.User != nil:
		return nil, errors.New("notify: the URL carries credentials; sign with the secret instead")
	case len(cfg.Secret) < 16:
		return nil, fmt.Errorf("notify: the signing secret holds %d bytes, fewer than 16", len(cfg.Secret))
	case cfg.Format != "" && cfg.Format != FormatFlrh && cfg.Format != FormatSlack:
		return nil, fmt.Errorf("notify: format %q is neither %s nor %s", cfg.Format, FormatFlrh, FormatSlack)
	}
	if cfg.Link != "" {
		if l, err := url.Parse(cfg.Link); err != nil || (l.Scheme != "http" && l.Scheme != "https") || l.Host == "" || l.User != nil ||
			l.RawQuery != "" || l.Fragment != "" {
			return nil, fmt.Errorf("notify: the link %q is not an http or https address without credentials, query or fragment", cfg.Link)
		}
	}
	for _, k := range cfg.Kinds {
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("notify: %q is not a kind of notice (%s)", k, strings.Join(Kinds, ", "))
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
		cfg.Observe = func(string, string) {}
	}
	client := &http.Client{Transport: cfg.Transport, Timeout: cfg.Timeout,
		// A receiver that moved says so to its operator, not to us: a
		// redirect is a failed delivery.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	duties, _ := cfg.Board.(store.Duties)
	return &Notifier{cfg: cfg, client: client, wake: make(chan struct{}, 1), duties: duties}, nil
}

// Test posts one notice of kind "test", not from any store, as cfg
// would deliver one (its URL, secret, format and timeout; Board and
// Holder are not needed), and says whether the receiver took it: what an
// operator runs to check a webhook before runs depend on it. The error
// names no part of the URL.
func Test(ctx context.Context, cfg Config) error {
	n, err := newNotifier(cfg)
	if err != nil {
		return err
	}
	now := n.cfg.Clock()
	body, _ := json.Marshal(store.NoticeBody{Kind: TestKind})
	no := store.Notice{Kind: TestKind, Body: body, ID: "test/" + strconv.FormatInt(now.UnixNano(), 10), CreatedAt: now, Attempts: 1}
	if _, why := n.send(ctx, no); why != "" {
		return errors.New("notify: " + why)
	}
	return nil
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
// that fails is logged and tried again after the poll interval.
func (n *Notifier) Run(ctx context.Context) error {
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
	if now := n.cfg.Clock(); n.duties != nil && (n.held.IsZero() || now.Sub(n.held) >= dutyRenewal || now.Before(n.held)) {
		if _, err := n.duties.HoldDuty(ctx, store.NotifyDuty, n.cfg.Holder, store.NotifyDutyTTL); err != nil {
			n.cfg.Logger.Warn("the notify duty not renewed", "err", err)
		} else {
			n.held = now
		}
	}
	// Held for the batch's deliveries, one after another, each up to
	// Timeout, and one more for the store's writes: a deliverer that
	// died holding them leaves them to others after that.
	hold := time.Duration(n.cfg.Batch+1) * n.cfg.Timeout
	ns, err := n.cfg.Board.ClaimNotices(ctx, n.cfg.Holder, hold, n.cfg.Batch)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, no := range ns {
		if ctx.Err() != nil {
			break // held until the hold passes, then claimed again
		}
		if err := n.deliver(ctx, no); err != nil {
			errs = append(errs, err)
		}
	}
	return len(ns), errors.Join(errs...)
}

// envelope is a delivery's body.
type envelope struct {
	ID        string          `json:"id"`
	CreatedAt string          `json:"created_at"`
	Attempt   int             `json:"attempt"`
	Link      string          `json:"link,omitempty"` // the run's page in the web UI, with Config.Link
	Notice    json.RawMessage `json:"notice"`
}

// deliver sends one claimed notice and settles it; the error is the
// store's, a failed delivery being the notice's to retry.
func (n *Notifier) deliver(ctx context.Context, no store.Notice) error {
	log := n.cfg.Logger.With("notice_id", no.ID, "kind", no.Kind, "run_id", no.RunID, "attempt", no.Attempts)
	if n.cfg.Kinds != nil && !slices.Contains(n.cfg.Kinds, no.Kind) {
		n.cfg.Observe(no.Kind, "skipped")
		log.Debug("notice skipped: its kind is not delivered")
		return n.cfg.Board.NoticeDone(ctx, no.ID, n.cfg.Holder)
	}
	if age := n.cfg.Clock().Sub(no.CreatedAt); age >= n.cfg.GiveUp {
		// Written while no one delivered, long ago: news no more.
		n.cfg.Observe(no.Kind, "dropped")
		log.Error("notice dropped unsent: written too long ago", "age", age.Round(time.Second).String())
		return n.cfg.Board.NoticeDone(ctx, no.ID, n.cfg.Holder)
	}
	wait, why := n.send(ctx, no)
	switch {
	case why == "":
		n.cfg.Observe(no.Kind, "delivered")
		log.Info("notice delivered")
		return n.cfg.Board.NoticeDone(ctx, no.ID, n.cfg.Holder)
	case n.cfg.Clock().Sub(no.CreatedAt) >= n.cfg.GiveUp:
		n.cfg.Observe(no.Kind, "dropped")
		log.Error("notice dropped: not delivered in time", "age", n.cfg.Clock().Sub(no.CreatedAt).Round(time.Second).String(), "err", why)
		return n.cfg.Board.NoticeDone(ctx, no.ID, n.cfg.Holder)
	}
	n.cfg.Observe(no.Kind, "failed")
	log.Warn("notice not delivered", "err", why, "retry_in", wait.String())
	return n.cfg.Board.NoticeRetry(context.WithoutCancel(ctx), no.ID, n.cfg.Holder, wait, why)
}

// send posts the notice; why is "" when the receiver took it, and
// otherwise says why not, with the wait before the next attempt.
func (n *Notifier) send(ctx context.Context, no store.Notice) (wait time.Duration, why string) {
	wait = n.delay(no.Attempts)
	body, err := n.body(no)
	if err != nil {
		return wait, "the notice's body is not JSON: " + err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return wait, err.Error()
	}
	now := n.cfg.Clock()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flrh-notify/1")
	req.Header.Set("Flrh-Notice-Id", no.ID)
	req.Header.Set("Flrh-Notice-Kind", no.Kind)
	req.Header.Set("Flrh-Notice-Attempt", strconv.Itoa(no.Attempts))
	req.Header.Set(SignatureHeader, Sign(n.cfg.Secret, body, now.Unix()))
	resp, err := n.client.Do(req)
	if err != nil {
		return wait, sendError(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, ""
	}
	if ask, err := httpwire.ParseRetryAfter(resp.Header.Get("Retry-After"), now); err == nil && ask > wait {
		wait = min(ask, n.cfg.MaxDelay)
	}
	return wait, "the receiver answered " + resp.Status
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
