package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/examples"
	tamperdb "flrh.dev/flrh/internal/tamper"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/workflow"
	"pgregory.net/rapid"
)

// The kinds of run a history starts, each taking another path through
// the refund-agent or the ops-agent bundle.
const (
	kindSmall       = "small"       // a refund paid outright
	kindLarge       = "large"       // a refund that waits for finance-lead's approval
	kindBlocked     = "blocked"     // a refund to a payee on the block list: nothing is sent
	kindGoodwill    = "goodwill"    // contested gates open OPTIONS for a person's choice
	kindDiagnostic  = "diagnostic"  // a read-only probe, run outright
	kindRestart     = "restart"     // a restart that waits for oncall-lead's approval
	kindFrozen      = "frozen"      // a restart of a service under change freeze: nothing is sent
	kindOutside     = "outside"     // a restart through a destination outside the network: refused
	kindUnexplained = "unexplained" // a restart nobody explains: escalated to a person first
)

var kinds = []string{kindSmall, kindLarge, kindBlocked, kindGoodwill, kindDiagnostic, kindRestart, kindFrozen, kindOutside, kindUnexplained}

// neverSent reports whether a kind of run may never reach the destination.
func neverSent(kind string) bool {
	return kind == kindBlocked || kind == kindFrozen || kind == kindOutside
}

// modelRun is what the history did to one run, as far as the model needs
// it to say how the run may end.
type modelRun struct {
	id, key        string // the run and its effect's idempotency key
	kind           string
	wf             *bundle.Workflow
	approver       runner.Actor // who may approve its effect
	expect         []string     // what the applied request's body says
	denied         bool         // a denial was taken
	cancelled      bool         // a cancellation was taken
	abandoned      bool         // a person abandoned its effect
	failedByPerson bool         // a person reconciled its effect as failed
	// junk counts acts taken that cannot move the run (a choice of
	// nothing offered, a malformed request): enough of them end it for
	// want of progress, as the loop contract says.
	junk int
	// steered is set once a person's transition of deliberation (a pause,
	// an exit, an escalation, ...) was taken: the run may then rest or end
	// where that leaves it.
	steered bool
	resumed bool   // the answers resumed its deliberation
	refusal string // why its last refused act was refused
	// started is the clock reading it started at: it cannot have rested
	// longer than the clock moved since.
	started time.Time
}

// lookups is an adapter whose lookups can be made to answer "still
// unknown", as a destination that cannot be reached would; its requests
// go to the sandbox as they are.
type lookups struct {
	effect.Adapter
	down *atomic.Bool
}

func (l lookups) Lookup(ctx context.Context, key, contentDigest string) (effect.LookupResult, error) {
	if l.down.Load() {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "UNREACHABLE"}, nil
	}
	return l.Adapter.Lookup(ctx, key, contentDigest)
}

// history is one drawn history: a store, a destination, the runners that
// take turns on it and what the model knows.
type history struct {
	t            *rapid.T
	st           store.Store // the store as it is, for the runners and verify
	hs           historyStore
	sb           *sandbox.Sandbox
	refunds, ops *bundle.Workflow
	clock        *stepClock
	down         atomic.Bool
	runs         []*modelRun
	acts         map[string]int // how often each act was taken or refused, and each fault
	// racing is set when runner loops of their own advance the runs beside
	// the history's acts: what a refused act leaves is then not the
	// history's alone to compare.
	racing bool
	// failing is set once the destination was told to fail requests: a run
	// may then fail for good when its attempts run out.
	failing bool
	// budget is the runs' suspended-time budget when the draw gave the
	// bundles a short one (zero: the bundles' own day, which no history
	// reaches).
	budget time.Duration
	// quiet is set once the racing loops have stopped: nothing but the
	// history's own runner moves the runs from then on.
	quiet bool
}

