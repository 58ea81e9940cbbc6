package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/mcp"
	"flrh.dev/flrh/ratelimit"
	"flrh.dev/flrh/redact"
	"flrh.dev/flrh/redactlog"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/server"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/telemetry"
)

func init() {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API and run workflows in the background",
		Long: `serve opens the run store, loads the built-in workflows and the bundles in
--workflows, starts the runner and serves the JSON API (see /v1/openapi.json).

Without --tokens the server authenticates nobody and therefore only listens on a
loopback address and only answers loopback clients; every act is recorded as the
actor "local". With --tokens FILE, every request needs "Authorization: Bearer
TOKEN", and the token's roles decide what it may do:

  viewer      read runs, events, traces, verification
  agent       read, start runs, submit inputs (never approve, deny, reconcile, cancel)
  operator    read, start runs, submit inputs, cancel
  approver    read, approve and deny what a run waits for
  reconciler  read, settle effects whose outcome is unknown

The token file (flrh tokens add, list, revoke and hash edit it):

  {"tokens": [
    {"actor": "alice", "roles": ["approver"], "token": "a long random string"},
    {"actor": "ci-bot", "roles": ["agent"], "token_sha256": "<hex sha256 of the token>"}
  ]}

With --identity FILE, callers may also present the signed tokens (JWTs) of an
identity provider (Keycloak, Okta, Entra ID, Auth0, Dex, …): the file names
the provider's issuer and the audience, and which claims name the actor and
its roles; the provider's keys are found by OpenID Connect discovery (or at
jwks_uri, or in jwks_file) and fetched again every refresh_seconds and when
a token names a key not yet seen:

  {"issuer": "https://login.example.com/realms/ops", "audience": "flrh",
   "actor_claim": "preferred_username", "roles_claim": "/realm_access/roles",
   "roles": {"payments-approvers": ["approver"], "sre": ["operator"]}}

The actor is who the provider says: one person is one actor however many
tokens they hold, which an approval quorum counts on. With "login": {"client_id":
...} in the file, the web UI offers Sign in through the provider (authorization
code with PKCE, the code exchanged by the server).

With --webhooks FILE, other systems deliver signed events to /v1/hooks/NAME
(no bearer token: the signature, under a secret in a variable or a file, is
the credential): Standard Webhooks and Svix, GitHub and Stripe signatures.
A delivery the webhook acts on (its events, its "when" conditions) starts the
run its run_id template names, or is handed to that run as an input, mapped
by its input template; however often the sender delivers it again, the run
takes it once:

  {"webhooks": [{"name": "shop", "scheme": "standard", "secret_env": "SHOP_SECRET",
    "workflow": "refund-agent", "events": ["refund.requested"], "run_id": "order-{/data/order}",
    "input": {"type": "refund.requested/1", "payload": {"refund_id": "{/data/id}",
              "amount": "{/data/amount}", "payee": "{/data/customer}", "reason": "{/data/reason}"}}}]}

A Slack or Discord webhook with "follow_up": true also tells the person who
sent a command what becomes of its run (it waits for someone, it ends), in a
message only they see, while the chat service takes them; serve then writes
and delivers notices, with or without --notify.

With --schedules FILE, runs start on a calendar: each schedule is a cron
expression in a time zone, a workflow, and templates of the run's id and
input ({$schedule}, {$time}, {$local}, {$date}). The run of each time due is
started once, however many serve processes share the store (its id names
the time), and a time missed while none ran is started late within the
schedule's catch_up_seconds (300 by default):

  {"schedules": [{"name": "nightly", "cron": "30 2 * * *", "time_zone": "Europe/Paris",
    "workflow": "reconcile", "input": {"type": "reconcile.due/1", "payload": {"day": "{$date}"}}}]}

SIGHUP reads the token file again (and the identity provider's configuration
and keys, the webhooks and their secrets, the schedules, the encryption keys,
the bundles' adapters and the notice routes):
a token added works at once, a revoked one is refused, and the event streams
it opened end. A file that does not parse leaves the tokens as they were, and
the log says why.

Logs are JSON lines on standard error (--log-level debug adds every tick and
control transition). /metrics serves Prometheus metrics to any authenticated
reader. --otel stdout|otlp exports OpenTelemetry spans — one per request, one
per tick with a child per phase; otlp reads OTEL_EXPORTER_OTLP_ENDPOINT and
the other standard OTEL_* variables. Tracing is off by default.

SIGTERM or SIGINT stops it gracefully: no new connections, in-flight requests
finish, event streams end, the runner claims nothing more, lets the runs it is
advancing finish (within --grace) and releases its leases.

With a PostgreSQL store (--store postgres://...), any number of serve processes,
on one machine or many, share one database: each claims ready runs (FOR UPDATE
SKIP LOCKED, no coordinator), --runners at a time, wakes on LISTEN/NOTIFY, and
takes over the runs of a process that died once their leases (--lease-ttl) lapse.
Runs started through any of them are advanced by whichever is free. Each may be
given the same --prune-ended-after: one at a time holds the store's pruning duty
and prunes, the others skip their passes until it stops renewing it (given up at
shutdown, or lapsed two --prune-every after a crash).`,
		Example: `  flrh serve
  flrh serve --store sqlite:/var/lib/flrh/flrh.db --addr 0.0.0.0:7700 --tokens tokens.json
  flrh serve --store 'postgres://flrh@db:5432/flrh?schema=prod' --runners 8 --addr 127.0.0.1:0
  curl -s localhost:7700/v1/runs`,
		Args: cobra.NoArgs,
	}
	storeSpec := addStoreFlag(cmd)
	addr := cmd.Flags().String("addr", "127.0.0.1:7700", "listen address")
	workflowsDir := cmd.Flags().String("workflows", "./workflows", "directory of workflow bundles (one bundle, or one per subdirectory); skipped if absent and not given")
	runners := cmd.Flags().Int("runners", 4, "how many runs this process advances at once (with a PostgreSQL store: how many it claims at a time)")
	destination := cmd.Flags().String("destination", "", "effect endpoint of the built-in refund workflow's payments destination (e.g. a flrh sandbox's http://127.0.0.1:PORT/v1/effects)")
	tokensFile := cmd.Flags().String("tokens", "", "token file mapping bearer tokens to actors and roles (this or --identity is required to listen beyond loopback)")
	schedulesFile := cmd.Flags().String("schedules", "", "schedules file: runs started on a calendar (a cron expression in a time zone, the workflow, the run's id and input by template), each time due once however many serve processes share the store (see docs/server.md)")
	webhooksFile := cmd.Flags().String("webhooks", "", "webhooks file: the signed deliveries other systems POST to /v1/hooks/NAME (Standard Webhooks, GitHub, Stripe), each starting a run or handed to one as its input, once (see docs/server.md)")
	identityFile := cmd.Flags().String("identity", "", "identity provider configuration: callers may present the provider's signed tokens (JWTs), their actor and roles taken from its claims (see docs/server.md)")
	rateFlag := cmd.Flags().String("rate-limit", "", "hold every authenticated caller, by actor, to this rate: COUNT/UNIT with the unit s, m or h (20/s, 600/m); past it, 429 with Retry-After. A token's own rate stands in for it; default: none")
	rateBurst := cmd.Flags().Int("rate-burst", 0, "with --rate-limit: how many requests at once (default the rate's count)")
	leaseTTL := cmd.Flags().Duration("lease-ttl", 30*time.Second, "how long the runner's lease on a run lasts without renewal")
	retryAfterFlag := cmd.Flags().Duration("max-retry-after", runner.DefaultMaxRetryAfter, maxRetryAfterUsage)
	grace := cmd.Flags().Duration("grace", 10*time.Second, "how long shutdown waits for in-flight requests, and then for runs being advanced")
	drainDelay := cmd.Flags().Duration("drain-delay", 0, "on SIGTERM, keep serving this long with GET /readyz answering 503 before closing the listener, so that load balancers stop sending requests first")
	otelExporter := cmd.Flags().String("otel", telemetry.ExportOff, "where spans go: off, stdout (JSON on standard output) or otlp (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT)")
	logLevel := cmd.Flags().String("log-level", "info", "least severe log level written: debug (every tick and transition), info, warn or error")
	backupDir := cmd.Flags().String("backup-dir", "", "back an embedded store up into this directory on a schedule (flrh-TIME.db, each checked as flrh store backup checks it)")
	backupEvery := cmd.Flags().Duration("backup-every", 24*time.Hour, "with --backup-dir: how long after the newest backup the next is taken")
	backupKeep := cmd.Flags().Int("backup-keep", 7, "with --backup-dir: how many of the newest backups to keep")
	pruneAge := cmd.Flags().Duration("prune-ended-after", 0, "prune the runs that ended this long ago (720h, say), as flrh store prune does: at start, then every --prune-every; 0 prunes nothing")
	pruneDir := cmd.Flags().String("prune-archive", "", "with --prune-ended-after: archive each run into this directory first")
	reloadEvery := cmd.Flags().Duration("reload-adapters-every", 0, "look this often at the variables and files the bundles' adapters read (and the --notify-routes file with those it names, and the --tokens file), and rebuild what changed, as SIGHUP does (a credential rotated by swapping a mounted file); 0 looks only on SIGHUP")
	pruneDiscard := cmd.Flags().Bool("prune-discard", false, "with --prune-ended-after: remove the records without archiving them")
	pruneEvery := cmd.Flags().Duration("prune-every", time.Hour, "with --prune-ended-after: how long between passes")
	pruneCompress := cmd.Flags().Bool("prune-compress", false, "with --prune-archive: write each archive gzip-compressed, as flrh store prune --compress does")
	pruneAbandoned := cmd.Flags().Bool("prune-abandoned", false, "with --prune-ended-after: also prune runs that ended with an effect open (abandoned by a person), as flrh store prune --abandoned does")
	var nf noticeFlags
	nf.register(cmd, true)
	gcPercent := cmd.Flags().Int("gc-percent", serveGCPercent, "the garbage collector's target (GOGC), unless GOGC is set: how far the heap grows past what is live before a cycle; set GOMEMLIMIT to bound the heap")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *runners < 1 || *runners > 256 {
			return usagef("--runners must be from 1 to 256")
		}
		if *gcPercent < 1 {
			return usagef("--gc-percent must be positive, not %d", *gcPercent)
		}
		defer collectorTarget(*gcPercent)()
		if *leaseTTL <= 0 {
			// The runner would quietly take 30s instead.
			return usagef("--lease-ttl must be positive, not %s", *leaseTTL)
		}
		if *reloadEvery < 0 || (*reloadEvery > 0 && *reloadEvery < 100*time.Millisecond) {
			// Each look reads every bundle: not a busy loop.
			return usagef("--reload-adapters-every must be 0 or at least 100ms, not %s", *reloadEvery)
		}
		retryAfter, err := maxRetryAfter(*retryAfterFlag)
		if err != nil {
			return err
		}
		var rate ratelimit.Limit
		switch {
		case *rateFlag != "":
			if rate, err = ratelimit.Parse(*rateFlag, *rateBurst); err != nil {
				return usagef("--rate-limit: %v", err)
			}
		case cmd.Flags().Changed("rate-burst"):
			return usagef("--rate-burst needs --rate-limit")
		}
		switch {
		case *backupDir == "" && (cmd.Flags().Changed("backup-every") || cmd.Flags().Changed("backup-keep")):
			return usagef("--backup-every and --backup-keep need --backup-dir")
		case *backupDir == "":
		case strings.Contains(*storeSpec, "://"):
			return usagef("--backup-dir backs up an embedded store; back a PostgreSQL store up with pg_dump or base backups (docs/postgres.md)")
		case *backupEvery < time.Second:
			return usagef("--backup-every must be at least 1s, not %s", *backupEvery)
		case *backupKeep < 1:
			return usagef("--backup-keep must be at least 1, not %d", *backupKeep)
		}
		if err := nf.resolveURL(); err != nil {
			return err
		}
		if *drainDelay < 0 {
			return usagef("--drain-delay must not be negative, not %s", *drainDelay)
		}
		pruning := *pruneAge > 0
		switch {
		case *pruneAge < 0:
			return usagef("--prune-ended-after must not be negative")
		case !pruning && (*pruneDir != "" || *pruneDiscard || *pruneAbandoned || *pruneCompress || cmd.Flags().Changed("prune-every")):
			return usagef("--prune-archive, --prune-discard, --prune-abandoned, --prune-compress and --prune-every need --prune-ended-after")
		case *pruneCompress && *pruneDiscard:
			return usagef("--prune-compress compresses archives; --prune-discard writes none")
		case pruning && (*pruneDir == "") == !*pruneDiscard:
			return usagef("with --prune-ended-after, give exactly one of --prune-archive DIR and --prune-discard")
		case pruning && *pruneEvery < time.Second:
			return usagef("--prune-every must be at least 1s, not %s", *pruneEvery)
		}
		var level slog.Level
		if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
			return usagef("--log-level: %v", err)
		}
		log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
		var tokens *server.Tokens
		if *tokensFile != "" {
			data, err := os.ReadFile(*tokensFile)
			if err != nil {
				return usagef("--tokens: %v", err)
			}
			if tokens, err = server.ParseTokens(data); err != nil {
				return usagef("--tokens %s: %v", *tokensFile, err)
			}
		}
		var identity *server.Identity
		if *identityFile != "" {
			var err error
			if identity, err = loadIdentity(cmd.Context(), *identityFile, log); err != nil {
				return usagef("--identity %s: %v", *identityFile, err)
			}
		}
		var schedules []schedule.Spec
		if *schedulesFile != "" {
			var err error
			if schedules, err = readSchedules(*schedulesFile); err != nil {
				return usagef("--schedules %s: %v", *schedulesFile, err)
			}
		}
		var webhooks *server.Webhooks
		if *webhooksFile != "" {
			var err error
			if webhooks, err = loadWebhooks(*webhooksFile); err != nil {
				return usagef("--webhooks %s: %v", *webhooksFile, err)
			}
		}
		// A webhook that tells people what becomes of their runs needs
		// notices written and delivered, to its follow-ups at least.
		followUps := webhooks != nil && webhooks.FollowUp()
		if !nf.delivers() && slices.ContainsFunc([]string{"notify-secret-env", "notify-format", "notify-kinds"}, cmd.Flags().Changed) ||
			!nf.delivers() && !followUps && slices.ContainsFunc([]string{"notify-timeout", "notify-give-up", "notify-link"}, cmd.Flags().Changed) {
			return usagef("the --notify-… flags need --notify (or FLRH_NOTIFY_URL) or --notify-routes; --notify-link, --notify-timeout and --notify-give-up also serve a webhooks file's follow-ups")
		}
		if err := server.ListenCheck(*addr, tokens != nil || identity != nil); err != nil {
			return usagef("%v", err)
		}
		tracing, err := telemetry.NewTracing(cmd.Context(), *otelExporter, cmd.OutOrStdout(), "flrh")
		if err != nil {
			return usagef("--otel: %v", err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tracing.Shutdown(ctx); err != nil {
				log.Warn("flushing spans", "err", err.Error())
			}
		}()

		// Bundles first: a bundle that defines a built-in workflow's id and
		// version replaces the built-in one.
		var workflows []runner.Workflow
		adapters := &effect.Registry{}
		var reload *adapterReload // nil: no bundles to reload adapters for
		// Adapters that share their limits with other processes hold them
		// in the store, once it is open (shared.Bind below).
		shared := newSharedLimits()
		// Told before any adapter asks; registered with the metrics below.
		sharedMetrics := sharedLimitMetrics(shared)
		env := bundle.OSEnv()
		env.Shared = shared
		b, err := server.LoadBundles(*workflowsDir, env)
		switch {
		case err != nil && server.IsNotExist(err) && !cmd.Flags().Changed("workflows"):
		case err != nil && strings.HasPrefix(*workflowsDir, examplePrefix):
			// run commands take example:NAME; serve loads bundles from disk.
			return usagef("--workflows: serve loads bundle directories, not %s (the example bundles are in the source tree's examples/ directory)", *workflowsDir)
		case err != nil:
			return usagef("--workflows: %v", err)
		default:
			// From here on no log record repeats a credential a bundle's
			// adapters send.
			scrub, err := redact.NewScrubber(b.Secrets...)
			if err != nil {
				return usagef("--workflows: %v", err)
			}
			// The scrubber grows when SIGHUP reloads adapters with new
			// credentials.
			scrubbing := &atomic.Pointer[redact.Scrubber]{}
			scrubbing.Store(scrub)
			log = slog.New(redactlog.HandlerFrom(log.Handler(), scrubbing.Load))
			reload = newAdapterReload(*workflowsDir, map[string]string{}, adapters, b.Secrets, scrubbing)
			reload.env = func() bundle.Env { e := bundle.OSEnv(); e.Shared = shared; return e }
			for _, wf := range b.Workflows {
				reload.loaded[wf.ID()+"@"+wf.Version()] = wf.Digest()
			}
			workflows = append(workflows, b.Workflows...)
			if err := server.MergeAdapters(adapters, b.Adapters); err != nil {
				return usagef("--workflows: %v", err)
			}
			for _, u := range b.Unwired {
				log.Warn("bundle without adapters: its effects will fail until its endpoint variable is set", "bundle", u)
			}
		}
		for _, wf := range builtinWorkflows() {
			if slices.ContainsFunc(workflows, func(o runner.Workflow) bool { return o.ID() == wf.ID() && o.Version() == wf.Version() }) {
				log.Warn("a bundle replaces the built-in workflow", "workflow", wf.ID()+"@"+wf.Version())
				continue
			}
			workflows = append(workflows, wf)
		}
		if *destination != "" {
			ad, err := httpadapter.New(httpadapter.Config{URL: *destination, Timeout: 10 * time.Second})
			if err != nil {
				return usagef("--destination: %v", err)
			}
			if err := adapters.Register("refund.pay", "http/1", demo.HTTPAdapter(ad)); err != nil {
				return usagef("--destination: %v", err)
			}
		}

		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		st, err := openStore(ctx, *storeSpec, false)
		if err != nil {
			return err
		}
		defer st.Close()
		if !shared.Bind(st) {
			log.Warn("this store holds no shared limits: an adapter whose limits are shared sends nothing")
		}
		wrapped, notifier := server.NotifyCommits(st)
		// The wrapper hides the store's optional interfaces; a store that
		// hands out ready runs (PostgreSQL) is claimed from directly.
		claimer, _ := st.(store.Claimer)
		watcher, _ := st.(store.WorkWatcher)
		host, _ := os.Hostname()
		owner := fmt.Sprintf("serve:%s:%d", host, os.Getpid())
		r, err := runner.New(runner.Config{Store: wrapped, Workflows: workflows, Adapters: adapters, Owner: owner,
			LeaseTTL: *leaseTTL, Parallelism: *runners, Logger: log, Cut: faultCut(), Tracer: tracing.Provider,
			Claimer: claimer, Watcher: watcher, Drain: *grace, MaxRetryAfter: retryAfter, Notices: nf.delivers() || followUps, NoticesWhenDelivered: true,
			Reconcile: effect.Plan{Backoff: []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond}}})
		if err != nil {
			return err
		}
		metricsReg := prometheus.NewRegistry()
		for _, c := range sharedMetrics {
			if err := metricsReg.Register(c); err != nil {
				return err
			}
		}
		hooks, err := nf.notifier(st, owner, followUps, log, metricsReg, r.TellWaiting)
		if err != nil {
			return err
		}
		if hooks != nil {
			// Before the runner starts: its commits read it.
			notifier.OnNotices(hooks.Wake)
		}
		var backups *backupSchedule
		if *backupDir != "" {
			sq, ok := store.As[*sqlite.Store](st)
			if !ok {
				return usagef("--backup-dir backs up an embedded store")
			}
			if err := os.MkdirAll(*backupDir, 0o750); err != nil {
				return usagef("--backup-dir: %v", err)
			}
			backups = newBackupSchedule(sq, *backupDir, *backupEvery, *backupKeep, log)
			if err := backups.register(metricsReg); err != nil {
				return err
			}
		}
		if reload != nil {
			if err := reload.register(metricsReg); err != nil {
				return err
			}
		}
		var pruner *pruneSchedule
		if pruning {
			if _, ok := store.PrunerOf(st); !ok {
				return usagef("--prune-ended-after: this store cannot prune runs")
			}
			if *pruneDir != "" {
				if err := os.MkdirAll(*pruneDir, 0o750); err != nil {
					return usagef("--prune-archive: %v", err)
				}
			}
			sealer, err := storeSealer()
			if err != nil {
				return err
			}
			pruner = newPruneSchedule(st, *pruneAge, *pruneEvery, *pruneDir, sealer, owner, log)
			pruner.abandoned, pruner.compress = *pruneAbandoned, *pruneCompress
			if err := pruner.register(metricsReg); err != nil {
				return err
			}
		}
		catalog := server.Static(workflows)
		var scheduler *schedule.Scheduler
		if schedules != nil {
			pauses, _ := store.SchedulePausingOf(wrapped)
			heads, _ := store.ScheduleHeadsOf(wrapped)
			if scheduler, err = schedule.New(schedules, schedule.Config{Runner: r, Workflows: catalog.Workflows, Logger: log, Metrics: metricsReg,
				Pauses: pauses, Heads: heads, Runs: wrapped}); err != nil {
				return usagef("--schedules %s: %v", *schedulesFile, err)
			}
		}
		agents := mcp.Handler(mcp.Deps{Store: wrapped, Runner: r, Catalog: catalog, AgentFrom: server.ActorFrom, WorkflowsFrom: server.WorkflowsFrom})
		srv, err := server.New(server.Config{Store: wrapped, Runner: r, Catalog: catalog, Tokens: tokens, Identity: identity, Logger: log, Notifier: notifier, MCP: agents,
			Tracer: tracing.Provider, Metrics: metricsReg, Webhooks: webhooks, FollowUps: followUps, Schedules: scheduler, RateLimit: rate})
		if err != nil {
			if webhooks != nil {
				return usagef("--webhooks %s: %v", *webhooksFile, err)
			}
			return err
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
			MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		hs.RegisterOnShutdown(srv.Shutdown)

		runCtx, stopRunner := context.WithCancel(context.WithoutCancel(ctx))
		runDone := make(chan error, 1)
		go func() { runDone <- r.Run(runCtx) }()
		serveDone := make(chan error, 1)
		go func() { serveDone <- hs.Serve(ln) }()
		var chores sync.WaitGroup // scheduled backups and pruning
		if backups != nil {
			chores.Go(func() { backups.run(runCtx) })
		}
		if pruner != nil {
			chores.Go(func() { pruner.run(runCtx) })
		}
		if hooks != nil {
			chores.Go(func() { hooks.Run(runCtx) })
		}
		if *reloadEvery > 0 && tokens != nil {
			chores.Go(func() { tokenReload(*tokensFile, srv).watch(runCtx, *reloadEvery, log) })
		}
		if identity != nil {
			chores.Go(func() { refreshIdentity(runCtx, srv, log) })
			if *reloadEvery > 0 {
				chores.Go(func() { identityReload{*identityFile, srv}.watch(runCtx, *reloadEvery, log) })
			}
		}
		if scheduler != nil {
			chores.Go(func() { scheduler.Run(runCtx) })
			if *reloadEvery > 0 {
				chores.Go(func() { scheduleReload(*schedulesFile, scheduler).watch(runCtx, *reloadEvery, log) })
			}
		}
		if *reloadEvery > 0 && webhooks != nil {
			chores.Go(func() { webhookReload(*webhooksFile, srv).watch(runCtx, *reloadEvery, log) })
		}
		if *reloadEvery > 0 && hooks != nil && nf.routes != "" {
			chores.Go(func() { nf.watchRoutes(runCtx, *reloadEvery, hooks, log) })
		}
		if *reloadEvery > 0 && (reload != nil || nf.routes == "") {
			if reload == nil {
				log.Warn("--reload-adapters-every: no bundles to reload adapters for")
			} else {
				chores.Go(func() { reload.watch(runCtx, *reloadEvery, log) })
			}
		}
		// SIGHUP reads the encryption keys again (reloadKeys) and
		// rebuilds the bundles' adapters with the environment and the
		// files it names as they are now (adapterReload).
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		chores.Go(func() {
			for {
				select {
				case <-runCtx.Done():
					return
				case <-hup:
					reloadKeys(log)
					if tokens != nil {
						tokenReload(*tokensFile, srv).reload(log)
					}
					if identity != nil {
						identityReload{*identityFile, srv}.reload(runCtx, log)
					}
					if webhooks != nil {
						webhookReload(*webhooksFile, srv).reload(log)
					}
					if scheduler != nil {
						scheduleReload(*schedulesFile, scheduler).reload(log)
					}
					if hooks != nil && nf.routes != "" {
						nf.reloadRoutes(hooks, log)
					}
					if reload == nil {
						log.Warn("SIGHUP: no bundles to reload adapters for")
						continue
					}
					rep := reload.reload()
					log.Info("adapters reloaded", "bundles", rep.Reloaded, "kept", len(rep.Kept))
					for _, k := range rep.Kept {
						log.Warn("adapters kept as they were", "bundle", k)
					}
				}
			}
		})
		fmt.Fprintf(cmd.OutOrStdout(), "flrh serve: http://%s/ (store %s, %d workflows, %d runners, %s)\n",
			ln.Addr(), *storeSpec, len(workflows), *runners, authMode(tokens, identity))

		var serveErr error
		select {
		case <-ctx.Done():
		case serveErr = <-serveDone:
		}
		log.Info("shutting down")
		srv.Drain()
		if *drainDelay > 0 && serveErr == nil {
			log.Info("draining: readiness answers 503 before the listener closes", "delay", drainDelay.String())
			time.Sleep(*drainDelay)
		}
		sctx, cancel := context.WithTimeout(context.Background(), *grace)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			log.Warn("shutdown: requests still in flight were cut off", "err", err.Error())
		}
		stopRunner()
		<-runDone
		chores.Wait()
		if err := r.Close(context.Background()); err != nil {
			log.Warn("releasing leases", "err", err.Error())
		}
		if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			return serveErr
		}
		fmt.Fprintln(cmd.OutOrStdout(), "flrh serve: stopped")
		return nil
	}
	rootCmd.AddCommand(cmd)
}
