package mrp

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// offering is a machine waiting in OPTIONS with two paths on offer.
func offering(t *testing.T) Machine {
	t.Helper()
	m, err := Step(at(Hold), Event{Trigger: Tier1Contest, Actor: runtime, Options: []string{"path:a", "path:b"}})
	if err != nil || m.State != Options {
		t.Fatalf("into OPTIONS: %v %s", err, m.State)
	}
	return m
}

// A person who pauses or escalates while options are offered suspends
// the choice, not the offer: RESUME brings the machine back to OPTIONS
// with the same paths, and a choice is then admitted.
func TestSuspendedChoiceResumes(t *testing.T) {
	for _, suspend := range []Trigger{Pause, HumanEscalate} {
		m := offering(t)
		m, err := Step(m, Event{Trigger: suspend, Actor: alice})
		if err != nil {
			t.Fatalf("%s: %v", suspend, err)
		}
		if !slices.Equal(m.Options, []string{"path:a", "path:b"}) {
			t.Fatalf("%s dropped the options on record: %v", suspend, m.Options)
		}
		// Suspended, the choice waits.
		if _, err := Step(m, Event{Trigger: ChooseOption, Actor: alice, Target: Decide, Option: "path:a"}); err == nil {
			t.Fatalf("a choice was admitted in %s", m.State)
		}
		m, err = Step(m, Event{Trigger: Resume, Actor: alice})
		if err != nil || m.State != Options || m.Journey[len(m.Journey)-1].Row != "H11" {
			t.Fatalf("%s then RESUME: %v, in %s", suspend, err, m.State)
		}
		if !slices.Equal(m.Options, []string{"path:a", "path:b"}) {
			t.Fatalf("resumed with options %v", m.Options)
		}
		m, err = Step(m, Event{Trigger: ChooseOption, Actor: alice, Target: Decide, Option: "path:a"})
		if err != nil || m.State != Decide {
			t.Fatalf("choice after RESUME: %v, in %s", err, m.State)
		}
		if len(m.Options) != 0 {
			t.Fatalf("options left on record after the choice: %v", m.Options)
		}
	}
}

// A test a person asks for while options are offered suspends the choice
// too: after the test (or a pause during it) the person resumes to the
// same options.
func TestTestRequestedInOptionsKeepsThem(t *testing.T) {
	m, err := Step(offering(t), Event{Trigger: RequestTest, Actor: alice})
	if err != nil || m.State != Test || len(m.Options) != 2 {
		t.Fatalf("REQUEST_TEST: %v in %s options %v", err, m.State, m.Options)
	}
	// The test contradicts the path: back to the options (R18).
	if c, err := Step(m, Event{Trigger: TestsContradict, Target: Options, Actor: runtime}); err != nil || c.State != Options || len(c.Options) != 2 {
		t.Fatalf("TESTS_CONTRADICT to OPTIONS: %v in %s options %v", err, c.State, c.Options)
	}
	m, _ = Step(m, Event{Trigger: Pause, Actor: alice})
	m, err = Step(m, Event{Trigger: Resume, Actor: alice})
	if err != nil || m.State != Options || !slices.Equal(m.Options, []string{"path:a", "path:b"}) {
		t.Fatalf("PAUSE, RESUME after a test: %v in %s options %v", err, m.State, m.Options)
	}
}

// Options withdrawn by a rejection or by the runtime are gone: RESUME
// from HOLD has nothing to return to and is refused, changing nothing.
func TestResumeWithoutOptionsIsRefused(t *testing.T) {
	for _, ev := range []Event{{Trigger: RejectAll, Actor: alice}, {Trigger: AllRejected, Actor: runtime}, {Trigger: Tier1AskFirst, Actor: runtime}} {
		m, err := Step(offering(t), ev)
		if err != nil || m.State != Hold || len(m.Options) != 0 {
			t.Fatalf("%s: %v in %s options %v", ev.Trigger, err, m.State, m.Options)
		}
		next, err := Step(m, Event{Trigger: Resume, Actor: alice})
		var me *Error
		if !errors.As(err, &me) || me.Code != "NO_TRANSITION" || next.State != Hold {
			t.Fatalf("RESUME after %s: %v in %s", ev.Trigger, err, next.State)
		}
	}
	// Escalated by the runtime, a person's RESUME still returns to HOLD.
	m, _ := Step(offering(t), Event{Trigger: Tier1Escalate, Actor: runtime})
	if m, err := Step(m, Event{Trigger: Resume, Actor: alice}); err != nil || m.State != Hold || m.Journey[len(m.Journey)-1].Row != "H10" {
		t.Fatalf("RESUME after a runtime escalation: %v in %s", err, m.State)
	}
}

// Whatever happened before, a machine a person suspended out of OPTIONS
// can be brought back to exactly those options by the same person, unless
// it was ended or left suspended by something else first.
func TestSuspendResumeProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := New(Budgets{})
		n := rapid.IntRange(0, 12).Draw(rt, "n")
		triggers := []Trigger{Tier1Contest, Tier1Allow, Tier3, Tier2, TestsPass, Pause, RequestTest, HumanEscalate, Resume, RejectAll}
		for i := 0; i < n; i++ {
			tr := rapid.SampledFrom(triggers).Draw(rt, "trigger")
			ev := Event{Trigger: tr, Actor: runtime, Options: []string{"x", "y"}}
			if _, human := RequiredCapability(tr); human {
				ev.Actor = alice
			}
			m, _ = Step(m, ev)
		}
		if m.State != Options {
			return
		}
		offered := slices.Clone(m.Options)
		suspended, err := Step(m, Event{Trigger: rapid.SampledFrom([]Trigger{Pause, HumanEscalate}).Draw(rt, "suspend"), Actor: alice})
		if err != nil {
			rt.Fatal(err)
		}
		back, err := Step(suspended, Event{Trigger: Resume, Actor: alice})
		if err != nil || back.State != Options || !slices.Equal(back.Options, offered) {
			rt.Fatalf("suspended from OPTIONS %v, RESUME gave %v in %s with %v", offered, err, back.State, back.Options)
		}
	})
}