var (
	financeLead = runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	oncallLead  = runner.Actor{Name: "oncall-lead", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	denyingLead = runner.Actor{Name: "finance-lead", Role: "human_approver", Capability: "approval.deny"}
	stranger    = runner.Actor{Name: "mallory", Role: "human_approver", Capability: "approval.grant_exact_hash"}
	chooserOp   = runner.Actor{Name: "olga", Role: "operator", Capability: "mrp.choose_option"}
	reconcilerP = runner.Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.confirm_external"}
	abandonerP  = runner.Actor{Name: "bob", Role: "human_reconciler", Capability: "receipt.abandon_unknown"}
	requesterP  = runner.Actor{Name: "carol", Role: "authorized_requester", Capability: "run.cancel"}
)

// registry sends the bundles' effects to the sandbox.
func (h *history) registry() *effect.Registry {
	reg := &effect.Registry{}
	for _, et := range []string{"refund.pay", "diag.read", "service.restart"} {
		if err := reg.Register(et, "http/1", lookups{h.sb.Adapter(), &h.down}); err != nil {
			h.t.Fatal(err)
		}
	}
	return reg
}

func (h *history) runner(cut func(string)) *runner.Runner { return h.runnerAs("runner-1", cut) }

// runnerAs is a runner of the history's bundles under the lease owner
// name owner, that may stop dead at cut (nil: never).
func (h *history) runnerAs(owner string, cut func(string)) *runner.Runner {
	r, err := runner.New(runner.Config{Store: h.st, Workflows: []runner.Workflow{h.refunds, h.ops}, Adapters: h.registry(), Owner: owner,
		Cut: cut, Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// idle runs every run as far as it goes, with a runner that may stop
// dead at cut (nil: never).
func (h *history) idle(cut string) {
	var f func(string)
	if cut != "" {
		f = func(p string) {
			if p == cut {
				panic(crashed(p))
			}
		}
	}
	r := h.runner(f)
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil && p != crashed(cut) {
				h.t.Fatalf("the runner panicked: %v", p)
			}
		}()
		err = r.RunToIdle(ctx)
	}()
	if err != nil {
		h.t.Fatalf("running to idle: %v", err)
	}
	if cut == "" && (!h.racing || h.quiet) {
		h.noneReadyAtRest()
	}
}

// noneReadyAtRest holds the runs, each as far as it goes, to not being
// ready while they rest: a run resting with entries its state does not
// take was settled by its pass, and no runner is handed it again until
// something it takes arrives; a run that rested past its budget was timed
// out by the pass, so none is due at the clock's reading.
func (h *history) noneReadyAtRest() {
	rl, ok := store.ReadyListerOf(h.st)
	if !ok {
		return
	}
	resting := []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}
	ids, err := rl.Ready(ctx, resting, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, id := range ids {
		run, err := h.st.Run(ctx, id)
		if err != nil {
			h.t.Fatal(err)
		}
		if slices.Contains(resting, run.State) {
			in, _ := h.st.Inbox(ctx, id, true)
			h.t.Fatalf("%s rests in %s with %d entries pending, due at %s (the clock reads %s), and is listed ready",
				id, run.State, len(in), run.DueAt.Format(time.RFC3339Nano), h.clock.Now().Format(time.RFC3339Nano))
		}
		h.acts["ready after idle in "+run.State]++
	}
	h.dueWithinBudget(resting)
}

// dueWithinBudget holds every run resting after a pass to a due time
// within its budget of the clock's reading: it has not rested less than
// nothing, so what is left of its budget is at most the whole, and it is
// due the first millisecond past that. Only a run whose timeout waits for
// its effect to be reconciled is due never, and none is due yet: the
// pass timed out every run that was.
func (h *history) dueWithinBudget(resting []string) {
	budget := h.budget
	if budget == 0 {
		budget = 24 * time.Hour
	}
	now := h.clock.Now()
	for _, m := range h.runs {
		run, err := h.st.Run(ctx, m.id)
		if err != nil {
			h.t.Fatal(err)
		}
		if run.Outcome != "" || !slices.Contains(resting, run.State) {
			continue
		}
		switch {
		case run.DueAt.IsZero() && !(run.State == "HUMAN_RECONCILIATION" && h.fired(m.id, "TIMEOUT")):
			h.t.Fatalf("%s (%s) rests in %s, due never: %s", m.id, m.kind, run.State, h.describe(m.id))
		case !run.DueAt.IsZero() && !run.DueAt.After(now):
			h.t.Fatalf("%s (%s) rests in %s past its budget, due at %s (the clock reads %s)",
				m.id, m.kind, run.State, run.DueAt.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
		case run.DueAt.After(now.Add(budget + time.Millisecond)):
			h.t.Fatalf("%s (%s) rests in %s, due at %s: more than its budget of %s past the clock's %s",
				m.id, m.kind, run.State, run.DueAt.Format(time.RFC3339Nano), budget, now.Format(time.RFC3339Nano))
		case run.DueAt.IsZero():
			h.acts["timeout deferred in HUMAN_RECONCILIATION"]++
		default:
			h.acts["due within "+budget.String()]++
		}
	}
}

// settle waits for the racing loops to time out every run resting past
// its budget, as they must on their own: the store lists a run once it is
// due, and a loop claims it. Their passes move the clock, so more runs may
// come due as it waits; what must come is a moment when none is. A run
// the history's own runner left leased when it stopped dead waits for its
// lease to run out, and the clock may not move that far while nothing
// else is to be done.
func (h *history) settle() {
	resting := []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		now, due := h.clock.Now(), ""
		for _, m := range h.runs {
			run, err := h.st.Run(ctx, m.id)
			if err != nil {
				h.t.Fatal(err)
			}
			held := run.Lease.Owner == "runner-1" && now.Before(run.Lease.ExpiresAt)
			if run.Outcome == "" && slices.Contains(resting, run.State) && !run.DueAt.IsZero() && !run.DueAt.After(now) && !held {
				due = m.id
				break
			}
		}
		if due == "" {
			h.acts["settled"]++
			return
		}
		if h.acts["settle waited"]++; time.Now().After(deadline) {
			h.t.Fatalf("the runner loops left %s resting past its due time for 20 s (the clock reads %s): %s",
				due, now.Format(time.RFC3339Nano), h.describe(due))
		}
		time.Sleep(time.Millisecond)
	}
}

// loops runs a runner loop for each owner until the returned stop is
// called (once or more), which waits for every loop to return and holds
// it to returning cleanly and letting go of its leases.
func (h *history) loops(owners ...string) (stop func()) {
	lctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, len(owners))
	reg := h.registry()
	for _, owner := range owners {
		r, err := runner.New(runner.Config{Store: h.st, Workflows: []runner.Workflow{h.refunds, h.ops}, Adapters: reg, Owner: owner,
			Poll: time.Millisecond, Reconcile: effect.Plan{Backoff: []time.Duration{0}}, Clock: h.clock.Now, Sleep: h.clock.Sleep})
		if err != nil {
			h.t.Fatal(err)
		}
		go func() { errs <- r.Run(lctx) }()
	}
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for range owners {
			if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
				h.t.Fatalf("a runner loop: %v", err)
			}
		}
		for _, m := range h.runs {
			run, err := h.st.Run(ctx, m.id)
			if err != nil {
				h.t.Fatal(err)
			}
			if run.Outcome == "" && run.Lease.Owner != "" && run.Lease.Owner != "runner-1" && h.clock.Now().Before(run.Lease.ExpiresAt) {
				h.t.Fatalf("%s: %s stopped and still holds its lease (generation %d) until %s", m.id, run.Lease.Owner, run.Lease.Generation, run.Lease.ExpiresAt)
			}
		}
	}
}

