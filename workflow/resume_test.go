package workflow

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/mrp"
)

// A person who pauses or escalates a run waiting in OPTIONS and then
// resumes it can choose again, and the choice decides the proposal: the
// run does not sit in HOLD with the offer still pending. The server and
// the command line check acts with CheckControl first, so it must admit
// the RESUME too.
func TestSuspendedChoiceResumesInTheRun(t *testing.T) {
	w := compileExample(t, "support-agent")
	for _, suspend := range []mrp.Trigger{mrp.Pause, mrp.HumanEscalate} {
		st, _ := goodwill(t, w, 60)
		v, _ := w.Inspect(st)
		if v.MRPState != "OPTIONS" || len(v.Offers) != 1 {
			t.Fatalf("view %+v", v)
		}
		proposal, option := v.Offers[0].ProposalID, v.Offers[0].Options[0]
		capName, _ := mrp.RequiredCapability(suspend)
		r, err := w.Decide(st, controlInput(2, trig(suspend), "dana", "operator", capName))
		if err != nil || r.Refusal != "" {
			t.Fatalf("%s: %v %q", suspend, err, r.Refusal)
		}
		resume := controlInput(3, trig(mrp.Resume), "dana", "operator", "mrp.resume")
		v, _ = w.Inspect(r.State)
		if err := CheckControl(v, Control{Trigger: mrp.Resume}, ControlActor(resume)); err != nil {
			t.Fatalf("%s then RESUME refused by the check: %v", suspend, err)
		}
		r, err = w.Decide(r.State, resume)
		if err != nil || r.Refusal != "" {
			t.Fatalf("%s then RESUME: %v %q", suspend, err, r.Refusal)
		}
		v, _ = w.Inspect(r.State)
		if v.MRPState != "OPTIONS" || len(v.Offers) != 1 || v.Journey[len(v.Journey)-1].Row != "H11" {
			t.Fatalf("%s then RESUME: in %s, offers %v", suspend, v.MRPState, v.Offers)
		}
		r, err = w.Decide(r.State, choiceInput(4, proposal, option, "dana", "operator", "mrp.choose_option"))
		if err != nil || r.Refusal != "" {
			t.Fatalf("%s, RESUME, then a choice: %v %q", suspend, err, r.Refusal)
		}
		if c := notes(r, "choice"); len(c) != 1 || c[0]["proposal_id"] != proposal {
			t.Fatalf("the choice did not decide %s again: %v", proposal, c)
		}
		if o := outcomes(r); len(o) != 1 || o[0]["proposal_id"] != proposal {
			t.Fatalf("H did not decide %s again: %v", proposal, o)
		}
		v, _ = w.Inspect(r.State)
		if len(v.Offers) != 0 || strings.HasPrefix(v.MRPState, "OPTIONS") {
			t.Fatalf("after the choice: %s offers %v", v.MRPState, v.Offers)
		}
	}
}

