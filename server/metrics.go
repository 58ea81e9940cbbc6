package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

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
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.streams, &runCollector{s: s},
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

// runCollector reports runs by state and the approvals live runs wait for.
// It reads the store at scrape time, at most once per scrapeEvery.
type runCollector struct {
	s       *Server
	mu      sync.Mutex
	at      time.Time
	byState map[string]float64
	waiting float64
	failed  bool
}

const scrapeEvery = 5 * time.Second

var (
	descRuns     = prometheus.NewDesc("flrh_runs", "Runs in the store by run FSM state.", []string{"state"}, nil)
	descWaiting  = prometheus.NewDesc("flrh_approvals_waiting", "Approval requests live runs wait on.", nil, nil)
	descScrapeOK = prometheus.NewDesc("flrh_store_scrape_ok", "1 if the last read of run states succeeded.", nil, nil)
)

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRuns
	ch <- descWaiting
	ch <- descScrapeOK
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= scrapeEvery {
		c.refresh()
	}
	for state, n := range c.byState {
		ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, n, state)
	}
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, c.waiting)
	ok := 1.0
	if c.failed {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(descScrapeOK, prometheus.GaugeValue, ok)
}

func (c *runCollector) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := c.s.cfg.Store
	byState := map[string]float64{}
	var awaiting []string
	c.at, c.failed = time.Now(), true
	after := ""
	for {
		page, err := st.Runs(ctx, after, 1000)
		if err != nil {
			c.s.metrics.runner.StoreError(telemetry.SourceScrape, err)
			return
		}
		for _, r := range page {
			byState[r.State]++
			after = r.ID
			if r.State == "WAIT_APPROVAL" && r.Outcome == "" && r.Quarantine == "" {
				awaiting = append(awaiting, r.ID)
			}
		}
		if len(page) < 1000 {
			break
		}
	}
	c.byState = byState
	// Only runs in WAIT_APPROVAL can wait on a person's approval; reading
	// their checkpoints is the expensive part, so it is bounded by the
	// timeout and the last complete count is kept if it runs out.
	waiting := 0
	for _, id := range awaiting {
		status, err := c.s.cfg.Runner.Inspect(ctx, id)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			waiting += len(status.Waiting)
		}
	}
	c.waiting, c.failed = float64(waiting), false
}
