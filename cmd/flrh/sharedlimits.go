package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/effect/sharedlimit"
)

// newSharedLimits is this process's board of shared limits, unbound: its
// requests' holders are named after the host and the process, and a
// random part, since a container restarted in place has the same host
// name and process id as the process it replaces, whose slots may still
// be held.
func newSharedLimits() *sharedlimit.Board {
	host, _ := os.Hostname()
	// A holder's name is at most 200 bytes (store.ValidateSlot); a host
	// name may be 253.
	host = host[:min(len(host), 64)]
	return sharedlimit.New(fmt.Sprintf("%s:%d:%08x", host, os.Getpid(), rand.Uint32()))
}

// sharedLimitMetrics tells board's admissions to two collectors, to be
// registered with a server's metrics: requests by limit and outcome, and
// how long admitted ones waited for room; and reads, at each scrape, the
// limits in use in the store (limitsInUse).
func sharedLimitMetrics(board *sharedlimit.Board) []prometheus.Collector {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_shared_limit_requests_total",
		Help: "Requests that asked a shared adapter limit for room, by limit and outcome: admitted, no_room (nothing sent) or failed (the limit could not be read; nothing sent)."},
		[]string{"limit", "outcome"})
	waited := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flrh_shared_limit_wait_seconds",
		Help:    "How long admitted requests waited for room under a shared adapter limit.",
		Buckets: []float64{.001, .005, .025, .1, .25, 1, 2.5, 10, 60}}, []string{"limit"})
	board.Observe = func(limit, outcome string, d time.Duration) {
		requests.WithLabelValues(limit, outcome).Inc()
		if outcome == sharedlimit.Admitted {
			waited.WithLabelValues(limit).Observe(d.Seconds())
		}
	}
	return []prometheus.Collector{requests, waited, limitsInUse{board}}
}

// Gauges of the shared limits in use, read from the store at a scrape.
var (
	limitHeldDesc = prometheus.NewDesc("flrh_shared_limit_slots_held",
		"Slots of a shared adapter limit held now, by every process sharing the store.", []string{"limit"}, nil)
	limitWaitingDesc = prometheus.NewDesc("flrh_shared_limit_waiting",
		"Requests of every process sharing the store waiting for a slot of a shared adapter limit.", []string{"limit"}, nil)
	limitBoundDesc = prometheus.NewDesc("flrh_shared_limit_bound",
		"The bound (max in flight) that holds for a shared adapter limit now: the strictest declared by the requests holding or waiting.", []string{"limit"}, nil)
	limitBoundsDesc = prometheus.NewDesc("flrh_shared_limit_bounds_declared",
		"How many different bounds the requests holding or waiting declare for a shared adapter limit: above 1, processes disagree (two bundles, or a rolling deploy) and the strictest holds.", []string{"limit"}, nil)
)

// limitScrape bounds how long a scrape waits for the store's limits.
const limitScrape = 2 * time.Second

// limitsInUse is a collector of the shared limits in use, read from the
// store the board is bound to when metrics are scraped: a limit neither
// held nor waited for is not shown. A store that cannot be read (or a
// board not yet bound) shows none.
type limitsInUse struct{ board *sharedlimit.Board }

func (c limitsInUse) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{limitHeldDesc, limitWaitingDesc, limitBoundDesc, limitBoundsDesc} {
		ch <- d
	}
}

func (c limitsInUse) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), limitScrape)
	defer cancel()
	uses, err := c.board.InUse(ctx)
	if err != nil {
		return
	}
	for _, u := range uses {
		if len(u.Held) == 0 && u.Waiting == 0 {
			continue // a rate booked ahead only
		}
		ch <- prometheus.MustNewConstMetric(limitHeldDesc, prometheus.GaugeValue, float64(len(u.Held)), u.Name)
		ch <- prometheus.MustNewConstMetric(limitWaitingDesc, prometheus.GaugeValue, float64(u.Waiting), u.Name)
		ch <- prometheus.MustNewConstMetric(limitBoundsDesc, prometheus.GaugeValue, float64(len(u.Bounds)), u.Name)
		if len(u.Bounds) > 0 {
			ch <- prometheus.MustNewConstMetric(limitBoundDesc, prometheus.GaugeValue, float64(u.Bounds[0]), u.Name)
		}
	}
}
