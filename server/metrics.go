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
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.streams, &runCollector{s: s, inspect: s.cfg.Runner.Inspect, budget: scrapeBudget},
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
}

// runGauges are the store's gauges as one read found them.
type runGauges struct {
	byState     map[string]float64
	quarantined float64 // runs quarantined before they ended
	pruned      float64 // ended runs whose record the store pruned
	expired     float64 // live runs whose lease expired, its owner still named
	waiting     float64 // approval requests live runs wait on
}

const (
	scrapeEvery  = 5 * time.Second
	scrapeBudget = 5 * time.Second
)

var (
	descRuns        = prometheus.NewDesc("flrh_runs", "Runs in the store by run FSM state.", []string{"state"}, nil)
	descQuarantined = prometheus.NewDesc("flrh_runs_quarantined", "Runs quarantined before they ended: each needs a person.", nil, nil)
	descPruned      = prometheus.NewDesc("flrh_runs_pruned", "Ended runs whose record was archived and pruned: the store holds their headers alone (counted in flrh_runs too).", nil, nil)
	descExpired     = prometheus.NewDesc("flrh_leases_expired", "Live runs whose lease expired with its owner still named: a runner that stopped without giving it back.", nil, nil)
	descWaiting     = prometheus.NewDesc("flrh_approvals_waiting", "Approval requests live runs wait on.", nil, nil)
	descScrapeOK    = prometheus.NewDesc("flrh_store_scrape_ok", "1 if the last read of run states succeeded.", nil, nil)
)

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRuns, descQuarantined, descPruned, descExpired, descWaiting, descScrapeOK} {
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
	ch <- prometheus.MustNewConstMetric(descPruned, prometheus.GaugeValue, c.g.pruned)
	ch <- prometheus.MustNewConstMetric(descExpired, prometheus.GaugeValue, c.g.expired)
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, c.g.waiting)
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
		if c.g.waiting, err = countWaiting(ctx, c.inspect, awaiting); err != nil {
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
// (store.TakeCensus, store.LiveRunsIn).
func readRunGauges(ctx context.Context, st store.Store, now time.Time) (g runGauges, awaiting []string, err error) {
	cs, err := store.TakeCensus(ctx, st, store.CensusQuery{ExpiredBy: now, ByState: true})
	if err != nil {
		return g, nil, err
	}
	g.byState = map[string]float64{}
	for state, n := range cs.States {
		g.byState[state] = float64(n)
	}
	g.quarantined, g.expired, g.pruned = float64(len(cs.Quarantined)), float64(len(cs.Expired)), float64(cs.Pruned)
	awaiting, err = store.LiveRunsIn(ctx, st, "WAIT_APPROVAL")
	return g, awaiting, err
}

// countWaiting counts the approval requests the runs ids wait on, from
// their checkpoints (inspect): the expensive part of a scrape, bounded by
// ctx.
func countWaiting(ctx context.Context, inspect func(context.Context, string) (runner.Status, error), ids []string) (float64, error) {
	n := 0
	for _, id := range ids {
		status, err := inspect(ctx, id)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err == nil {
			n += len(status.Waiting)
		}
	}
	return float64(n), nil
}
