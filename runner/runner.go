package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/telemetry"
	"flrh.dev/flrh/tripwire"
)

// Config assembles a Runner. Store and Workflows are required; without
// Adapters the runner can inspect runs but fails any effect it would send.
type Config struct {
	Store     store.Store
	Workflows []Workflow
	Adapters  *effect.Registry
	// Machine is the run FSM; nil means control.Default().
	Machine *control.Machine
	// Contract is the loop contract (no-progress detection); nil means
	// control.DefaultContract().
	Contract *control.Contract
	// Owner names this runner in leases; it should be stable across
	// restarts of the same process slot.
	Owner string
	// LeaseTTL bounds how long a stalled runner can hold a run.
	LeaseTTL time.Duration
	// Parallelism bounds how many runs advance at once.
	Parallelism int
	// Poll is how often Run looks for work when nothing wakes it.
	Poll time.Duration
	// DeadlineSweep is how often Run also visits runs resting with nothing
	// to do, so that a run waiting for a person past its time budget times
	// out (by Clock); 0 means 30 seconds. A store that keeps runs' due
	// times (store.DueSetter) lists or hands out such a run when its time
	// comes instead, and Run makes no sweep.
	DeadlineSweep time.Duration
	// MaxTransitions is the per-run step budget (control transitions).
	MaxTransitions int64
	// Reconcile is the lookup plan for unknown outcomes.
	Reconcile effect.Plan
	// MaxAttempts caps the attempts of one intent below what the loop
	// contract allows (its retries per transition plus one); 0 leaves the
	// contract's number.
	MaxAttempts int64
	// MaxRetryAfter bounds how long a destination's ask (an HTTP
	// Retry-After on a 429 or 503) may stretch the wait before a retry:
	// the runner waits the contract's backoff or the destination's ask,
	// whichever is longer, the ask at most this. 0 means one minute; a
	// negative value ignores destinations' asks. The run's lease is renewed
	// while it waits.
	MaxRetryAfter time.Duration
	// Notices has each tick that leaves its run waiting for an approval,
	// a choice or a reconciliation, ends it, or freezes it on a tripwire
	// write a store.Notice with it, for a notifier to deliver
	// (notices.go). Off, nothing is written: a store no one delivers from
	// keeps none.
	Notices bool
	// NoticesWhenDelivered writes notices as Notices does while a
	// notifier delivers them from the store: while the store's notify
	// duty (store.NotifyDuty) is held. So a runner that delivers none
	// itself (a command line's, a server's without --notify) writes the
	// notices of the ticks it makes. The duty is read at most every
	// NoticeDutyCheck.
	NoticesWhenDelivered bool
	// Clock is the shell's clock (receipt times, approval checks, the
	// time budgets).
	Clock func() time.Time
	// Sleep waits out a retry backoff; nil means real time. Tests pass one
	// that advances their fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives structured logs; nil discards them. See observe.go
	// for what is logged at which level.
	Logger *slog.Logger
	// Tracer receives a span per tick with a child per phase; nil (or the
	// no-op provider) records nothing and costs nothing.
	Tracer trace.TracerProvider
	// Metrics receives the runner's counts; nil makes a set of its own
	// (Runner.Metrics returns it for a server to register).
	Metrics *telemetry.Metrics
	// Cut, when set, is called at named cut points (see CutPoints); fault
	// tests use it to kill the process exactly there.
	Cut func(point string)
	// PlatformDigest binds receipts to the build that produced them.
	PlatformDigest string
	// Claimer and Watcher, when set (by default: when Store implements
	// them), make Run claim batches of ready runs and wake on notifications
	// instead of polling every live run; see claim.go.
	Claimer store.Claimer
	Watcher store.WorkWatcher
	// Drain bounds how long Run lets passes in flight finish after its
	// context ends; then they are cancelled. Zero means half the lease
	// TTL.
	Drain time.Duration
	// LeaseStarts says that this runner advances the runs it starts
	// itself (Advance or AdvanceToIdle after Start, as a command that
	// starts a run and takes it to rest does): Start then creates a run
	// already leased to the runner, in one transaction where the store
	// offers it (store.LeasedCreator), one commit where CreateRun and the
	// first pass's AcquireLease took two. Until this runner lets the run
	// go (a pass that leaves it waiting for a person, Close) or the lease
	// lapses, no other runner advances it, and no claim (Claimer) takes
	// it: leave it unset where another process, or Run with a Claimer,
	// advances the runs this one starts.
	LeaseStarts bool
}

