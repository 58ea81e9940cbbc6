package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/telemetry"
	"flrh.dev/flrh/tripwire"
)

// What the runner reports about its work: structured logs, a span per
// tick with a child per phase, and Prometheus counts.
//
// A tick is one commit: everything a pass decided since its last commit
// (or since it loaded the run), written in one transaction. Its id is the
// run's head after the commit (the sequence number of its last event);
// a tick that writes no events (attempt results only) shares the head of
// the tick before it and says events=0.
//
// With tracing off (no Tracer, or the no-op provider) the runner reads no
// clock for spans and builds no attributes; logs below the handler's level
// cost one Enabled check.

// observer holds the runner's instruments.
type observer struct {
	tracer  trace.Tracer
	tracing bool
	metrics *telemetry.Metrics

	mu       sync.Mutex
	triggers map[string]trace.SpanContext // the request that last handed each run work
}

func newObserver(cfg Config) *observer {
	o := &observer{metrics: cfg.Metrics, triggers: map[string]trace.SpanContext{}}
	if o.metrics == nil {
		o.metrics = telemetry.NewMetrics()
	}
	o.tracing = telemetry.Enabled(cfg.Tracer)
	if o.tracing {
		o.tracer = cfg.Tracer.Tracer(telemetry.InstrumentationName)
	}
	return o
}

// Metrics returns the collectors the runner counts into, for a server to
// register (telemetry.Metrics.Register).
func (r *Runner) Metrics() *telemetry.Metrics { return r.obs.metrics }

// noteTrigger remembers the span of the request that is handing a run
// work (a start, an input, an approval), so the tick that does the work is
// its child: one trace from the HTTP request to the commit it caused. It
// is called before the store write (a runner may pick the work up at
// once) and returns what undoes it should the write fail.
func (r *Runner) noteTrigger(ctx context.Context, runID string) (undo func()) {
	if !r.obs.tracing {
		return func() {}
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return func() {}
	}
	r.obs.mu.Lock()
	r.obs.triggers[runID] = sc
	r.obs.mu.Unlock()
	return func() {
		r.obs.mu.Lock()
		if r.obs.triggers[runID].Equal(sc) {
			delete(r.obs.triggers, runID)
		}
		r.obs.mu.Unlock()
	}
}

func (r *Runner) trigger(runID string) trace.SpanContext {
	r.obs.mu.Lock()
	defer r.obs.mu.Unlock()
	return r.obs.triggers[runID]
}

// settleTrigger forgets the request behind a run's work once the run ends,
// parks or rests waiting for a person: what the request handed over is
// done. A run resting in INGEST keeps it until the next request.
func (r *Runner) settleTrigger(t *tick) {
	if !r.obs.tracing || !t.obs.parent.IsValid() {
		return
	}
	if t.cp != nil {
		switch s := t.cp.Control.State; {
		case r.machine.Final(s), s == "WAIT_APPROVAL", s == "HUMAN_RECONCILIATION":
		default:
			return
		}
	}
	r.obs.mu.Lock()
	if r.obs.triggers[t.run.ID].Equal(t.obs.parent) {
		delete(r.obs.triggers, t.run.ID)
	}
	r.obs.mu.Unlock()
}

// tickObs is one tick's observation state, kept in the pass's tick.
type tickObs struct {
	from   string // the run FSM state the tick started in
	start  time.Time
	span   trace.Span      // opened at the tick's first phase of work; nil before
	ctx    context.Context // carries span
	parent trace.SpanContext
	load   *loadRecord // a load timed before the tick span opened
	// commitErr is the last commit failure, counted once as a store error.
	commitErr error
	reported  bool // the pass's last tick was reported (tripped)
}

type loadRecord struct {
	start, end time.Time
	fresh      bool // a new run: nothing to read
	err        error
}

var noSpan = trace.SpanFromContext(context.Background())

// beginTick starts observing a pass's first tick.
func (r *Runner) beginTick(t *tick) {
	t.obs.from = t.run.State
	if r.obs.tracing {
		t.obs.start = time.Now()
		t.obs.parent = r.trigger(t.run.ID)
	}
}

