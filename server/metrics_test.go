package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

func refundBody(runID, refundID string, amount int) string {
	return startBody(runID, fmt.Sprintf(`{"refunds":[{"id":%q,"amount":%d,"payee":"erin","reason":"late delivery"}]}`, refundID, amount))
}

// scrape reads /metrics as metric families.
func (f *fixture) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	a := f.get("/metrics", tokViewer)
	if a.status != 200 {
		t.Fatalf("/metrics: %d %s", a.status, a.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(a.body))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// series returns a family's samples by their labels ("k=v,k=v", sorted).
func series(t *testing.T, mfs map[string]*dto.MetricFamily, name string) map[string]*dto.Metric {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	out := map[string]*dto.Metric{}
	for _, m := range mf.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		out[strings.Join(ls, ",")] = m
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

func sum(ms map[string]*dto.Metric) float64 {
	s := 0.0
	for _, m := range ms {
		s += value(m)
	}
	return s
}

// After real runs through the API — one paid, one waiting for approval,
// one whose outcome is lost, an input the store refuses for an ended run —
// /metrics holds every required family with the values the store backs:
// runs by state, approvals waiting, ticks, commit latency, transitions,
// effects by outcome, adapter attempts, tripwire trips and store errors.
func TestMetricsAfterRealRuns(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, refundBody("m-paid", "r-3001", 40)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("m-paid", tokViewer, "its end", ended)
	if a := f.post("/v1/runs", tokOperator, refundBody("m-wait", "r-3002", 900)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("m-wait", tokViewer, "an approval wait", waiting)
	f.dest.lose.Store(true)
	if a := f.post("/v1/runs", tokOperator, refundBody("m-lost", "r-3003", 30)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("m-lost", tokViewer, "a person's reconciliation", func(p RunPage) bool { return len(p.Unknown) > 0 })
	f.dest.lose.Store(false)
	// An input for a run that ended: the store refuses it (INVALID_TRANSITION).
	if a := f.post("/v1/runs/m-paid/inputs", tokOperator, `{"input":{"refunds":[{"id":"r-3004","amount":10,"payee":"erin","reason":"x"}]}}`); a.status != 409 {
		t.Fatalf("input for an ended run: %d %s", a.status, a.body)
	}

	// A run's state is in the store once its tick commits; the runner
	// counts the tick after its commit returns, which on SQLite is after
	// the log's sync. Wait for the last tick's counts to land: the lost
	// effect counted and every commit-latency sample's tick counted.
	mfs := f.scrape(t)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); mfs = f.scrape(t) {
		ticks := series(t, mfs, "flrh_ticks_total")
		hs := mfs["flrh_commit_duration_seconds"].GetMetric()
		if value(series(t, mfs, "flrh_effects_total")["outcome=unknown"]) == 1 && len(hs) > 0 &&
			float64(hs[0].GetHistogram().GetSampleCount()) == value(ticks["outcome=committed,workflow=refund-agent"]) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	runs := series(t, mfs, "flrh_runs")
	for state, n := range map[string]float64{"SUCCEEDED": 1, "WAIT_APPROVAL": 1, "HUMAN_RECONCILIATION": 1} {
		if got := value(runs["state="+state]); got != n {
			t.Fatalf("flrh_runs{state=%s} = %v, want %v", state, got, n)
		}
	}
	if got := value(series(t, mfs, "flrh_approvals_waiting")[""]); got != 1 {
		t.Fatalf("approvals waiting %v", got)
	}

	// Transitions: exactly the control events in the store.
	controls := 0.0
	events := 0.0
	for _, id := range []string{"m-paid", "m-wait", "m-lost"} {
		evs, err := f.store.Events(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		events += float64(len(evs))
		for _, e := range evs {
			if e.Kind == runner.EventControl {
				var rec control.Record
				if err := json.Unmarshal(e.Body, &rec); err != nil {
					t.Fatal(err)
				}
				controls++
			}
		}
	}
	if got := sum(series(t, mfs, "flrh_transitions_total")); got != controls {
		t.Fatalf("transitions %v, control events %v", got, controls)
	}
	// Ticks: at least one per run and one more for the paid run's receipt,
	// never more than the events they wrote; one latency sample each.
	ticks := series(t, mfs, "flrh_ticks_total")
	committed := value(ticks["outcome=committed,workflow=refund-agent"])
	if committed < 4 || committed > events {
		t.Fatalf("%v committed ticks for 3 runs and %v events (%v)", committed, events, ticks)
	}
	h := mfs["flrh_commit_duration_seconds"].GetMetric()[0].GetHistogram()
	if float64(h.GetSampleCount()) != committed || h.GetSampleSum() <= 0 {
		t.Fatalf("commit latency: %d samples summing %v, %v ticks", h.GetSampleCount(), h.GetSampleSum(), committed)
	}
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() < prev {
			t.Fatalf("commit latency buckets not cumulative: %v", h.GetBucket())
		}
		prev = b.GetCumulativeCount()
	}
	effects := series(t, mfs, "flrh_effects_total")
	if value(effects["outcome=confirmed_success"]) != 1 || value(effects["outcome=unknown"]) != 1 || len(effects) != 2 {
		t.Fatalf("effects by outcome %v", effects)
	}
	attempts := series(t, mfs, "flrh_effect_attempts_total")
	if value(attempts["effect_type=refund.pay,outcome=succeeded"]) != 1 || value(attempts["effect_type=refund.pay,outcome=unknown"]) != 1 {
		t.Fatalf("attempts %v", attempts)
	}
	if got := value(series(t, mfs, "flrh_runs_ended_total")["outcome=success,workflow=refund-agent"]); got != 1 {
		t.Fatalf("runs ended %v", got)
	}
	trips := series(t, mfs, "flrh_tripwire_trips_total")
	if len(trips) != 3 || sum(trips) != 0 {
		t.Fatalf("trips %v", trips)
	}
	storeErrs := series(t, mfs, "flrh_store_errors_total")
	if value(storeErrs["code=INVALID_TRANSITION,source=api"]) != 1 || sum(storeErrs) != 1 {
		t.Fatalf("store errors %v", storeErrs)
	}
}

// pagedOnly hides a store's census: the gauges are then read by paging
// through every run's header.
type pagedOnly struct{ store.Store }

// The store's gauges — runs by state, quarantined runs, expired leases,
// approvals waiting — are read from the store's census, and are what
// paging through every header finds; /metrics serves them.
func TestStoreGaugesFromTheCensus(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, refundBody("g-wait", "r-4001", 900)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("g-wait", tokViewer, "an approval wait", waiting)
	if a := f.post("/v1/runs", tokOperator, refundBody("g-paid", "r-4002", 40)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("g-paid", tokViewer, "its end", ended)
	ctx := context.Background()
	// A run quarantined, and one whose runner stopped holding its lease:
	// both resting, with nothing for the server's runner to do.
	for _, id := range []string{"g-corrupt", "g-stale", "g-moved"} {
		if err := f.store.CreateRun(ctx, store.Run{ID: id, WorkflowID: "elsewhere", WorkflowVersion: "1", State: "INGEST"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.store.Quarantine(ctx, "g-corrupt", "checkpoint digest mismatch"); err != nil {
		t.Fatal(err)
	}
	// A run moved to another store: counted as moved, not as needing a
	// person.
	if err := f.store.Quarantine(ctx, "g-moved", store.MovedAway("postgres://elsewhere/flrh", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.AcquireLease(ctx, "g-stale", "dead-runner", time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	// A run that ended, pruned: still counted by its state, and as pruned.
	if a := f.post("/v1/runs", tokOperator, refundBody("g-pruned", "r-4003", 30)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("g-pruned", tokViewer, "its end", ended)
	pruneRun(t, f.store, "g-pruned")

	if _, ok := store.CensusTakerOf(f.store); !ok {
		t.Fatal("the server's store takes no census")
	}
	now := time.Now()
	got, awaiting, err := readRunGauges(ctx, f.store, now)
	if err != nil {
		t.Fatal(err)
	}
	paged, pagedAwaiting, err := readRunGauges(ctx, pagedOnly{f.store}, now)
	if err != nil {
		t.Fatal(err)
	}
	// A store seen only through store.Store neither takes a census nor
	// prunes: it reports no run pruned, and the rest as the census does.
	if paged.pruned != 0 {
		t.Fatalf("a store that does not prune reports %v runs pruned", paged.pruned)
	}
	paged.pruned = got.pruned
	if !reflect.DeepEqual(got, paged) || !reflect.DeepEqual(awaiting, pagedAwaiting) {
		t.Fatalf("from the census %+v awaiting %v, paging %+v awaiting %v", got, awaiting, paged, pagedAwaiting)
	}
	want := runGauges{byState: map[string]float64{"SUCCEEDED": 2, "WAIT_APPROVAL": 1, "INGEST": 3}, quarantined: 1, moved: 1, expired: 1, pruned: 1}
	if !reflect.DeepEqual(got, want) || len(awaiting) != 1 || awaiting[0].ID != "g-wait" {
		t.Fatalf("gauges %+v awaiting %v, want %+v awaiting [g-wait]", got, awaiting, want)
	}
	if n, err := (waitCounts{}).count(ctx, f.runner.Inspect, awaiting); n != 1 || err != nil {
		t.Fatalf("approvals waiting %v, %v; want 1", n, err)
	}

	mfs := f.scrape(t)
	for name, want := range map[string]float64{"flrh_runs_quarantined": 1, "flrh_runs_moved": 1, "flrh_runs_pruned": 1, "flrh_leases_expired": 1, "flrh_approvals_waiting": 1, "flrh_store_scrape_ok": 1} {
		if got := value(series(t, mfs, name)[""]); got != want {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(series(t, mfs, "flrh_runs")["state=INGEST"]); got != 3 {
		t.Fatalf("flrh_runs{state=INGEST} = %v, want 3", got)
	}
}

// A count of the approvals waiting that runs out of time keeps the last
// complete count and reports the scrape failed, while the store's gauges
// read before it are fresh.
func TestScrapeKeepsItsStoreGaugesWhenApprovalsRunOutOfTime(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, refundBody("s-wait", "r-5001", 900)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("s-wait", tokViewer, "an approval wait", waiting)
	slow := false
	c := &runCollector{s: f.server, budget: 200 * time.Millisecond, inspect: func(ctx context.Context, id string) (runner.Status, error) {
		if slow {
			<-ctx.Done()
			return runner.Status{}, ctx.Err()
		}
		return f.runner.Inspect(ctx, id)
	}}
	c.refresh()
	if c.failed || c.g.waiting != 1 || c.g.byState["WAIT_APPROVAL"] != 1 {
		t.Fatalf("first read: failed %v, gauges %+v", c.failed, c.g)
	}
	if err := f.store.CreateRun(context.Background(), store.Run{ID: "s-corrupt", WorkflowID: "elsewhere", WorkflowVersion: "1", State: "INGEST"}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Quarantine(context.Background(), "s-corrupt", "checkpoint digest mismatch"); err != nil {
		t.Fatal(err)
	}
	// The waiting run's header moves (a lease taken and given back), so
	// the count must read its checkpoint again, and that read is slow.
	l, err := f.store.AcquireLease(context.Background(), "s-wait", "someone", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.ReleaseLease(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	slow = true
	c.refresh()
	if !c.failed || c.g.waiting != 1 || c.g.quarantined != 1 || c.g.byState["INGEST"] != 1 {
		t.Fatalf("a read whose approvals ran out of time: failed %v, gauges %+v", c.failed, c.g)
	}
}

// A scrape remembers what each run waiting for approval waits on, and
// reads a run's checkpoint again only once its header has moved: the
// count is always the one read afresh, a resting run's checkpoint is read
// once, and a run that leaves the state is forgotten.
func TestApprovalsWaitingRememberedUntilARunMoves(t *testing.T) {
	f := newFixture(t, tokenFileText)
	for _, id := range []string{"m-1", "m-2", "m-3"} {
		if a := f.post("/v1/runs", tokOperator, refundBody(id, "r-"+id, 900)); a.status != 201 {
			t.Fatalf("start: %d %s", a.status, a.body)
		}
	}
	pages := map[string]RunPage{}
	for _, id := range []string{"m-1", "m-2", "m-3"} {
		pages[id] = f.waitFor(id, tokViewer, "an approval wait", waiting)
	}
	ctx := context.Background()
	read := map[string]int{}
	inspect := func(ctx context.Context, id string) (runner.Status, error) {
		read[id]++
		return f.runner.Inspect(ctx, id)
	}
	counts := waitCounts{}
	scrape := func(want float64, wantRead map[string]int) {
		t.Helper()
		clear(read)
		runs, err := store.LiveHeadsIn(ctx, f.store, "WAIT_APPROVAL")
		if err != nil {
			t.Fatal(err)
		}
		got, err := counts.count(ctx, inspect, runs)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := (waitCounts{}).count(ctx, f.runner.Inspect, runs)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || fresh != want || !reflect.DeepEqual(read, wantRead) {
			t.Fatalf("counted %v (afresh %v), reading %v; want %v, reading %v", got, fresh, read, want, wantRead)
		}
		if len(counts) != len(runs) {
			t.Fatalf("remembers %d runs, %d listed", len(counts), len(runs))
		}
	}
	scrape(3, map[string]int{"m-1": 1, "m-2": 1, "m-3": 1})
	// The runner settles each resting run once (a write to its header);
	// from then on nothing writes to them, and nothing is read.
	for quiet, passes := 0, 0; quiet < 2; passes++ {
		if passes == 100 {
			t.Fatalf("the waiting runs' headers still move after %d scrapes", passes)
		}
		if len(read) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(50 * time.Millisecond)
		clear(read)
		runs, err := store.LiveHeadsIn(ctx, f.store, "WAIT_APPROVAL")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := counts.count(ctx, inspect, runs); err != nil {
			t.Fatal(err)
		}
	}
	scrape(3, map[string]int{})

	// A write to one run's header (a lease taken and given back): that
	// run's checkpoint is read again, and only that one.
	l, err := f.store.AcquireLease(ctx, "m-2", "someone", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	scrape(3, map[string]int{"m-2": 1})

	// An approved run ends and is forgotten.
	need := pages["m-1"].Waiting[0]
	if a := f.post("/v1/runs/m-1/approve", tokApprover, fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, need.RequestID, need.RequestDigest)); a.status != 200 && a.status != 202 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	f.waitFor("m-1", tokViewer, "its end", ended)
	scrape(2, map[string]int{})
	scrape(2, map[string]int{})
}
