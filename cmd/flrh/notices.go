package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/notify"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/yamljson"
)

// noticeFlags are serve's webhook settings: one webhook (--notify), or
// the routes a file names (--notify-routes).
type noticeFlags struct {
	url, secretEnv, format, link string
	kinds                        []string
	timeout, giveUp              time.Duration
	routes                       string // the routes file
	changed                      func(string) bool
}

// delivers reports whether the flags name anywhere to deliver to.
func (f *noticeFlags) delivers() bool { return f.url != "" || f.routes != "" }

// notifyURLEnv names the variable that may hold the webhook's URL
// instead of --notify: a chat service's webhook URL is its credential,
// which a command line shows to every process listing.
const notifyURLEnv = "FLRH_NOTIFY_URL"

// resolveURL takes the URL from notifyURLEnv (or its _FILE) when
// --notify is not given; both is an error, and so is either with
// --notify-routes, or a webhook's format or kinds with it (each route
// says its own).
func (f *noticeFlags) resolveURL() error {
	fromEnv, err := bundle.OSEnv().Value(notifyURLEnv)
	switch {
	case err != nil:
		return usagef("%v", err)
	case fromEnv != "" && f.url != "":
		return usagef("--notify and %s are both set; set one", notifyURLEnv)
	case f.routes != "" && (f.url != "" || fromEnv != ""):
		return usagef("--notify-routes and --notify (or %s) are both set: a routes file names every webhook", notifyURLEnv)
	case f.routes != "" && f.changed != nil && (f.changed("notify-format") || f.changed("notify-kinds")):
		return usagef("--notify-format and --notify-kinds are each route's, in the --notify-routes file")
	case fromEnv != "":
		f.url = fromEnv
	}
	return nil
}

// routeConfigs reads the routes file and each route's URL and secret
// from the variables (or files) it names. No error quotes a URL or a
// secret.
func (f noticeFlags) routeConfigs() ([]notify.Route, error) {
	data, err := os.ReadFile(f.routes)
	if err != nil {
		return nil, usagef("--notify-routes: %v", err)
	}
	specs, err := notify.ParseRoutes(data, yamljson.Named(f.routes))
	if err != nil {
		return nil, usagef("--notify-routes %s: %v", f.routes, err)
	}
	env := bundle.OSEnv()
	var routes []notify.Route
	for _, sp := range specs {
		r := notify.Route{Name: sp.Name, URL: sp.URL, Format: sp.Format, Template: sp.Template, Kinds: sp.Kinds, Workflows: sp.Workflows,
			Labels: sp.Labels, After: sp.AfterDuration(), From: sp.From, To: sp.To}
		if sp.URLEnv != "" {
			if r.URL, err = env.Value(sp.URLEnv); err != nil {
				return nil, usagef("--notify-routes: route %q: %v", sp.Name, err)
			}
			if r.URL == "" {
				return nil, usagef("--notify-routes: route %q: set %s (or %s%s) to its webhook's URL", sp.Name, sp.URLEnv, sp.URLEnv, bundle.FileSuffix)
			}
		}
		if sp.Format == notify.FormatEmail {
			// Not signed: the mail server's credentials are in its URL, or
			// are an OAuth 2.0 client's.
			if o := sp.OAuth2; o != nil {
				secret, err := env.Value(o.ClientSecretEnv)
				if err != nil {
					return nil, usagef("--notify-routes: route %q: %v", sp.Name, err)
				}
				if secret == "" {
					return nil, usagef("--notify-routes: route %q: set %s (or %s%s) to its OAuth 2.0 client's secret", sp.Name, o.ClientSecretEnv, o.ClientSecretEnv, bundle.FileSuffix)
				}
				r.OAuth2 = &notify.OAuth2{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: secret, Scope: o.Scope}
			}
			routes = append(routes, r)
			continue
		}
		name := cmp.Or(sp.SecretEnv, f.secretEnv)
		secret, err := env.Value(name)
		if err != nil {
			return nil, usagef("--notify-routes: route %q: %v", sp.Name, err)
		}
		if secret == "" {
			what := "the secret its deliveries are signed with"
			if sp.Format == notify.FormatSMS {
				what = "the Twilio account's auth token"
			}
			return nil, usagef("--notify-routes: route %q: set %s (or %s%s) to %s", sp.Name, name, name, bundle.FileSuffix, what)
		}
		r.Secret = []byte(secret)
		// An SMS route naming several numbers is a route per number.
		routes = append(routes, notify.SMSRoutes(r)...)
	}
	return routes, nil
}

