package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"pgregory.net/rapid"
)

// People acting on one run at the same moment, each through a runner of
// their own (as servers in several processes would), while runner loops
// may race them: approvals of the same request, a denial, a cancellation,
// a stranger's approval; on a run offering options, choices of either
// option and a cancellation; on a run whose effect's outcome is unknown
// (the destination applied it and dropped the answer, and cannot be
// asked), confirmations, an abandonment and a cancellation. Whatever
// order the store puts them in:
//
//   - every act is taken or refused with a typed error;
//   - the approvals ledger gains at most one grant for the run, and the
//     destination applies its refund at most once, exactly as asked;
//   - the run is paid exactly when it ends SUCCEEDED — but for an effect
//     a person abandoned or a cancellation honoured once the effect was
//     settled — and only when an approval or a choice was taken and its
//     record holds no denial; an effect applied before anyone acted is
//     never sent again;
//   - once idle, a run that any answer or cancellation reached no longer
//     waits for one, and every run verifies and replays.
func TestConcurrentActsOnOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a store and runs per draw")
	}
	clock := &stepClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	checkConcurrentActs(t, clock, sqliteHistories(t, clock))
}

func TestConcurrentActsOnOneRunOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs per draw")
	}
	clock := &stepClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	checkConcurrentActs(t, clock, postgresHistories(t, clock))
}

// concurrentAct is one person's act in a draw: what it was and what it
// returned.
type concurrentAct struct {
	kind string // approve, deny, cancel or stranger
	err  error
}

