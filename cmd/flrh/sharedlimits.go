package main

import (
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
// how long admitted ones waited for room.
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
	return []prometheus.Collector{requests, waited}
}