// crashed is what a cut point panics with to stop a runner where it
// stands.
type crashed string

// fingerprint is what a refused act must leave as it was: the run's
// header, its inbox and the approvals ledger.
func (h *history) fingerprint(id string) string {
	run, err := h.st.Run(ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	inbox, err := h.st.Inbox(ctx, id, false)
	if err != nil {
		h.t.Fatal(err)
	}
	grants, err := h.hs.grants()
	if err != nil {
		h.t.Fatal(err)
	}
	return fmt.Sprintf("%+v inbox=%d grants=%d mutations=%d", run, len(inbox), grants, len(h.sb.Mutations()))
}

// act takes a person's act on run m and holds a refusal to its promise:
// a typed error, and nothing changed.
func (h *history) act(name string, m *modelRun, do func(r *runner.Runner) error) bool {
	before := h.fingerprint(m.id)
	err := do(h.runner(nil))
	if err == nil {
		h.acts[name+" taken"]++
		return true
	}
	// Racing runners, a store may lose a write race too often and say so
	// (CodeUnavailable: nothing was written, retry); the act is then
	// refused like any other and must have changed nothing.
	busy := h.racing && store.CodeOf(err) == store.CodeUnavailable
	if !refusedForAReason(err) && !busy {
		h.t.Fatalf("%s on %s: an untyped refusal: %v", name, m.id, err)
	}
	if busy {
		h.acts[name+" busy"]++
	}
	if after := h.fingerprint(m.id); after != before && !h.racing {
		h.t.Fatalf("%s on %s was refused (%v) and changed the run:\nbefore %s\nafter  %s", name, m.id, err, before, after)
	}
	h.acts[name+" refused"]++
	m.refusal = name + ": " + err.Error()
	return false
}

// refusedForAReason reports whether err is one of the typed refusals a
// person's act may meet: not waiting, ended, an approver refused, an input
// refused.
func refusedForAReason(err error) bool {
	var nw *runner.NotWaitingError
	var ended *runner.EndedError
	var who *runner.ApproverRefusedError
	var bad *runner.InputRefusedError
	return errors.As(err, &nw) || errors.As(err, &ended) || errors.As(err, &who) || errors.As(err, &bad)
}

func (h *history) status(id string) runner.Status {
	s, err := h.runner(nil).Inspect(ctx, id)
	if err != nil {
		h.t.Fatalf("inspect %s: %v", id, err)
	}
	return s
}

func (h *history) view(s runner.Status) workflow.View {
	v, _ := s.View.(workflow.View)
	return v
}

// mutations returns the destination's mutations under key.
func (h *history) mutations(key string) []sandbox.Mutation {
	var out []sandbox.Mutation
	for _, m := range h.sb.Mutations() {
		if m.IdempotencyKey == key {
			out = append(out, m)
		}
	}
	return out
}

// checkAll verifies and replays every run: whatever a history did, the
// record must hold.
func (h *history) checkAll(after string) {
	for _, m := range h.runs {
		rep, rp, err := Check(ctx, h.st, nil, m.wf, m.id)
		if err != nil {
			h.t.Fatalf("after %s: checking %s: %v", after, m.id, err)
		}
		if !rep.OK() || !rp.OK() {
			h.t.Fatalf("after %s: %s does not verify: %+v %+v", after, m.id, rep.Findings, rp.Findings)
		}
	}
}

// Any history of runs of the refund-agent bundle — refunds of every kind,
// people's acts valid and not, destinations that fail, apply and drop the
// answer or cannot be asked, runners killed at any cut point, the clock
// moving past leases and, under a short suspended-time budget, past the
// runs' budgets — keeps the runtime's promises at every step and at its
// end:
//
//   - no panic; a refused act is a typed error and changes nothing;
//   - every run verifies and replays byte for byte after every step;
//   - a run resting after a pass is due within its budget and not yet:
//     a pass times out every run past it, and so do runner loops on
//     their own; a run times out only once the clock has moved its
//     budget since it started;
//   - the destination applies a run's refund at most once, exactly as
//     asked, never for a run that was denied or blocked;
//   - once people answer what the runs wait on (approving, choosing,
//     reconciling from what the destination says), every run ends, and it
//     ends SUCCEEDED exactly when its refund was applied, where the model
//     of what the history did allows it.
func TestAnyHistoryKeepsThePromises(t *testing.T) {
	if testing.Short() {
		t.Skip("a store and runs per draw")
	}
	clock := &stepClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	checkHistories(t, clock, false, sqliteHistories(t, clock))
}

// sqliteHistories opens a SQLite store of its own on clock for each draw.
func sqliteHistories(t *testing.T, clock *stepClock) func(draw int) historyStore {
	return func(draw int) historyStore {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("h%d.db", draw)), sqlite.Options{Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return historyStore{Store: st, close: func() { st.Close() }, grants: func() (n int, err error) {
			return n, st.DB().QueryRow(`SELECT count(*) FROM approvals`).Scan(&n)
		}}
	}
}

// On PostgreSQL as on SQLite: the draws share one schema, each with runs
// of its own.
func TestAnyHistoryKeepsThePromisesOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs per draw")
	}
	clock := &stepClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	checkHistories(t, clock, false, postgresHistories(t, clock))
}