// openTick opens the tick's span when it first does work: passes that find
// nothing to do leave no span.
func (r *Runner) openTick(ctx context.Context, t *tick) {
	if t.obs.span != nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if t.obs.parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, t.obs.parent)
	}
	t.obs.ctx, t.obs.span = r.obs.tracer.Start(ctx, "flrh.tick", trace.WithTimestamp(t.obs.start),
		trace.WithAttributes(telemetry.KeyRunID.String(t.run.ID), telemetry.KeyWorkflow.String(t.run.WorkflowID),
			telemetry.KeyWorkflowVersion.String(t.run.WorkflowVersion), telemetry.KeyStateFrom.String(t.obs.from),
			telemetry.KeyLeaseGeneration.Int64(t.lease.Generation)))
	for _, k := range slices.Sorted(maps.Keys(t.run.Labels)) {
		t.obs.span.SetAttributes(attribute.String(telemetry.KeyLabelPrefix+k, t.run.Labels[k]))
	}
	if l := t.obs.load; l != nil {
		_, sp := r.obs.tracer.Start(t.obs.ctx, "flrh.load", trace.WithTimestamp(l.start),
			trace.WithAttributes(attribute.Bool("flrh.load.fresh", l.fresh)))
		endSpan(sp, l.err, trace.WithTimestamp(l.end))
		t.obs.load = nil
	}
}

// phase starts a child span of the tick; without tracing it is the no-op
// span and ctx unchanged.
func (r *Runner) phase(ctx context.Context, t *tick, name string) (context.Context, trace.Span) {
	if !r.obs.tracing {
		return ctx, noSpan
	}
	r.openTick(ctx, t)
	_, sp := r.obs.tracer.Start(t.obs.ctx, name)
	if ctx == nil {
		return nil, sp
	}
	return trace.ContextWithSpan(ctx, sp), sp
}

func endSpan(sp trace.Span, err error, opts ...trace.SpanEndOption) {
	if err != nil && sp.IsRecording() {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End(opts...)
}

// closeTick ends the tick's span with its outcome and starts the next tick
// where this one ended.
func (r *Runner) closeTick(t *tick, outcome string, err error, attrs ...attribute.KeyValue) {
	if t.obs.span != nil {
		t.obs.span.SetAttributes(telemetry.KeyOutcome.String(outcome))
		t.obs.span.SetAttributes(attrs...)
		endSpan(t.obs.span, err)
		t.obs.span, t.obs.ctx = nil, nil
	}
	if t.cp != nil {
		t.obs.from = t.cp.Control.State
	}
	if r.obs.tracing {
		t.obs.start = time.Now()
	}
}

// observeLoad times the checkpoint load, which happens before the tick
// knows whether it will do any work.
func (r *Runner) observeLoad(ctx context.Context, t *tick) (string, error) {
	if !r.obs.tracing {
		return r.load(ctx, t)
	}
	l := &loadRecord{start: time.Now(), fresh: t.run.Head == 0}
	build, err := r.load(ctx, t)
	l.end, l.err = time.Now(), err
	t.obs.load = l
	if err != nil {
		r.openTick(ctx, t)
	}
	return build, err
}

// endPass settles the observation of a pass: a tick that did work and was
// never committed ends here, and a store failure that ended the pass is
// counted.
func (r *Runner) endPass(t *tick, err error) {
	if err != nil && (t == nil || t.obs.commitErr == nil || !errors.Is(err, t.obs.commitErr)) {
		r.obs.metrics.StoreError(telemetry.SourceRunner, err)
	}
	if t == nil {
		return
	}
	r.settleTrigger(t)
	if t.obs.reported {
		return
	}
	outcome := ""
	switch {
	case err != nil:
		outcome = "failed"
	case t.cp == nil:
		outcome = "parked" // quarantined while loading, or a commit the store refuses for good
	case t.obs.span != nil:
		outcome = "uncommitted"
	default:
		return // a pass that found nothing to do
	}
	if t.obs.span == nil && r.obs.tracing {
		r.openTick(nil, t)
	}
	r.obs.metrics.Tick(t.run.WorkflowID, outcome)
	r.closeTick(t, outcome, err)
}

// commit writes the tick and reports it: the commit's latency, each
// accepted (or refused) control transition, effects committed and closed,
// the tick itself, a run that ended or now waits for a person.
func (r *Runner) commit(ctx context.Context, t *tick, p *store.Tick) error {
	_, sp := r.phase(ctx, t, "flrh.commit")
	start := time.Now()
	err := r.storeCommit(ctx, t, p)
	elapsed := time.Since(start)
	r.obs.metrics.Commit(elapsed)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("flrh.commit.events", len(p.Events)), attribute.Int("flrh.commit.intents", len(p.Intents)),
			attribute.Int("flrh.commit.receipts", len(p.Receipts)), attribute.Int("flrh.commit.results", len(p.Results)))
	}
	endSpan(sp, err)
	if err != nil {
		t.obs.commitErr = err
		r.obs.metrics.StoreError(telemetry.SourceRunner, err)
		return err
	}
	r.committed(ctx, t, p, elapsed)
	return nil
}

