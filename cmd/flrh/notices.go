package main

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/notify"
	"flrh.dev/flrh/store"
)

// noticeFlags are serve's webhook settings.
type noticeFlags struct {
	url, secretEnv, format, link string
	kinds                        []string
	timeout, giveUp              time.Duration
}

// notifyURLEnv names the variable that may hold the webhook's URL
// instead of --notify: a chat service's webhook URL is its credential,
// which a command line shows to every process listing.
const notifyURLEnv = "FLRH_NOTIFY_URL"

// resolveURL takes the URL from notifyURLEnv (or its _FILE) when
// --notify is not given; both is an error.
func (f *noticeFlags) resolveURL() error {
	fromEnv, err := bundle.OSEnv().Value(notifyURLEnv)
	switch {
	case err != nil:
		return usagef("%v", err)
	case fromEnv != "" && f.url != "":
		return usagef("--notify and %s are both set; set one", notifyURLEnv)
	case fromEnv != "":
		f.url = fromEnv
	}
	return nil
}

// notices builds serve's notifier from its flags, or nil without
// --notify, with the metrics it reports into reg: deliveries by kind
// and outcome, and the store's backlog read at each scrape.
func (f noticeFlags) notifier(st store.Store, holder string, log *slog.Logger, reg *prometheus.Registry) (*notify.Notifier, error) {
	if f.url == "" {
		return nil, nil
	}
	board, ok := store.NoticeboardOf(st)
	if !ok {
		return nil, usagef("--notify: this store keeps no notices")
	}
	if f.secretEnv == "" {
		return nil, usagef("--notify-secret-env must name a variable")
	}
	secret, err := bundle.OSEnv().Value(f.secretEnv)
	if err != nil {
		return nil, usagef("--notify: %v", err)
	}
	if secret == "" {
		return nil, usagef("--notify: set %s (or %s%s) to the secret deliveries are signed with", f.secretEnv, f.secretEnv, bundle.FileSuffix)
	}
	if f.kinds != nil && len(f.kinds) == 0 {
		return nil, usagef("--notify-kinds must name at least one kind (%s)", strings.Join(notify.Kinds, ", "))
	}
	if f.timeout <= 0 || f.giveUp <= 0 {
		return nil, usagef("--notify-timeout and --notify-give-up must be positive")
	}
	delivered := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_notices_total",
		Help: "Notices by kind and outcome: delivered, failed (to be tried again), dropped (too old) or skipped (a kind not delivered)."}, []string{"kind", "outcome"})
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flrh_notices_backlog",
		Help: "Notices written and not yet delivered or dropped."}, func() float64 {
		b, err := board.NoticeBacklog(context.Background())
		if err != nil {
			return -1
		}
		return float64(b.Count)
	})
	for _, c := range []prometheus.Collector{delivered, backlog} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, k := range notify.Kinds {
		for _, o := range []string{"delivered", "failed", "dropped", "skipped"} {
			delivered.WithLabelValues(k, o)
		}
	}
	n, err := notify.New(notify.Config{Board: board, URL: f.url, Secret: []byte(secret), Holder: holder + "/notify",
		Timeout: f.timeout, GiveUp: f.giveUp, Format: f.format, Link: f.link, Kinds: f.kinds, Logger: log.With("component", "notify"),
		Observe: func(kind, outcome string) { delivered.WithLabelValues(kind, outcome).Inc() }})
	if err != nil {
		// The URL may be a credential: the error names none of it.
		return nil, usagef("--notify: %v", err)
	}
	kinds := "all"
	if f.kinds != nil {
		kinds = strings.Join(f.kinds, ",")
	}
	host := ""
	if u, err := url.Parse(f.url); err == nil {
		host = u.Host // the host alone: a path may be a credential
	}
	log.Info("notices delivered to a webhook", "host", host, "format", f.format, "kinds", kinds)
	return n, nil
}