// postgresHistories opens a PostgreSQL store in a schema of its own on
// clock, dropped when the test ends, and gives each draw a prefix for its
// runs; it skips the test when FLRH_TEST_POSTGRES is unset.
func postgresHistories(t *testing.T, clock *stepClock) func(draw int) historyStore {
	st, schema := postgresStoreWith(t, postgres.Options{Clock: clock.Now})
	return func(draw int) historyStore {
		return historyStore{Store: st, prefix: fmt.Sprintf("d%d-", draw), close: func() {}, grants: func() (n int, err error) {
			return n, st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+schema+`.approvals`).Scan(&n)
		}}
	}
}

// With runner loops racing the history's acts and its own runner, on
// SQLite and on PostgreSQL.
func TestAnyHistoryWithRunnersRacingKeepsThePromises(t *testing.T) {
	if testing.Short() {
		t.Skip("a store and runs per draw")
	}
	clock := &stepClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	checkHistories(t, clock, true, sqliteHistories(t, clock))
}

func TestAnyHistoryWithRunnersRacingKeepsThePromisesOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs per draw")
	}
	clock := &stepClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	checkHistories(t, clock, true, postgresHistories(t, clock))
}

// exampleAgents loads the refund-agent and ops-agent bundles whose runs
// the histories draw.
func exampleAgents(t *testing.T) (refunds, ops *bundle.Workflow) {
	refunds, _ = refundAgent(t)
	ops, _, err := bundle.LoadExample("ops-agent")
	if err != nil {
		t.Fatal(err)
	}
	return refunds, ops
}

// agents is a pair of the bundles a history's runs are drawn from.
type agents struct{ refunds, ops *bundle.Workflow }

// budgetedAgents returns the example bundles as they are (under zero)
// and, under each of budgets, with a loop section giving them that
// suspended-time budget instead of the contract's day.
func budgetedAgents(t *testing.T, budgets ...time.Duration) map[time.Duration]agents {
	refunds, ops := exampleAgents(t)
	out := map[time.Duration]agents{0: {refunds, ops}}
	for _, b := range budgets {
		out[b] = agents{budgeted(t, "refund-agent", b), budgeted(t, "ops-agent", b)}
	}
	return out
}

// budgeted loads the example bundle name with a suspended-time budget of
// b, written into its workflow.json as a user would.
func budgeted(t *testing.T, name string, b time.Duration) *bundle.Workflow {
	fsys, err := examples.Bundle(name)
	if err != nil {
		t.Fatal(err)
	}
	files := fstest.MapFS{}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = &fstest.MapFile{Data: data}
	}
	var manifest map[string]json.RawMessage
	if err := json.Unmarshal(files["workflow.json"].Data, &manifest); err != nil {
		t.Fatal(err)
	}
	manifest["loop"] = json.RawMessage(fmt.Sprintf(`{"budgets":{"suspended_seconds":%d}}`, int64(b/time.Second)))
	if files["workflow.json"].Data, err = json.Marshal(manifest); err != nil {
		t.Fatal(err)
	}
	wf, _, err := bundle.LoadFS(files)
	if err != nil {
		t.Fatalf("%s with a suspended budget of %s: %v", name, b, err)
	}
	if got := wf.LoopContract().Budgets.Limits.SuspendedSeconds; got != int64(b/time.Second) {
		t.Fatalf("%s with a suspended budget of %s runs under %d s", name, b, got)
	}
	return wf
}

// newHistory is a draw's history on hs, with a destination of its own,
// counting acts into acts.
func newHistory(t *testing.T, rt *rapid.T, hs historyStore, refunds, ops *bundle.Workflow, clock *stepClock, acts map[string]int) *history {
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &history{t: rt, st: hs.Store, hs: hs, sb: sb, refunds: refunds, ops: ops, clock: clock, acts: acts}
}

// historyStore is the store a draw's history runs on. The store itself
// is handed to the runners and to verify as it is, not wrapped, so that
// they find the interfaces it implements beside store.Store (claims,
// ready lists, one-read records).
type historyStore struct {
	store.Store
	prefix string              // names the draw's runs apart from earlier draws' in a store they share
	grants func() (int, error) // the approvals ledger's rows
	close  func()
}