func (r *Runner) committed(ctx context.Context, t *tick, p *store.Tick, elapsed time.Duration) {
	m, log := r.obs.metrics, r.log
	head := p.ExpectHead + int64(len(p.Events))
	runID := t.run.ID
	debug := log.Enabled(ctx, slog.LevelDebug)
	for i, ev := range p.Events {
		if ev.Kind != EventControl && ev.Kind != EventRejected {
			continue
		}
		rec := controlRecord(t, p, i)
		if rec == nil {
			continue
		}
		seq := p.ExpectHead + int64(i) + 1
		if ev.Kind == EventControl {
			m.Transition(rec.Event)
			if debug {
				log.LogAttrs(ctx, slog.LevelDebug, "transition", slog.String("run_id", runID), slog.Int64("tick", head),
					slog.Int64("seq", seq), slog.String("transition_id", rec.EventID), slog.String("digest", ev.Digest),
					slog.String("event", rec.Event), slog.String("from", rec.From), slog.String("to", rec.To),
					slog.String("actor_role", rec.ActorRole))
			}
			continue
		}
		m.Refused(rec.Event)
		log.LogAttrs(ctx, slog.LevelWarn, "control event refused", slog.String("run_id", runID), slog.Int64("tick", head),
			slog.Int64("seq", seq), slog.String("transition_id", rec.EventID), slog.String("digest", ev.Digest),
			slog.String("event", rec.Event), slog.String("state", rec.From), slog.String("reason", string(rec.Reason)),
			slog.String("actor_role", rec.ActorRole))
	}
	for _, in := range p.Intents {
		log.LogAttrs(ctx, slog.LevelInfo, "effect intent committed", slog.String("run_id", runID), slog.Int64("tick", head),
			slog.String("intent_id", in.ID), slog.String("effect_type", in.EffectType), slog.String("intent_digest", in.Digest),
			slog.Bool("approved", in.ApprovalID != ""))
	}
	for _, res := range p.Results {
		if res.Outbox == store.OutboxHuman {
			m.Effect("unknown")
			log.LogAttrs(ctx, slog.LevelWarn, "effect outcome unknown: a person must reconcile it", slog.String("run_id", runID),
				slog.Int64("tick", head), slog.String("intent_id", res.IntentID), slog.Int64("attempt", res.N))
		}
	}
	for _, rc := range p.Receipts {
		m.Effect(rc.Outcome)
		log.LogAttrs(ctx, slog.LevelInfo, "effect closed", slog.String("run_id", runID), slog.Int64("tick", head),
			slog.String("intent_id", rc.IntentID), slog.String("outcome", rc.Outcome), slog.String("receipt_digest", rc.Digest))
	}
	to := stateAfter(t, p)
	first := head
	if len(p.Events) > 0 {
		first = p.ExpectHead + 1
	}
	if debug {
		log.LogAttrs(ctx, slog.LevelDebug, "tick", slog.String("run_id", runID), slog.String("workflow", t.run.WorkflowID),
			slog.Int64("tick", head), slog.Int64("first_seq", first), slog.Int("events", len(p.Events)),
			slog.String("from", t.obs.from), slog.String("to", to), slog.String("outcome", p.Outcome),
			slog.Int64("lease_generation", t.lease.Generation), slog.Float64("commit_ms", float64(elapsed.Microseconds())/1000))
	}
	switch {
	case p.Outcome != "":
		m.Ended(t.run.WorkflowID, p.Outcome)
		log.LogAttrs(ctx, slog.LevelInfo, "run ended", slog.String("run_id", runID), slog.String("workflow", t.run.WorkflowID),
			slog.Int64("tick", head), slog.String("state", to), slog.String("outcome", p.Outcome))
	case to != t.obs.from && to == "WAIT_APPROVAL":
		log.LogAttrs(ctx, slog.LevelInfo, "run waits for approval", slog.String("run_id", runID), slog.Int64("tick", head),
			slog.String("requests", strings.Join(awaitedRequests(t), ",")))
	case to != t.obs.from && to == "HUMAN_RECONCILIATION":
		log.LogAttrs(ctx, slog.LevelWarn, "run waits for a person to reconcile an effect", slog.String("run_id", runID),
			slog.Int64("tick", head))
	}
	m.Tick(t.run.WorkflowID, "committed")
	var attrs []attribute.KeyValue
	if t.obs.span != nil {
		attrs = []attribute.KeyValue{telemetry.KeyTick.Int64(head), telemetry.KeyTickFirstSeq.Int64(first),
			telemetry.KeyTickEvents.Int(len(p.Events)), telemetry.KeyStateTo.String(to)}
		if p.Outcome != "" {
			attrs = append(attrs, telemetry.KeyRunOutcome.String(p.Outcome))
		}
	}
	r.closeTick(t, "committed", nil, attrs...)
}

