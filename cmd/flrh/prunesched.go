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
type pruneSchedule struct {
	st    store.Store
	age   time.Duration
	every time.Duration
	dir   string       // "" discards
	seal  store.Sealer // the store's keyring, if any: archives sealed as the store is
	log   *slog.Logger
	now   func() time.Time

	passes *prometheus.CounterVec // by outcome: ok, failed
	runs   *prometheus.CounterVec // by result: pruned, left
	kept   prometheus.Gauge       // runs the last pass kept, each with an effect open
}

func newPruneSchedule(st store.Store, age, every time.Duration, dir string, seal store.Sealer, log *slog.Logger) *pruneSchedule {
	return &pruneSchedule{st: st, age: age, every: every, dir: dir, seal: seal, log: log, now: time.Now,
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_prune_passes_total",
			Help: "Scheduled passes of pruning ended runs (flrh serve --prune-ended-after), by outcome: ok, or failed (the store or the disk failed)."}, []string{"outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_prune_runs_total",
			Help: "Runs scheduled pruning took, by result: pruned, or left for a person (its record failed verification, or its archive file holds other content; each pass counts it again)."}, []string{"result"}),
		kept: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flrh_prune_kept_runs",
			Help: "Ended runs the last scheduled pruning pass kept because an effect of theirs is still open."}),
	}
}

// register adds the schedule's metrics to reg.
func (p *pruneSchedule) register(reg *prometheus.Registry) error {
	for _, c := range []prometheus.Collector{p.passes, p.runs, p.kept} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	for _, o := range []string{"ok", "failed"} {
		p.passes.WithLabelValues(o)
	}
	for _, r := range []string{"pruned", "left"} {
		p.runs.WithLabelValues(r)
	}
	return nil
}

// run prunes until ctx ends: a pass at once, then one every interval.
func (p *pruneSchedule) run(ctx context.Context) {
	for {
		p.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.every):
		}
	}
}

// pass prunes every run that qualifies now, one at a time, and reports
// what it did. A run it leaves (its record fails verification, or its
// archive file holds other content) is logged for a person; the next
// pass tries it again.
func (p *pruneSchedule) pass(ctx context.Context) {
	start := p.now()
	rep, err := pruneRuns(ctx, p.st, pruneOptions{Before: start.Add(-p.age), Dir: p.dir, Parallel: 1, Sealer: p.seal, Cut: faultCut()})
	if ctx.Err() != nil {
		return
	}
	p.runs.WithLabelValues("pruned").Add(float64(len(rep.Pruned)))
	p.runs.WithLabelValues("left").Add(float64(len(rep.Skipped)))
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
	if len(rep.Pruned)+len(rep.Skipped)+len(rep.Held) > 0 {
		p.log.Info("scheduled prune", "pruned", len(rep.Pruned), "left", len(rep.Skipped), "kept", len(rep.Held),
			"events", rep.Kept.Events, "took", p.now().Sub(start).String())
	}
}
