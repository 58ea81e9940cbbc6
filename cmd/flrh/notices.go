package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

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

// config is the delivery the flags describe: the webhook, its secret
// (read from the variable, or the file its _FILE names), format, link,
// kinds and times.
func (f noticeFlags) config() (notify.Config, error) {
	if f.url == "" {
		return notify.Config{}, usagef("give the webhook's URL: --notify URL, or %s (or %s%s)", notifyURLEnv, notifyURLEnv, bundle.FileSuffix)
	}
	if f.secretEnv == "" {
		return notify.Config{}, usagef("--notify-secret-env must name a variable")
	}
	secret, err := bundle.OSEnv().Value(f.secretEnv)
	if err != nil {
		return notify.Config{}, usagef("--notify: %v", err)
	}
	if secret == "" {
		return notify.Config{}, usagef("--notify: set %s (or %s%s) to the secret deliveries are signed with", f.secretEnv, f.secretEnv, bundle.FileSuffix)
	}
	if f.kinds != nil && len(f.kinds) == 0 {
		return notify.Config{}, usagef("--notify-kinds must name at least one kind (%s)", strings.Join(notify.Kinds, ", "))
	}
	if f.timeout <= 0 || f.giveUp <= 0 {
		return notify.Config{}, usagef("--notify-timeout and --notify-give-up must be positive")
	}
	return notify.Config{URL: f.url, Secret: []byte(secret), Timeout: f.timeout, GiveUp: f.giveUp, Format: f.format, Link: f.link, Kinds: f.kinds}, nil
}

// register adds the delivery flags to cmd; with serve, also the kinds
// delivered and the age past which a notice is dropped.
func (f *noticeFlags) register(cmd *cobra.Command, serve bool) {
	cmd.Flags().StringVar(&f.url, "notify", "", "deliver notices (a run waits for an approval, a choice or a reconciliation, was frozen by a tripwire, or ended) to this webhook URL, signed (or set FLRH_NOTIFY_URL or FLRH_NOTIFY_URL_FILE, for a URL that holds a credential); see docs/notices.md")
	cmd.Flags().StringVar(&f.secretEnv, "notify-secret-env", "FLRH_NOTIFY_SECRET", "the variable (or NAME_FILE) holding the secret deliveries are signed with, 16 bytes at least")
	cmd.Flags().DurationVar(&f.timeout, "notify-timeout", notify.DefaultTimeout, "how long one delivery may take")
	cmd.Flags().StringVar(&f.format, "notify-format", notify.FormatFlrh, "the body: flrh (the notice in a signed envelope) or slack ({\"text\": ...}, for chat incoming webhooks)")
	cmd.Flags().StringVar(&f.link, "notify-link", "", "this server's address as people reach it (https://flrh.example.com), to link each notice to the run's page in the web UI")
	f.giveUp = notify.DefaultGiveUp
	if serve {
		cmd.Flags().DurationVar(&f.giveUp, "notify-give-up", notify.DefaultGiveUp, "drop a notice not delivered this long after it was written")
		cmd.Flags().StringSliceVar(&f.kinds, "notify-kinds", nil, "the kinds delivered, comma-separated ("+strings.Join(notify.Kinds, ", ")+"); all by default")
	}
}

func init() {
	var f noticeFlags
	test := &cobra.Command{Use: "test",
		Short: "Post one test notice to a webhook, as flrh serve would, and say whether it took it",
		Long: `test posts one notice of kind "test" to the webhook the flags name, signed and in
the format flrh serve --notify would use, and reports whether the receiver
answered 2xx: a check of the URL, the secret and the receiver before runs
depend on them. It needs no store. Exit status 1 when the receiver did not
take it; the reason names no part of the URL.`,
		Example: `  FLRH_NOTIFY_SECRET_FILE=/run/secrets/flrh-hook flrh notify test --notify https://hooks.example.com/flrh
  FLRH_NOTIFY_URL_FILE=/run/secrets/slack-hook flrh notify test --notify-format slack`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolveURL(); err != nil {
				return err
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			if err := notify.Test(cmd.Context(), cfg); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "flrh notify test: the webhook took the test notice")
			return nil
		}}
	f.register(test, false)
	group := &cobra.Command{Use: "notify", Short: "Check the webhook notices go to (see flrh serve --notify)"}
	group.AddCommand(test)
	rootCmd.AddCommand(group)
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
	cfg, err := f.config()
	if err != nil {
		return nil, err
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
	cfg.Board, cfg.Holder, cfg.Logger = board, holder+"/notify", log.With("component", "notify")
	cfg.Observe = func(kind, outcome string) { delivered.WithLabelValues(kind, outcome).Inc() }
	n, err := notify.New(cfg)
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