// CutPoints names the places where a crash is most dangerous; the fault
// tests kill the runner at each and prove recovery.
var CutPoints = []string{
	"before-intent-commit",       // the intent is decided but not durable
	"after-intent-commit",        // durable intent and attempt, nothing sent
	"after-apply-before-receipt", // the destination applied; no receipt yet
	"during-reconcile",           // an unknown outcome is being looked up
	"during-interrupt",           // a cancellation arrived during an effect
}

// Runner drives runs through the control FSM, calling the workflow's pure
// steps and the effect adapters, committing every tick atomically.
type Runner struct {
	cfg Config
	// notices caches whether a notifier delivers from the store
	// (Config.NoticesWhenDelivered).
	notices struct {
		sync.Mutex
		at time.Time
		on bool
	}
	machine *control.Machine
	// authorities is each machine event's first authority pair, which the
	// runner fires it under: read once at New rather than from a fresh
	// copy of the machine's event table per fired event.
	authorities map[string]control.AuthorityPair
	contract    *control.Contract
	workflows   map[string]Workflow
	definitions []string // the loaded workflows' digests, for claiming their runs only
	log         *slog.Logger
	wake        chan struct{}
	mu          sync.Mutex
	busy        map[string]bool
	// listing numbers the polling loop's listings of candidates, from 1;
	// passEnded holds, for a run whose pass ended since the listing before
	// the current one began, the number of the listing current when it
	// ended. A listing reads the store as of its start: a run whose pass
	// ended after that is listed as it was before the pass, and is left
	// to the next listing (claimListed).
	listing   uint64
	passEnded map[string]uint64
	leases    map[string]store.Lease // leases this runner holds, kept between passes
	// actsMade counts the inbound events this runner made; an act's number
	// goes into its inbox id (inboundID).
	actsMade atomic.Uint64
	// lapsing are leases this runner gave up on and leaves to lapse (a run
	// whose passes kept failing), so that no runner retries the run at
	// once; Close gives them back, as it does those held.
	lapsing  map[string]store.Lease
	cps      map[string]*cachedCheckpoint
	cpSpare  []*cachedCheckpoint       // entries taken from cps, for reuse (takeCached)
	carries  map[string]tripwire.Carry // what the wires remember of each run
	statuses statusCache               // what Inspect read from recent checkpoints
	// first holds the decisions StartWithUsage made on new runs' first
	// inputs, for the runs' first passes to take instead of deciding again;
	// at most maxFirstDecisions (a run another runner takes leaves its
	// entry until it is crowded out).
	first     map[string]*keptDecision
	obs       *observer
	lastSweep time.Time // when Run last visited every live run
	scratch   sync.Pool // a finished pass's *passScratch, for the next pass
}

// cachedCheckpoint is the checkpoint a pass ended with, kept while this
// runner holds the run's lease, so that the next pass need not read and
// re-verify it. It is valid only for the head and lease generation it was
// written at; anything else reads the store again.
type cachedCheckpoint struct {
	head, generation int64
	cp               *checkpoint
	run              store.Run // the header as the pass left it
	inboxEmpty       bool      // the pass left nothing pending in the inbox that it knew of
}

