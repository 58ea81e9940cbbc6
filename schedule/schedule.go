// Package schedule starts runs on a calendar: a nightly reconciliation, a
// report every Monday at nine, a sweep every five minutes. Each schedule
// names a cron expression in a time zone, a workflow, and templates of
// the run's id and input; the run of each time it is due is started
// once, whichever of several servers sharing a store starts it, and a
// time missed while no server ran is started late if it is within the
// schedule's catch-up window.
//
// "Once" rests on the run's id: it is made of the schedule and the time
// due ("nightly-2026-12-07T02:00:00Z" by default), and a store holds one
// run of an id, so a second server, or a server restarted a moment
// after it started the run, finds it started.
package schedule

import (
	"bytes"
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

	// The zone database inside the binary, for a machine (a distroless
	// container, a fresh CI image) that has none: the system's is used
	// where there is one.
	_ "time/tzdata"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/cron"
	"flrh.dev/flrh/jsontemplate"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/yamljson"
)

// Spec is one schedule of a schedules file.
type Spec struct {
	Name string `json:"name"`
	// Cron is when the schedule is due (package cron): five fields, or
	// six with seconds first, or a macro (@daily), or an interval
	// (@every 90m).
	Cron string `json:"cron"`
	// TimeZone is the IANA zone the expression's wall-clock times are in
	// (Europe/Paris); UTC when left out.
	TimeZone string `json:"time_zone,omitempty"`
	Workflow string `json:"workflow"`
	Version  string `json:"version,omitempty"`
	// RunID is a template of the run's id: {$schedule}-{$time} when left
	// out. It must name the time due, or two times would share a run.
	RunID string `json:"run_id,omitempty"`
	// Input is a template of the run's input ({} when left out).
	Input json.RawMessage `json:"input,omitempty"`
	// CatchUpSeconds is how late a run may still be started: a time due
	// while no server ran, found this long after it, is started; one
	// found later is skipped and counted missed. 300 when left out.
	CatchUpSeconds *int64 `json:"catch_up_seconds,omitempty"`
	// Actor is who the runs are started as (an agent): schedule:NAME when
	// left out.
	Actor string `json:"actor,omitempty"`
	// Overlap is what a time due does while the schedule's latest run is
	// still going: "allow" (left out) starts its run beside it; "skip"
	// starts none, counted skipped, and is not started late either.
	Overlap string `json:"overlap,omitempty"`
	// Labels are the labels of the runs it starts (package label), each
	// value a template of the names below ("batch": "{$date}"); every run
	// bears flrh.schedule, the schedule's name, besides.
	Labels map[string]string `json:"labels,omitempty"`
}

// LabelKey is the label every run a schedule starts bears, the
// schedule's name its value.
const LabelKey = label.Reserved + "schedule"

// Overlap policies.
const (
	OverlapAllow = "allow"
	OverlapSkip  = "skip"
)

// Names are the named values a schedule's templates take:
//
//	{$schedule}  the schedule's name
//	{$time}      the time due, in UTC (RFC 3339: 2026-12-07T02:00:00Z)
//	{$local}     the time due on the schedule's wall clock (2026-12-07T03:00:00)
//	{$date}      the day due on the schedule's wall clock (2026-12-07)
var Names = []string{"$schedule", "$time", "$local", "$date"}

// DefaultCatchUp is how late a missed time is still started when a
// schedule does not say.
const DefaultCatchUp = 5 * time.Minute

type file struct {
	Schedules []Spec `json:"schedules"`
}