// A person's EXIT ends deliberation with a summary, and the run with it:
// the offers are withdrawn, the summary says what was left undecided,
// and the workflow reports the run failed (its work cannot be done any
// more: EXIT is terminal, so no later proposal could be decided), so the
// runner ends it with a typed outcome instead of waiting for a choice no
// one can make.
func TestExitEndsTheRun(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 60)
	v, _ := w.Inspect(st)
	proposal := v.Offers[0].ProposalID
	exit := controlInput(2, map[string]any{"trigger": "EXIT", "reason": "customer withdrew the request"}, "dana", "operator", "mrp.exit")
	r, err := w.Decide(st, exit)
	if err != nil || r.Refusal != "" {
		t.Fatalf("exit: %v %q", err, r.Refusal)
	}
	if r.Completion != Fail {
		t.Fatalf("after EXIT the run's completion is %q, want %q", r.Completion, Fail)
	}
	v, _ = w.Inspect(r.State)
	e := v.Journey[len(v.Journey)-1]
	if v.MRPState != "EXIT" || len(v.Offers) != 0 || e.Row != "H09" {
		t.Fatalf("after EXIT: %s offers %v entry %+v", v.MRPState, v.Offers, e)
	}
	if !strings.Contains(e.Summary, "dana") || !strings.Contains(e.Summary, proposal) || !strings.Contains(e.Summary, "customer withdrew the request") {
		t.Fatalf("EXIT summary %q", e.Summary)
	}
	if n := notes(r, "mrp.control"); len(n) != 1 || len(n[0]["withdrawn"].([]any)) != 1 {
		t.Fatalf("control note %v", n)
	}
	// Ended, it stays ended: a late choice is refused, and whatever input
	// still arrives leaves the run failed.
	if ch, _ := w.Decide(r.State, choiceInput(3, proposal, "path:store-credit", "dana", "operator", "mrp.choose_option")); ch.Refusal == "" {
		t.Fatal("a choice after EXIT was taken")
	}
	in := refundInput("r-8", 10, "carol", "goodwill")
	late, err := w.Decide(r.State, Input{Seq: 3, Kind: KindInput, Body: in, Actor: "agent"})
	if err != nil || late.Completion != Fail || len(late.Effects) != 0 {
		t.Fatalf("an input after EXIT: %v completion %q effects %d", err, late.Completion, len(late.Effects))
	}
}

// An EXIT that names a proposal still withdraws every offer: nothing can
// be chosen after it.
func TestExitNamingAProposalWithdrawsEveryOffer(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 60)
	r, err := w.Decide(st, controlInput(2, map[string]any{"trigger": "EXIT", "proposal_id": "proposal:other"}, "dana", "operator", "mrp.exit"))
	if err != nil || r.Refusal != "" {
		t.Fatalf("exit: %v %q", err, r.Refusal)
	}
	if v, _ := w.Inspect(r.State); len(v.Offers) != 0 || r.Completion != Fail {
		t.Fatalf("after EXIT naming another proposal: offers %v completion %q", v.Offers, r.Completion)
	}
}

// Whatever a person does to a run waiting in OPTIONS — pause, escalate,
// ask for a test, resume, in any order — as long as the run has not
// exited and the offer is still pending, the person can get back to it:
// at most a PAUSE and a RESUME away, a choice is taken and decides the
// proposal.
func TestNoSteeringDeadEnd(t *testing.T) {
	w := compileExample(t, "support-agent")
	st0, _ := goodwill(t, w, 60)
	v0, _ := w.Inspect(st0)
	proposal, option := v0.Offers[0].ProposalID, v0.Offers[0].Options[0]
	rapid.Check(t, func(rt *rapid.T) {
		st, seq := st0, int64(1)
		act := func(tr mrp.Trigger) Result {
			seq++
			capName, _ := mrp.RequiredCapability(tr)
			r, err := w.Decide(st, controlInput(seq, trig(tr), "dana", "operator", capName))
			if err != nil {
				rt.Fatal(err)
			}
			return r
		}
		n := rapid.IntRange(1, 6).Draw(rt, "acts")
		for i := 0; i < n; i++ {
			tr := rapid.SampledFrom([]mrp.Trigger{mrp.Pause, mrp.HumanEscalate, mrp.RequestTest, mrp.Resume}).Draw(rt, "act")
			st = act(tr).State
		}
		for _, path := range [][]mrp.Trigger{nil, {mrp.Resume}, {mrp.Pause, mrp.Resume}} {
			s := st
			for _, tr := range path {
				if r := act(tr); r.Refusal == "" {
					st = r.State
				}
			}
			seq++
			r, err := w.Decide(st, choiceInput(seq, proposal, option, "dana", "operator", "mrp.choose_option"))
			if err != nil {
				rt.Fatal(err)
			}
			if r.Refusal == "" {
				if o := outcomes(r); len(o) != 1 || o[0]["proposal_id"] != proposal {
					rt.Fatalf("the choice did not decide the proposal: %v", o)
				}
				return
			}
			st = s
		}
		v, _ := w.Inspect(st)
		rt.Fatalf("dead end: MRP %s, strip %v, offers %d", v.MRPState, v.Strip, len(v.Offers))
	})
}
