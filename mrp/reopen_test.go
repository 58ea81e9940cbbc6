package mrp

import "testing"

// Each trigger that reopens deliberation for a held proposal, from the
// state it leaves, reopens it exactly when it lands where H decides (HOLD
// or a non-refusal DECIDE); the same triggers landing in OPTIONS or TEST,
// refused events and every other trigger reopen nothing.
func TestReopens(t *testing.T) {
	safe := func(s State) Machine { m := at(s); m.SafeMode = true; return m }
	withOptions := func(s State) Machine { m := at(s); m.Options = []string{"a"}; return m }
	for _, c := range []struct {
		name   string
		m      Machine
		ev     Event
		reopen bool
	}{
		{"TESTS_PASS in TEST → DECIDE", at(Test), Event{Trigger: TestsPass, Actor: runtime}, true},
		{"RESUME in ESCALATE → HOLD", at(Escalate), Event{Trigger: Resume, Actor: alice}, true},
		{"RESUME in FAILSAFE → HOLD", at(Failsafe), Event{Trigger: Resume, Actor: alice}, true},
		{"RESUME with options on record → OPTIONS", withOptions(Escalate), Event{Trigger: Resume, Actor: alice}, false},
		{"LEAVE_SAFE_MODE → HOLD", safe(Decide), Event{Trigger: LeaveSafeMode, Actor: alice}, true},
		{"LEAVE_SAFE_MODE from ESCALATE → HOLD", safe(Escalate), Event{Trigger: LeaveSafeMode, Actor: alice}, true},
		{"CONFLICTS_RESOLVED → OPTIONS", at(Hold), Event{Trigger: ConflictsResolved, Actor: runtime, Target: Options}, false},
		{"CONFLICTS_RESOLVED → TEST", at(Hold), Event{Trigger: ConflictsResolved, Actor: runtime, Target: Test}, false},
		{"TESTS_CONTRADICT → HOLD", at(Test), Event{Trigger: TestsContradict, Actor: runtime, Target: Hold}, false},
		{"PAUSE → HOLD", at(Decide), Event{Trigger: Pause, Actor: alice}, false},
		{"TIER1_ALLOW → DECIDE", at(Hold), Event{Trigger: Tier1Allow, Actor: runtime}, false},
		{"refused RESUME in HOLD", at(Hold), Event{Trigger: Resume, Actor: alice}, false},
		{"RESUME by a model", at(Escalate), Event{Trigger: Resume, Actor: model}, false},
	} {
		next, _ := Step(c.m, c.ev)
		e := next.Journey[len(c.m.Journey)]
		if got := Reopens(e); got != c.reopen {
			t.Errorf("%s: Reopens(%+v) = %v, want %v", c.name, e, got, c.reopen)
		}
	}
	// CONFLICTS_RESOLVED has no row into HOLD or DECIDE today; an entry
	// that did would reopen, one into a refusal would not.
	if !Reopens(Entry{Trigger: ConflictsResolved, From: Hold, To: Hold}) || Reopens(Entry{Trigger: TestsPass, To: Decide, Refusal: true}) {
		t.Fatal("Reopens judges the landing state wrongly")
	}
}

// REDECIDE and WITHDRAW record a kept proposal's fate where the machine
// stands, in every live state, and only the runtime raises them.
func TestRedecideAndWithdrawStay(t *testing.T) {
	for _, trig := range []Trigger{Redecide, Withdraw} {
		for _, s := range live {
			m := at(s)
			m.Options = []string{"a"}
			next, err := Step(m, Event{Trigger: trig, Actor: runtime, Cause: "p-1"})
			if err != nil || next.State != s || len(next.Options) != 1 {
				t.Fatalf("%s in %s: %v, %s, options %v", trig, s, err, next.State, next.Options)
			}
			if e := next.Journey[len(next.Journey)-1]; e.Cause != "p-1" || e.From != s || e.To != s || Reopens(e) {
				t.Fatalf("%s in %s: entry %+v", trig, s, e)
			}
			if _, err := Step(m, Event{Trigger: trig, Actor: alice}); err == nil {
				t.Fatalf("a person raised %s", trig)
			}
		}
		if _, err := Step(at(Exit), Event{Trigger: trig, Actor: runtime}); err == nil {
			t.Fatalf("%s after EXIT", trig)
		}
	}
}