// Parse reads a schedules file, JSON or (yaml set) YAML, and checks every
// schedule but its workflow (which New checks against those loaded):
// {"schedules": [{"name": "nightly", "cron": "0 2 * * *", "time_zone":
// "Europe/Paris", "workflow": "reconcile", "input": {"day": "{$date}"}}]}.
func Parse(data []byte, yaml bool) ([]Spec, error) {
	if yaml {
		var err error
		if data, _, err = yamljson.Convert(data); err != nil {
			return nil, fmt.Errorf("schedules: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("schedules: %v", err)
	}
	if dec.More() {
		return nil, errors.New("schedules: more than one JSON value")
	}
	if len(f.Schedules) == 0 {
		return nil, errors.New("schedules: no schedules: give at least one")
	}
	for i, s := range f.Schedules {
		if _, err := compile(s); err != nil {
			return nil, fmt.Errorf("schedules: /schedules/%d (%s): %w", i, s.Name, err)
		}
		if slices.ContainsFunc(f.Schedules[:i], func(o Spec) bool { return o.Name == s.Name }) {
			return nil, fmt.Errorf("schedules: /schedules/%d: a second schedule named %s", i, s.Name)
		}
	}
	return f.Schedules, nil
}

// entry is a schedule ready to fire.
type entry struct {
	spec    Spec
	cron    cron.Schedule
	loc     *time.Location
	runID   *jsontemplate.Template
	input   *jsontemplate.Template
	labels  map[string]*jsontemplate.Template
	catchUp time.Duration
	actor   string
	skip    bool // Overlap "skip"
}

func compile(s Spec) (*entry, error) {
	if !validName(s.Name) {
		return nil, fmt.Errorf("name: %q is not a schedule name (a-z, 0-9 and -, up to 63)", s.Name)
	}
	if s.Workflow == "" {
		return nil, errors.New("workflow: name the workflow the schedule starts")
	}
	e := &entry{spec: s, catchUp: DefaultCatchUp, actor: s.Actor, loc: time.UTC}
	var err error
	if e.cron, err = cron.Parse(s.Cron); err != nil {
		return nil, fmt.Errorf("cron: %w", err)
	}
	if s.TimeZone != "" {
		// Loading a zone reads the system's zone database: the shell's
		// part, which the pure cron package is handed.
		if e.loc, err = time.LoadLocation(s.TimeZone); err != nil || s.TimeZone == "Local" {
			return nil, fmt.Errorf("time_zone: %q is not an IANA time zone this machine knows", s.TimeZone)
		}
	}
	if s.CatchUpSeconds != nil {
		if *s.CatchUpSeconds < 0 || *s.CatchUpSeconds > 366*86400 {
			return nil, fmt.Errorf("catch_up_seconds: %d is not from 0 to a year", *s.CatchUpSeconds)
		}
		e.catchUp = time.Duration(*s.CatchUpSeconds) * time.Second
	}
	switch s.Overlap {
	case "", OverlapAllow:
	case OverlapSkip:
		e.skip = true
	default:
		return nil, fmt.Errorf("overlap: %q is not allow or skip", s.Overlap)
	}
	if e.actor == "" {
		e.actor = "schedule:" + s.Name
	}
	if !cjson.ValidID(e.actor) {
		return nil, fmt.Errorf("actor: %q is not an actor name", e.actor)
	}
	runID := s.RunID
	if runID == "" {
		runID = "{$schedule}-{$time}"
	}
	if e.runID, err = jsontemplate.CompileString(runID, Names...); err != nil {
		return nil, fmt.Errorf("run_id: %w", err)
	}
	if !strings.Contains(runID, "{$time}") && !strings.Contains(runID, "{$local}") {
		return nil, fmt.Errorf("run_id: %q names no {$time} or {$local}: every time due would be one run", runID)
	}
	input := s.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if e.input, err = jsontemplate.Compile(input, Names...); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if err := label.CheckBeside(s.Labels, LabelKey); err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	templates := map[string]*jsontemplate.Template{"run_id": e.runID, "input": e.input}
	e.labels = make(map[string]*jsontemplate.Template, len(s.Labels))
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if e.labels[k], err = jsontemplate.CompileString(s.Labels[k], Names...); err != nil {
			return nil, fmt.Errorf("labels: %s: %w", k, err)
		}
		templates["labels/"+k] = e.labels[k]
	}
	for _, what := range slices.Sorted(maps.Keys(templates)) {
		if templates[what].ReadsBody() {
			return nil, fmt.Errorf("%s: a schedule has no body to point into: {$schedule}, {$time}, {$local}, {$date}", what)
		}
	}
	return e, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Starter starts a run (runner.Runner.StartRun, usage zero).
type Starter interface {
	StartRun(ctx context.Context, req runner.StartRequest) error
}

// Checker is a Starter that can say what it would refuse, writing
// nothing (runner.Runner.CheckStart): a scheduler given one checks each
// schedule's run id and input, made for its next time due, when it is
// made or replaced, so that a schedule whose runs would be refused is
// refused at once rather than when it comes due.
type Checker interface {
	CheckStart(req runner.StartRequest) error
}

// Config assembles a Scheduler.
type Config struct {
	Runner Starter
	// Workflows lists the workflows loaded (a server's catalog).
	Workflows func() []runner.Workflow
	// Clock is the time now (time.Now when nil); Sleep waits (a timer
	// when nil).
	Clock func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives what each time due came to; nil discards.
	Logger *slog.Logger
	// Metrics, when set, gets flrh_schedule_fires_total.
	Metrics prometheus.Registerer
	// Pauses, when set, holds which schedules an operator paused (the
	// store every server shares): their times due start nothing.
	Pauses store.SchedulePausing
	// Heads, when set, records each schedule's latest run before it is
	// started, and Runs reads how that run stands: a schedule whose
	// overlap is "skip" needs both (the store every server shares).
	Heads store.ScheduleHeads
	Runs  RunReader
}

// RunReader reads a run's header (store.Store's Run).
type RunReader interface {
	Run(ctx context.Context, runID string) (store.Run, error)
}

// Scheduler starts the runs of its schedules when they are due.
type Scheduler struct {
	cfg     Config
	entries []*entry
	fires   *prometheus.CounterVec
	mu      sync.Mutex
	next    []time.Time        // each entry's next time due; nil before Run
	wake    context.CancelFunc // ends the wait under way (Replace)
}

// New makes the schedules ready; each must name a workflow loaded.
func New(specs []Spec, cfg Config) (*Scheduler, error) {
	if cfg.Runner == nil || cfg.Workflows == nil {
		return nil, errors.New("schedule: a runner and the workflows are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{cfg: cfg, fires: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_schedule_fires_total",
		Help: "Times a schedule was due, by what came of them: started, existed (started before, or by another server), missed (found past the catch-up window), paused (an operator paused the schedule), skipped (its latest run still going, with overlap skip), failed."},
		[]string{"schedule", "outcome"})}
	var err error
	if s.entries, err = s.compileAll(specs); err != nil {
		return nil, err
	}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(s.fires); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// compileAll makes specs ready, each naming a workflow loaded.
func (s *Scheduler) compileAll(specs []Spec) ([]*entry, error) {
	var entries []*entry
	for _, spec := range specs {
		e, err := compile(spec)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", spec.Name, err)
		}
		if e.skip && (s.cfg.Heads == nil || s.cfg.Runs == nil) {
			return nil, fmt.Errorf("schedule %s: overlap skip waits on the schedule's latest run, which this server's store does not keep", spec.Name)
		}
		wf, err := s.workflow(spec)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", spec.Name, err)
		}
		if c, ok := s.cfg.Runner.(Checker); ok {
			if due := e.cron.Next(s.cfg.Clock().In(e.loc)); !due.IsZero() {
				run, err := e.render(due)
				if err == nil {
					run.WorkflowID, run.Version = wf.ID(), wf.Version()
					err = c.CheckStart(run)
				}
				if err != nil {
					return nil, fmt.Errorf("schedule %s: its run of %s would be refused: %w", spec.Name, due.UTC().Format(time.RFC3339), err)
				}
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Replace puts specs in place of the schedules (a schedules file read
// again): a schedule kept as it was keeps its next time due; a new or
// changed one is due as at a start, its catch-up window included. On an
// error nothing changes.
func (s *Scheduler) Replace(specs []Spec) error {
	entries, err := s.compileAll(specs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next != nil {
		next := make([]time.Time, len(entries))
		now := s.cfg.Clock()
		for i, e := range entries {
			next[i] = e.cron.Next(now.Add(-e.catchUp).In(e.loc))
			for j, old := range s.entries {
				if same(old.spec, e.spec) {
					next[i] = s.next[j]
				}
			}
		}
		s.next = next
	}
	s.entries = entries
	if s.wake != nil {
		s.wake()
	}
	return nil
}

// same reports whether two specs are one schedule unchanged.
func same(a, b Spec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// workflow is the loaded workflow a schedule names.
func (s *Scheduler) workflow(spec Spec) (runner.Workflow, error) {
	var found []runner.Workflow
	for _, wf := range s.cfg.Workflows() {
		if wf.ID() == spec.Workflow && (spec.Version == "" || wf.Version() == spec.Version) {
			found = append(found, wf)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no workflow %s is loaded", strings.TrimSuffix(spec.Workflow+"@"+spec.Version, "@"))
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("workflow %s is loaded in %d versions; name one", spec.Workflow, len(found))
}

// retryEvery is how soon a time due whose run could not be started for
// a reason that passes (the store busy) is tried again, within its
// catch-up window.
const retryEvery = 5 * time.Second

// maxSleep bounds one wait, so that a clock set forward, or a machine
// suspended, is noticed.
const maxSleep = time.Minute

// Run starts each schedule's runs as they come due, until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	now := s.cfg.Clock()
	s.mu.Lock()
	s.next = make([]time.Time, len(s.entries))
	for i, e := range s.entries {
		// The first time due after the start of the catch-up window: a
		// time missed while no server ran is started late.
		s.next[i] = e.cron.Next(now.Add(-e.catchUp).In(e.loc))
	}
	s.mu.Unlock()
	for ctx.Err() == nil {
		wake := s.pass(ctx)
		d := min(wake.Sub(s.cfg.Clock()), maxSleep)
		if d <= 0 {
			continue
		}
		waitCtx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.wake = cancel
		s.mu.Unlock()
		s.cfg.Sleep(waitCtx, d)
		cancel()
	}
}

// pass starts the runs due now and answers when the next is due.
func (s *Scheduler) pass(ctx context.Context) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock()
	wake := now.Add(maxSleep)
	var paused map[string]store.PausedSchedule // read once a time is due
	for i, e := range s.entries {
		retrying := false
		for !s.next[i].IsZero() && !s.next[i].After(now) {
			due := s.next[i]
			if paused == nil {
				var err error
				if paused, err = s.paused(ctx); err != nil {
					// Unsure whether it is paused, it is not started: the
					// same time again in a while, as for a busy store.
					s.cfg.Logger.Warn("schedules' pauses not read; trying again", "err", err.Error())
					paused, retrying = nil, true
					break
				}
			}
			if p, ok := paused[e.spec.Name]; ok && p.Holds(due) {
				s.count(e, outcomePaused)
				s.cfg.Logger.Info("scheduled run not started: the schedule is paused", "schedule", e.spec.Name, "due", due.UTC().Format(time.RFC3339), "paused_by", p.By)
			} else if now.Sub(due) > e.catchUp {
				s.count(e, outcomeMissed)
				s.cfg.Logger.Warn("scheduled run missed", "schedule", e.spec.Name, "due", due.UTC().Format(time.RFC3339), "late", now.Sub(due).Round(time.Second).String(), "catch_up", e.catchUp.String())
			} else if busy, err := s.overlapping(ctx, e, due); err != nil {
				s.cfg.Logger.Warn("schedule's latest run not read; trying again", "schedule", e.spec.Name, "err", err.Error())
				retrying = true
				break
			} else if busy != "" {
				s.count(e, outcomeSkipped)
				s.cfg.Logger.Info("scheduled run not started: the schedule's latest run is still going", "schedule", e.spec.Name, "due", due.UTC().Format(time.RFC3339), "going", busy)
			} else if _, outcome, _ := s.start(ctx, e, due); outcome == outcomeRetry {
				// The same time again in a while, not at once: the store
				// that could not be reached is given time to come back.
				retrying = true
				break
			}
			s.next[i] = e.cron.Next(due)
		}
		switch {
		case retrying:
			wake = earlier(wake, now.Add(retryEvery))
		case !s.next[i].IsZero():
			wake = earlier(wake, s.next[i])
		}
	}
	return wake
}

// Outcomes of a time due.
const (
	outcomeStarted = "started"
	outcomeExisted = "existed"
	outcomeFailed  = "failed"
	outcomeMissed  = "missed"
	outcomePaused  = "paused"
	outcomeSkipped = "skipped"
	outcomeRetry   = "retry" // not counted: the time is tried again
)

// overlapping is, for a schedule that does not overlap its runs, the id
// of its latest run while that is still going ("" when it has ended, or
// is the run of this very time due, which another server started).
func (s *Scheduler) overlapping(ctx context.Context, e *entry, due time.Time) (string, error) {
	if !e.skip {
		return "", nil
	}
	h, ok, err := s.cfg.Heads.ScheduleHead(ctx, e.spec.Name)
	if err != nil || !ok {
		return "", err
	}
	if run, err := e.render(due); err == nil && run.RunID == h.RunID {
		return "", nil
	}
	r, err := s.cfg.Runs.Run(ctx, h.RunID)
	switch {
	case store.CodeOf(err) == store.CodeNotFound:
		// Named before it was started, and never started (a refused
		// input, a process killed between): nothing is going.
		return "", nil
	case err != nil:
		return "", err
	case r.Outcome != "":
		return "", nil
	}
	return h.RunID, nil
}

// start starts the run of a time due and says what came of it: the run's
// id, the outcome, and the error of a failure or a retry.
func (s *Scheduler) start(ctx context.Context, e *entry, due time.Time) (runID, outcome string, err error) {
	log := s.cfg.Logger.With("schedule", e.spec.Name, "due", due.UTC().Format(time.RFC3339))
	run, err := e.render(due)
	runID = run.RunID
	var wf runner.Workflow
	if err == nil {
		wf, err = s.workflow(e.spec)
	}
	if err == nil && s.cfg.Heads != nil {
		// Named first: a run a scheduler started always has a head,
		// whatever becomes of this process before the next line.
		err = s.cfg.Heads.SetScheduleHead(ctx, store.ScheduleHead{Name: e.spec.Name, RunID: runID, Due: due})
	}
	if err == nil {
		run.WorkflowID, run.Version = wf.ID(), wf.Version()
		err = s.cfg.Runner.StartRun(ctx, run)
	}
	switch {
	case err == nil:
		outcome = outcomeStarted
		log.Info("scheduled run started", "run_id", runID)
	case store.CodeOf(err) == store.CodeExists:
		outcome, err = outcomeExisted, nil
		log.Debug("scheduled run started before", "run_id", runID)
	case store.CodeOf(err) == store.CodeUnavailable || ctx.Err() != nil:
		log.Warn("scheduled run not started yet; trying again", "run_id", runID, "err", err.Error())
		return runID, outcomeRetry, err
	default:
		outcome = outcomeFailed
		log.Error("scheduled run refused", "run_id", runID, "err", err.Error())
	}
	s.count(e, outcome)
	return runID, outcome, err
}

// Info is a schedule as GET /v1/schedules lists it.
type Info struct {
	Name     string    `json:"name"`
	Cron     string    `json:"cron"`
	TimeZone string    `json:"time_zone"`
	Workflow string    `json:"workflow"`
	Version  string    `json:"version,omitempty"`
	Next     time.Time `json:"next"` // zero when it is due never again
	// Overlap is "skip" for a schedule that starts no run while its
	// latest is going; left out, it overlaps them.
	Overlap string `json:"overlap,omitempty"`
	// Labels are the templates of the labels its runs bear, besides
	// flrh.schedule; left out when none.
	Labels map[string]string `json:"labels,omitempty"`
	// Paused, when set, says who paused the schedule, why, since when
	// and until when: its times due start nothing until it is resumed or
	// its end comes. A pause set ahead is shown too, with its start.
	Paused *Pause `json:"paused,omitempty"`
}

// Pause is a schedule's pause as Info shows it.
type Pause struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// From, when set, is when a pause set ahead begins: times due before
	// it start runs.
	From *time.Time `json:"from,omitempty"`
	// Until, when set, is when the pause ends by itself.
	Until *time.Time `json:"until,omitempty"`
}

// pauseOf is p as Info shows it.
func pauseOf(p store.PausedSchedule) *Pause {
	out := &Pause{By: p.By, Reason: p.Reason, Since: p.Since}
	if !p.From.IsZero() {
		out.From = &p.From
	}
	if !p.Until.IsZero() {
		out.Until = &p.Until
	}
	return out
}

// List lists the schedules with their next times due after now, and
// their pauses.
func (s *Scheduler) List(ctx context.Context) ([]Info, error) {
	paused, err := s.paused(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock()
	out := make([]Info, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.info(now, paused)
	}
	return out, nil
}

func (e *entry) info(now time.Time, paused map[string]store.PausedSchedule) Info {
	in := Info{Name: e.spec.Name, Cron: e.spec.Cron, TimeZone: e.loc.String(), Workflow: e.spec.Workflow, Version: e.spec.Version,
		Next: e.cron.Next(now.In(e.loc)).UTC(), Labels: e.spec.Labels}
	if e.skip {
		in.Overlap = OverlapSkip
	}
	if p, ok := paused[e.spec.Name]; ok && !p.Over(now) {
		in.Paused = pauseOf(p)
	}
	return in
}

// paused reads the schedules paused, by name (none without Pauses).
func (s *Scheduler) paused(ctx context.Context) (map[string]store.PausedSchedule, error) {
	out := map[string]store.PausedSchedule{}
	if s.cfg.Pauses == nil {
		return out, nil
	}
	list, err := s.cfg.Pauses.PausedSchedules(ctx)
	for _, p := range list {
		out[p.Name] = p
	}
	return out, err
}

// ErrNoPauses is a pause asked of a scheduler whose store keeps none.
var ErrNoPauses = errors.New("schedule: this server's store keeps no schedules' pauses")

// Pause pauses the schedule, by and for reason, for every server sharing
// the store: its times due start nothing until it is resumed, or, when
// until is not zero, until then; they are not started late then
// (Backfill starts them, when wanted). A trigger or a backfill still
// starts runs: they are asked for. A schedule paused already keeps its
// first pause. When from is not zero, the pause is set ahead: it holds
// for the times due from then. A start not after now or more than
// MaxPause away is an error (PauseStartError); so is an end not after
// the start (now, without one) or more than MaxPause past it
// (PauseEndError). A schedule paused already keeps its pause when that
// holds for every time the one asked for would (asked twice, say), and
// is otherwise a PausedError: one pause is not silently kept in place of
// another (a pause now, asked while a freeze is set ahead).
func (s *Scheduler) Pause(ctx context.Context, name, by, reason string, from, until time.Time) (Info, error) {
	e, err := s.entry(name)
	if err != nil {
		return Info{}, err
	}
	if s.cfg.Pauses == nil {
		return Info{}, ErrNoPauses
	}
	now := s.cfg.Clock()
	start := now
	if !from.IsZero() {
		if !from.After(now) || from.Sub(now) > MaxPause {
			return Info{}, &PauseStartError{From: from, Now: now}
		}
		start = from
	}
	if !until.IsZero() && (!until.After(start) || until.Sub(start) > MaxPause) {
		return Info{}, &PauseEndError{Until: until, Now: now, From: from}
	}
	if err := s.cfg.Pauses.PauseSchedule(ctx, store.PausedSchedule{Name: name, By: by, Reason: reason, From: from, Until: until}); err != nil {
		return Info{}, err
	}
	paused, err := s.paused(ctx)
	if err != nil {
		return Info{}, err
	}
	if standing, ok := paused[name]; ok && !covers(standing, from, until) {
		return Info{}, &PausedError{Name: name, Pause: *pauseOf(standing)}
	}
	return e.info(s.cfg.Clock(), paused), nil
}

// covers reports whether p holds for every time a pause from from (now,
// when zero) until until (never, when zero) would.
func covers(p store.PausedSchedule, from, until time.Time) bool {
	fromOK := p.From.IsZero() || (!from.IsZero() && !p.From.After(from))
	untilOK := p.Until.IsZero() || (!until.IsZero() && !p.Until.Before(until))
	return fromOK && untilOK
}

// Resume lifts the schedule's pause: its next time due starts a run.
// NotPausedError when it was not paused.
func (s *Scheduler) Resume(ctx context.Context, name string) (Info, error) {
	if _, err := s.entry(name); err != nil {
		return Info{}, err
	}
	if s.cfg.Pauses == nil {
		return Info{}, ErrNoPauses
	}
	// A pause past its end holds no more: it is dropped, and the
	// schedule was not paused.
	paused, err := s.paused(ctx)
	if err != nil {
		return Info{}, err
	}
	p, held := paused[name]
	now := s.cfg.Clock()
	held = held && !p.Over(now)
	resumed, err := s.cfg.Pauses.ResumeSchedule(ctx, name)
	if err != nil {
		return Info{}, err
	}
	if !resumed || !held {
		return Info{}, &NotPausedError{Name: name}
	}
	return s.infoOf(ctx, name)
}

// infoOf is the schedule name as List shows it.
func (s *Scheduler) infoOf(ctx context.Context, name string) (Info, error) {
	e, err := s.entry(name)
	if err != nil {
		return Info{}, err
	}
	paused, err := s.paused(ctx)
	if err != nil {
		return Info{}, err
	}
	return e.info(s.cfg.Clock(), paused), nil
}

// MaxPause is the furthest a pause's start may be set ahead, and its end
// past its start: a schedule to be stopped for longer is paused until
// resumed, or taken out of the file.
const MaxPause = 366 * 24 * time.Hour

// PauseEndError is a pause whose end is not after its start (now, or
// From when set ahead), or too far past it.
type PauseEndError struct{ Until, Now, From time.Time }

func (e *PauseEndError) Error() string {
	start, what := e.Now, "now"
	if !e.From.IsZero() {
		start, what = e.From, "its start"
	}
	if !e.Until.After(start) {
		return "a pause's end is after " + what + " (" + start.UTC().Format(time.RFC3339) + "), not " + e.Until.UTC().Format(time.RFC3339)
	}
	return "a pause's end is at most 366 days past " + what + ", not " + e.Until.UTC().Format(time.RFC3339)
}

// PauseStartError is a pause set ahead whose start is not after now, or
// more than MaxPause away.
type PauseStartError struct{ From, Now time.Time }

func (e *PauseStartError) Error() string {
	if !e.From.After(e.Now) {
		return "a pause set ahead starts after now (" + e.Now.UTC().Format(time.RFC3339) + "), not " + e.From.UTC().Format(time.RFC3339) + ": leave the start out to pause now"
	}
	return "a pause's start is at most 366 days away, not " + e.From.UTC().Format(time.RFC3339)
}

// PausedError is a pause asked of a schedule whose pause, standing,
// does not hold for every time the one asked for would: it is kept, and
// the one asked for is not.
type PausedError struct {
	Name  string
	Pause Pause
}

func (e *PausedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule %s is paused already by %s", e.Name, e.Pause.By)
	if e.Pause.From != nil {
		fmt.Fprintf(&b, " from %s", e.Pause.From.UTC().Format(time.RFC3339))
	}
	if e.Pause.Until != nil {
		fmt.Fprintf(&b, " until %s", e.Pause.Until.UTC().Format(time.RFC3339))
	} else {
		b.WriteString(" until resumed")
	}
	b.WriteString(": resume it, then pause it anew")
	return b.String()
}

// WorkflowOf is the workflow the schedule name starts runs of, and
// whether there is such a schedule.
func (s *Scheduler) WorkflowOf(name string) (string, bool) {
	e, err := s.entry(name)
	if err != nil {
		return "", false
	}
	return e.spec.Workflow, true
}

// NotPausedError is a resume of a schedule not paused.
type NotPausedError struct{ Name string }

func (e *NotPausedError) Error() string { return "schedule " + e.Name + " is not paused" }

// NotFoundError is an act on a schedule that does not exist.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return "no schedule " + e.Name }

// RangeError is a backfill's range refused.
type RangeError struct{ Detail string }

func (e *RangeError) Error() string { return "backfill: " + e.Detail }

// MaxBackfill bounds the times one backfill starts.
const MaxBackfill = 1000

// Filled is what a backfill or a trigger did: the runs it started and
// those that existed already, by id, in time order.
type Filled struct {
	Started []string `json:"started"`
	Existed []string `json:"existed"`
}

// Backfill starts the run of every time the schedule was due from from
// to to, both included, that has none: after an outage longer than the
// catch-up window, say. Each time is one run however often it is filled.
// to may not be in the future, and the range may hold at most
// MaxBackfill times. A run that cannot be started stops the backfill
// with what it did so far.
func (s *Scheduler) Backfill(ctx context.Context, name string, from, to time.Time) (Filled, error) {
	e, err := s.entry(name)
	if err != nil {
		return Filled{}, err
	}
	if now := s.cfg.Clock(); to.After(now) {
		return Filled{}, &RangeError{Detail: fmt.Sprintf("to, %s, is in the future: those times are the schedule's to start", to.UTC().Format(time.RFC3339))}
	}
	if to.Before(from) {
		return Filled{}, &RangeError{Detail: "to is before from"}
	}
	var times []time.Time
	for at := e.cron.Next(from.Add(-time.Second).In(e.loc)); !at.IsZero() && !at.After(to); at = e.cron.Next(at) {
		if len(times) == MaxBackfill {
			return Filled{}, &RangeError{Detail: fmt.Sprintf("the range holds more than %d times; fill it in parts", MaxBackfill)}
		}
		times = append(times, at)
	}
	return s.fill(ctx, e, times)
}

// Trigger starts the schedule's run for now, outside its calendar (the
// time in its id and input is now, to the second): a report asked for
// early. Triggered twice in one second, it starts one run. A schedule
// that does not overlap its runs is not triggered while its latest is
// going (OverlapError), unless force.
func (s *Scheduler) Trigger(ctx context.Context, name string, force bool) (Filled, error) {
	e, err := s.entry(name)
	if err != nil {
		return Filled{}, err
	}
	now := s.cfg.Clock().Truncate(time.Second)
	if !force {
		busy, err := s.overlapping(ctx, e, now)
		if err != nil {
			return Filled{}, err
		}
		if busy != "" {
			return Filled{}, &OverlapError{Name: name, Going: busy}
		}
	}
	return s.fill(ctx, e, []time.Time{now})
}

// OverlapError is a trigger of a schedule that does not overlap its
// runs while its latest is going.
type OverlapError struct{ Name, Going string }

func (e *OverlapError) Error() string {
	return "schedule " + e.Name + " runs one at a time, and its latest run, " + e.Going + ", is still going: force the trigger to start another beside it"
}

func (s *Scheduler) fill(ctx context.Context, e *entry, times []time.Time) (Filled, error) {
	f := Filled{Started: []string{}, Existed: []string{}}
	for _, at := range times {
		runID, outcome, err := s.start(ctx, e, at)
		switch outcome {
		case outcomeStarted:
			f.Started = append(f.Started, runID)
		case outcomeExisted:
			f.Existed = append(f.Existed, runID)
		default:
			return f, err
		}
	}
	return f, nil
}

// entry is the schedule named name.
func (s *Scheduler) entry(name string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.spec.Name == name {
			return e, nil
		}
	}
	return nil, &NotFoundError{Name: name}
}

// render makes the run id and input of a time due.
func (e *entry) render(due time.Time) (run runner.StartRequest, err error) {
	local := due.In(e.loc)
	values := jsontemplate.Values{Names: map[string]string{
		"$schedule": e.spec.Name,
		"$time":     due.UTC().Format(time.RFC3339),
		"$local":    local.Format("2006-01-02T15:04:05"),
		"$date":     local.Format(time.DateOnly),
	}}
	if run.RunID, err = e.runID.RenderString(values); err != nil {
		return run, err
	}
	if !cjson.ValidID(run.RunID) {
		return run, fmt.Errorf("the run id %q is not an id", run.RunID)
	}
	if run.Input, err = e.input.RenderCanonical(values); err != nil {
		return run, err
	}
	run.Labels = map[string]string{LabelKey: e.spec.Name}
	for k, t := range e.labels {
		if run.Labels[k], err = t.RenderString(values); err != nil {
			return run, fmt.Errorf("label %s: %w", k, err)
		}
	}
	if err := label.Check(run.Labels); err != nil {
		return run, err
	}
	run.By = e.by()
	return run, nil
}

// by is who the schedule's runs are started by.
func (e *entry) by() runner.Actor {
	return runner.Actor{Name: e.actor, Role: "agent", Capability: "run.start"}
}

func (s *Scheduler) count(e *entry, outcome string) {
	s.fires.WithLabelValues(e.spec.Name, outcome).Inc()
}

// Next is the spec's first time due after t, or why it has none.
func (s Spec) Next(t time.Time) (time.Time, error) {
	e, err := compile(s)
	if err != nil {
		return time.Time{}, err
	}
	return e.cron.Next(t.In(e.loc)), nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
