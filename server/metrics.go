package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/telemetry"
)

// metrics are the server's Prometheus collectors. /metrics also serves the
// runner's (package telemetry): ticks, commit latency, transitions, effects
// by outcome, tripwire trips and store errors, which the server counts into
// too (source="api" and "scrape").
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec // the runner's flrh_store_errors_total, source="api"
	runner      *telemetry.Metrics
	streams     prometheus.Gauge
	// keySetFetches counts fetches of the identity provider's key set by
	// outcome; identityRefused, its tokens refused by reason.
	keySetFetches   *prometheus.CounterVec
	identityRefused *prometheus.CounterVec
	// webhookDeliveries counts deliveries to each webhook by outcome;
	// webhookParked, those parked.
	webhookDeliveries *prometheus.CounterVec
	webhookParked     *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry, s *Server) (*metrics, error) {
	tm := s.cfg.Runner.Metrics()
	if err := tm.Register(reg); err != nil {
		return nil, err
	}
	m := &metrics{runner: tm, storeErrors: tm.StoreErrors(telemetry.SourceAPI),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_http_requests_total",
			Help: "HTTP requests by route, method and status."}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flrh_http_request_duration_seconds",
			Help:    "HTTP request latency by route (event streams excluded).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5}}, []string{"route", "method"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flrh_event_streams", Help: "Open server-sent event streams."}),
		keySetFetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_identity_key_set_fetches_total",
			Help: "Fetches of the identity provider's key set by outcome (ok, failed)."}, []string{"outcome"}),
		identityRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_identity_tokens_refused_total",
			Help: "Identity provider tokens refused, by reason (expired, bad_signature, unknown_key, wrong_audience, actor, …)."}, []string{"reason"}),
		webhookDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_webhook_deliveries_total",
			Help: "Deliveries to each webhook by outcome: started (a run), input (to a run), again (held already), ignored, refused (signature, time, body), failed (the run or the input), handshake (Slack's URL check), rate_limited (past the webhook's rate: not taken, to be delivered again)."}, []string{"webhook", "outcome"}),
		webhookParked: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_webhook_parked_total",
			Help: "Deliveries to each webhook parked: verified, not taken, kept to be taken again (a redelivery refused again counts again)."}, []string{"webhook"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.streams, m.keySetFetches, m.identityRefused, m.webhookDeliveries, m.webhookParked, &runCollector{s: s, inspect: s.cfg.Runner.Inspect, budget: scrapeBudget},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			if _, dup := err.(prometheus.AlreadyRegisteredError); !dup {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(rt route, status int, d time.Duration) {
	m.requests.WithLabelValues(rt.Pattern, rt.Method, strconv.Itoa(status)).Inc()
	if !rt.streams {
		m.latency.WithLabelValues(rt.Pattern, rt.Method).Observe(d.Seconds())
	}
}

// runCollector reports runs by state, the runs an operator must look at
// and the approvals live runs wait for. It reads the store at scrape time,
// at most once per scrapeEvery.
type runCollector struct {
	s       *Server
	inspect func(context.Context, string) (runner.Status, error) // the runner's Inspect
	budget  time.Duration                                        // how long one read may take
	mu      sync.Mutex
	at      time.Time
	g       runGauges
	failed  bool
	waits   waitCounts // what each run waiting for approval was found to wait on
}

// runGauges are the store's gauges as one read found them.
type runGauges struct {
	byState     map[string]float64
	quarantined float64            // runs quarantined before they ended, but those moved away
	moved       float64            // runs moved to another store (store.MovedAway)
	pruned      float64            // ended runs whose record the store pruned
	expired     float64            // live runs whose lease expired, its owner still named
	waiting     float64            // approval requests live runs wait on
	parked      map[string]float64 // webhook deliveries parked, by webhook
}

const (
	scrapeEvery  = 5 * time.Second
	scrapeBudget = 5 * time.Second
)

var (
	descRuns        = prometheus.NewDesc("flrh_runs", "Runs in the store by run FSM state.", []string{"state"}, nil)
	descQuarantined = prometheus.NewDesc("flrh_runs_quarantined", "Runs quarantined before they ended: each needs a person.", nil, nil)
	descMoved       = prometheus.NewDesc("flrh_runs_moved", "Runs moved to another store (flrh store import --live), fenced out of this one: the store each went to runs it, and none needs a person here.", nil, nil)
	descPruned      = prometheus.NewDesc("flrh_runs_pruned", "Ended runs whose record was archived and pruned: the store holds their headers alone (counted in flrh_runs too).", nil, nil)
	descExpired     = prometheus.NewDesc("flrh_leases_expired", "Live runs whose lease expired with its owner still named: a runner that stopped without giving it back.", nil, nil)
	descWaiting     = prometheus.NewDesc("flrh_approvals_waiting", "Approval requests live runs wait on.", nil, nil)
	descParked      = prometheus.NewDesc("flrh_webhook_parked", "Webhook deliveries parked now, by webhook: verified, not taken, waiting for an operator to take them again or drop them.", []string{"webhook"}, nil)
	descScrapeOK    = prometheus.NewDesc("flrh_store_scrape_ok", "1 if the last read of run states succeeded.", nil, nil)
)

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRuns, descQuarantined, descMoved, descPruned, descExpired, descWaiting, descParked, descScrapeOK} {
		ch <- d
	}
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= scrapeEvery {
		c.refresh()
	}
	for state, n := range c.g.byState {
		ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, n, state)
	}
	ch <- prometheus.MustNewConstMetric(descQuarantined, prometheus.GaugeValue, c.g.quarantined)
	ch <- prometheus.MustNewConstMetric(descMoved, prometheus.GaugeValue, c.g.moved)
	ch <- prometheus.MustNewConstMetric(descPruned, prometheus.GaugeValue, c.g.pruned)
	ch <- prometheus.MustNewConstMetric(descExpired, prometheus.GaugeValue, c.g.expired)
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, c.g.waiting)
	for hook, n := range c.g.parked {
		ch <- prometheus.MustNewConstMetric(descParked, prometheus.GaugeValue, n, hook)
	}
	ok := 1.0
	if c.failed {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(descScrapeOK, prometheus.GaugeValue, ok)
}

