package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/telemetry"
)

// The payee and reason are planted: they are effect parameters and input,
// and must never reach a log line.
const (
	plantedPayee  = "payee-7f3a91c4e2"
	plantedReason = "reason-b58d03e6aa"
)

// observed is a real bundle (the refund agent) run by the durable runner on
// SQLite against a sandbox destination, with its logs captured as JSON at
// debug level, its spans recorded in memory and its metrics in a registry.
type observed struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store
	wf    *bundle.Workflow
	r     *runner.Runner
	logs  *lockedBuffer
	spans *tracetest.SpanRecorder
	reg   *prometheus.Registry
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newObserved(t *testing.T, tracing bool) *observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	wf, ads, err := bundle.Load(filepath.Join("..", "examples", "refund-agent"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go sb.Serve(sctx, ln, time.Second)
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath
	reg, err := ads.Registry(func(name string) string {
		if strings.HasPrefix(name, "FLRH_") {
			return url
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	o := &observed{t: t, ctx: ctx, st: st, wf: wf, logs: &lockedBuffer{}, spans: tracetest.NewSpanRecorder(), reg: prometheus.NewRegistry()}
	cfg := runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "observed",
		Logger:    slog.New(slog.NewJSONHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}}
	if tracing {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		cfg.Tracer = tp
	}
	if o.r, err = runner.New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := o.r.Metrics().Register(o.reg); err != nil {
		t.Fatal(err)
	}
	return o
}

func refundInput(id string, amount int) []byte {
	b, _ := json.Marshal(map[string]any{"type": "refund.requested/1",
		"payload": map[string]any{"refund_id": id, "amount": amount, "payee": plantedPayee, "reason": plantedReason}})
	return b
}

// runBoth runs a small refund (paid outright) and a large one (approved by
// a person, then paid) to the end.
func (o *observed) runBoth() {
	o.t.Helper()
	if err := o.r.Start(o.ctx, "small", o.wf.ID(), o.wf.Version(), refundInput("r-1", 40)); err != nil {
		o.t.Fatal(err)
	}
	if err := o.r.StartRun(o.ctx, runner.StartRequest{RunID: "large", WorkflowID: o.wf.ID(), Version: o.wf.Version(), Input: refundInput("r-2", 900),
		By: runner.Itself, Labels: map[string]string{"order": "A-2", "team": "payments"}}); err != nil {
		o.t.Fatal(err)
	}
	o.idle()
	st, err := o.r.Inspect(o.ctx, "large")
	if err != nil || st.State != "WAIT_APPROVAL" || len(st.Waiting) != 1 {
		o.t.Fatalf("large refund: %+v %v", st, err)
	}
	who := runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	if err := o.r.Approve(o.ctx, "large", st.Waiting[0].RequestID, who, 10*time.Minute); err != nil {
		o.t.Fatal(err)
	}
	o.idle()
	for _, id := range []string{"small", "large"} {
		if run, err := o.st.Run(o.ctx, id); err != nil || run.Outcome == "" {
			o.t.Fatalf("run %s did not end: %+v %v", id, run, err)
		}
	}
}

func (o *observed) idle() {
	o.t.Helper()
	if err := o.r.RunToIdle(o.ctx); err != nil {
		o.t.Fatal(err)
	}
}

// lines returns the captured log lines with the given message.
func (o *observed) lines(msg string) []map[string]any {
	o.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(o.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			o.t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func forRun(lines []map[string]any, runID string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["run_id"] == runID {
			out = append(out, l)
		}
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// The JSON log of a real run names every accepted control transition and
// every tick with ids that match the store exactly: each transition's
// sequence number, id, digest and from → to; the ticks partition the run's
// events; effects, the approval wait and the end are there; no effect
// parameter or input value is.
func TestLogsMatchTheStore(t *testing.T) {
	o := newObserved(t, false)
	o.runBoth()
	for _, runID := range []string{"small", "large"} {
		run, err := o.st.Run(o.ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := o.st.Events(o.ctx, runID, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Transitions: one line per accepted control event, in the store's order.
		var want []store.Event
		for _, e := range evs {
			if e.Kind == runner.EventControl {
				want = append(want, e)
			}
		}
		got := forRun(o.lines("transition"), runID)
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d transition lines, %d control events in the store", runID, len(got), len(want))
		}
		for i, e := range want {
			var rec control.Record
			if err := json.Unmarshal(e.Body, &rec); err != nil {
				t.Fatal(err)
			}
			l := got[i]
			if num(l["seq"]) != e.Seq || l["digest"] != e.Digest || l["transition_id"] != rec.EventID || l["event"] != rec.Event ||
				l["from"] != rec.From || l["to"] != rec.To || l["level"] != "DEBUG" {
				t.Fatalf("%s: transition line %v does not match event %d %s (%s %s→%s)", runID, l, e.Seq, e.Digest, rec.Event, rec.From, rec.To)
			}
			if num(l["tick"]) < e.Seq {
				t.Fatalf("%s: transition at seq %d logged in tick %d, which ends before it", runID, e.Seq, num(l["tick"]))
			}
		}
		// Ticks: consecutive, covering 1..Head, the last one ending at the head.
		ticks := forRun(o.lines("tick"), runID)
		next := int64(1)
		state := "INIT"
		for _, tk := range ticks {
			first, last, n := num(tk["first_seq"]), num(tk["tick"]), num(tk["events"])
			if n == 0 {
				if last != next-1 {
					t.Fatalf("%s: empty tick %v is not at the head %d", runID, tk, next-1)
				}
			} else if first != next || last != first+n-1 {
				t.Fatalf("%s: tick %v does not continue at seq %d", runID, tk, next)
			}
			if tk["from"] != state || tk["workflow"] != o.wf.ID() {
				t.Fatalf("%s: tick %v starts from %s", runID, tk, state)
			}
			next, state = last+1, tk["to"].(string)
		}
		if next-1 != run.Head || state != run.State {
			t.Fatalf("%s: ticks end at %d in %s, the run is at %d in %s", runID, next-1, state, run.Head, run.State)
		}
		if ticks[len(ticks)-1]["outcome"] != run.Outcome {
			t.Fatalf("%s: last tick outcome %v, run outcome %s", runID, ticks[len(ticks)-1]["outcome"], run.Outcome)
		}
		// Effects: committed, dispatched and closed, by the store's intent id.
		ins, err := o.st.Intents(o.ctx, runID)
		if err != nil || len(ins) != 1 {
			t.Fatalf("%s: intents %v %v", runID, ins, err)
		}
		rcs, err := o.st.Receipts(o.ctx, runID)
		if err != nil || len(rcs) != 1 {
			t.Fatalf("%s: receipts %v %v", runID, rcs, err)
		}
		for msg, level := range map[string]string{"effect intent committed": "INFO", "effect dispatched": "INFO", "effect closed": "INFO"} {
			ls := forRun(o.lines(msg), runID)
			if len(ls) != 1 || ls[0]["intent_id"] != ins[0].ID || ls[0]["level"] != level {
				t.Fatalf("%s: %q lines %v, intent %s", runID, msg, ls, ins[0].ID)
			}
		}
		if c := forRun(o.lines("effect closed"), runID)[0]; c["receipt_digest"] != rcs[0].Digest || c["outcome"] != rcs[0].Outcome {
			t.Fatalf("%s: closed %v, receipt %s %s", runID, c, rcs[0].Digest, rcs[0].Outcome)
		}
		if ended := forRun(o.lines("run ended"), runID); len(ended) != 1 || ended[0]["outcome"] != run.Outcome || num(ended[0]["tick"]) != run.Head {
			t.Fatalf("%s: run ended lines %v, run %s at %d", runID, ended, run.Outcome, run.Head)
		}
	}
	if w := forRun(o.lines("run waits for approval"), "large"); len(w) != 1 || w[0]["requests"] == "" {
		t.Fatalf("approval wait lines %v", w)
	}
	if w := forRun(o.lines("run waits for approval"), "small"); len(w) != 0 {
		t.Fatalf("the small refund never waited, yet %v", w)
	}
	all := o.logs.String()
	for _, secret := range []string{plantedPayee, plantedReason} {
		if strings.Contains(all, secret) {
			t.Fatalf("the log carries %q", secret)
		}
	}
}

// spanTree indexes recorded spans.
type spanTree struct {
	spans []sdktrace.ReadOnlySpan
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
}

func treeOf(spans []sdktrace.ReadOnlySpan) spanTree {
	t := spanTree{spans: spans, byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range spans {
		t.byID[s.SpanContext().SpanID()] = s
	}
	return t
}

func (t spanTree) parent(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	return t.byID[s.Parent().SpanID()]
}

func (t spanTree) children(p sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range t.spans {
		if s.Parent().SpanID() == p.SpanContext().SpanID() && s.Parent().IsValid() {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	slices.Sort(out)
	return out
}

// A real run's spans form the tick tree: one flrh.tick per committed tick
// (the same ticks the log names), each with exactly one flrh.commit child;
// load, decide, H, execute and reconcile under ticks; F, L, seam, R and H
// under decide for the bundle's pure tick; every child inside its parent's
// interval; attributes naming run, workflow, tick and outcome.
func TestSpansFormTheTickTree(t *testing.T) {
	o := newObserved(t, true)
	o.runBoth()
	tree := treeOf(o.spans.Ended())
	if len(tree.spans) == 0 {
		t.Fatal("no spans recorded")
	}
	ticksByRun := map[string][]int64{}
	for _, s := range tree.spans {
		if s.Name() != "flrh.tick" {
			continue
		}
		runID := attr(s, telemetry.KeyRunID).AsString()
		if s.Parent().IsValid() {
			t.Fatalf("tick %s of %s has a parent outside the runner", s.Name(), runID)
		}
		if attr(s, telemetry.KeyWorkflow).AsString() != o.wf.ID() || attr(s, telemetry.KeyOutcome).AsString() != "committed" {
			t.Fatalf("tick span attributes %v", s.Attributes())
		}
		// A labelled run's ticks bear its labels; another's none.
		order, team := attr(s, telemetry.KeyLabelPrefix+"order").AsString(), attr(s, telemetry.KeyLabelPrefix+"team").AsString()
		if want := map[string][2]string{"large": {"A-2", "payments"}}[runID]; [2]string{order, team} != want {
			t.Fatalf("tick of %s bears labels %q %q, want %q", runID, order, team, want)
		}
		commits := 0
		for _, c := range tree.children(s) {
			if c.Name() == "flrh.commit" {
				commits++
			}
		}
		if commits != 1 {
			t.Fatalf("tick %d of %s has %d commit spans", attr(s, telemetry.KeyTick).AsInt64(), runID, commits)
		}
		ticksByRun[runID] = append(ticksByRun[runID], attr(s, telemetry.KeyTick).AsInt64())
	}
	// Same ticks as the store's commits (and the log, which the other test
	// ties to the store): the last tick of each run is its head.
	for _, runID := range []string{"small", "large"} {
		run, _ := o.st.Run(o.ctx, runID)
		ticks := ticksByRun[runID]
		slices.Sort(ticks)
		if len(ticks) == 0 || ticks[len(ticks)-1] != run.Head {
			t.Fatalf("%s: tick spans %v, head %d", runID, ticks, run.Head)
		}
		var logged []int64
		for _, l := range forRun(o.lines("tick"), runID) {
			logged = append(logged, num(l["tick"]))
		}
		slices.Sort(logged)
		if !slices.Equal(ticks, logged) {
			t.Fatalf("%s: tick spans %v, logged ticks %v", runID, ticks, logged)
		}
	}
	seen := map[string]int{}
	sawPureTick := false
	for _, s := range tree.spans {
		seen[s.Name()]++
		if !s.Parent().IsValid() {
			continue
		}
		p := tree.parent(s)
		if p == nil {
			t.Fatalf("%s: parent not recorded", s.Name())
		}
		if s.StartTime().Before(p.StartTime()) || s.EndTime().After(p.EndTime()) {
			t.Fatalf("%s [%v, %v] is outside its parent %s [%v, %v]", s.Name(), s.StartTime(), s.EndTime(), p.Name(), p.StartTime(), p.EndTime())
		}
		switch s.Name() {
		case "flrh.F", "flrh.L", "flrh.seam", "flrh.R", "flrh.AIF":
			if p.Name() != "flrh.decide" || attr(s, telemetry.KeyPhaseTimed).AsBool() {
				t.Fatalf("%s under %s", s.Name(), p.Name())
			}
		case "flrh.H":
			if p.Name() != "flrh.decide" && p.Name() != "flrh.tick" {
				t.Fatalf("flrh.H under %s", p.Name())
			}
		default:
			if p.Name() != "flrh.tick" {
				t.Fatalf("%s under %s", s.Name(), p.Name())
			}
		}
		if s.Name() == "flrh.decide" {
			kids := names(tree.children(s))
			if slices.Equal(kids, []string{"flrh.F", "flrh.H", "flrh.L", "flrh.R", "flrh.seam"}) {
				sawPureTick = true
			}
		}
		if s.Name() == "flrh.execute" {
			if attr(s, attribute.Key("flrh.attempt.outcome")).AsString() != "succeeded" || attr(s, attribute.Key("flrh.intent_id")).AsString() == "" {
				t.Fatalf("execute span %v", s.Attributes())
			}
		}
	}
	if !sawPureTick {
		t.Fatal("no decide span with F, L, seam, R and H children")
	}
	// Two runs: each loaded once fresh; two effects executed; the approved
	// one re-authorized by H with the grant in hand.
	for name, min := range map[string]int{"flrh.load": 2, "flrh.decide": 4, "flrh.execute": 2, "flrh.commit": 4} {
		if seen[name] < min {
			t.Fatalf("%d %s spans, want at least %d (saw %v)", seen[name], name, min, seen)
		}
	}
	h := 0
	for _, s := range tree.spans {
		if s.Name() == "flrh.H" && tree.parent(s).Name() == "flrh.tick" {
			h++
		}
	}
	if h != 1 {
		t.Fatalf("%d re-authorizations under ticks, want the one approval", h)
	}
}

// gather reads a registry into "name{label=value,...}" → value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// The runner's counts match the store: one committed tick and one commit
// latency sample per tick, one transition per control event, one effect
// per receipt by outcome, one attempt per mutation, runs ended by outcome,
// and zeros for the trips and store errors that did not happen.
func TestMetricsMatchTheStore(t *testing.T) {
	o := newObserved(t, false)
	o.runBoth()
	m := gather(t, o.reg)
	ticks := len(o.lines("tick"))
	wf := o.wf.ID()
	if got := m[fmt.Sprintf("flrh_ticks_total{outcome=committed,workflow=%s}", wf)]; got != float64(ticks) || ticks == 0 {
		t.Fatalf("ticks_total %v, %d ticks logged", got, ticks)
	}
	if got := m["flrh_commit_duration_seconds{}_count"]; got != float64(ticks) {
		t.Fatalf("commit latency samples %v, ticks %d", got, ticks)
	}
	byEvent := map[string]float64{}
	outcomes := map[string]float64{}
	for _, id := range []string{"small", "large"} {
		evs, _ := o.st.Events(o.ctx, id, 0)
		for _, e := range evs {
			if e.Kind == runner.EventControl {
				var rec control.Record
				json.Unmarshal(e.Body, &rec)
				byEvent[rec.Event]++
			}
		}
		rcs, _ := o.st.Receipts(o.ctx, id)
		for _, rc := range rcs {
			outcomes[rc.Outcome]++
		}
		run, _ := o.st.Run(o.ctx, id)
		if m[fmt.Sprintf("flrh_runs_ended_total{outcome=%s,workflow=%s}", run.Outcome, wf)] < 1 {
			t.Fatalf("run %s ended %s, not counted: %v", id, run.Outcome, m)
		}
	}
	for ev, n := range byEvent {
		if got := m["flrh_transitions_total{event="+ev+"}"]; got != n {
			t.Fatalf("transitions_total{%s} = %v, store has %v", ev, got, n)
		}
	}
	for oc, n := range outcomes {
		if got := m["flrh_effects_total{outcome="+oc+"}"]; got != n {
			t.Fatalf("effects_total{%s} = %v, store has %v", oc, got, n)
		}
	}
	if got := m["flrh_effect_attempts_total{effect_type=refund.pay,outcome=succeeded}"]; got != 2 {
		t.Fatalf("attempts %v", got)
	}
	for _, key := range []string{"flrh_tripwire_trips_total{phase=commit}", "flrh_store_errors_total{code=UNAVAILABLE,source=runner}"} {
		if v, ok := m[key]; !ok || v != 0 {
			t.Fatalf("%s = %v (present %v), want a zero", key, v, ok)
		}
	}
}

// A trip is reported three ways: the tick ends tripped (span status error,
// a tripwire event naming the wires), the trip and each wire are counted,
// and an error line names the run and the wires.
func TestTripIsObserved(t *testing.T) {
	o := newObserved(t, true)
	if err := o.r.Start(o.ctx, "large", o.wf.ID(), o.wf.Version(), refundInput("r-2", 900)); err != nil {
		t.Fatal(err)
	}
	o.idle()
	// An inbox entry of a kind no state takes: the wires trip when the
	// pass leaves the run at rest with it.
	body := []byte(`{}`)
	if err := o.st.Submit(o.ctx, store.Inbound{ID: "odd:1", RunID: "large", Kind: "approve_all", ActorRole: "agent", Actor: "bot",
		Capability: "run.input", Body: body, Digest: store.BodyDigest(body)}); err != nil {
		t.Fatal(err)
	}
	o.idle()
	if run, _ := o.st.Run(o.ctx, "large"); run.Quarantine == "" {
		t.Fatal("the run was not parked")
	}
	m := gather(t, o.reg)
	if m["flrh_tripwire_trips_total{phase=idle}"] != 1 || m[fmt.Sprintf("flrh_ticks_total{outcome=tripped,workflow=%s}", o.wf.ID())] != 1 {
		t.Fatalf("trip not counted: %v", m)
	}
	wires := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "flrh_tripwire_wire_trips_total{") {
			wires += v
		}
	}
	lines := forRun(o.lines("tripwire"), "large")
	if wires < 1 || len(lines) != 1 || lines[0]["level"] != "ERROR" || lines[0]["phase"] != "idle" || lines[0]["wires"] == "" {
		t.Fatalf("%v wires counted, lines %v", wires, lines)
	}
	var tripped []sdktrace.ReadOnlySpan
	for _, s := range o.spans.Ended() {
		if s.Name() == "flrh.tick" && attr(s, telemetry.KeyOutcome).AsString() == "tripped" {
			tripped = append(tripped, s)
		}
	}
	if len(tripped) != 1 || tripped[0].Status().Code.String() != "Error" || len(tripped[0].Events()) == 0 {
		t.Fatalf("tripped tick spans %v", tripped)
	}
	sawWires := false
	for _, ev := range tripped[0].Events() {
		if ev.Name == "tripwire" {
			for _, a := range ev.Attributes {
				sawWires = sawWires || (a.Key == "flrh.tripwire.wires" && strings.Contains(lines[0]["wires"].(string), a.Value.AsStringSlice()[0]))
			}
		}
	}
	if !sawWires {
		t.Fatalf("tripwire event %v", tripped[0].Events())
	}
}