func checkConcurrentActs(t *testing.T, clock *stepClock, open func(draw int) historyStore) {
	refunds, ops := exampleAgents(t)
	tally := map[string]int{}
	draws := 0
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		hs := open(draws)
		defer hs.close()
		h := newHistory(t, rt, hs, refunds, ops, clock, map[string]int{})
		// A large refund waits for an approval; a goodwill one offers
		// options for a person's choice; a small one whose answer the
		// destination dropped, and that cannot be looked up, waits for a
		// person to reconcile it.
		scenario := rapid.SampledFrom([]string{"approval", "options", "reconciliation"}).Draw(rt, "scenario")
		m := &modelRun{id: hs.prefix + "one", kind: kindLarge, wf: refunds, approver: financeLead}
		amount, payee, reason := rapid.IntRange(101, 5000).Draw(rt, "amount"), "payee-one", "damaged item"
		m.expect = []string{fmt.Sprintf(`"amount":%d`, amount), fmt.Sprintf(`"payee":%q`, payee)}
		switch scenario {
		case "options":
			m.kind, reason = kindGoodwill, "goodwill"
			amount = rapid.IntRange(1, 100).Draw(rt, "small amount")
			m.expect = []string{fmt.Sprintf(`"payee":%q`, payee)} // a partial refund pays less
		case "reconciliation":
			m.kind = kindSmall
			amount = rapid.IntRange(1, 100).Draw(rt, "small amount")
			m.expect = []string{fmt.Sprintf(`"amount":%d`, amount), fmt.Sprintf(`"payee":%q`, payee)}
			if err := h.sb.Inject(sandbox.Fault{Times: 1, Drop: true}); err != nil {
				t.Fatal(err)
			}
			h.down.Store(true)
		}
		in, _ := json.Marshal(map[string]any{"type": "refund.requested/1", "payload": map[string]any{
			"refund_id": "r-" + hs.prefix + "one", "amount": amount, "payee": payee, "reason": reason}})
		if err := h.runner(nil).Start(ctx, m.id, refunds.ID(), refunds.Version(), in); err != nil {
			rt.Fatalf("start: %v", err)
		}
		h.runs = append(h.runs, m)
		h.idle("")
		var req, prop, unknown string
		var opts []string
		switch scenario {
		case "options":
			offers := h.view(h.status(m.id)).Offers
			if len(offers) != 1 || len(offers[0].Options) < 2 {
				rt.Fatalf("a goodwill refund offers %+v, want one proposal with two options or more", offers)
			}
			prop, opts = offers[0].ProposalID, offers[0].Options
		case "reconciliation":
			s := h.status(m.id)
			if s.Run.State != "HUMAN_RECONCILIATION" || len(s.Unknown) != 1 {
				rt.Fatalf("a refund whose answer was dropped is %s with unknown %v, want HUMAN_RECONCILIATION with one", s.Run.State, s.Unknown)
			}
			unknown = s.Unknown[0]
		default:
			waiting := h.status(m.id).Waiting
			if len(waiting) != 1 {
				rt.Fatalf("a large refund waits for %d approvals, want 1", len(waiting))
			}
			req = waiting[0].RequestID
		}
		grantsBefore, err := hs.grants()
		if err != nil {
			t.Fatal(err)
		}

		// The acts race one another whether or not runner loops race them.
		h.racing = true
		stop := func() {}
		if rapid.Bool().Draw(rt, "loops") {
			stop = h.loops("runner-a", "runner-b")
		}
		defer stop()
		acts := make([]concurrentAct, rapid.IntRange(2, 5).Draw(rt, "acts"))
		kinds := []string{"approve", "approve", "deny", "cancel", "stranger"}
		switch scenario {
		case "options":
			kinds = []string{"choose-first", "choose-second", "cancel"}
		case "reconciliation":
			kinds = []string{"confirm", "confirm", "abandon", "cancel"}
		}
		for i := range acts {
			acts[i].kind = rapid.SampledFrom(kinds).Draw(rt, "act")
		}
		// Each person acts through a runner of their own; all start at
		// once.
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i := range acts {
			a := &acts[i]
			r := h.runnerAs(fmt.Sprintf("server-%d", i), nil)
			wg.Go(func() {
				<-gate
				switch a.kind {
				case "approve":
					a.err = r.Approve(ctx, m.id, req, financeLead, time.Hour)
				case "stranger":
					a.err = r.Approve(ctx, m.id, req, stranger, time.Hour)
				case "deny":
					a.err = r.Deny(ctx, m.id, req, "not this one", denyingLead)
				case "cancel":
					a.err = r.Cancel(ctx, m.id, "changed my mind", requesterP)
				case "choose-first":
					a.err = r.Choose(ctx, m.id, prop, opts[0], chooserOp)
				case "choose-second":
					a.err = r.Choose(ctx, m.id, prop, opts[1], chooserOp)
				case "confirm": // the destination did apply it
					a.err = r.Reconcile(ctx, m.id, unknown, "confirmed_success", reconcilerP)
				case "abandon":
					a.err = r.Reconcile(ctx, m.id, unknown, "abandon", abandonerP)
				}
			})
		}
		close(gate)
		wg.Wait()
		stop()
		h.idle("")

		taken := map[string]int{}
		for _, a := range acts {
			if a.err == nil {
				taken[a.kind]++
				tally[a.kind+" taken"]++
				continue
			}
			busy := store.CodeOf(a.err) == store.CodeUnavailable
			if !refusedForAReason(a.err) && !busy {
				rt.Fatalf("%s: an untyped refusal: %v", a.kind, a.err)
			}
			var nw *runner.NotWaitingError
			var ended *runner.EndedError
			var who *runner.ApproverRefusedError
			if a.kind == "stranger" && !errors.As(a.err, &who) && !errors.As(a.err, &nw) && !errors.As(a.err, &ended) && !busy {
				rt.Fatalf("a stranger's approval refused for another reason: %v", a.err)
			}
			tally[a.kind+" refused"]++
		}
		if taken["stranger"] > 0 {
			rt.Fatalf("a stranger's approval was taken")
		}
		// An effect still waiting for a person (only cancellations came,
		// which wait for it) is reconciled with the truth, as a person
		// would; then the run goes as far as it goes.
		if st := h.status(m.id); st.Run.Outcome == "" && len(st.Unknown) > 0 {
			if !h.act("reconcile", m, func(r *runner.Runner) error {
				return r.Reconcile(ctx, m.id, st.Unknown[0], "confirmed_success", reconcilerP)
			}) {
				rt.Fatalf("the closing reconciliation was refused: %s", m.refusal)
			}
			taken["confirm"]++
			h.idle("")
		}

		// Each approval taken may have recorded a grant of its own; the
		// run's one intent consumed one of them (learnKeys holds the run
		// to one intent; verify, to its grant's consumption).
		grantsAfter, err := hs.grants()
		if err != nil {
			t.Fatal(err)
		}
		if n := grantsAfter - grantsBefore; n > taken["approve"] {
			rt.Fatalf("%d grants recorded for %d approvals taken; acts %s", n, taken["approve"], describeActs(acts))
		}
		h.learnKeys()
		applied := h.mutations(m.key)
		if m.key == "" {
			applied = nil
		}
		// A denial or cancellation taken may have come after the grant the
		// run took, and then changed nothing: what the run's record holds
		// decides (holdEnd with racing), and either excuses an end other
		// than SUCCEEDED.
		answers := taken["approve"] + taken["choose-first"] + taken["choose-second"] + taken["confirm"] // what may let the run pay
		m.denied, m.cancelled, m.steered = taken["deny"] > 0, taken["cancel"] > 0, answers == 0
		m.abandoned = taken["abandon"] > 0
		receipts, err := h.st.Receipts(ctx, m.id)
		if err != nil {
			t.Fatal(err)
		}
		confirmed := 0
		for _, rc := range receipts {
			if rc.Outcome == "confirmed_success" {
				confirmed++
			}
		}
		if confirmed != len(applied) && !m.abandoned { // an abandoned effect ends with its outcome unknown
			evs, _ := h.st.Events(ctx, m.id, 0)
			var kinds []string
			for _, e := range evs {
				kinds = append(kinds, e.Kind+" "+string(e.Body))
			}
			rt.Fatalf("%d mutations and %d confirmed successes; acts %s; %s; receipts %+v; events %v", len(applied), confirmed, describeActs(acts), h.describe(m.id), receipts, kinds)
		}
		h.holdEnd(m)
		s := h.status(m.id)
		// Paid and not SUCCEEDED only when a person abandoned the effect or
		// a cancellation was honoured once the effect was settled.
		if s.Run.State == "SUCCEEDED" && len(applied) != 1 || len(applied) == 1 && s.Run.State != "SUCCEEDED" && !m.abandoned && !m.cancelled {
			rt.Fatalf("the run ended %s with %d mutations; acts %s; %s", s.Run.State, len(applied), describeActs(acts), h.describe(m.id))
		}
		switch {
		case scenario == "reconciliation" && len(applied) != 1:
			// Applied before anyone acted: reconciling never sends again.
			rt.Fatalf("a reconciled refund has %d mutations, want the one applied; acts %s", len(applied), describeActs(acts))
		case scenario == "reconciliation" && s.Run.State == "SUCCEEDED" && taken["confirm"] == 0:
			rt.Fatalf("SUCCEEDED with no confirmation taken; acts %s", describeActs(acts))
		case scenario != "reconciliation" && len(applied) == 1 && answers == 0:
			rt.Fatalf("paid with no approval or choice taken; acts %s", describeActs(acts))
		}
		if len(applied) == 1 && h.fired(m.id, "APPROVAL_DENIED") {
			rt.Fatalf("paid though its record holds a denial")
		}
		if answers+taken["deny"]+taken["cancel"] > 0 && (s.Run.State == "WAIT_APPROVAL" || s.Run.Outcome == "" && len(h.view(s).Offers) > 0) {
			rt.Fatalf("an answer was taken and the run still waits for it: %s; acts %s", h.describe(m.id), describeActs(acts))
		}
		if s.Run.Quarantine != "" {
			rt.Fatalf("parked: %s", s.Run.Quarantine)
		}
		tally["ended "+s.Run.State]++
		h.checkAll("the acts")
	})
	t.Logf("%d draws; %v", draws, tally)
}

// describeActs says what each act of a draw was and what it returned.
func describeActs(acts []concurrentAct) string {
	var out string
	for _, a := range acts {
		out += fmt.Sprintf("[%s: %v] ", a.kind, a.err)
	}
	return out
}