// controlRecord returns the control record of the tick's i-th event: the
// one the runner stepped the FSM with, or, should the pending events and
// the wires' view ever disagree, the event's own bytes.
func controlRecord(t *tick, p *store.Tick, i int) *control.Record {
	if len(t.wire) == len(p.Events) && t.wire[i].Record != nil && t.wire[i].Digest == p.Events[i].Digest {
		return t.wire[i].Record
	}
	var rec control.Record
	if json.Unmarshal(p.Events[i].Body, &rec) != nil {
		return nil
	}
	return &rec
}

func awaitedRequests(t *tick) []string {
	var ids []string
	for _, n := range awaited(t) {
		ids = append(ids, n.RequestID)
	}
	return ids
}

// awaited lists the requests the run awaits an approval of, as planned.
func awaited(t *tick) []ApprovalNeed {
	var needs []ApprovalNeed
	if t.cp == nil {
		return needs
	}
	for _, e := range t.cp.Open {
		if e.Stage == stageAwaitingApproval && e.Approval != nil && e.ApprovalID == "" {
			needs = append(needs, *e.Approval)
		}
	}
	return needs
}

// observeTrip reports a run a wire parked: the tick ends tripped.
func (r *Runner) observeTrip(ctx context.Context, t *tick, b tripwire.Boundary, trips []tripwire.Trip) {
	names := make([]string, len(trips))
	for i, tr := range trips {
		names[i] = tr.Wire
	}
	r.obs.metrics.Trip(string(b.Phase), names)
	r.obs.metrics.Tick(t.run.WorkflowID, "tripped")
	if r.obs.tracing {
		r.openTick(ctx, t)
		t.obs.span.AddEvent("tripwire", trace.WithAttributes(attribute.String("flrh.tripwire.phase", string(b.Phase)),
			attribute.StringSlice("flrh.tripwire.wires", names)))
	}
	r.closeTick(t, "tripped", errors.New("tripwire "+strings.Join(names, ",")))
	t.obs.reported = true
}