// checkHistories draws histories on the stores open gives, one a draw,
// all on clock.
//
// racing, two runner loops (runner-a and runner-b, Run as a server runs
// it) advance the runs beside the history's acts and its own runner,
// taking runs over from each other whenever the clock moves past a lease;
// they are stopped, and must let go of what they hold, before people give
// their last answers.
func checkHistories(t *testing.T, clock *stepClock, racing bool, open func(draw int) historyStore) {
	// Most draws keep the bundles' day; the others give them a budget the
	// clock passes within a history (it moves up to 300 s), so that runs
	// resting for people time out while runners race and crash.
	bundles := budgetedAgents(t, 8*time.Second, 30*time.Second)
	acts := map[string]int{}
	outcomes := map[string]int{}
	draws := 0
	tamperdb.FewerChecksUnderRace(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		hs := open(draws)
		defer hs.close()
		budget := rapid.SampledFrom([]time.Duration{0, 0, 8 * time.Second, 30 * time.Second}).Draw(rt, "suspended budget")
		h := newHistory(t, rt, hs, bundles[budget].refunds, bundles[budget].ops, clock, acts)
		h.racing, h.budget = racing, budget
		stop := func() {}
		if racing {
			stop = h.loops("runner-a", "runner-b")
		}
		defer stop()
		pick := func(label string) *modelRun {
			return h.runs[rapid.IntRange(0, len(h.runs)-1).Draw(rt, label)]
		}
		var elapsed time.Duration
		steps := rapid.IntRange(1, 24).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			what := "start"
			if len(h.runs) > 0 {
				what = rapid.SampledFrom([]string{"start", "approve", "approve-stale", "approve-stranger", "deny", "choose",
					"choose-nothing", "cancel", "reconcile", "submit", "control", "fault-503", "fault-drop", "lookups", "crash", "idle", "clock", "clock", "settle"}).Draw(rt, "act")
			}
			switch what {
			case "start":
				n := len(h.runs)
				m := &modelRun{id: fmt.Sprintf("%srun-%d", hs.prefix, n), kind: rapid.SampledFrom(kinds).Draw(rt, "kind"), started: clock.Now()}
				var in []byte
				switch m.kind {
				case kindSmall, kindLarge, kindBlocked, kindGoodwill:
					amount, payee, reason := rapid.IntRange(1, 100).Draw(rt, "small amount"), fmt.Sprintf("payee-%d", n), "damaged item"
					switch m.kind {
					case kindLarge:
						amount = rapid.IntRange(101, 5000).Draw(rt, "large amount")
					case kindBlocked:
						payee = "mallory"
					case kindGoodwill:
						reason = "goodwill"
					}
					m.wf, m.approver = h.refunds, financeLead
					m.expect = []string{fmt.Sprintf(`"amount":%d`, amount), fmt.Sprintf(`"payee":%q`, payee)}
					in, _ = json.Marshal(map[string]any{"type": "refund.requested/1", "payload": map[string]any{
						"refund_id": fmt.Sprintf("r-%s%d", hs.prefix, n), "amount": amount, "payee": payee, "reason": reason}})
				case kindDiagnostic:
					m.wf, m.approver = h.ops, oncallLead
					check := fmt.Sprintf("chk-%s%d", hs.prefix, n)
					m.expect = []string{fmt.Sprintf(`"check_id":%q`, check)}
					in, _ = json.Marshal(map[string]any{"type": "diagnostics.requested/1", "payload": map[string]any{
						"check_id": check, "service": "api", "target": "dest:ops-api", "probe": "health"}})
				default:
					service, target, reason := "api", "dest:ops-api", "memory leak"
					switch m.kind {
					case kindFrozen:
						service, target = "billing", "dest:ops-billing"
					case kindOutside:
						target = "dest:elsewhere"
					case kindUnexplained:
						reason = "unknown"
					}
					m.wf, m.approver = h.ops, oncallLead
					restart := fmt.Sprintf("rst-%s%d", hs.prefix, n)
					m.expect = []string{fmt.Sprintf(`"restart_id":%q`, restart), fmt.Sprintf(`"service":%q`, service)}
					in, _ = json.Marshal(map[string]any{"type": "restart.requested/1", "payload": map[string]any{
						"restart_id": restart, "service": service, "target": target, "reason": reason}})
				}
				if err := h.runner(nil).Start(ctx, m.id, m.wf.ID(), m.wf.Version(), in); err != nil {
					rt.Fatalf("start %s: %v", m.id, err)
				}
				h.runs = append(h.runs, m)
				if rapid.Bool().Draw(rt, "advance now") {
					h.idle("")
				}
			case "approve", "approve-stale", "approve-stranger":
				m := pick("run")
				req := ""
				if w := h.status(m.id).Waiting; len(w) > 0 {
					req = w[0].RequestID
				}
				by := m.approver
				switch what {
				case "approve-stale":
					req = "approval:" + m.id + "-elsewhere"
				case "approve-stranger":
					by = stranger
				}
				// A grant may expire before the run takes it (the clock moves
				// up to 40 seconds a step).
				ttl := rapid.SampledFrom([]time.Duration{10 * time.Second, time.Hour}).Draw(rt, "ttl")
				h.act(what, m, func(r *runner.Runner) error { return r.Approve(ctx, m.id, req, by, ttl) })
			case "deny":
				m := pick("run")
				req := ""
				if w := h.status(m.id).Waiting; len(w) > 0 {
					req = w[0].RequestID
				}
				if h.act(what, m, func(r *runner.Runner) error { return r.Deny(ctx, m.id, req, "not this one", denyingLead) }) {
					m.denied = true
				}
			case "choose", "choose-nothing":
				m := pick("run")
				prop, opt := "proposal:none", "path:none"
				if offers := h.view(h.status(m.id)).Offers; len(offers) > 0 && what == "choose" {
					prop, opt = offers[0].ProposalID, rapid.SampledFrom(offers[0].Options).Draw(rt, "option")
				}
				if h.act(what, m, func(r *runner.Runner) error { return r.Choose(ctx, m.id, prop, opt, chooserOp) }) && prop == "proposal:none" {
					m.junk++
				}
			case "cancel":
				m := pick("run")
				if h.act(what, m, func(r *runner.Runner) error { return r.Cancel(ctx, m.id, "changed my mind", requesterP) }) {
					m.cancelled = true
				}
			case "reconcile":
				m := pick("run")
				intent := "intent:none"
				if u := h.status(m.id).Unknown; len(u) > 0 {
					intent = u[0]
				}
				// The truth as the destination tells it, an abandonment, or
				// an abandonment by a reconciler who may only confirm (the
				// run refuses and audits it, and goes on waiting).
				resolution := rapid.SampledFrom([]string{"truth", "abandon", "abandon-unentitled"}).Draw(rt, "resolution")
				by := reconcilerP
				switch resolution {
				case "truth":
					resolution = "confirmed_failure"
					if h.appliedFor(m) {
						resolution = "confirmed_success"
					}
				case "abandon":
					by = abandonerP
				case "abandon-unentitled":
					resolution = "abandon"
				}
				if h.act(what, m, func(r *runner.Runner) error { return r.Reconcile(ctx, m.id, intent, resolution, by) }) {
					m.abandoned = m.abandoned || by == abandonerP
					m.failedByPerson = m.failedByPerson || resolution == "confirmed_failure"
				}
			case "submit":
				m := pick("run")
				if h.act(what, m, func(r *runner.Runner) error {
					return r.Submit(ctx, m.id, []byte(`{"type":"refund.requested/1","payload":{"refund_id":"again"}}`), requesterP)
				}) {
					m.junk++
				}
			case "control":
				m := pick("run")
				trigger := rapid.SampledFrom([]mrp.Trigger{mrp.Pause, mrp.Resume, mrp.HumanExit, mrp.HumanEscalate, mrp.RejectAll, mrp.RequestTest}).Draw(rt, "trigger")
				capability, _ := mrp.RequiredCapability(trigger)
				if rapid.Bool().Draw(rt, "unentitled") {
					capability = "mrp.pause"
					if trigger == mrp.Pause {
						capability = "mrp.exit"
					}
				}
				prop := ""
				if offers := h.view(h.status(m.id)).Offers; len(offers) > 0 && rapid.Bool().Draw(rt, "about a proposal") {
					prop = offers[0].ProposalID
				}
				by := runner.Actor{Name: "olga", Role: "operator", Capability: capability}
				if h.act(what, m, func(r *runner.Runner) error { return r.Control(ctx, m.id, string(trigger), prop, "steered", by) }) {
					m.steered = true
				}
			case "fault-503":
				times := rapid.IntRange(1, 3).Draw(rt, "failures")
				if err := h.sb.Inject(sandbox.Fault{Times: int64(times), Status: 503}); err != nil {
					t.Fatal(err)
				}
				h.failing = true
			case "fault-drop":
				if err := h.sb.Inject(sandbox.Fault{Times: 1, Drop: true}); err != nil {
					t.Fatal(err)
				}
			case "lookups":
				h.down.Store(!h.down.Load())
			case "crash":
				h.idle(rapid.SampledFrom(runner.CutPoints).Draw(rt, "cut point"))
			case "idle":
				h.idle("")
			case "settle":
				if h.racing {
					h.settle()
				}
			case "clock":
				d := time.Duration(rapid.IntRange(1, 40).Draw(rt, "seconds")) * time.Second
				if elapsed+d < 300*time.Second {
					elapsed += d
					clock.Advance(d)
				}
			}
			if !strings.HasPrefix(what, "approve") && !strings.HasPrefix(what, "choose") && what != "deny" && what != "cancel" && what != "reconcile" && what != "submit" && what != "control" {
				acts[what]++
			}
			h.learnKeys()
			h.checkAll(what)
		}

		// People answer what the runs wait on, from what they see and what
		// the destination says, until nothing moves.
		stop()
		h.quiet = true
		h.sb.ClearFaults()
		h.down.Store(false)
		var last []string // what the last round answered, and where
		for round := 0; ; round++ {
			if round == 8 {
				rt.Fatalf("the runs still move after %d rounds of answers; the last answered %s", round, strings.Join(last, "\n"))
			}
			h.idle("")
			h.learnKeys()
			answered := false
			last = last[:0]
			// A person answers again a moment later: the same act at the
			// same clock reading is the same act (a resubmission, taken
			// once), and a choice the run refused would be "taken" again
			// without reaching it.
			clock.Advance(time.Millisecond)
			for _, m := range h.runs {
				s := h.status(m.id)
				if s.Run.Outcome != "" {
					continue
				}
				was := answered
				answered = false
				for _, w := range s.Waiting {
					answered = h.act("approve", m, func(r *runner.Runner) error { return r.Approve(ctx, m.id, w.RequestID, m.approver, time.Hour) }) || answered
				}
				for _, u := range s.Unknown {
					res := "confirmed_failure"
					if h.appliedFor(m) {
						res = "confirmed_success"
					}
					if h.act("reconcile", m, func(r *runner.Runner) error { return r.Reconcile(ctx, m.id, u, res, reconcilerP) }) {
						answered = true
						m.failedByPerson = m.failedByPerson || res == "confirmed_failure"
					}
				}
				v := h.view(s)
				for _, o := range v.Offers {
					answered = h.act("choose", m, func(r *runner.Runner) error { return r.Choose(ctx, m.id, o.ProposalID, o.Options[0], chooserOp) }) || answered
				}
				// Deliberation a person paused or escalated is resumed by
				// one, once.
				if (v.MRPState == string(mrp.Hold) || v.MRPState == string(mrp.Escalate)) && !m.resumed {
					m.resumed = true
					answered = h.act("resume", m, func(r *runner.Runner) error {
						return r.Control(ctx, m.id, string(mrp.Resume), "", "answered", runner.Actor{Name: "olga", Role: "operator", Capability: "mrp.resume"})
					}) || answered
				}
				if answered {
					last = append(last, m.id+" ("+m.kind+"): "+h.describe(m.id))
				}
				answered = answered || was
			}
			if !answered {
				break
			}
		}
		h.checkAll("the answers")
		for _, m := range h.runs {
			h.holdEnd(m)
			outcomes[m.kind+" "+h.status(m.id).Run.State]++
		}
		// Whatever a run rests in once nothing is in flight, a cancellation
		// ends it.
		cancelled := false
		for _, m := range h.runs {
			if h.status(m.id).Run.Outcome == "" {
				if !h.act("cancel", m, func(r *runner.Runner) error { return r.Cancel(ctx, m.id, "closing", requesterP) }) {
					rt.Fatalf("%s: a cancellation of a live run was refused", m.id)
				}
				cancelled = true
			}
		}
		if cancelled {
			h.idle("")
			for _, m := range h.runs {
				if s := h.status(m.id); s.Run.Outcome == "" {
					rt.Fatalf("%s (%s) rests in %s after a cancellation: %s", m.id, m.kind, s.Run.State, h.describe(m.id))
				}
			}
			h.checkAll("the cancellations")
		}
		h.pruneAll()
	})
	t.Logf("%d draws; acts: %v", draws, acts)
	t.Logf("outcomes: %v", outcomes)
}