// config is the delivery the flags describe: the webhook, its secret
// (read from the variable, or the file its _FILE names), format, link,
// kinds and times.
func (f noticeFlags) config() (notify.Config, error) {
	if f.timeout <= 0 || f.giveUp <= 0 {
		return notify.Config{}, usagef("--notify-timeout and --notify-give-up must be positive")
	}
	if f.secretEnv == "" {
		return notify.Config{}, usagef("--notify-secret-env must name a variable")
	}
	if f.routes != "" {
		routes, err := f.routeConfigs()
		if err != nil {
			return notify.Config{}, err
		}
		host, _ := os.Hostname() // what an e-mail route's EHLO says
		return notify.Config{Routes: routes, Timeout: f.timeout, GiveUp: f.giveUp, Link: f.link, Hostname: host}, nil
	}
	if f.url == "" {
		return notify.Config{}, usagef("give the webhook's URL: --notify URL, or %s (or %s%s); or --notify-routes FILE", notifyURLEnv, notifyURLEnv, bundle.FileSuffix)
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
	cmd.Flags().StringVar(&f.routes, "notify-routes", "", "deliver notices to the webhooks and mailboxes this file (JSON, or YAML named .yaml/.yml) names, each with its own URL, secret, format, kinds, workflows and escalation delay (after), instead of --notify; see docs/notices.md")
	f.changed = cmd.Flags().Changed
	f.giveUp = notify.DefaultGiveUp
	if serve {
		cmd.Flags().DurationVar(&f.giveUp, "notify-give-up", notify.DefaultGiveUp, "drop a notice not delivered this long after it was written")
		cmd.Flags().StringSliceVar(&f.kinds, "notify-kinds", nil, "the kinds delivered, comma-separated ("+strings.Join(notify.Kinds, ", ")+"); all by default")
	}
}

// namedRoutes are the routes of routes that names names, in the file's
// order; a name no route has is a usage error.
func namedRoutes(routes []notify.Route, names []string) ([]notify.Route, error) {
	var out []notify.Route
	for _, name := range names {
		if !slices.ContainsFunc(routes, func(r notify.Route) bool { return r.Name == name }) {
			return nil, usagef("--route %q: the routes file has no such route", name)
		}
	}
	for _, r := range routes {
		if slices.Contains(names, r.Name) {
			out = append(out, r)
		}
	}
	return out, nil
}

func init() {
	var f noticeFlags
	var only *[]string
	test := &cobra.Command{Use: "test",
		Short: "Post one test notice to a webhook, as flrh serve would, and say whether it took it",
		Long: `test posts one notice of kind "test" to the webhook the flags name, signed and in
the format flrh serve --notify would use, and reports whether the receiver
answered 2xx: a check of the URL, the secret and the receiver before runs
depend on them. With --notify-routes, one to each route, or to those --route
names. It needs no store.
Exit status 1 when a receiver did not take it; the reason names the route
and no part of its URL.`,
		Example: `  FLRH_NOTIFY_SECRET_FILE=/run/secrets/flrh-hook flrh notify test --notify https://hooks.example.com/flrh
  FLRH_NOTIFY_URL_FILE=/run/secrets/slack-hook flrh notify test --notify-format slack
  flrh notify test --notify-routes notify-routes.yaml   # one test notice to each route
  flrh notify test --notify-routes notify-routes.yaml --route oncall`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolveURL(); err != nil {
				return err
			}
			if len(*only) > 0 && f.routes == "" {
				return usagef("--route names routes of a --notify-routes file")
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			if len(*only) > 0 {
				if cfg.Routes, err = namedRoutes(cfg.Routes, *only); err != nil {
					return err
				}
			}
			if err := notify.Test(cmd.Context(), cfg); err != nil {
				return err
			}
			if f.routes != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "flrh notify test: every route took the test notice (%d)\n", len(cfg.Routes))
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), "flrh notify test: the webhook took the test notice")
			return nil
		}}
	f.register(test, false)
	only = test.Flags().StringSlice("route", nil, "with --notify-routes, test these routes only (repeatable)")
	var cf noticeFlags
	check := &cobra.Command{Use: "check",
		Short: "Check the webhooks and mailboxes notices would go to, sending nothing",
		Long: `check reads the routes file (or the --notify flags) as flrh serve would, with
the variables and files it names, checks every route, and lists each: its
format, the host it reaches (never the rest of its URL: it may be a
credential), the kinds and workflows it takes and, for an escalation, after
how long. Nothing is sent and no store is opened: a check for a deployment's
pipeline. Exit status 2 when a route is wrong or a variable it names is not
set.`,
		Example: `  flrh notify check --notify-routes notify-routes.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cf.resolveURL(); err != nil {
				return err
			}
			cfg, err := cf.config()
			if err != nil {
				return err
			}
			routes, err := notify.Check(cfg)
			if err != nil {
				return usagef("%v", err)
			}
			w := cmd.OutOrStdout()
			for _, r := range routes {
				fmt.Fprintf(w, "route %s: %s to %s", r.Name, cmp.Or(r.Format, notify.FormatFlrh), hostOf(r.URL))
				if r.Format == notify.FormatEmail {
					fmt.Fprintf(w, " (from %s to %s)", r.From, strings.Join(r.To, ", "))
				}
				fmt.Fprintf(w, "; kinds %s; workflows %s", allOr(r.Kinds), allOr(r.Workflows))
				if r.Labels != nil {
					fmt.Fprintf(w, "; runs labelled %s", label.String(r.Labels))
				}
				if r.After > 0 {
					fmt.Fprintf(w, "; after %s, if the run still waits", notify.Span(r.After))
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "flrh notify check: %d routes, nothing sent\n", len(routes))
			return nil
		}}
	cf.register(check, false)
	group := &cobra.Command{Use: "notify", Short: "Check the webhooks and mailboxes notices go to (see flrh serve --notify, --notify-routes)"}
	group.AddCommand(test, check)
	rootCmd.AddCommand(group)
}

// hostOf is the host a route's URL reaches, alone: a path, a query or a
// user may be a credential.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "(no host)"
}

// notices builds serve's notifier from its flags, or nil without
// --notify or --notify-routes, with the metrics it reports into reg:
// deliveries by route, kind and outcome, and the store's backlog read at
// each scrape.
//
// tell tells of the runs waiting for people that came to wait while no
// one delivered notices (runner.TellWaiting), once this notifier takes
// the store's notify duty no one held.
func (f noticeFlags) notifier(st store.Store, holder string, followUps bool, log *slog.Logger, reg *prometheus.Registry,
	tell func(ctx context.Context, since, until time.Time) (int, error)) (*notify.Notifier, error) {
	if !f.delivers() && !followUps {
		return nil, nil
	}
	board, ok := store.NoticeboardOf(st)
	if !ok {
		return nil, usagef("--notify: this store keeps no notices")
	}
	cfg := notify.Config{Timeout: f.timeout, GiveUp: f.giveUp, Link: f.link}
	if f.delivers() {
		var err error
		if cfg, err = f.config(); err != nil {
			return nil, err
		}
	}
	if followUps {
		if cfg.FollowUps, ok = store.FollowUpsOf(st); !ok {
			return nil, usagef("--webhooks: a webhook has follow_up, and this store keeps no follow-ups")
		}
	}
	delivered := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_notices_total",
		Help: "Notices by route, kind and outcome: delivered, failed (to be tried again), dropped (too old), skipped (a kind or workflow the route does not take) or moot (an escalation whose run moved on before its wait passed)."},
		[]string{"route", "kind", "outcome"})
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flrh_notices_backlog",
		Help: "Notices written and not yet delivered or dropped, but for those held for escalation routes alone (flrh_notices_held)."}, func() float64 {
		b, err := board.NoticeBacklog(context.Background())
		if err != nil {
			return -1
		}
		return float64(b.Count - b.Held)
	})
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flrh_notices_held",
		Help: "Notices delivered to every route due and held for escalation routes (told once a run has waited long) alone."}, func() float64 {
		b, err := board.NoticeBacklog(context.Background())
		if err != nil {
			return -1
		}
		return float64(b.Held)
	})
	for _, c := range []prometheus.Collector{delivered, backlog, held} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	cfg.Board, cfg.Holder, cfg.Logger = board, holder+"/notify", log.With("component", "notify")
	cfg.Observe = func(route, kind, outcome string) { delivered.WithLabelValues(route, kind, outcome).Inc() }
	cfg.StillWaits = func(ctx context.Context, runID string, seq int64) (bool, error) {
		r, err := st.Run(ctx, runID)
		if store.CodeOf(err) == store.CodeNotFound {
			return false, nil // pruned: waits for no one
		}
		if err != nil {
			return false, err
		}
		return r.Outcome == "" && r.Head == seq, nil
	}
	cfg.OnTaken = func(ctx context.Context, since, until time.Time) error {
		n, err := tell(ctx, since, until)
		if err == nil {
			log.Info("runs waiting for people told of: they came to wait while no one delivered notices", "runs", n, "since", since)
		}
		return err
	}
	n, err := notify.New(cfg)
	if err != nil {
		// The URL may be a credential: the error names none of it.
		return nil, usagef("--notify: %v", err)
	}
	for _, r := range n.Routes() {
		for _, k := range notify.Kinds {
			for _, o := range []string{"delivered", "failed", "dropped", "skipped", "moot"} {
				delivered.WithLabelValues(r.Name, k, o)
			}
		}
		args := []any{"route", r.Name, "host", hostOf(r.URL), "format", cmp.Or(r.Format, notify.FormatFlrh), "kinds", allOr(r.Kinds), "workflows", allOr(r.Workflows)}
		if r.Labels != nil {
			args = append(args, "labels", label.String(r.Labels))
		}
		if r.After > 0 {
			args = append(args, "after", notify.Span(r.After))
		}
		log.Info("notices delivered to a webhook", args...)
	}
	return n, nil
}

// allOr is names joined by commas, or "all" for nil.
func allOr(names []string) string {
	if names == nil {
		return "all"
	}
	return strings.Join(names, ",")
}

// reloadRoutes reads the routes file, and the variables and files it
// names, again and hands them to the notifier (SIGHUP): a route added,
// removed or changed takes effect at the next pass. A file that is wrong
// now, or a variable not set, keeps the routes as they were, and says
// why.
func (f noticeFlags) reloadRoutes(n *notify.Notifier, log *slog.Logger) {
	routes, err := f.routeConfigs()
	if err == nil {
		err = n.SetRoutes(routes)
	}
	if err != nil {
		// The error names no URL or secret (routeConfigs, notify).
		log.Warn("notice routes kept as they were", "file", f.routes, "err", err.Error())
		return
	}
	names := make([]string, len(routes))
	for i, r := range routes {
		names[i] = r.Name
	}
	log.Info("notice routes reloaded", "file", f.routes, "routes", strings.Join(names, ","))
}

// routesFingerprint digests what reloadRoutes would read: the routes
// file, and each variable (or file) its routes name, or why one cannot be
// read. Only the digest is kept: the values are credentials.
func (f noticeFlags) routesFingerprint() [sha256.Size]byte {
	h := sha256.New()
	put := func(parts ...string) { putFields(h, parts...) }
	data, err := os.ReadFile(f.routes)
	if err != nil {
		put("file", err.Error())
		return [sha256.Size]byte(h.Sum(nil))
	}
	put("file", string(data))
	specs, err := notify.ParseRoutes(data, yamljson.Named(f.routes))
	if err != nil {
		put("parse", err.Error())
		return [sha256.Size]byte(h.Sum(nil))
	}
	env := bundle.OSEnv()
	for _, sp := range specs {
		names := []string{sp.URLEnv, cmp.Or(sp.SecretEnv, f.secretEnv)}
		if sp.OAuth2 != nil {
			names = append(names, sp.OAuth2.ClientSecretEnv)
		}
		for _, name := range names {
			if name == "" {
				continue
			}
			v, err := env.Value(name)
			if err != nil {
				v = "error: " + err.Error()
			}
			put(sp.Name, name, v)
		}
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// watchRoutes looks at the routes file and what it names every interval,
// and reloads the routes (reloadRoutes) when any of it changed.
func (f noticeFlags) watchRoutes(ctx context.Context, every time.Duration, n *notify.Notifier, log *slog.Logger) {
	watchChanges(ctx, every, f.routesFingerprint, func() { f.reloadRoutes(n, log) })
}
