package telemetry

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/store"
)

// Metrics are the Prometheus collectors for what runs do: ticks, commit
// latency, control transitions, effects, tripwire trips and store errors.
// The runner counts into them; the server registers them next to its own
// (runs by state, approvals waiting, HTTP requests). All methods are safe
// for concurrent use.
type Metrics struct {
	ticks       *prometheus.CounterVec
	commit      prometheus.Histogram
	transitions *prometheus.CounterVec
	refused     *prometheus.CounterVec
	effects     *prometheus.CounterVec
	attempts    *prometheus.CounterVec
	ended       *prometheus.CounterVec
	// The counters a tick touches, resolved once per label set: a step
	// counts a dozen transitions, and resolving labels costs more than
	// counting.
	cTicks, cTransitions, cEffects, cAttempts counterCache
	trips                                     *prometheus.CounterVec
	wires                                     *prometheus.CounterVec
	storeErrors                               *prometheus.CounterVec
}

// Store error sources: who met the failure.
const (
	SourceRunner = "runner" // the runner advancing a run
	SourceAPI    = "api"    // the server answering a request
	SourceScrape = "scrape" // the server reading run states for /metrics
)

// storeCodes are the store failures worth a zero before the first one:
// NOT_FOUND is an answer, not a failure.
var storeCodes = []store.Code{store.CodeExists, store.CodeFenced, store.CodeLeaseHeld, store.CodeHeadMismatch,
	store.CodeQuarantined, store.CodeIdempotencyConflict, store.CodeApprovalUnavailable, store.CodeApprovalRejected,
	store.CodeInvalidTransition, store.CodeInvalidInput, store.CodeCorrupt, store.CodeSchemaTooNew, store.CodeUnavailable}

// tripPhases are the boundaries the runner's wires watch.
var tripPhases = []string{"load", "commit", "idle"}

// CommitBuckets are the commit latency histogram's buckets, in seconds: an
// embedded-store commit with synchronous=FULL takes about a millisecond.
var CommitBuckets = []float64{.00025, .0005, .001, .002, .004, .008, .016, .032, .064, .128, .256, .512, 1.024, 2.048}

// NewMetrics makes the collectors, every known label set at zero.
func NewMetrics() *Metrics {
	m := &Metrics{
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_ticks_total",
			Help: "Ticks by workflow and outcome: committed, tripped (a tripwire parked the run), parked (the store refused the commit for good), failed."},
			[]string{"workflow", "outcome"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flrh_commit_duration_seconds",
			Help: "Latency of the store commit that ends a tick (events, checkpoint, intents, outbox, receipts in one transaction).", Buckets: CommitBuckets}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_transitions_total",
			Help: "Accepted control FSM transitions, by event."}, []string{"event"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_control_refused_total",
			Help: "Control events the FSM refused (audited in the run's log), by event."}, []string{"event"}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_effects_total",
			Help: "Effects closed by a committed receipt, by outcome; outcome=unknown counts effects handed to a person to reconcile."},
			[]string{"outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_effect_attempts_total",
			Help: "Adapter calls, by effect type and what the adapter reported."}, []string{"effect_type", "outcome"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_runs_ended_total",
			Help: "Runs this process saw end, by workflow and outcome."}, []string{"workflow", "outcome"}),
		trips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_tripwire_trips_total",
			Help: "Runs a tripwire parked, by the boundary it tripped at."}, []string{"phase"}),
		wires: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_tripwire_wire_trips_total",
			Help: "Wires that fired, by wire (one trip may fire several)."}, []string{"wire"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_store_errors_total",
			Help: "Store failures, by who met them (runner, api, scrape) and store code."}, []string{"source", "code"}),
	}
	m.cTicks = counterCache{vec: m.ticks, two: true}
	m.cTransitions = counterCache{vec: m.transitions}
	m.cEffects = counterCache{vec: m.effects}
	m.cAttempts = counterCache{vec: m.attempts, two: true}
	for _, p := range tripPhases {
		m.trips.WithLabelValues(p)
	}
	for _, src := range []string{SourceRunner, SourceAPI, SourceScrape} {
		for _, c := range storeCodes {
			m.storeErrors.WithLabelValues(src, string(c))
		}
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ticks, m.commit, m.transitions, m.refused, m.effects, m.attempts, m.ended, m.trips, m.wires, m.storeErrors}
}

// Register adds the collectors to reg. Registering the same Metrics twice
// is not an error.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if errors.As(err, &dup) && dup.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	return nil
}

// StoreErrors is the store error counter with its source fixed, by code.
func (m *Metrics) StoreErrors(source string) *prometheus.CounterVec {
	return m.storeErrors.MustCurryWith(prometheus.Labels{"source": source})
}

// Tick counts one tick of a workflow's run.
func (m *Metrics) Tick(workflow, outcome string) { m.cTicks.with(workflow, outcome).Inc() }

// Commit records the latency of one tick's commit.
func (m *Metrics) Commit(d time.Duration) { m.commit.Observe(d.Seconds()) }

// Transition counts one accepted control transition.
func (m *Metrics) Transition(event string) { m.cTransitions.with(event, "").Inc() }

// Refused counts one control event the FSM refused.
func (m *Metrics) Refused(event string) { m.refused.WithLabelValues(event).Inc() }

// Effect counts one effect closed (or handed to a person) with an outcome.
func (m *Metrics) Effect(outcome string) { m.cEffects.with(outcome, "").Inc() }

// Attempt counts one adapter call and what the adapter reported.
func (m *Metrics) Attempt(effectType, outcome string) { m.cAttempts.with(effectType, outcome).Inc() }

// Ended counts one run that ended.
func (m *Metrics) Ended(workflow, outcome string) { m.ended.WithLabelValues(workflow, outcome).Inc() }

// Trip counts one run parked by its wires at a boundary, and each wire.
func (m *Metrics) Trip(phase string, wires []string) {
	m.trips.WithLabelValues(phase).Inc()
	for _, w := range wires {
		m.wires.WithLabelValues(w).Inc()
	}
}

// StoreError counts a store failure by source; errors that carry no store
// code (a cancelled context, say) are not store failures and are ignored,
// as is NOT_FOUND, which is an answer.
func (m *Metrics) StoreError(source string, err error) {
	code := store.CodeOf(err)
	if code == "" || code == store.CodeNotFound {
		return
	}
	m.storeErrors.WithLabelValues(source, string(code)).Inc()
}

// counterCache resolves a counter vector's one or two label values once.
type counterCache struct {
	vec *prometheus.CounterVec
	two bool // the vector has two labels
	mu  sync.RWMutex
	m   map[[2]string]prometheus.Counter
}

// with returns the counter for labels a (and b, for two-label vectors;
// "" for one-label ones).
func (c *counterCache) with(a, b string) prometheus.Counter {
	k := [2]string{a, b}
	c.mu.RLock()
	ctr, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return ctr
	}
	if c.two {
		ctr = c.vec.WithLabelValues(a, b)
	} else {
		ctr = c.vec.WithLabelValues(a)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[[2]string]prometheus.Counter{}
	}
	c.m[k] = ctr
	c.mu.Unlock()
	return ctr
}