// pruneAll archives and prunes every run once all have ended: each
// archive, decoded, verifies and replays exactly as the stored run did (a
// differential test of the archive over every shape of record a history
// leaves); the store prunes a run unless an effect of it is still open,
// and refuses it then; a pruned run is reported pruned, with its head
// hash, and the ledger loses exactly its grants.
func (h *history) pruneAll() {
	pr, ok := store.PrunerOf(h.st)
	if !ok {
		h.t.Fatalf("the history's store does not prune")
	}
	for _, m := range h.runs {
		want, wantReplay, err := Check(ctx, h.st, nil, m.wf, m.id)
		if err != nil {
			h.t.Fatal(err)
		}
		a, err := archive.Read(ctx, h.st, m.id)
		if err != nil {
			h.t.Fatal(err)
		}
		doc, err := archive.Encode(a)
		if err != nil {
			h.t.Fatal(err)
		}
		back, err := archive.Decode(doc)
		if err != nil {
			h.t.Fatal(err)
		}
		got, gotReplay, err := Record(ctx, nil, m.wf, back.Record)
		if err != nil {
			h.t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotReplay, wantReplay) {
			h.t.Fatalf("%s (%s): its archive's reports differ from the store's:\nstore   %+v %+v\narchive %+v %+v", m.id, m.kind, want, wantReplay, got, gotReplay)
		}
		open := slices.ContainsFunc(a.Record.Intents, func(in store.Intent) bool { return in.Outbox != store.OutboxDone })
		before, err := h.hs.grants()
		if err != nil {
			h.t.Fatal(err)
		}
		pruning := a.Pruning(store.BodyDigest(doc))
		if open {
			// Not told of the effects open, the store refuses; told of
			// them (an abandoned effect, prune --abandoned), it takes
			// them open with the record.
			blind := pruning
			blind.Open = 0
			if err := pr.Prune(ctx, blind); store.CodeOf(err) != store.CodeInvalidTransition {
				h.t.Fatalf("%s (%s) ended with an effect open, and pruning it as if none were answered %v", m.id, m.kind, err)
			}
			h.acts["prune refused: an effect open"]++
		}
		if err := pr.Prune(ctx, pruning); err != nil {
			h.t.Fatalf("%s (%s): pruning (%d effects open): %v", m.id, m.kind, pruning.Open, err)
		}
		if got, err := pr.Pruning(ctx, m.id); err != nil || got.Open != pruning.Open || (got.Open > 0) != open {
			h.t.Fatalf("%s (%s): the pruning recorded %+v (%v), %d effects were open", m.id, m.kind, got, err, pruning.Open)
		}
		h.acts["pruned"]++
		after, err := h.hs.grants()
		if err != nil {
			h.t.Fatal(err)
		}
		if before-after != len(a.Grants) {
			h.t.Fatalf("%s: pruning took %d grants from the ledger, the archive holds %d", m.id, before-after, len(a.Grants))
		}
		rep, rp, err := Check(ctx, h.st, nil, m.wf, m.id)
		if err != nil {
			h.t.Fatal(err)
		}
		if rep.Pruned == nil || rep.Pruned.HeadHash != a.Record.Run.HeadHash || rep.Outcome != a.Record.Run.Outcome || !rp.Pruned {
			h.t.Fatalf("%s after pruning: %+v %+v", m.id, rep, rp)
		}
	}
}

