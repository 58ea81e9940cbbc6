package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

var refunds = demo.Refunds{AutoLimit: 100, Destination: "payments"}

func workflows() []runner.Workflow { return []runner.Workflow{refunds} }

// starter records the runs it is asked to start; fail, when set, says
// what to answer instead.
type starter struct {
	mu      sync.Mutex
	started []string
	inputs  []string
	actors  []string
	labels  []map[string]string
	fail    func(runID string) error
}

func (s *starter) StartRun(_ context.Context, req runner.StartRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(req.RunID); err != nil {
			return err
		}
	}
	s.started = append(s.started, req.RunID)
	s.inputs = append(s.inputs, string(req.Input))
	s.actors = append(s.actors, req.By.Name+"/"+req.By.Role+"/"+req.By.Capability)
	s.labels = append(s.labels, req.Labels)
	return nil
}

// clock is a fake clock its sleeps advance; the run ends at end.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	end    time.Time
	jump   time.Duration // added to the first sleep (a machine suspended)
	cancel context.CancelFunc
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d + c.jump)
	c.jump = 0
	if !c.now.Before(c.end) {
		c.cancel()
	}
	return nil
}

func utc(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

func specs(t *testing.T, text string) []schedule.Spec {
	t.Helper()
	s, err := schedule.Parse([]byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs a scheduler of text from start to end on a fake clock.
func run(t *testing.T, text, start, end string, jump time.Duration, st *starter) *prometheus.Registry {
	t.Helper()
	var c *clock
	return runClock(t, text, start, end, jump, st, &c)
}

// runClock is run, its clock put in *cp before the scheduler starts;
// pauses, when given, are the scheduler's.
func runClock(t *testing.T, text, start, end string, jump time.Duration, st *starter, cp **clock, pauses ...store.SchedulePausing) *prometheus.Registry {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &clock{now: utc(start), end: utc(end), jump: jump, cancel: cancel}
	*cp = c
	reg := prometheus.NewRegistry()
	cfg := schedule.Config{Runner: st, Workflows: workflows, Clock: c.Now, Sleep: c.Sleep, Metrics: reg}
	if len(pauses) > 0 {
		cfg.Pauses = pauses[0]
	}
	s, err := schedule.New(specs(t, text), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Run(ctx)
	return reg
}

const nightly = `{"schedules":[{"name":"nightly","cron":"30 2 * * *","time_zone":"Europe/Paris","workflow":"refund-agent",
 "input":{"refunds":[{"id":"n-{$date}","amount":10,"payee":"p","reason":"{$schedule} at {$local}"}]},
 "labels":{"team":"payments","batch":"{$date}"}}]}`

func TestSchedulerStartsEachTimeDue(t *testing.T) {
	st := &starter{}
	// Europe/Paris is UTC+1 in December: 02:30 there is 01:30 UTC.
	reg := run(t, nightly, "2026-12-07 00:00:00", "2026-12-10 00:00:00", 0, st)
	want := []string{"nightly-2026-12-07T01:30:00Z", "nightly-2026-12-08T01:30:00Z", "nightly-2026-12-09T01:30:00Z"}
	if !slices.Equal(st.started, want) {
		t.Fatalf("started %v, want %v", st.started, want)
	}
	if st.inputs[1] != `{"refunds":[{"amount":10,"id":"n-2026-12-08","payee":"p","reason":"nightly at 2026-12-08T02:30:00"}]}` {
		t.Fatalf("input %s", st.inputs[1])
	}
	if st.actors[0] != "schedule:nightly/agent/run.start" {
		t.Fatalf("started as %s", st.actors[0])
	}
	// The labels' templates are the day's; every run bears the schedule's
	// name besides.
	if want := map[string]string{"team": "payments", "batch": "2026-12-08", "flrh.schedule": "nightly"}; !maps.Equal(st.labels[1], want) {
		t.Fatalf("labels %v, want %v", st.labels[1], want)
	}
	if n := count(reg, "nightly", "started"); n != 3 {
		t.Fatalf("started counted %v", n)
	}
}

// An interval's times are the same whichever server reads it, whenever
// it started: every 90 minutes from the epoch, named on the schedule's
// wall clock.
func TestSchedulerInterval(t *testing.T) {
	text := `{"schedules":[{"name":"sweep","cron":"@every 90m offset 10m","time_zone":"Asia/Kolkata","workflow":"refund-agent",
 "input":{"refunds":[{"id":"s-{$local}","amount":1,"payee":"p","reason":"r"}]}}]}`
	for _, start := range []string{"2026-12-07 00:00:00", "2026-12-07 01:17:00"} {
		st := &starter{}
		run(t, text, start, "2026-12-07 04:45:00", 0, st)
		want := []string{"sweep-2026-12-07T01:40:00Z", "sweep-2026-12-07T03:10:00Z", "sweep-2026-12-07T04:40:00Z"}
		if start == "2026-12-07 00:00:00" {
			want = append([]string{"sweep-2026-12-07T00:10:00Z"}, want...)
		}
		if !slices.Equal(st.started, want) {
			t.Fatalf("from %s: started %v, want %v", start, st.started, want)
		}
		// Kolkata is UTC+5:30: 01:40 UTC is 07:10 there.
		if last := st.inputs[len(st.inputs)-3]; last != `{"refunds":[{"amount":1,"id":"s-2026-12-07T07:10:00","payee":"p","reason":"r"}]}` {
			t.Fatalf("from %s: input %s", start, last)
		}
	}
}

// A time due while no scheduler ran is started late within the catch-up
// window, and counted missed past it; a machine suspended across times
// due is the same.
func TestSchedulerCatchesUp(t *testing.T) {
	every := func(catchUp int) string {
		return fmt.Sprintf(`{"schedules":[{"name":"m","cron":"* * * * *","workflow":"refund-agent","catch_up_seconds":%d,
 "input":{"refunds":[{"id":"{$local}","amount":1,"payee":"p","reason":"r"}]}}]}`, catchUp)
	}
	cases := []struct {
		name    string
		catchUp int
		end     string
		jump    time.Duration
		started []string
		missed  float64
	}{
		{"started with a window of 150 s", 150, "2026-12-07 12:04:30", 0, []string{"m-2026-12-07T12:01:00Z", "m-2026-12-07T12:02:00Z", "m-2026-12-07T12:03:00Z", "m-2026-12-07T12:04:00Z"}, 0},
		{"started with no window", 0, "2026-12-07 12:04:30", 0, []string{"m-2026-12-07T12:04:00Z"}, 0},
		// Asleep from 12:04 to 12:09: 12:04 to 12:07 are past the 90 s
		// window, 12:08 within it.
		{"a suspended machine", 90, "2026-12-07 12:09:30", 5 * time.Minute, []string{"m-2026-12-07T12:02:00Z", "m-2026-12-07T12:03:00Z", "m-2026-12-07T12:08:00Z", "m-2026-12-07T12:09:00Z"}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &starter{}
			reg := run(t, every(c.catchUp), "2026-12-07 12:03:10", c.end, c.jump, st)
			if !slices.Equal(st.started, c.started) {
				t.Fatalf("started %v, want %v", st.started, c.started)
			}
			if n := count(reg, "m", "missed"); n != c.missed {
				t.Fatalf("missed %v, want %v", n, c.missed)
			}
		})
	}
}

// A run started before (by another server, or before a restart) is
// counted existed; a store that cannot be reached is tried again; a run
// the workflow refuses is counted failed and not tried again.
func TestSchedulerAnswers(t *testing.T) {
	text := `{"schedules":[{"name":"h","cron":"@hourly","workflow":"refund-agent","input":{"refunds":[{"id":"x","amount":1,"payee":"p","reason":"r"}]}}]}`
	tries := 0
	var at []time.Time
	var c *clock
	st := &starter{fail: func(id string) error {
		switch id {
		case "h-2026-12-07T13:00:00Z":
			return store.Errorf(store.CodeExists, "create", id, nil, "exists")
		case "h-2026-12-07T14:00:00Z":
			at = append(at, c.now) // read under the starter's lock, while the scheduler waits for it
			if tries++; tries < 3 {
				return store.Errorf(store.CodeUnavailable, "create", id, nil, "busy")
			}
		case "h-2026-12-07T15:00:00Z":
			return &runner.InputRefusedError{WorkflowID: "refund-agent", Version: "1", Reason: "no"}
		}
		return nil
	}}
	reg := runClock(t, text, "2026-12-07 12:30:00", "2026-12-07 16:30:00", 0, st, &c)
	if want := []string{"h-2026-12-07T14:00:00Z", "h-2026-12-07T16:00:00Z"}; !slices.Equal(st.started, want) || tries != 3 {
		t.Fatalf("started %v after %d tries, want %v", st.started, tries, want)
	}
	// A store that cannot be reached is tried again 5 s later, not at once.
	if len(at) != 3 || at[1].Sub(at[0]) != 5*time.Second || at[2].Sub(at[1]) != 5*time.Second {
		t.Fatalf("tried at %v", at)
	}
	for outcome, n := range map[string]float64{"existed": 1, "failed": 1, "started": 2} {
		if got := count(reg, "h", outcome); got != n {
			t.Errorf("%s counted %v, want %v", outcome, got, n)
		}
	}
}

// count is the value of flrh_schedule_fires_total{schedule, outcome}.
func count(reg *prometheus.Registry, name, outcome string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if mf.GetName() == "flrh_schedule_fires_total" && labels["schedule"] == name && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Two servers' schedulers over one store: each time due is one run.
func TestTwoSchedulersStartEachRunOnce(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text := `{"schedules":[{"name":"sweep","cron":"*/10 * * * * *","workflow":"refund-agent","catch_up_seconds":0,"input":{"refunds":[{"id":"s-{$local}","amount":1,"payee":"p","reason":"r"}]}}]}`
	var wg sync.WaitGroup
	regs := make([]*prometheus.Registry, 2)
	for i := range regs {
		r, err := runner.New(runner.Config{Store: st, Workflows: workflows(), Adapters: &effect.Registry{}})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		c := &clock{now: utc("2026-12-07 12:00:05"), end: utc("2026-12-07 12:01:05"), cancel: cancel}
		regs[i] = prometheus.NewRegistry()
		s, err := schedule.New(specs(t, text), schedule.Config{Runner: r, Workflows: workflows, Clock: c.Now, Sleep: c.Sleep, Metrics: regs[i]})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { s.Run(cctx) })
	}
	wg.Wait()
	runs, err := st.Runs(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if len(ids) != 6 || ids[0] != "sweep-2026-12-07T12:00:10Z" || ids[5] != "sweep-2026-12-07T12:01:00Z" {
		t.Fatalf("runs %v", ids)
	}
	var started, existed float64
	for _, reg := range regs {
		started += count(reg, "sweep", "started")
		existed += count(reg, "sweep", "existed")
	}
	if started != 6 || existed != 6 {
		t.Fatalf("started %v, existed %v: each time due once by one scheduler, found by the other", started, existed)
	}
}

func TestParseRefuses(t *testing.T) {
	one := func(extra string) string {
		return `{"schedules":[{"name":"n","cron":"@daily","workflow":"refund-agent"` + extra + `}]}`
	}
	cases := []struct{ name, text, words string }{
		{"a bad expression", `{"schedules":[{"name":"n","cron":"61 * * * *","workflow":"w"}]}`, "cron: cron \"61 * * * *\": the minute field: 61 is outside 0–59"},
		{"an unknown zone", one(`,"time_zone":"Mars/Olympus"`), `time_zone: "Mars/Olympus" is not an IANA time zone`},
		{"the machine's zone", one(`,"time_zone":"Local"`), `"Local" is not an IANA time zone`},
		{"a run id without the time", one(`,"run_id":"daily-{$schedule}"`), "names no {$time} or {$local}"},
		{"a pointer with no body", one(`,"input":{"a":"{/x}"}`), "input: a schedule has no body to point into"},
		{"an unknown placeholder", one(`,"input":{"a":"{$delivery}"}`), "input: /a: no placeholder {$delivery}"},
		{"a bad name", `{"schedules":[{"name":"Nightly","cron":"@daily","workflow":"w"}]}`, `name: "Nightly" is not a schedule name`},
		{"no workflow", `{"schedules":[{"name":"n","cron":"@daily"}]}`, "workflow: name the workflow"},
		{"a negative window", one(`,"catch_up_seconds":-1`), "catch_up_seconds: -1"},
		{"an unknown member", one(`,"every":"5m"`), `unknown field "every"`},
		{"two of one name", `{"schedules":[{"name":"n","cron":"@daily","workflow":"w"},{"name":"n","cron":"@hourly","workflow":"w"}]}`, "a second schedule named n"},
		{"none", `{"schedules":[]}`, "no schedules"},
		{"a bad actor", one(`,"actor":"a b"`), `actor: "a b" is not an actor name`},
		{"a bad label", one(`,"labels":{"Team":"x"}`), `labels: label "Team": a key is lower-case`},
		{"flrh's own label", one(`,"labels":{"flrh.schedule":"x"}`), `labels: label "flrh.schedule": keys beginning "flrh." are flrh's own`},
		{"a label with no value", one(`,"labels":{"team":""}`), `labels: label "team": the value is empty`},
		{"a label's unknown placeholder", one(`,"labels":{"team":"{$who}"}`), `labels: team: /: no placeholder {$who}`},
		{"a label pointing into a body", one(`,"labels":{"team":"{/x}"}`), `labels/team: a schedule has no body to point into`},
		{"sixteen labels", one(`,"labels":{"a":"1","b":"1","c":"1","d":"1","e":"1","f":"1","g":"1","h":"1","i":"1","j":"1","k":"1","l":"1","m":"1","n":"1","o":"1","p":"1"}`),
			"labels: 16 labels, and the runs bear flrh.schedule besides: at most 15"},
	}
	for _, c := range cases {
		if _, err := schedule.Parse([]byte(c.text), false); err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: %v; want an error saying %q", c.name, err, c.words)
		}
	}
	if _, err := schedule.New(specs(t, `{"schedules":[{"name":"n","cron":"@daily","workflow":"payroll"}]}`), schedule.Config{Runner: &starter{}, Workflows: workflows}); err == nil || !strings.Contains(err.Error(), "no workflow payroll is loaded") {
		t.Errorf("an unloaded workflow: %v", err)
	}
	s, err := schedule.Parse([]byte("schedules:\n  - name: n\n    cron: '0 9 * * MON'\n    workflow: refund-agent\n"), true)
	if err != nil || len(s) != 1 || s[0].Cron != "0 9 * * MON" {
		t.Fatalf("YAML: %+v, %v", s, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(nightly))
	f.Add([]byte(`{"schedules":[{"name":"m","cron":"* * * * *","workflow":"w","catch_up_seconds":0,"run_id":"{{x}}-{$time}"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := schedule.Parse(data, false)
		if err != nil {
			return
		}
		// Whatever parses makes a scheduler once its workflows are loaded.
		var wfs []runner.Workflow
		for _, s := range specs {
			if s.Workflow != "refund-agent" || (s.Version != "" && s.Version != "1") {
				return
			}
		}
		wfs = workflows()
		if _, err := schedule.New(specs, schedule.Config{Runner: &starter{}, Workflows: func() []runner.Workflow { return wfs }}); err != nil {
			t.Fatalf("parsed but not made: %v", err)
		}
	})
}

// Schedules replaced while the scheduler runs: one kept as it was goes
// on without a time skipped or repeated, one added starts at its next
// time due, one dropped starts nothing more.
func TestSchedulerReplace(t *testing.T) {
	a := `{"name":"a","cron":"* * * * *","workflow":"refund-agent","catch_up_seconds":0,"input":{"refunds":[{"id":"{$local}","amount":1,"payee":"p","reason":"r"}]}}`
	b := `{"name":"b","cron":"*/2 * * * *","workflow":"refund-agent","catch_up_seconds":0,"input":{"refunds":[{"id":"{$local}","amount":1,"payee":"p","reason":"r"}]}}`
	st := &starter{}
	ctx, cancel := context.WithCancel(context.Background())
	c := &clock{now: utc("2026-12-07 12:00:30"), end: utc("2026-12-07 12:05:30"), cancel: cancel}
	var s *schedule.Scheduler
	replaced := map[string]bool{}
	sleep := func(ctx context.Context, d time.Duration) error {
		c.Sleep(ctx, d)
		now := c.Now()
		switch {
		case !now.Before(utc("2026-12-07 12:04:10")) && !replaced["drop a"]:
			replaced["drop a"] = true
			if err := s.Replace(specs(t, `{"schedules":[`+b+`]}`)); err != nil {
				t.Fatal(err)
			}
		case !now.Before(utc("2026-12-07 12:02:10")) && !replaced["add b"]:
			replaced["add b"] = true
			if err := s.Replace(specs(t, `{"schedules":[`+a+`,`+b+`]}`)); err != nil {
				t.Fatal(err)
			}
			// A broken set changes nothing.
			if err := s.Replace(specs(t, `{"schedules":[{"name":"c","cron":"@daily","workflow":"payroll"}]}`)); err == nil {
				t.Fatal("a schedule of an unloaded workflow replaced the set")
			}
		}
		return nil
	}
	var err error
	if s, err = schedule.New(specs(t, `{"schedules":[`+a+`]}`), schedule.Config{Runner: st, Workflows: workflows, Clock: c.Now, Sleep: sleep}); err != nil {
		t.Fatal(err)
	}
	s.Run(ctx)
	want := []string{"a-2026-12-07T12:01:00Z", "a-2026-12-07T12:02:00Z", "a-2026-12-07T12:03:00Z", "a-2026-12-07T12:04:00Z", "b-2026-12-07T12:04:00Z"}
	got := slices.Clone(st.started)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
}

// A schedule whose runs its workflow would refuse is refused when the
// scheduler is made, not when its first time comes due; a replacement
// likewise, the schedules in place kept.
func TestScheduleCheckedAtOnce(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := runner.New(runner.Config{Store: st, Workflows: workflows(), Adapters: &effect.Registry{}})
	if err != nil {
		t.Fatal(err)
	}
	bad := `{"schedules":[{"name":"b","cron":"@daily","workflow":"refund-agent","input":{"refunds":"none"}}]}`
	if _, err := schedule.New(specs(t, bad), schedule.Config{Runner: r, Workflows: workflows}); err == nil || !strings.Contains(err.Error(), "schedule b: its run of") || !strings.Contains(err.Error(), "would be refused") {
		t.Fatalf("a refused input: %v", err)
	}
	good := `{"schedules":[{"name":"g","cron":"@daily","workflow":"refund-agent","input":{"refunds":[{"id":"d-{$date}","amount":5,"payee":"p","reason":"r"}]}}]}`
	s, err := schedule.New(specs(t, good), schedule.Config{Runner: r, Workflows: workflows})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(specs(t, bad)); err == nil {
		t.Fatal("replaced by a schedule whose runs would be refused")
	}
	if runs, _ := st.Runs(ctx, "", 10); len(runs) != 0 {
		t.Fatalf("checking wrote runs: %v", runs)
	}
}

// pauses is a schedule's pause over a stretch of the fake clock, and a
// read of the pauses that fails at one instant.
type pauses struct {
	c           **clock
	from, until time.Time
	failAt      time.Time
	failed      int
	// ahead: the pause is set ahead, read from the start with from as
	// its start, rather than made at from.
	ahead bool
}

func (p *pauses) PausedSchedules(context.Context) ([]store.PausedSchedule, error) {
	now := (*p.c).Now()
	if now.Equal(p.failAt) {
		p.failed++
		return nil, store.Errorf(store.CodeUnavailable, "paused schedules", "", nil, "busy")
	}
	if p.ahead {
		return []store.PausedSchedule{{Name: "nightly", By: "olga", Reason: "freeze", From: p.from, Until: p.until}}, nil
	}
	if !now.Before(p.from) {
		// Kept past its end, as a store keeps it.
		return []store.PausedSchedule{{Name: "nightly", By: "olga", Reason: "migration", Until: p.until}}, nil
	}
	return nil, nil
}
func (p *pauses) PauseSchedule(context.Context, store.PausedSchedule) error { return nil }
func (p *pauses) ResumeSchedule(context.Context, string) (bool, error)      { return false, nil }

// Times due while the schedule is paused start nothing, and are not
// started late once its pause ends; a time due when the pauses cannot be
// read is tried again 5 s later, not started unsure.
func TestSchedulerPaused(t *testing.T) {
	st := &starter{}
	var c *clock
	p := &pauses{c: &c, from: utc("2026-12-08 00:00:00"), until: utc("2026-12-10 00:00:00"), failAt: utc("2026-12-11 01:30:00")}
	reg := runClock(t, nightly, "2026-12-07 00:00:00", "2026-12-12 00:00:00", 0, st, &c, p)
	// 02:30 in Paris is 01:30 UTC; the 8th and the 9th paused; the 11th
	// once unread, then started 5 s later.
	want := []string{"nightly-2026-12-07T01:30:00Z", "nightly-2026-12-10T01:30:00Z", "nightly-2026-12-11T01:30:00Z"}
	if !slices.Equal(st.started, want) || p.failed != 1 {
		t.Fatalf("started %v (pauses unread %d times), want %v", st.started, p.failed, want)
	}
	for outcome, n := range map[string]float64{"started": 3, "paused": 2, "missed": 0} {
		if got := count(reg, "nightly", outcome); got != n {
			t.Errorf("%s counted %v, want %v", outcome, got, n)
		}
	}
	// A pause set ahead, read all along: the times due before its start
	// and from its end start runs, those between do not.
	st = &starter{}
	p = &pauses{c: &c, from: utc("2026-12-09 00:00:00"), until: utc("2026-12-10 02:00:00"), ahead: true}
	reg = runClock(t, nightly, "2026-12-07 00:00:00", "2026-12-12 00:00:00", 0, st, &c, p)
	want = []string{"nightly-2026-12-07T01:30:00Z", "nightly-2026-12-08T01:30:00Z", "nightly-2026-12-11T01:30:00Z"}
	if !slices.Equal(st.started, want) || count(reg, "nightly", "paused") != 2 {
		t.Fatalf("set ahead: started %v (paused %v), want %v", st.started, count(reg, "nightly", "paused"), want)
	}
}

// Pause and Resume through a store every server shares: listed with who,
// why and since when; paused again, the first pause stands; resumed, and
// a second resume is refused; an unknown schedule is refused.
func TestSchedulePauseAndResume(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	s, err := schedule.New(specs(t, nightly), schedule.Config{Runner: &starter{}, Workflows: workflows, Pauses: st})
	if err != nil {
		t.Fatal(err)
	}
	var never time.Time // no start or end
	info, err := s.Pause(ctx, "nightly", "olga", "the ledger is being migrated", never, never)
	if err != nil || info.Paused == nil || info.Paused.By != "olga" || info.Paused.Reason != "the ledger is being migrated" || time.Since(info.Paused.Since) > time.Minute {
		t.Fatalf("paused: %+v, %v", info, err)
	}
	if again, err := s.Pause(ctx, "nightly", "pete", "again", never, time.Now().Add(time.Hour)); err != nil || again.Paused.By != "olga" {
		t.Fatalf("paused again: %+v, %v", again.Paused, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Paused == nil || list[0].Paused.By != "olga" ||
		!maps.Equal(list[0].Labels, map[string]string{"team": "payments", "batch": "{$date}"}) {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if info, err := s.Resume(ctx, "nightly"); err != nil || info.Paused != nil {
		t.Fatalf("resumed: %+v, %v", info, err)
	}
	var np *schedule.NotPausedError
	if _, err := s.Resume(ctx, "nightly"); !errors.As(err, &np) {
		t.Fatalf("resumed again: %v", err)
	}
	var nf *schedule.NotFoundError
	if _, err := s.Pause(ctx, "weekly", "olga", "", never, never); !errors.As(err, &nf) {
		t.Fatalf("an unknown schedule: %v", err)
	}
	// A scheduler whose store keeps no pauses says so.
	bare, _ := schedule.New(specs(t, nightly), schedule.Config{Runner: &starter{}, Workflows: workflows})
	if _, err := bare.Pause(ctx, "nightly", "olga", "", never, never); !errors.Is(err, schedule.ErrNoPauses) {
		t.Fatalf("no pauses: %v", err)
	}

	// A pause until a time: its end shown; past it, the schedule is
	// listed as not paused, a resume is refused, and a new pause is the
	// one that holds. An end not ahead, or more than a year ahead, is
	// refused.
	var pe *schedule.PauseEndError
	for _, bad := range []time.Time{time.Now().Add(-time.Second), time.Now().Add(schedule.MaxPause + time.Hour)} {
		if _, err := s.Pause(ctx, "nightly", "olga", "", never, bad); !errors.As(err, &pe) {
			t.Fatalf("a pause until %s: %v", bad, err)
		}
	}
	until := time.Now().Add(300 * time.Millisecond)
	info, err = s.Pause(ctx, "nightly", "olga", "freeze", never, until)
	if err != nil || info.Paused == nil || info.Paused.Until == nil || !info.Paused.Until.Equal(until) {
		t.Fatalf("paused until %s: %+v, %v", until, info.Paused, err)
	}
	// A pause until resumed is not kept in its place silently.
	var pd *schedule.PausedError
	if _, err := s.Pause(ctx, "nightly", "pete", "longer", never, never); !errors.As(err, &pd) || pd.Pause.By != "olga" ||
		!strings.Contains(err.Error(), "schedule nightly is paused already by olga until ") {
		t.Fatalf("a pause until resumed over one with an end: %v", err)
	}
	time.Sleep(time.Until(until) + 10*time.Millisecond)
	if list, err := s.List(ctx); err != nil || list[0].Paused != nil {
		t.Fatalf("listed past the pause's end: %+v, %v", list[0].Paused, err)
	}
	if _, err := s.Resume(ctx, "nightly"); !errors.As(err, &np) {
		t.Fatalf("resumed past the pause's end: %v", err)
	}
	if info, err := s.Pause(ctx, "nightly", "pete", "again", never, never); err != nil || info.Paused == nil || info.Paused.By != "pete" || info.Paused.Until != nil {
		t.Fatalf("paused after an ended pause: %+v, %v", info.Paused, err)
	}
	if _, err := s.Resume(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}

	// A pause set ahead: listed with its start while it waits; a pause
	// now asked meanwhile is refused, not kept in its place; resumed, it
	// is lifted before it began. A start not ahead, or more than a year
	// ahead, and an end not after the start, are refused.
	from := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	info, err = s.Pause(ctx, "nightly", "olga", "year-end freeze", from, from.Add(72*time.Hour))
	if err != nil || info.Paused == nil || info.Paused.From == nil || !info.Paused.From.Equal(from) || !info.Paused.Until.Equal(from.Add(72*time.Hour)) {
		t.Fatalf("set ahead: %+v, %v", info.Paused, err)
	}
	if list, err := s.List(ctx); err != nil || list[0].Paused == nil || list[0].Paused.From == nil {
		t.Fatalf("listed while set ahead: %+v, %v", list[0].Paused, err)
	}
	if _, err := s.Pause(ctx, "nightly", "pete", "incident", never, never); !errors.As(err, &pd) || !strings.Contains(err.Error(), " from "+from.UTC().Format(time.RFC3339)) {
		t.Fatalf("a pause now while one is set ahead: %v", err)
	}
	if again, err := s.Pause(ctx, "nightly", "pete", "", from.Add(time.Hour), from.Add(2*time.Hour)); err != nil || again.Paused.By != "olga" {
		t.Fatalf("a pause within the one set ahead: %+v, %v", again.Paused, err)
	}
	if info, err := s.Resume(ctx, "nightly"); err != nil || info.Paused != nil {
		t.Fatalf("resumed before it began: %+v, %v", info.Paused, err)
	}
	var ps *schedule.PauseStartError
	for _, bad := range []time.Time{time.Now().Add(-time.Second), time.Now().Add(schedule.MaxPause + time.Hour)} {
		if _, err := s.Pause(ctx, "nightly", "olga", "", bad, never); !errors.As(err, &ps) {
			t.Fatalf("a pause from %s: %v", bad, err)
		}
	}
	if _, err := s.Pause(ctx, "nightly", "olga", "", from, from); !errors.As(err, &pe) || !strings.Contains(err.Error(), "after its start") {
		t.Fatalf("an end at the start: %v", err)
	}
	if list, err := s.List(ctx); err != nil || list[0].Paused != nil {
		t.Fatalf("refused pauses wrote one: %+v, %v", list[0].Paused, err)
	}
}

// lasting reads the runs a starter started as lasting d from the time in
// their id ({$schedule}-{$time}) on the fake clock; a run it did not
// start is not found.
type lasting struct {
	st *starter
	c  **clock
	d  time.Duration
}

func (l lasting) Run(_ context.Context, runID string) (store.Run, error) {
	l.st.mu.Lock()
	started := slices.Contains(l.st.started, runID)
	l.st.mu.Unlock()
	if !started {
		return store.Run{}, store.Errorf(store.CodeNotFound, "run", runID, nil, "no run")
	}
	_, at, _ := strings.Cut(runID, "-")
	due, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return store.Run{}, err
	}
	r := store.Run{ID: runID}
	if !(*l.c).Now().Before(due.Add(l.d)) {
		r.Outcome = "success"
	}
	return r, nil
}

// A schedule that does not overlap its runs starts none while its latest
// is going, counted skipped, and not late either; a scheduler started
// anew (a restart, another server) waits on the same run, through the
// store; the run of the very time due, started by another server, is
// not a reason to skip it; a head whose run never started holds nothing.
func TestSchedulerOverlapSkip(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text := func(overlap string) string {
		return `{"schedules":[{"name":"m","cron":"*/10 * * * *","workflow":"refund-agent","overlap":"` + overlap + `",
 "input":{"refunds":[{"id":"{$local}","amount":1,"payee":"p","reason":"r"}]}}]}`
	}
	// The run of 12:00 is started by another server (found existing).
	started := &starter{started: []string{"m-2026-12-07T12:00:00Z"}, fail: func(runID string) error {
		if runID == "m-2026-12-07T12:00:00Z" {
			return store.Errorf(store.CodeExists, "create run", runID, nil, "exists")
		}
		return nil
	}}
	run := func(overlap, from, to string) *prometheus.Registry {
		ctx, cancel := context.WithCancel(context.Background())
		c := &clock{now: utc(from), end: utc(to), cancel: cancel}
		reg := prometheus.NewRegistry()
		s, err := schedule.New(specs(t, text(overlap)), schedule.Config{Runner: started, Workflows: workflows, Clock: c.Now, Sleep: c.Sleep, Metrics: reg,
			Heads: st, Runs: lasting{st: started, c: &c, d: 25 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		s.Run(ctx)
		return reg
	}
	// Its head written: this server's 12:00 is not skipped for it (and
	// finds it started).
	if err := st.SetScheduleHead(context.Background(), store.ScheduleHead{Name: "m", RunID: "m-2026-12-07T12:00:00Z", Due: utc("2026-12-07 12:00:00")}); err != nil {
		t.Fatal(err)
	}
	first := run("skip", "2026-12-07 11:59:59", "2026-12-07 12:35:00")
	second := run("skip", "2026-12-07 12:35:00", "2026-12-07 13:05:00")
	want := []string{"m-2026-12-07T12:00:00Z", "m-2026-12-07T12:30:00Z", "m-2026-12-07T13:00:00Z"}
	if !slices.Equal(started.started, want) {
		t.Fatalf("started %v, want %v", started.started, want)
	}
	for i, reg := range []*prometheus.Registry{first, second} {
		if n := count(reg, "m", "skipped"); n != 2 {
			t.Errorf("scheduler %d skipped %v, want 2 (12:10 and 12:20, then 12:40 and 12:50)", i+1, n)
		}
	}
	if n := count(first, "m", "existed"); n != 1 {
		t.Errorf("12:00 found started %v times, want once", n)
	}
	if h, _, err := st.ScheduleHead(context.Background(), "m"); err != nil || h.RunID != "m-2026-12-07T13:00:00Z" {
		t.Fatalf("the head: %+v, %v", h, err)
	}
	// A head whose run was never started (refused, or its process
	// killed between) holds nothing back; overlap allow starts each.
	if err := st.SetScheduleHead(context.Background(), store.ScheduleHead{Name: "m", RunID: "never-started", Due: utc("2026-12-07 13:59:00")}); err != nil {
		t.Fatal(err)
	}
	started.started, started.fail = nil, nil
	run("skip", "2026-12-07 13:59:59", "2026-12-07 14:05:00")
	run("allow", "2026-12-07 14:05:00", "2026-12-07 14:35:00")
	want = []string{"m-2026-12-07T14:00:00Z", "m-2026-12-07T14:10:00Z", "m-2026-12-07T14:20:00Z", "m-2026-12-07T14:30:00Z"}
	if !slices.Equal(started.started, want) {
		t.Fatalf("started %v, want %v", started.started, want)
	}
	// A trigger waits on the latest run as a time due does, unless
	// forced; one of a schedule that overlaps its runs does not.
	c := &clock{now: utc("2026-12-07 14:36:00")}
	trig, err := schedule.New(specs(t, text("skip")), schedule.Config{Runner: started, Workflows: workflows, Clock: c.Now,
		Heads: st, Runs: lasting{st: started, c: &c, d: 25 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	var oe *schedule.OverlapError
	if _, err := trig.Trigger(context.Background(), "m", false); !errors.As(err, &oe) || oe.Going != "m-2026-12-07T14:30:00Z" {
		t.Fatalf("a trigger while 14:30's run is going: %v", err)
	}
	if f, err := trig.Trigger(context.Background(), "m", true); err != nil || !slices.Equal(f.Started, []string{"m-2026-12-07T14:36:00Z"}) {
		t.Fatalf("a forced trigger: %+v, %v", f, err)
	}
	c.now = utc("2026-12-07 15:10:00") // the forced run ended at 15:01
	if f, err := trig.Trigger(context.Background(), "m", false); err != nil || !slices.Equal(f.Started, []string{"m-2026-12-07T15:10:00Z"}) {
		t.Fatalf("a trigger once the latest ended: %+v, %v", f, err)
	}

	// Skip needs a store that keeps heads; an overlap unknown is refused.
	if _, err := schedule.New(specs(t, text("skip")), schedule.Config{Runner: started, Workflows: workflows}); err == nil || !strings.Contains(err.Error(), "overlap skip waits on the schedule's latest run") {
		t.Fatalf("skip without heads: %v", err)
	}
	if _, err := schedule.Parse([]byte(text("queue")), false); err == nil || !strings.Contains(err.Error(), `overlap: "queue" is not allow or skip`) {
		t.Fatalf("an unknown overlap: %v", err)
	}
}
