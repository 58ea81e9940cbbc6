package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/store"
)

// pruneSchedule prunes, for flrh serve, the runs that ended more than age
// ago, once when it starts and then every interval: what flrh store prune
// does, each run archived into dir (or discarded) and verified first.
//
// Every server of a deployment may be given the same schedule: a pass
// runs only on the server that holds the store's pruning duty
// (store.Duties), and the others skip theirs until its holder stops
// renewing it (it stopped, or died: the lease lapses after dutyTTL).
type pruneSchedule struct {
	st     store.Store
	age    time.Duration
	every  time.Duration
	dir    string       // "" discards
	seal   store.Sealer // the store's keyring, if any: archives sealed as the store is
	holder string       // this server, as the duty's holder
	// abandoned prunes runs that ended with effects open too
	// (pruneOptions.Abandoned).
	abandoned bool
	compress  bool // archives written compressed (pruneOptions.Compress)
	log       *slog.Logger
	now       func() time.Time

	duty store.Duty // as this server last held it (Held false: it does not)

	passes *prometheus.CounterVec // by outcome: ok, failed, elsewhere
	runs   *prometheus.CounterVec // by result: pruned, left, elsewhere
	kept   prometheus.Gauge       // runs the last pass kept, each with an effect open
	held   prometheus.Gauge       // 1 while this server holds the pruning duty
}

// pruneDuty names scheduled pruning among a store's duties.
const pruneDuty = "prune"

func newPruneSchedule(st store.Store, age, every time.Duration, dir string, seal store.Sealer, holder string, log *slog.Logger) *pruneSchedule {
	return &pruneSchedule{st: st, age: age, every: every, dir: dir, seal: seal, holder: holder, log: log, now: time.Now,
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_prune_passes_total",
			Help: "Scheduled passes of pruning ended runs (flrh serve --prune-ended-after), by outcome: ok, failed (the store or the disk failed), or elsewhere (another server holds the pruning duty)."}, []string{"outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_prune_runs_total",
			Help: "Runs scheduled pruning took, by result: pruned, left for a person (its record failed verification, or its archive file holds other content; each pass counts it again), or elsewhere (another prune removed it meanwhile)."}, []string{"result"}),
		kept: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flrh_prune_kept_runs",
			Help: "Ended runs the last scheduled pruning pass kept because an effect of theirs is still open."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flrh_prune_duty_held",
			Help: "1 while this server holds the store's pruning duty (one server of those sharing a store prunes at a time), else 0."}),
	}
}

// dutyTTL is how long a hold on the pruning duty lasts unrenewed: two
// intervals, so that a holder renewing it at each pass (and during a long
// one) keeps it, and a holder gone is replaced within three.
func (p *pruneSchedule) dutyTTL() time.Duration { return 2 * p.every }

// register adds the schedule's metrics to reg.
func (p *pruneSchedule) register(reg *prometheus.Registry) error {
	for _, c := range []prometheus.Collector{p.passes, p.runs, p.kept, p.held} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	for _, o := range []string{"ok", "failed", "elsewhere"} {
		p.passes.WithLabelValues(o)
	}
	for _, r := range []string{"pruned", "left", "elsewhere"} {
		p.runs.WithLabelValues(r)
	}
	return nil
}

// run prunes until ctx ends: a pass at once, then one every interval.
// Stopping, it gives the duty up, so that another server takes it at its
// next pass instead of once the lease lapses.
func (p *pruneSchedule) run(ctx context.Context) {
	defer p.release()
	for {
		p.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.every):
		}
	}
}