// New validates cfg and returns a Runner.
func New(cfg Config) (*Runner, error) {
	if cfg.Store == nil || len(cfg.Workflows) == 0 {
		return nil, errors.New("runner: a store and at least one workflow are required")
	}
	if cfg.Adapters == nil {
		cfg.Adapters = &effect.Registry{} // inspection only: any effect fails with no adapter
	}
	if cfg.Machine == nil {
		cfg.Machine = control.Default()
	}
	if cfg.Contract == nil {
		cfg.Contract = control.DefaultContract()
	}
	if cfg.Contract.MachineDigest != "" && cfg.Contract.MachineDigest != cfg.Machine.Digest() {
		return nil, errors.New("runner: the loop contract is bound to another FSM table")
	}
	if cfg.Owner == "" {
		cfg.Owner = "runner"
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 4
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.DeadlineSweep <= 0 {
		cfg.DeadlineSweep = 30 * time.Second
	}
	if cfg.MaxTransitions <= 0 {
		cfg.MaxTransitions = 10_000
	}
	if cfg.MaxAttempts < 0 {
		cfg.MaxAttempts = 0
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if c, ok := cfg.Store.(store.Claimer); ok && cfg.Claimer == nil {
		cfg.Claimer = c
	}
	if w, ok := cfg.Store.(store.WorkWatcher); ok && cfg.Watcher == nil {
		cfg.Watcher = w
	}
	if cfg.Drain <= 0 {
		cfg.Drain = cfg.LeaseTTL / 2
	}
	if cfg.PlatformDigest == "" {
		cfg.PlatformDigest = store.BodyDigest([]byte("flrh-platform/1"))
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{cfg: cfg, machine: cfg.Machine, contract: cfg.Contract, workflows: map[string]Workflow{}, log: log,
		wake: make(chan struct{}, 1), busy: map[string]bool{}, passEnded: map[string]uint64{}, leases: map[string]store.Lease{}, lapsing: map[string]store.Lease{},
		cps: map[string]*cachedCheckpoint{}, first: map[string]*keptDecision{}, carries: map[string]tripwire.Carry{}, obs: newObserver(cfg), lastSweep: cfg.Clock(),
		authorities: map[string]control.AuthorityPair{}}
	for _, e := range r.machine.Events() {
		if _, seen := r.authorities[e.ID]; !seen && len(e.Authority) > 0 {
			r.authorities[e.ID] = e.Authority[0]
		}
	}
	for _, wf := range cfg.Workflows {
		key := wf.ID() + "@" + wf.Version()
		if _, dup := r.workflows[key]; dup {
			return nil, fmt.Errorf("runner: workflow %s registered twice", key)
		}
		r.workflows[key] = wf
		r.definitions = append(r.definitions, wf.Digest())
		if c := r.contractFor(wf); c.MachineDigest != "" && c.MachineDigest != r.machine.Digest() {
			return nil, fmt.Errorf("runner: workflow %s brings a loop contract bound to another FSM table", key)
		}
	}
	return r, nil
}

// ErrDefinitionNotLoaded marks a run created under a definition of its
// workflow that this runner has not loaded (another definition of the same
// id and version, say). The runner leaves such a run alone — no lease, no
// write, no quarantine — for a runner that holds the definition. The error
// carries store.CodeLeaseHeld: as with a run another runner holds, the run
// is someone else's to advance.
var ErrDefinitionNotLoaded = errors.New("runner: the run's workflow definition is not loaded")

// workflow returns the loaded workflow a run was created under: its id and
// version, and, when the run records one, its definition digest.
func (r *Runner) workflow(run store.Run) (Workflow, error) {
	wf, ok := r.workflows[run.WorkflowID+"@"+run.WorkflowVersion]
	if !ok {
		return nil, fmt.Errorf("runner: run %s needs workflow %s@%s, which is not loaded", run.ID, run.WorkflowID, run.WorkflowVersion)
	}
	if run.WorkflowDigest != "" && run.WorkflowDigest != wf.Digest() {
		return nil, store.Errorf(store.CodeLeaseHeld, "advance", run.ID, ErrDefinitionNotLoaded,
			"created under definition %s of %s@%s; this process has loaded %s, so a process holding that definition must advance it",
			run.WorkflowDigest, run.WorkflowID, run.WorkflowVersion, wf.Digest())
	}
	return wf, nil
}

// Start creates a run of a workflow with its input (canonical JSON) and
// submits the input to its inbox, recorded as the runner's own. The run
// advances on the next pass. StartAs records who asked for it instead.
func (r *Runner) Start(ctx context.Context, runID, workflowID, version string, input []byte) error {
	return r.StartAs(ctx, runID, workflowID, version, input, Itself)
}

// Itself is who Start records a run's first input as: the runner, no
// person or agent having asked for the run.
var Itself = Actor{Name: "runner", Role: "runner", Capability: "run.start"}

// StartAs is Start with the run's first input recorded under the
// authenticated actor who asked for the run.
func (r *Runner) StartAs(ctx context.Context, runID, workflowID, version string, input []byte, by Actor) error {
	return r.StartWithUsage(ctx, runID, workflowID, version, input, Usage{}, by)
}

// StartWithUsage is StartAs with the first input's usage report, checked
// and charged as SubmitWithUsage does.
func (r *Runner) StartWithUsage(ctx context.Context, runID, workflowID, version string, input []byte, u Usage, by Actor) error {
	return r.StartRun(ctx, StartRequest{RunID: runID, WorkflowID: workflowID, Version: version, Input: input, Usage: u, By: by})
}

// StartRequest is a run StartRun is asked to start.
type StartRequest struct {
	RunID, WorkflowID, Version string
	// Input is the run's first input (JSON); Usage its usage report,
	// zero for none.
	Input []byte
	Usage Usage
	// By is who asked for the run, recorded with its first input.
	By Actor
	// Labels name what the run is for (package label), nil for none:
	// kept on the run's header, never in its evidence. A set label.Check
	// refuses is refused.
	Labels map[string]string
}

// StartRun is StartWithUsage with everything a run may be started with,
// its labels among them.
func (r *Runner) StartRun(ctx context.Context, req StartRequest) error {
	n, err := r.prepareStart(req)
	if err != nil {
		return err
	}
	return r.startPrepared(ctx, n)
}

// CheckStart reports what StartRun would refuse of req, writing nothing:
// an id that is no id, labels the rules refuse, a workflow not loaded, an
// input the workflow refuses (InputRefusedError) or cannot send. A
// schedule checks the run it would start before the first is due.
func (r *Runner) CheckStart(req StartRequest) error {
	_, err := r.prepareStart(req)
	return err
}

// newRun is a run Start is asked for, checked and not yet written: its
// header, its first input's inbox entry and the decision kept on that
// input (nil if none).
type newRun struct {
	run   store.Run
	input store.Inbound
	kept  *keptDecision
}

// prepareStart checks what Start is asked for and makes the new run of
// it, writing nothing.
func (r *Runner) prepareStart(req StartRequest) (newRun, error) {
	runID, workflowID, version, input, u, by := req.RunID, req.WorkflowID, req.Version, req.Input, req.Usage, req.By
	if err := u.Check(); err != nil {
		return newRun{}, err
	}
	if !cjson.ValidID(runID) {
		return newRun{}, fmt.Errorf("runner: invalid run id %q", runID)
	}
	if err := label.Check(req.Labels); err != nil {
		return newRun{}, fmt.Errorf("runner: run %s: %w", runID, err)
	}
	wf, ok := r.workflows[workflowID+"@"+version]
	if !ok {
		return newRun{}, fmt.Errorf("runner: no workflow %s@%s", workflowID, version)
	}
	body, v, err := startInput(input, u)
	if err != nil {
		return newRun{}, err
	}
	// The input's digest is the inbox entry's too when no usage is
	// reported beside it: one hashing serves both.
	digest, proof := store.ProveDigest(body)
	first, err := firstDecisionDigested(wf, runID, body, digest, u, by)
	if err != nil {
		return newRun{}, err
	}
	if first != nil {
		if err := r.checkSendable(wf, first.d); err != nil {
			return newRun{}, err
		}
	}
	if !u.zero() {
		if body, err = reportedBody(v, u); err != nil {
			return newRun{}, err
		}
		digest, proof = store.ProveDigest(body)
	}
	inbound := store.Inbound{ID: "input:1", RunID: runID, Kind: KindInput, ActorRole: by.Role,
		Actor: by.Name, Capability: by.Capability, Body: body, Digest: digest, Proof: proof}
	run := store.Run{ID: runID, WorkflowID: wf.ID(), WorkflowVersion: wf.Version(), WorkflowDigest: wf.Digest(), State: r.machine.InitialState(),
		Labels: maps.Clone(req.Labels)}
	return newRun{run: run, input: inbound, kept: first}, nil
}

// startPrepared is Start's write of what prepareStart made.
func (r *Runner) startPrepared(ctx context.Context, n newRun) error {
	runID := n.run.ID
	undo := r.noteTrigger(ctx, runID) // before the run exists: a runner may take it at once
	if n.kept != nil {
		r.keepFirst(runID, n.kept)
	}
	// The run and its input in one transaction: a runner that takes the
	// run at once finds the input waiting, and a crash leaves either both
	// or neither, never a run with nothing to start from.
	if err := r.create(ctx, n.run, n.input); err != nil {
		undo()
		r.takeFirst(runID)
		return err
	}
	r.Wake()
	return nil
}

// startInput is the canonical body of a new run's first input, checked
// by plainInput, and, when a usage report comes beside it (u not zero),
// the value the input decodes to, which the report's wrapper holds: the
// body is cjson.Canonicalize's. An input plainInputBytes vouches for (no
// report, canonical once its members are sorted, not a wrapper) is not
// decoded, and its value is nil; any other is decoded, and refused with
// the error decoding or plainInput gives.
func startInput(input []byte, u Usage) ([]byte, any, error) {
	if b, ok := plainInputBytes(input, u); ok {
		return b, nil, nil
	}
	return decodedInput(input)
}

// decodedInput is a first input canonicalized, decoded again and checked:
// what startInput does with an input its bytes alone cannot make a body.
func decodedInput(input []byte) ([]byte, any, error) {
	body, err := cjson.Canonicalize(input)
	if err != nil {
		return nil, nil, fmt.Errorf("runner: run input: %w", err)
	}
	v, err := cjson.Decode(body)
	if err != nil {
		return nil, nil, fmt.Errorf("runner: run input: %w", err)
	}
	if err := plainInput(v); err != nil {
		return nil, nil, err
	}
	return body, v, nil
}

// create writes a new run and its first input. A runner that advances
// the runs it starts itself (Config.LeaseStarts) creates the run already
// leased to itself when the store can (store.LeasedCreator): the run's
// first pass would acquire the lease at once anyway, and the one
// transaction is one commit (one log sync) where CreateRun and the pass's
// AcquireLease took two. The lease is kept as lease keeps one it
// acquires. The store itself is asked, not what it wraps: a wrapper that
// observes CreateRun and AcquireLease offers the one call only if it
// observes that too.
func (r *Runner) create(ctx context.Context, run store.Run, first store.Inbound) error {
	lc, ok := r.cfg.Store.(store.LeasedCreator)
	if !ok || !r.cfg.LeaseStarts {
		return r.cfg.Store.CreateRun(ctx, run, first)
	}
	l, err := lc.CreateRunLeased(ctx, run, r.cfg.Owner, r.cfg.LeaseTTL, first)
	if err != nil {
		// Nothing was written; any lease held on a run of that id (one
		// that already exists) stays as it was, as after CreateRun.
		return err
	}
	r.mu.Lock()
	r.leases[run.ID] = l
	r.mu.Unlock()
	return nil
}

// maxFirstDecisions bounds Runner.first.
const maxFirstDecisions = 256

// keepFirst keeps the decision on a new run's first input for the run's
// first pass, crowding out another run's when full.
func (r *Runner) keepFirst(runID string, k *keptDecision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.first[runID]; !ok && len(r.first) >= maxFirstDecisions {
		for id := range r.first {
			delete(r.first, id)
			break
		}
	}
	r.first[runID] = k
}

// takeFirst removes and returns the decision kept on the run's first
// input, nil when none is kept.
func (r *Runner) takeFirst(runID string) *keptDecision {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.first[runID]
	delete(r.first, runID)
	return k
}

// Close gives up every lease this runner holds, so that another runner (or
// another command) can take the runs over at once instead of after the
// leases lapse.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	held := r.leases
	r.leases = map[string]store.Lease{}
	for id, l := range r.lapsing {
		if _, ok := held[id]; !ok {
			held[id] = l
		}
	}
	clear(r.lapsing)
	r.mu.Unlock()
	var first error
	for _, l := range held {
		if err := r.cfg.Store.ReleaseLease(ctx, l); err != nil && first == nil && store.CodeOf(err) != store.CodeFenced {
			first = err
		}
	}
	return first
}

// lease returns a current lease on the run: the one this runner already
// holds when it is comfortably unexpired (no write at all), renewed when it
// is getting old, or newly acquired.
func (r *Runner) lease(ctx context.Context, runID string) (store.Lease, error) {
	r.mu.Lock()
	l, ok := r.leases[runID]
	r.mu.Unlock()
	now := r.cfg.Clock()
	if ok && l.ExpiresAt.After(now.Add(r.cfg.LeaseTTL/2)) {
		return l, nil
	}
	var err error
	old := l
	if ok && l.ExpiresAt.After(now) {
		l, err = r.cfg.Store.RenewLease(ctx, l, r.cfg.LeaseTTL)
	}
	if !ok || err != nil || !l.ExpiresAt.After(now) {
		l, err = r.cfg.Store.AcquireLease(ctx, runID, r.cfg.Owner, r.cfg.LeaseTTL)
	}
	if err != nil {
		if ok && unanswered(err) {
			// The store could not be asked (a busy database, a runner
			// shutting down): the lease held is still this runner's as far
			// as anyone knows, and stays known for Close to give up.
			r.mu.Lock()
			delete(r.cps, runID)
			r.mu.Unlock()
			return store.Lease{}, err
		}
		if ok {
			r.forgetLease(old)
		}
		return store.Lease{}, err
	}
	r.mu.Lock()
	r.leases[runID] = l
	r.mu.Unlock()
	return l, nil
}

// unanswered reports whether err says the store could not be asked (a
// busy database, a cancelled or expired context) rather than how the run
// stands.
func unanswered(err error) bool {
	return store.CodeOf(err) == store.CodeUnavailable || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// letGo releases lease l and forgets it, unless the store could not
// answer: the lease then stays known, for this runner's next pass of the
// run or Close to give up, instead of staying the store's until it lapses.
func (r *Runner) letGo(ctx context.Context, l store.Lease) error { return r.letGoSettled(ctx, l, 0) }

// letGoSettled is letGo that, with seq above 0 and a store that can,
// settles the run at inbox position seq in the same write (store.Settler):
// no runner is handed it again for the entries up to there, which its
// state does not take.
func (r *Runner) letGoSettled(ctx context.Context, l store.Lease, seq int64) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	if st, ok := store.SettlerOf(r.cfg.Store); ok && seq > 0 {
		err = st.Settle(ctx, l, seq, true)
	} else {
		err = r.cfg.Store.ReleaseLease(ctx, l)
	}
	if err != nil && unanswered(err) {
		return err
	}
	r.forgetLease(l)
	return err
}

// settleHeld settles a run this runner keeps leased at inbox position
// seq, when the store can. A lease the store says is no longer this
// runner's is forgotten; any other refusal leaves the run as it was,
// listed ready, and the next pass settles it again.
func (r *Runner) settleHeld(ctx context.Context, l store.Lease, seq int64) {
	st, ok := store.SettlerOf(r.cfg.Store)
	if !ok {
		return
	}
	switch err := st.Settle(context.WithoutCancel(ctx), l, seq, false); {
	case err == nil:
	case store.CodeOf(err) == store.CodeFenced || store.CodeOf(err) == store.CodeQuarantined:
		r.forgetLease(l)
	default:
		r.log.Warn("settle", "run_id", l.RunID, "err", err)
	}
}

// leaveToLapse forgets the lease held on runID for the passes, and keeps
// it for Close to give back (lapsing). Leases of the list that have lapsed
// by now are dropped from it.
func (r *Runner) leaveToLapse(runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Clock()
	for id, l := range r.lapsing {
		if !l.ExpiresAt.After(now) {
			delete(r.lapsing, id)
		}
	}
	if l, ok := r.leases[runID]; ok {
		r.lapsing[runID] = l
	}
	delete(r.leases, runID)
	delete(r.cps, runID)
}

// forget drops what this runner keeps of the run: the lease it holds and
// its cached checkpoint.
func (r *Runner) forget(runID string) {
	r.mu.Lock()
	delete(r.leases, runID)
	delete(r.cps, runID)
	r.mu.Unlock()
}

// forgetLease drops lease l, found stale or given up, and the run's cached
// checkpoint — but not a newer lease this runner holds on the run: a claim
// may have taken the run again while a pass ran past l (see runClaiming),
// and that lease is the run's current one, for the pass that goes on
// under it or for Close to give back. Forgotten, it would stay the
// store's until it lapsed, with no runner left that knows it.
func (r *Runner) forgetLease(l store.Lease) {
	r.mu.Lock()
	if held, ok := r.leases[l.RunID]; ok && held.Generation <= l.Generation {
		delete(r.leases, l.RunID)
	}
	delete(r.cps, l.RunID)
	r.mu.Unlock()
}

// forgetIfTakenOver forgets lease l (forgetLease) when err, from a write
// under it, says another runner holds the run now.
func (r *Runner) forgetIfTakenOver(l store.Lease, err error) {
	if c := store.CodeOf(err); c == store.CodeFenced || c == store.CodeLeaseHeld {
		r.forgetLease(l)
	}
}

// Wake asks Run to look for work now.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run advances live runs until ctx is done, at most Parallelism at once.
// It returns when ctx is cancelled and every in-flight advance has ended.
//
// With a Claimer it claims ready runs in batches instead (see runClaiming).
func (r *Runner) Run(ctx context.Context) error {
	if r.cfg.Claimer != nil {
		return r.runClaiming(ctx)
	}
	sem := make(chan struct{}, r.cfg.Parallelism)
	var wg sync.WaitGroup
	// Passes are not cancelled with ctx: a pass cut short in the middle
	// of a send leaves its effect's outcome unknown, for a lookup that
	// may come before the destination has applied it and so hand the
	// run to a person. On ctx's end no pass starts, and those in flight
	// have Drain to finish before they are cancelled.
	passCtx, cancelPasses := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPasses()
	// Deferred calls run last first: the passes in flight end before
	// Close gives up the leases, so none is taken or renewed after it.
	defer r.Close(context.WithoutCancel(ctx))
	defer r.drain(&wg, cancelPasses)
	var sweep []string // live runs the current deadline sweep has still to visit
	per := 0           // how many of them each pass visits
	for {
		listing := r.beginListing()
		ids, err := r.candidates(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Error("list live runs", "err", err)
		}
		if _, ok := store.ReadyListerOf(r.cfg.Store); ok && len(sweep) == 0 && r.sweepDue() {
			if sweep, err = r.cfg.Store.Live(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("list live runs", "err", err)
			}
			per = r.sweepPace(len(sweep))
		}
		// Runs with something to do go first; the sweep follows a slice at a
		// time, so a run someone just approved never waits behind a visit
		// to every resting run.
		n := min(per, len(sweep))
		ids, sweep = append(ids, sweep[:n]...), sweep[n:]
		relist := false // a run was left to the next listing
		for _, id := range ids {
			claimed, stale := r.claimListed(id, listing)
			if relist = relist || stale; !claimed {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				r.release(id)
				return nil
			}
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				defer func() { <-sem; r.release(id) }()
				if _, err := r.Advance(passCtx, id); errors.Is(err, ErrDefinitionNotLoaded) {
					// Another definition's run: left, untouched, to a runner
					// that holds it. Not a warning: it is listed every poll.
					r.log.Debug("advance: definition not loaded", "run_id", id, "err", err)
				} else if err != nil && passCtx.Err() == nil {
					r.log.Warn("advance", "run_id", id, "err", err)
				}
			}(id)
		}
		// A run left to the next listing may have work its pass did not
		// take (an input that came while it ran, whose wake this listing
		// consumed): the next listing comes at once.
		wait := r.cfg.Poll
		if relist {
			wait = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-time.After(wait):
		}
	}
}

// drain waits for the passes wg counts, cancelling them (cancel) once
// Drain has passed.
func (r *Runner) drain(wg *sync.WaitGroup, cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(r.cfg.Drain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.log.Warn("shutdown: cancelling passes still in flight")
		cancel()
		<-done
	}
}

// restingStates are where a run waits for outside input; a run resting
// there with an empty inbox has nothing to do.
var restingStates = []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}