// decide calls the workflow's pure step inside a span. The pure tick runs
// F → L → seam → R → H in one call with no clock, so only the whole call is
// timed; each phase it ran becomes a child span over the same interval
// (flrh.phase.timed=false) carrying the work the tick's trace says it did.
func (r *Runner) decide(t *tick, state []byte, in Accepted) (Decision, error) {
	if !r.obs.tracing {
		return r.decideStep(t, state, in)
	}
	_, sp := r.phase(nil, t, "flrh.decide")
	start := time.Now()
	d, err := r.decideStep(t, state, in)
	end := time.Now()
	sp.SetAttributes(attribute.String("flrh.input.kind", in.Kind), attribute.Int64("flrh.input.seq", in.Seq),
		attribute.Bool("flrh.input.refused", err == nil && d.Refusal != ""), attribute.Int("flrh.decide.effects", len(d.Effects)))
	if err == nil {
		parent := trace.ContextWithSpan(t.obs.ctx, sp)
		for _, ph := range pureWork(d.Trace) {
			_, c := r.obs.tracer.Start(parent, ph.name, trace.WithTimestamp(start),
				trace.WithAttributes(append(ph.attrs, telemetry.KeyPhaseTimed.Bool(false))...))
			c.End(trace.WithTimestamp(end))
		}
	}
	endSpan(sp, err, trace.WithTimestamp(end))
	return d, err
}

// decideStep is the workflow's pure step on state and in. A run's first
// input, decided already when the run was started (StartWithUsage) on the
// same state under the same definition, takes that decision: the step is
// pure, so deciding again would give the same.
func (r *Runner) decideStep(t *tick, state []byte, in Accepted) (Decision, error) {
	if in.Seq == 1 {
		if f := r.takeFirst(t.run.ID); f != nil && f.matches(t.wf, state, in) {
			return f.d, nil
		}
	}
	return t.wf.Decide(state, in)
}

// phaseWork is one phase of the pure tick and what it did.
type phaseWork struct {
	name  string
	attrs []attribute.KeyValue
}

// pureWork reads the phases a pure tick ran from its trace records:
// f.transition (F, and L over F's facts), seam.verdict (one per proposal
// projected; R stabilizes them), h.fhr and h.outcome (one per batch H
// decided), aif.* (the controller). Workflows that write no such records
// (Go workflows) get no phase spans.
func pureWork(recs []store.TraceRecord) []phaseWork {
	var f *struct {
		EventType string `json:"event_type"`
		Facts     int64  `json:"facts"`
		Proposals int64  `json:"proposals"`
	}
	var conflicts, unmapped, verdicts, decisions, aif int
	var outcomes []string
	for _, rec := range recs {
		switch {
		case rec.Kind == "f.transition":
			f = new(struct {
				EventType string `json:"event_type"`
				Facts     int64  `json:"facts"`
				Proposals int64  `json:"proposals"`
			})
			json.Unmarshal(rec.Body, f)
		case rec.Kind == "l.conflicts":
			var c struct {
				Conflicts []any `json:"conflicts"`
			}
			json.Unmarshal(rec.Body, &c)
			conflicts += len(c.Conflicts)
		case rec.Kind == "l.unmapped_fact":
			unmapped++
		case rec.Kind == "seam.verdict":
			verdicts++
		case rec.Kind == "h.fhr":
			decisions++
		case rec.Kind == "h.outcome":
			var o struct {
				Outcome string `json:"outcome"`
			}
			json.Unmarshal(rec.Body, &o)
			outcomes = append(outcomes, o.Outcome)
		case strings.HasPrefix(rec.Kind, "aif."):
			aif++
		}
	}
	var out []phaseWork
	if f != nil {
		out = append(out,
			phaseWork{"flrh.F", []attribute.KeyValue{attribute.String("flrh.f.event_type", f.EventType),
				attribute.Int64("flrh.f.facts", f.Facts), attribute.Int64("flrh.f.proposals", f.Proposals)}},
			phaseWork{"flrh.L", []attribute.KeyValue{attribute.Int64("flrh.l.facts_in", f.Facts),
				attribute.Int("flrh.l.conflicts", conflicts), attribute.Int("flrh.l.unmapped", unmapped)}})
	}
	if verdicts > 0 {
		out = append(out,
			phaseWork{"flrh.seam", []attribute.KeyValue{attribute.Int("flrh.seam.verdicts", verdicts)}},
			phaseWork{"flrh.R", []attribute.KeyValue{attribute.Int("flrh.r.batches", decisions)}})
	}
	if aif > 0 {
		out = append(out, phaseWork{"flrh.AIF", []attribute.KeyValue{attribute.Int("flrh.aif.records", aif)}})
	}
	if decisions > 0 {
		out = append(out, phaseWork{"flrh.H", []attribute.KeyValue{attribute.Int("flrh.h.decisions", decisions),
			attribute.StringSlice("flrh.h.outcomes", outcomes)}})
	}
	return out
}