// hold takes or renews the pruning duty; false when another server holds
// it (or the store failed: the pass is then skipped, and counted failed).
// A store without duties is held by its one server.
func (p *pruneSchedule) hold(ctx context.Context) (held bool, err error) {
	duties, ok := store.DutiesOf(p.st)
	if !ok {
		return true, nil
	}
	d, err := duties.HoldDuty(ctx, pruneDuty, p.holder, p.dutyTTL())
	if err != nil {
		p.duty.Held = false
		p.held.Set(0)
		return false, err
	}
	if d.Held != p.duty.Held || d.Holder != p.duty.Holder || d.Generation != p.duty.Generation {
		if d.Held {
			p.log.Info("this server holds the pruning duty", "generation", d.Generation)
		} else {
			p.log.Info("another server holds the pruning duty", "holder", d.Holder, "until", d.ExpiresAt.Format(time.RFC3339))
		}
	}
	p.duty = d
	if d.Held {
		p.held.Set(1)
	} else {
		p.held.Set(0)
	}
	return d.Held, nil
}

// release gives the duty up if this server holds it.
func (p *pruneSchedule) release() {
	duties, ok := store.DutiesOf(p.st)
	if !ok || !p.duty.Held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := duties.ReleaseDuty(ctx, p.duty); err != nil {
		p.log.Warn("the pruning duty was not given up; it lapses", "after", p.dutyTTL().String(), "err", err.Error())
		return
	}
	p.duty.Held = false
	p.held.Set(0)
}

// pass prunes every run that qualifies now, one at a time, and reports
// what it did. A run it leaves (its record fails verification, or its
// archive file holds other content) is logged for a person; the next
// pass tries it again.
func (p *pruneSchedule) pass(ctx context.Context) {
	start := p.now()
	switch held, err := p.hold(ctx); {
	case ctx.Err() != nil:
		return
	case err != nil:
		p.passes.WithLabelValues("failed").Inc()
		p.log.Error("scheduled prune could not take the pruning duty; the next pass tries again", "after", p.every.String(), "err", err.Error())
		return
	case !held:
		// The holder reports what its passes keep; summed over the
		// servers, the gauge counts each kept run once.
		p.passes.WithLabelValues("elsewhere").Inc()
		p.kept.Set(0)
		return
	}
	// The duty is renewed between runs once a third of its lease has
	// gone, and a pass that finds it lost stops: the new holder goes on.
	renewed := p.now()
	between := func() bool {
		if p.now().Sub(renewed) < p.dutyTTL()/3 {
			return true
		}
		renewed = p.now()
		held, err := p.hold(ctx)
		if err != nil {
			p.log.Warn("the pruning duty could not be renewed; the pass stops", "err", err.Error())
		}
		return held
	}
	rep, err := pruneRuns(ctx, p.st, pruneOptions{Before: start.Add(-p.age), Dir: p.dir, Parallel: 1, Sealer: p.seal, Abandoned: p.abandoned, Compress: p.compress,
		Cut: faultCut(), Between: between})
	if ctx.Err() != nil {
		return
	}
	p.runs.WithLabelValues("pruned").Add(float64(len(rep.Pruned)))
	p.runs.WithLabelValues("left").Add(float64(len(rep.Skipped)))
	p.runs.WithLabelValues("elsewhere").Add(float64(len(rep.Elsewhere)))
	for _, s := range rep.Skipped {
		p.log.Warn("scheduled prune left a run", "run_id", s.RunID, "reason", s.Reason)
	}
	if err != nil {
		p.passes.WithLabelValues("failed").Inc()
		p.log.Error("scheduled prune failed; the next pass goes on", "after", p.every.String(), "pruned", len(rep.Pruned), "err", err.Error())
		return
	}
	p.passes.WithLabelValues("ok").Inc()
	p.kept.Set(float64(len(rep.Held)))
	if rep.Log != nil && !rep.Log.Emptied {
		p.log.Warn("scheduled prune: the store's log not emptied; the pruned runs stay in it until its next checkpoint", "err", rep.Log.Error)
	}
	if len(rep.Pruned)+len(rep.Skipped)+len(rep.Held)+len(rep.Elsewhere) > 0 || rep.Stopped {
		p.log.Info("scheduled prune", "pruned", len(rep.Pruned), "left", len(rep.Skipped), "kept", len(rep.Held),
			"elsewhere", len(rep.Elsewhere), "stopped", rep.Stopped, "events", rep.Kept.Events, "took", p.now().Sub(start).String())
	}
}