// candidates lists the runs worth a pass: with a store that can tell, only
// live runs with pending inbox entries or mid-work states (Run adds the
// deadline sweep's share); otherwise every live run.
func (r *Runner) candidates(ctx context.Context) ([]string, error) {
	if rl, ok := store.ReadyListerOf(r.cfg.Store); ok {
		return rl.Ready(ctx, restingStates, r.dueBy())
	}
	return r.cfg.Store.Live(ctx)
}

// sweepPace is how many of a deadline sweep's runs each pass visits: enough
// to finish within half the sweep interval at one pass per Poll, and at
// least Parallelism. Spread out, a sweep over thousands of resting runs
// neither holds up runs with work to do nor takes the machine in bursts.
func (r *Runner) sweepPace(runs int) int {
	passes := int(r.cfg.DeadlineSweep / 2 / r.cfg.Poll)
	per := runs
	if passes > 1 {
		per = (runs + passes - 1) / passes
	}
	return max(per, r.cfg.Parallelism)
}

func (r *Runner) claim(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[id] {
		return false
	}
	r.busy[id] = true
	return true
}

func (r *Runner) release(id string) {
	r.mu.Lock()
	delete(r.busy, id)
	if r.listing > 0 {
		r.passEnded[id] = r.listing
	}
	r.mu.Unlock()
}