// reauthorize runs H again with a person's grant in hand (an
// ApprovalAuthorizer), inside a span of its own.
func (r *Runner) reauthorize(t *tick, aa ApprovalAuthorizer, state []byte, need ApprovalNeed, grant store.Approval) (EffectPlan, error) {
	_, sp := r.phase(nil, t, "flrh.H")
	plan, err := aa.AuthorizeApproved(state, need, grant, t.cp.Accepted)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("flrh.h.request_id", need.RequestID), attribute.String("flrh.h.intent_id", need.IntentID))
	}
	endSpan(sp, err)
	return plan, err
}

// dispatch sends one attempt of an effect through its adapter, inside a
// span, and reports it. Parameters are never logged: only ids.
func (r *Runner) dispatch(ctx context.Context, t *tick, e *openEffect, adapter effect.Adapter, in effect.Intent, n int64) (effect.Receipt, Usage, error) {
	r.log.LogAttrs(ctx, slog.LevelInfo, "effect dispatched", slog.String("run_id", t.run.ID), slog.String("intent_id", e.IntentID),
		slog.String("effect_type", in.Effect.EffectType), slog.Int64("attempt", n), slog.Int64("lease_generation", t.lease.Generation))
	cctx, sp := r.phase(ctx, t, "flrh.execute")
	keep := r.keepLease(ctx, t)
	rec, used, err := execute(cctx, adapter, in, e.sendable())
	keep.stop(t)
	if bad := used.Check(); bad != nil {
		// The adapter's defect: the call happened and its outcome stands,
		// but what it cost is unknown, and it is charged as nothing rather
		// than as a number nobody can trust.
		r.log.LogAttrs(ctx, slog.LevelWarn, "adapter usage report refused", slog.String("run_id", t.run.ID), slog.String("intent_id", e.IntentID),
			slog.String("err", bad.Error()))
		used = Usage{}
	}
	outcome := "error"
	if err == nil {
		outcome = rec.Outcome.String()
	}
	r.obs.metrics.Attempt(in.Effect.EffectType, outcome)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("flrh.intent_id", e.IntentID), attribute.String("flrh.effect_type", in.Effect.EffectType),
			attribute.Int64("flrh.attempt", n), attribute.String("flrh.attempt.outcome", outcome), attribute.String("flrh.attempt.code", rec.Code))
	}
	// An adapter's error text may carry what it sent (a URL, a header):
	// the span records that the call failed, not the text.
	var failure error
	if err != nil {
		failure = fmt.Errorf("adapter call failed (%T)", err)
	}
	endSpan(sp, failure)
	level := slog.LevelInfo
	if err != nil || outcome != "succeeded" {
		level = slog.LevelWarn
	}
	r.log.LogAttrs(ctx, level, "effect attempt ended", slog.String("run_id", t.run.ID), slog.String("intent_id", e.IntentID),
		slog.Int64("attempt", n), slog.String("outcome", outcome), slog.String("code", rec.Code))
	return rec, used, err
}

// lookup asks the destination what became of an attempt, inside a span.
func (r *Runner) lookup(ctx context.Context, t *tick, e *openEffect, a effect.Adapter, key, why string) (effect.Resolution, error) {
	cctx, sp := r.phase(ctx, t, "flrh.reconcile")
	keep := r.keepLease(ctx, t)
	res, err := effect.Reconcile(cctx, a, key, e.ContentDigest, r.cfg.Reconcile)
	keep.stop(t)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("flrh.intent_id", e.IntentID), attribute.String("flrh.reconcile.why", why),
			attribute.String("flrh.reconcile.status", res.Status.String()), attribute.Int("flrh.reconcile.lookups", len(res.Lookups)))
	}
	endSpan(sp, err)
	if err == nil {
		r.log.LogAttrs(ctx, slog.LevelInfo, "effect reconciled by lookup", slog.String("run_id", t.run.ID), slog.String("intent_id", e.IntentID),
			slog.String("status", res.Status.String()), slog.Int("lookups", len(res.Lookups)))
	}
	return res, err
}