// refresh reads the gauges again. A read of the store that fails or runs
// out of time keeps the last complete gauges; a count of the approvals
// waiting that does keeps the last complete count, and the store's gauges
// read before it are kept fresh. Either way the scrape reports failure.
func (c *runCollector) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), c.budget)
	defer cancel()
	c.at = time.Now()
	g, awaiting, err := readRunGauges(ctx, c.s.cfg.Store, c.at)
	if err == nil {
		last := c.g.waiting
		c.g = g
		if c.waits == nil {
			c.waits = waitCounts{}
		}
		if c.g.waiting, err = c.waits.count(ctx, c.inspect, awaiting); err != nil {
			c.g.waiting = last
		}
	}
	if c.failed = err != nil; err != nil && ctx.Err() == nil {
		c.s.metrics.runner.StoreError(telemetry.SourceScrape, err)
	}
}

// readRunGauges reads the store's gauges at now, but for the approvals
// waiting, and lists the live runs in WAIT_APPROVAL, the only ones that
// can wait on a person's approval. A store that takes a census (both of
// flrh's) counts and filters inside the database, and lists those runs
// from its index of live runs; any other is paged through
// (store.TakeCensus, store.LiveHeadsIn: where each stands, not its whole
// header).
func readRunGauges(ctx context.Context, st store.Store, now time.Time) (g runGauges, awaiting []store.RunHead, err error) {
	cs, err := store.TakeCensus(ctx, st, store.CensusQuery{ExpiredBy: now, ByState: true})
	if err != nil {
		return g, nil, err
	}
	g.byState = map[string]float64{}
	for state, n := range cs.States {
		g.byState[state] = float64(n)
	}
	g.quarantined, g.moved = float64(len(cs.Quarantined)), float64(len(cs.Moved))
	g.expired, g.pruned = float64(len(cs.Expired)), float64(cs.Pruned)
	if p, ok := store.DeliveryParkingOf(st); ok {
		counts, err := p.ParkedCounts(ctx)
		if err != nil {
			return g, nil, err
		}
		for _, c := range counts {
			if g.parked == nil {
				g.parked = map[string]float64{}
			}
			g.parked[c.Hook] = float64(c.Count)
		}
	}
	awaiting, err = store.LiveHeadsIn(ctx, st, "WAIT_APPROVAL")
	return g, awaiting, err
}

// waitCounts remembers, for each run waiting for approval, how many
// approval requests it waits on and the header that count was read at.
// What a run waits on follows from its checkpoint, which changes only
// with a write to its header: while the header a scrape lists is the one
// remembered, the count stands, and the run's checkpoint is not read
// again. A resting run is written to by nothing, so a scrape reads the
// checkpoints of the runs that moved since the last one, not of all.
type waitCounts map[string]waitCount

type waitCount struct {
	head     int64
	headHash string
	updated  time.Time
	n        int
}

func (w waitCount) at(r store.RunHead) bool {
	return w.head == r.Head && w.headHash == r.HeadHash && w.updated.Equal(r.UpdatedAt)
}

// count counts the approval requests the runs wait on: from what it
// remembers of a run whose header has not moved, otherwise from its
// checkpoint (inspect), remembered then under the header inspect read it
// with. Runs no longer listed are forgotten once a count completes. It is
// bounded by ctx; a count cut short keeps what it learnt.
func (w waitCounts) count(ctx context.Context, inspect func(context.Context, string) (runner.Status, error), runs []store.RunHead) (float64, error) {
	n := 0
	for _, r := range runs {
		if c, ok := w[r.ID]; ok && c.at(r) {
			n += c.n
			continue
		}
		status, err := inspect(ctx, r.ID)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err != nil {
			continue
		}
		n += len(status.Waiting)
		w[r.ID] = waitCount{head: status.Run.Head, headHash: status.Run.HeadHash, updated: status.Run.UpdatedAt, n: len(status.Waiting)}
	}
	if len(w) > len(runs) {
		listed := make(map[string]bool, len(runs))
		for _, r := range runs {
			listed[r.ID] = true
		}
		for id := range w {
			if !listed[id] {
				delete(w, id)
			}
		}
	}
	return float64(n), nil
}
