package workflow

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// fatals is what the helpers need of a test or a rapid check.
type fatals interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func mustDecide(t fatals, w *Workflow, st []byte, in Input) Result {
	t.Helper()
	r, err := w.Decide(st, in)
	if err != nil || r.Refusal != "" {
		t.Fatalf("input %d (%s): %v %q", in.Seq, in.Kind, err, r.Refusal)
	}
	return r
}

func mustView(t fatals, w *Workflow, st []byte) View {
	t.Helper()
	v, err := w.Inspect(st)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// edit changes a state document the way a test needs it to be (safe mode
// on, the machine in OPTIONS) and encodes it again.
func edit(t fatals, b []byte, f func(*state)) []byte {
	t.Helper()
	st, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	f(st)
	out, err := st.encode()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func entriesWith(v View, trig mrp.Trigger) []mrp.Entry {
	var out []mrp.Entry
	for _, e := range v.Journey {
		if e.Trigger == trig && e.Rejected == "" {
			out = append(out, e)
		}
	}
	return out
}

func resumeBy(seq int64, actor string) Input {
	return controlInput(seq, trig(mrp.Resume), actor, "operator", "mrp.resume")
}

// An unexplained restart is escalated and kept; a person's RESUME decides
// it again through H, which now asks for the approval a restart needs; the
// grant authorizes exactly the planned intent, and its receipt closes it.
func TestEscalatedRestartIsDecidedAgainOnResume(t *testing.T) {
	w := compileExample(t, "ops-agent")
	st, _ := w.Init("run-resume")
	r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-4", "api", "dest:ops-api", "reason", "unknown")})
	v := mustView(t, w, r.State)
	if len(r.Effects) != 0 || v.MRPState != "ESCALATE" || len(v.Held) != 1 || v.Held[0].Outcome != authority.OutcomeEscalated || v.Held[0].Since != 1 {
		t.Fatalf("escalation: effects %d, MRP %s, held %+v", len(r.Effects), v.MRPState, v.Held)
	}
	pid := v.Held[0].ProposalID

	escalated := r.State
	r = mustDecide(t, w, r.State, resumeBy(2, "oncall-lead"))
	// Explaining the RESUME decides the same and says why H decided the
	// restart again as it did.
	ex, whys, err := w.Explain(escalated, resumeBy(2, "oncall-lead"))
	if err != nil || string(ex.State) != string(r.State) || len(whys) != 1 || whys[0].ProposalID != pid {
		t.Fatalf("explain: %v, same state %v, whys %+v", err, string(ex.State) == string(r.State), whys)
	}
	v = mustView(t, w, r.State)
	if len(v.Held) != 0 || len(r.Effects) != 1 || r.Effects[0].Approval == nil || len(v.Pending) != 1 || v.Pending[0].ProposalID != pid {
		t.Fatalf("after RESUME: held %+v, effects %d, pending %+v, outcomes %v", v.Held, len(r.Effects), v.Pending, outcomes(r))
	}
	again := notes(r, "held.redecide")
	if len(again) != 1 || again[0]["proposal_id"] != pid || again[0]["trigger"] != "RESUME" || again[0]["resumed"] != true {
		t.Fatalf("held.redecide %v", again)
	}
	if o := outcomes(r); len(o) != 1 || o[0]["outcome"] != authority.OutcomeApprovalRequest {
		t.Fatalf("outcome %v", o)
	}
	red := entriesWith(v, mrp.Redecide)
	if len(red) != 1 || red[0].Row != "R48" || !strings.Contains(red[0].Cause, pid) || !strings.Contains(red[0].Cause, "RESUME by oncall-lead") {
		t.Fatalf("REDECIDE entries %+v", red)
	}
	if len(entriesWith(v, mrp.Resume)) != 1 || v.Turns != 2 {
		t.Fatalf("journey %+v, turns %d", v.Journey, v.Turns)
	}

	need := *r.Effects[0].Approval
	eff, err := w.AuthorizeApproved(r.State, need, grantFor(need, "oncall-lead", "human_approver"))
	if err != nil || eff.Intent.IntentID != need.IntentID || eff.Intent.EffectType != "service.restart" {
		t.Fatalf("approved: %v %+v", err, eff.Intent)
	}
	rc := mustDecide(t, w, r.State, Input{Seq: 3, Kind: KindReceipt, Body: receiptFor(eff, protocol.OutcomeConfirmedSuccess)})
	v = mustView(t, w, rc.State)
	if len(v.Pending) != 0 || len(v.Open) != 0 || len(v.Held) != 0 || len(rc.Effects) != 0 {
		t.Fatalf("after the receipt: %+v", v)
	}
	// A second RESUME has nothing to decide again.
	if _, err := w.Decide(rc.State, resumeBy(4, "oncall-lead")); err != nil {
		t.Fatal(err)
	}
}

// A RESUME naming one of two escalated restarts answers that one's
// escalation only; both are decided again, once each, the named one
// first, and the other is escalated (and kept) again.
func TestResumeNamingAProposal(t *testing.T) {
	w := compileExample(t, "ops-agent")
	st, _ := w.Init("run-two")
	r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-a", "api", "dest:ops-api", "reason", "unknown")})
	r = mustDecide(t, w, r.State, Input{Seq: 2, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-b", "api", "dest:ops-api", "reason", "unknown")})
	v := mustView(t, w, r.State)
	if len(v.Held) != 2 {
		t.Fatalf("held %+v", v.Held)
	}
	first, second := v.Held[0].ProposalID, v.Held[1].ProposalID
	r = mustDecide(t, w, r.State, controlInput(3, map[string]any{"trigger": "RESUME", "proposal_id": second}, "oncall-lead", "operator", "mrp.resume"))
	again := notes(r, "held.redecide")
	if len(again) != 2 || again[0]["proposal_id"] != second || again[1]["proposal_id"] != first || again[0]["resumed"] != true || again[1]["resumed"] != false {
		t.Fatalf("held.redecide %v", again)
	}
	v = mustView(t, w, r.State)
	if len(v.Held) != 1 || v.Held[0].ProposalID != first || v.Held[0].Since != 3 || len(r.Effects) != 1 || v.Pending[0].ProposalID != second {
		t.Fatalf("held %+v, effects %d, pending %+v", v.Held, len(r.Effects), v.Pending)
	}
}

// A restart asked for while a person's test runs is held (TEST admits
// diagnostics only) and kept. The diagnostic's confirmed success passes
// the test (TESTS_PASS → DECIDE) and the restart is decided again: it asks
// for its approval. A confirmed failure contradicts the test (→ HOLD),
// which reopens nothing: the restart stays kept.
func TestRestartHeldInTestIsDecidedWhenTheTestPasses(t *testing.T) {
	w := compileExample(t, "ops-agent")
	for _, c := range []struct {
		outcome  string
		redecide bool
	}{{protocol.OutcomeConfirmedSuccess, true}, {protocol.OutcomeConfirmedFailure, false}} {
		st, _ := w.Init("run-test")
		r := mustDecide(t, w, st, controlInput(1, map[string]any{"trigger": "REQUEST_TEST"}, "oncall-lead", "operator", "mrp.request_test"))
		r = mustDecide(t, w, r.State, Input{Seq: 2, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak")})
		v := mustView(t, w, r.State)
		if len(r.Effects) != 0 || v.MRPState != "TEST" || len(v.Held) != 1 || v.Held[0].Outcome != authority.OutcomeHeld {
			t.Fatalf("restart in TEST: effects %d, MRP %s, held %+v", len(r.Effects), v.MRPState, v.Held)
		}
		d := mustDecide(t, w, r.State, Input{Seq: 3, Kind: KindInput, Body: opsInput("diagnostics.requested/1", "chk-1", "api", "dest:ops-api", "probe", "health")})
		if len(d.Effects) != 1 || d.Effects[0].Approval != nil {
			t.Fatalf("diagnostic: %d effects", len(d.Effects))
		}
		rc := mustDecide(t, w, d.State, Input{Seq: 4, Kind: KindReceipt, Body: receiptFor(d.Effects[0], c.outcome)})
		v = mustView(t, w, rc.State)
		again := notes(rc, "held.redecide")
		if !c.redecide {
			if len(again) != 0 || len(v.Held) != 1 || len(rc.Effects) != 0 || v.MRPState != "HOLD" {
				t.Fatalf("%s: redecided %v, held %+v, MRP %s", c.outcome, again, v.Held, v.MRPState)
			}
			continue
		}
		if len(again) != 1 || again[0]["trigger"] != "TESTS_PASS" || again[0]["resumed"] != false {
			t.Fatalf("held.redecide %v", again)
		}
		if len(v.Held) != 0 || len(rc.Effects) != 1 || rc.Effects[0].Approval == nil || rc.Effects[0].Intent.EffectType != "service.restart" {
			t.Fatalf("after TESTS_PASS: held %+v, effects %d", v.Held, len(rc.Effects))
		}
		need := *rc.Effects[0].Approval
		if eff, err := w.AuthorizeApproved(rc.State, need, grantFor(need, "oncall-lead", "human_approver")); err != nil || eff.Intent.IntentID != need.IntentID {
			t.Fatalf("approved: %v", err)
		}
	}
}

// In Degraded Safe Mode a restart is held for a person; a person's
// LEAVE_SAFE_MODE decides it again.
func TestRestartHeldInSafeModeIsDecidedWhenAPersonLeavesIt(t *testing.T) {
	w := compileExample(t, "ops-agent")
	st, _ := w.Init("run-safe")
	st = edit(t, st, func(s *state) { s.Machine.SafeMode, s.Machine.SafeWhy = true, mrp.SafeModeTripwire })
	r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak")})
	v := mustView(t, w, r.State)
	if len(r.Effects) != 0 || len(v.Held) != 1 || !v.SafeMode {
		t.Fatalf("in safe mode: effects %d, held %+v", len(r.Effects), v.Held)
	}
	r = mustDecide(t, w, r.State, controlInput(2, trig(mrp.LeaveSafeMode), "oncall-lead", "operator", "mrp.leave_safe_mode"))
	v = mustView(t, w, r.State)
	if again := notes(r, "held.redecide"); len(again) != 1 || again[0]["trigger"] != "LEAVE_SAFE_MODE" {
		t.Fatalf("held.redecide %v", again)
	}
	if len(v.Held) != 0 || len(r.Effects) != 1 || r.Effects[0].Approval == nil || v.SafeMode {
		t.Fatalf("after LEAVE_SAFE_MODE: held %+v, effects %d, safe %v", v.Held, len(r.Effects), v.SafeMode)
	}
}

// EXIT withdraws every kept proposal (named in its summary); REJECT_ALL
// withdraws the one it names, or every one, each with a WITHDRAW entry;
// a proposal H refuses when it decides it again is withdrawn as well.
func TestKeptProposalsAreWithdrawn(t *testing.T) {
	w := compileExample(t, "ops-agent")
	escalated := func(t *testing.T) ([]byte, string) {
		st, _ := w.Init("run-withdraw")
		r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-4", "api", "dest:ops-api", "reason", "unknown")})
		return r.State, mustView(t, w, r.State).Held[0].ProposalID
	}
	t.Run("EXIT", func(t *testing.T) {
		st, pid := escalated(t)
		r := mustDecide(t, w, st, controlInput(2, map[string]any{"trigger": "EXIT", "reason": "not today"}, "oncall-lead", "operator", "mrp.exit"))
		v := mustView(t, w, r.State)
		last := v.Journey[len(v.Journey)-1]
		if len(v.Held) != 0 || r.Completion != Fail || last.Trigger != mrp.HumanExit || !strings.Contains(last.Summary, "held proposals withdrawn: ["+pid+"]") {
			t.Fatalf("held %+v, completion %s, last %+v", v.Held, r.Completion, last)
		}
		if n := notes(r, "held.withdrawn"); len(n) != 1 {
			t.Fatalf("held.withdrawn %v", n)
		}
	})
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprintf("REJECT_ALL naming it %v", named), func(t *testing.T) {
			st, pid := escalated(t)
			st = edit(t, st, func(s *state) { s.Machine.State, s.Machine.Options = mrp.Options, []string{"path:a"} })
			body := trig(mrp.RejectAll)
			if named {
				body["proposal_id"] = pid
			}
			r := mustDecide(t, w, st, controlInput(2, body, "oncall-lead", "operator", "mrp.reject_all"))
			v := mustView(t, w, r.State)
			wd := entriesWith(v, mrp.Withdraw)
			if len(v.Held) != 0 || len(wd) != 1 || wd[0].Row != "R49" || !strings.Contains(wd[0].Cause, pid) {
				t.Fatalf("held %+v, WITHDRAW %+v", v.Held, wd)
			}
		})
	}
	// Out of ESCALATE itself (row H12): a person declines the escalated
	// restart without ending deliberation; with nothing kept, REJECT_ALL
	// there is refused as before.
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprintf("REJECT_ALL in ESCALATE naming it %v", named), func(t *testing.T) {
			st, pid := escalated(t)
			if v := mustView(t, w, st); v.MRPState != "ESCALATE" {
				t.Fatalf("kept restart in %s, want ESCALATE", v.MRPState)
			}
			body := trig(mrp.RejectAll)
			if named {
				body["proposal_id"] = pid
			}
			r := mustDecide(t, w, st, controlInput(2, body, "oncall-lead", "operator", "mrp.reject_all"))
			v := mustView(t, w, r.State)
			wd := entriesWith(v, mrp.Withdraw)
			rej := entriesWith(v, mrp.RejectAll)
			if len(v.Held) != 0 || v.MRPState != "HOLD" || r.Completion == Fail || len(wd) != 1 || len(rej) != 1 || rej[0].Row != "H12" {
				t.Fatalf("state %s, held %+v, completion %s, WITHDRAW %+v, REJECT_ALL %+v", v.MRPState, v.Held, r.Completion, wd, rej)
			}
			again, err := w.Decide(r.State, controlInput(3, trig(mrp.RejectAll), "oncall-lead", "operator", "mrp.reject_all"))
			if err != nil || !strings.HasPrefix(again.Refusal, ControlMRPRefused) {
				t.Fatalf("REJECT_ALL with nothing kept: %v %q", err, again.Refusal)
			}
		})
	}
	t.Run("REJECT_ALL naming another proposal", func(t *testing.T) {
		st, _ := escalated(t)
		st = edit(t, st, func(s *state) { s.Machine.State, s.Machine.Options = mrp.Options, []string{"path:a"} })
		r, err := w.Decide(st, controlInput(2, map[string]any{"trigger": "REJECT_ALL", "proposal_id": "nothing-here"}, "oncall-lead", "operator", "mrp.reject_all"))
		if err != nil || !strings.HasPrefix(r.Refusal, ControlNotPending) {
			t.Fatalf("%v %q", err, r.Refusal)
		}
	})
	t.Run("refused when decided again", func(t *testing.T) {
		st, pid := escalated(t)
		// Outside the operations network now: G1 refuses the restart.
		st = edit(t, st, func(s *state) { s.Held[0].Dest = []byte(`{"id":"dest:ops-elsewhere","scope":"scope:ops-api"}`) })
		r := mustDecide(t, w, st, resumeBy(2, "oncall-lead"))
		v := mustView(t, w, r.State)
		wd := entriesWith(v, mrp.Withdraw)
		if o := outcomes(r); len(o) != 1 || o[0]["outcome"] != authority.OutcomeRejected {
			t.Fatalf("outcome %v", o)
		}
		if len(v.Held) != 0 || len(r.Effects) != 0 || len(wd) != 1 || !strings.Contains(wd[0].Cause, pid+" refused when decided again") {
			t.Fatalf("held %+v, effects %d, WITHDRAW %+v", v.Held, len(r.Effects), wd)
		}
	})
}

// Runs that never hold anything keep the state document they had: no
// "held" member is written while nothing is kept.
func TestNothingHeldWritesNoHeldMember(t *testing.T) {
	w := compileExample(t, "ops-agent")
	st, _ := w.Init("run-plain")
	r := mustDecide(t, w, st, Input{Seq: 1, Kind: KindInput, Body: opsInput("diagnostics.requested/1", "chk-1", "api", "dest:ops-api", "probe", "health")})
	if strings.Contains(string(r.State), `"held"`) {
		t.Fatal("a run that holds nothing writes a held member")
	}
	r = mustDecide(t, w, r.State, Input{Seq: 2, Kind: KindInput, Body: opsInput("restart.requested/1", "rst-4", "api", "dest:ops-api", "reason", "unknown")})
	if !strings.Contains(string(r.State), `"held":[`) {
		t.Fatal("an escalated proposal is not kept")
	}
	r = mustDecide(t, w, r.State, resumeBy(3, "oncall-lead"))
	if strings.Contains(string(r.State), `"held"`) {
		t.Fatal("a proposal decided again is still kept")
	}
}

// Property: over random sequences of inputs, receipts and a person's acts,
// every kept proposal is, at each tick, still kept, decided again exactly
// once (only after a tick that reopened deliberation, and then every one
// kept before it), or withdrawn with a journey entry — never lost, never
// decided twice — and a final EXIT leaves nothing kept. Deciding every
// state again from its document gives the same bytes.
func TestKeptProposalsAreDecidedOnceOrWithdrawn(t *testing.T) {
	w := compileExample(t, "ops-agent")
	acts := []struct {
		trigger mrp.Trigger
		cap     string
	}{{mrp.Pause, "mrp.pause"}, {mrp.RequestTest, "mrp.request_test"}, {mrp.HumanEscalate, "mrp.escalate"}, {mrp.Resume, "mrp.resume"},
		{mrp.LeaveSafeMode, "mrp.leave_safe_mode"}, {mrp.RejectAll, "mrp.reject_all"}}
	rapid.Check(t, func(rt *rapid.T) {
		st, _ := w.Init("run-prop")
		if rapid.Bool().Draw(rt, "safe") {
			st = edit(rt, st, func(s *state) { s.Machine.SafeMode, s.Machine.SafeWhy = true, mrp.SafeModeTripwire })
		}
		var open []Effect
		seq := int64(0)
		step := func(in Input) {
			before := mustView(rt, w, st)
			r, err := w.Decide(st, in)
			if err != nil {
				rt.Fatal(err)
			}
			if r.Refusal != "" {
				return
			}
			// Replay: the same input over the same document decides the same.
			again, err := w.Decide(st, in)
			if err != nil || string(again.State) != string(r.State) {
				rt.Fatalf("deciding %s again gave other bytes", in.Kind)
			}
			after := mustView(rt, w, r.State)
			redecided := map[string]int{}
			for _, n := range notes(r, "held.redecide") {
				redecided[n["proposal_id"].(string)]++
			}
			withdrawn := map[string]bool{}
			for _, e := range after.Journey[len(before.Journey):] {
				if e.Trigger == mrp.Withdraw {
					for _, h := range before.Held {
						if strings.HasPrefix(e.Cause, h.ProposalID+" ") {
							withdrawn[h.ProposalID] = true
						}
					}
				}
				if e.Trigger == mrp.HumanExit && e.Rejected == "" {
					for _, h := range before.Held {
						if strings.Contains(e.Summary, h.ProposalID) {
							withdrawn[h.ProposalID] = true
						}
					}
				}
			}
			reopened := false
			for _, e := range after.Journey[len(before.Journey):] {
				reopened = reopened || mrp.Reopens(e)
			}
			kept := map[string]bool{}
			for _, h := range after.Held {
				kept[h.ProposalID] = true
			}
			for p, n := range redecided {
				if n != 1 || !slices.ContainsFunc(before.Held, func(h HeldProposal) bool { return h.ProposalID == p }) {
					rt.Fatalf("%s decided again %d times, kept before: %v", p, n, before.Held)
				}
			}
			for _, h := range before.Held {
				p := h.ProposalID
				switch {
				case redecided[p] == 1, withdrawn[p]:
				case kept[p] && !reopened:
				default:
					rt.Fatalf("%s lost: reopened %v, redecided %v, withdrawn %v, kept %v", p, reopened, redecided, withdrawn, kept)
				}
				if reopened && redecided[p] != 1 && !withdrawn[p] {
					rt.Fatalf("%s not decided again after deliberation reopened", p)
				}
			}
			for _, e := range r.Effects {
				if e.Approval != nil {
					need := *e.Approval
					ae, err := w.AuthorizeApproved(r.State, need, grantFor(need, "oncall-lead", "human_approver"))
					if err != nil {
						rt.Fatalf("approval of %s: %v", need.IntentID, err)
					}
					e = ae
				}
				open = append(open, e)
			}
			st = r.State
		}
		n := rapid.IntRange(1, 14).Draw(rt, "steps")
		for i := 0; i < n; i++ {
			seq++
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0:
				reason := rapid.SampledFrom([]string{"unknown", "leak"}).Draw(rt, "reason")
				step(Input{Seq: seq, Kind: KindInput, Body: opsInput("restart.requested/1", fmt.Sprintf("rst-%d", i), "api", "dest:ops-api", "reason", reason)})
			case 1:
				step(Input{Seq: seq, Kind: KindInput, Body: opsInput("diagnostics.requested/1", fmt.Sprintf("chk-%d", i), "api", "dest:ops-api", "probe", "health")})
			case 2:
				if len(open) == 0 {
					seq--
					continue
				}
				k := rapid.IntRange(0, len(open)-1).Draw(rt, "receipt")
				e := open[k]
				open = slices.Delete(open, k, k+1)
				outcome := rapid.SampledFrom([]string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure}).Draw(rt, "outcome")
				step(Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(e, outcome)})
			default:
				a := rapid.SampledFrom(acts).Draw(rt, "act")
				step(controlInput(seq, trig(a.trigger), "oncall-lead", "operator", a.cap))
			}
		}
		seq++
		step(controlInput(seq, trig(mrp.HumanExit), "oncall-lead", "operator", "mrp.exit"))
		if v := mustView(rt, w, st); v.MRPState == "EXIT" && len(v.Held) != 0 {
			rt.Fatalf("EXIT left %+v kept", v.Held)
		}
	})
}