// fired reports whether the run's record holds an accepted control
// transition on event.
func (h *history) fired(id, event string) bool {
	evs, err := h.st.Events(ctx, id, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range evs {
		var rec struct {
			Event string `json:"event"`
		}
		if e.Kind == runner.EventControl && json.Unmarshal(e.Body, &rec) == nil && rec.Event == event {
			return true
		}
	}
	return false
}

// describe says where a run stands in the store: its header, its
// pending inbox, its effects and their attempts, for a failure's message.
func (h *history) describe(id string) string {
	run, err := h.st.Run(ctx, id)
	if err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("run %s %s quarantine %q head %d lease %s/%d until %s", run.State, run.Outcome, run.Quarantine, run.Head, run.Lease.Owner, run.Lease.Generation, run.Lease.ExpiresAt.Format(time.RFC3339Nano))
	pending, _ := h.st.Inbox(ctx, id, true)
	for _, in := range pending {
		out += fmt.Sprintf("; pending %s %s by %s", in.Kind, in.Body, in.Capability)
	}
	intents, _ := h.st.Intents(ctx, id)
	for _, in := range intents {
		ats, _ := h.st.Attempts(ctx, in.ID)
		out += fmt.Sprintf("; intent %s outbox %s (%s) attempts %+v", in.EffectType, in.Outbox, in.Route, ats)
	}
	trace, _ := h.st.Trace(ctx, id)
	if n := len(trace); n > 0 {
		out += fmt.Sprintf("; last trace %s %s", trace[n-1].Kind, trace[n-1].Body)
	}
	return out
}

// learnKeys reads each run's refund idempotency key from its committed
// intent once there is one.
func (h *history) learnKeys() {
	for _, m := range h.runs {
		if m.key != "" {
			continue
		}
		intents, err := h.st.Intents(ctx, m.id)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(intents) > 1 {
			h.t.Fatalf("%s committed %d intents for one refund", m.id, len(intents))
		}
		if len(intents) == 1 {
			m.key = intents[0].IdempotencyKey
		}
	}
}

// appliedFor reports whether the destination applied run m's refund.
func (h *history) appliedFor(m *modelRun) bool {
	h.learnKeys()
	return m.key != "" && len(h.mutations(m.key)) > 0
}

// holdEnd holds run m, once people have answered, to how it may end.
func (h *history) holdEnd(m *modelRun) {
	s := h.status(m.id)
	applied := h.mutations(m.key)
	if m.key == "" {
		applied = nil
	}
	if len(applied) > 1 {
		h.t.Fatalf("%s: %d mutations for one refund", m.id, len(applied))
	}
	if len(applied) == 1 {
		body := string(applied[0].Body)
		for _, want := range m.expect {
			if !strings.Contains(body, want) {
				h.t.Fatalf("%s asked for %s; the destination applied %s", m.id, m.expect, body)
			}
		}
	}
	// A denial taken while runners race may come after a grant the run
	// has already taken, and is then ignored: what decides is whether the
	// run's record holds the denial.
	denied := m.denied && !h.racing || h.fired(m.id, "APPROVAL_DENIED")
	if (neverSent(m.kind) || denied) && len(applied) > 0 {
		h.t.Fatalf("%s (%s, denied %v) was paid", m.id, m.kind, denied)
	}
	receipts, err := h.st.Receipts(ctx, m.id)
	if err != nil {
		h.t.Fatal(err)
	}
	confirmed := slices.ContainsFunc(receipts, func(r store.Receipt) bool { return r.Outcome == "confirmed_success" })
	if confirmed != (len(applied) == 1) && !m.abandoned {
		h.t.Fatalf("%s: a confirmed success in its receipts is %v, the destination applied %d", m.id, confirmed, len(applied))
	}
	if s.Run.State == "SUCCEEDED" && len(applied) != 1 {
		h.t.Fatalf("%s SUCCEEDED with %d mutations", m.id, len(applied))
	}
	// A run times out only under a budget the clock passed since it
	// started: it cannot have rested longer than that.
	timedOut := s.Run.State == "TIMED_OUT"
	if timedOut && h.budget == 0 {
		h.t.Fatalf("%s (%s) timed out under a day's budget: %s", m.id, m.kind, h.describe(m.id))
	}
	if since := h.clock.Now().Sub(m.started); timedOut && since < h.budget {
		h.t.Fatalf("%s (%s) timed out %s after it started, within its budget of %s", m.id, m.kind, since, h.budget)
	}
	if neverSent(m.kind) {
		return // ineligible or refused: it may rest or end, never sent
	}
	if m.steered && s.Run.Outcome == "" {
		return // a person's exit or rejection may leave it resting
	}
	if s.Run.Outcome == "" {
		h.t.Fatalf("%s (%s) did not end once people answered: %s, waiting %v, unknown %v; the last act refused: %s", m.id, m.kind, s.Run.State, s.Waiting, s.Unknown, m.refusal)
	}
	excused := m.denied || m.cancelled || m.abandoned || m.failedByPerson || m.steered || timedOut
	if !excused && len(applied) == 1 && s.Run.State != "SUCCEEDED" {
		h.t.Fatalf("%s (%s) was paid and ended %s", m.id, m.kind, s.Run.State)
	}
	// Crashes, dropped answers, lookups that cannot be made and a clock
	// moved past leases only delay a run: with nobody refusing it and no
	// request failed at the destination, it is paid.
	if !excused && !h.failing && s.Run.State != "SUCCEEDED" && !(m.junk > 0 && s.Run.State == "NO_PROGRESS") {
		h.t.Fatalf("%s (%s) ended %s (%s) though nothing refused or failed it", m.id, m.kind, s.Run.State, s.Run.Outcome)
	}
}