// beginListing numbers a listing of candidates the polling loop is about
// to read, and forgets the passes that ended before it began.
func (r *Runner) beginListing() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listing++
	for id, n := range r.passEnded {
		if n < r.listing {
			delete(r.passEnded, id)
		}
	}
	return r.listing
}

// claimListed is claim for a run the listing numbered listing found: it
// refuses a run whose pass ended after the listing began (stale), which
// the listing may show as it was before that pass (ready, where the pass
// settled it). The next listing reads it afresh.
func (r *Runner) claimListed(id string, listing uint64) (claimed, stale bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[id] {
		return false, false
	}
	if r.passEnded[id] >= listing {
		return false, true
	}
	r.busy[id] = true
	return true, false
}

// RunToIdle advances every live run until none can move without outside
// input, and returns the runs that ended. Runs created under a definition
// the runner has not loaded are left alone. It is what the demo and tests use
// instead of the background loop.
func (r *Runner) RunToIdle(ctx context.Context) error {
	return r.toIdle(ctx, func() ([]string, error) { return r.cfg.Store.Live(ctx) }, true)
}

// AdvanceToIdle advances the named runs, and only those, until none of
// them can move without outside input. A run whose definition the runner
// has not loaded is an error here: its caller named it.
func (r *Runner) AdvanceToIdle(ctx context.Context, ids []string) error {
	return r.toIdle(ctx, func() ([]string, error) { return ids, nil }, false)
}

// toIdle advances the runs list names, listed again before each pass,
// until a pass moves none; skipForeign passes over runs of a definition
// the runner has not loaded instead of failing on them.
func (r *Runner) toIdle(ctx context.Context, list func() ([]string, error), skipForeign bool) error {
	for pass := 0; pass < 1000; pass++ {
		ids, err := list()
		if err != nil {
			return err
		}
		moved := false
		for _, id := range ids {
			m, err := r.Advance(ctx, id)
			if skipForeign && errors.Is(err, ErrDefinitionNotLoaded) {
				continue // another definition's run, for a runner holding it
			} else if err != nil {
				return fmt.Errorf("run %s: %w", id, err)
			}
			moved = moved || m
		}
		if !moved {
			return nil
		}
	}
	return errors.New("runner: runs kept moving for 1000 passes")
}
