package mrp

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

var (
	runtime = Actor{ID: "runtime", Kind: ActorSystem, Role: "runtime"}
	alice   = Actor{ID: "alice", Kind: ActorHuman, Role: "operator", Capabilities: []string{
		"mrp.pause", "mrp.choose_option", "mrp.reject_all", "mrp.request_test",
		"mrp.escalate", "mrp.resume", "mrp.leave_safe_mode", "mrp.exit"}}
	model = Actor{ID: "agent", Kind: ActorModel, Role: "operator", Capabilities: alice.Capabilities}
)

func at(s State) Machine {
	m := New(Budgets{})
	m.State = s
	return m
}

// TestCardTransitions restates every transition of AD-05 §5.2 (and the
// card's AD-07 §6 budget rule) independently of Table and checks the
// machine follows it.
func TestCardTransitions(t *testing.T) {
	cases := []struct {
		from    State
		trigger Trigger
		target  State
		options []string // options on record before the event
		want    State
		refusal bool
	}{
		// From HOLD.
		{Hold, ConflictsResolved, Options, nil, Options, false},
		{Hold, ConflictsResolved, Test, nil, Test, false},
		{Hold, Tier1Refuse, "", nil, Decide, true},
		{Hold, Tier1Escalate, "", nil, Escalate, false},
		{Hold, BudgetDeep, "", nil, Exit, false},
		{Hold, BudgetSession, "", nil, Exit, false},
		{Hold, BudgetTurn, "", []string{"a", "b"}, Options, false},
		{Hold, BudgetTurn, "", nil, Decide, false},
		// From OPTIONS.
		{Options, OptionSelected, Test, []string{"a"}, Test, false},
		{Options, OptionSelected, Decide, []string{"a"}, Decide, false},
		{Options, AllRejected, "", []string{"a"}, Hold, false},
		{Options, Tier1Refuse, "", nil, Decide, true},
		{Options, Tier1Escalate, "", nil, Escalate, false},
		{Options, Tier1AskFirst, "", nil, Hold, false},
		{Options, Tier2, "", nil, Test, false},
		// From TEST.
		{Test, TestsPass, "", nil, Decide, false},
		{Test, TestsContradict, Hold, nil, Hold, false},
		{Test, TestsContradict, Options, nil, Options, false},
		{Test, Tier0Failsafe, "", nil, Failsafe, false},
		// From DECIDE.
		{Decide, Tier0Block, "", nil, Decide, true},
		{Decide, Tier0Failsafe, "", nil, Failsafe, false},
		{Decide, Tier1Refuse, "", nil, Decide, true},
		{Decide, Tier2, "", nil, Test, false},
		{Decide, Tier3, "", nil, Hold, false},
		{Decide, Tier4, "", nil, Decide, false},
	}
	for _, c := range cases {
		m := at(c.from)
		m.Options = c.options
		next, err := Step(m, Event{Trigger: c.trigger, Target: c.target, Actor: runtime})
		if err != nil {
			t.Errorf("%s --%s--> : %v", c.from, c.trigger, err)
			continue
		}
		if next.State != c.want || next.Refusal != c.refusal {
			t.Errorf("%s --%s(%s)--> %s refusal=%v, want %s refusal=%v", c.from, c.trigger, c.target, next.State, next.Refusal, c.want, c.refusal)
		}
		last := next.Journey[len(next.Journey)-1]
		if last.From != c.from || last.Trigger != c.trigger || last.Row == "" {
			t.Errorf("journey entry %+v does not record the transition", last)
		}
	}
}

// TestEveryRowIsReachable fires each row of the table from each of its
// source states and checks the row taken is that row (or an earlier row
// the same event also matches, which would make the row dead).
func TestEveryRowIsReachable(t *testing.T) {
	for _, r := range Table {
		for _, from := range r.From {
			m := at(from)
			ev := Event{Trigger: r.Trigger, Actor: runtime}
			if _, human := RequiredCapability(r.Trigger); human {
				ev.Actor = alice
			}
			switch r.Guard {
			case "target=OPTIONS":
				ev.Target = Options
			case "target=TEST":
				ev.Target = Test
			case "target=HOLD":
				ev.Target = Hold
			case "target=DECIDE":
				ev.Target = Decide
			case "options on record":
				m.Options = []string{"x", "y"}
			case "escalate on no progress":
				m.Budgets.EscalateOnNoProgress = true
			case "in safe mode":
				m.SafeMode = true
			}
			next, err := Step(m, ev)
			if err != nil {
				t.Errorf("row %s from %s: %v", r.ID, from, err)
				continue
			}
			if got := next.Journey[len(next.Journey)-1].Row; got != r.ID {
				t.Errorf("row %s from %s is shadowed by row %s", r.ID, from, got)
			}
			want := r.To
			if want == "" {
				want = from
			}
			if next.State != want {
				t.Errorf("row %s from %s: landed in %s, want %s", r.ID, from, next.State, want)
			}
		}
	}
}

func TestDecideNeedsADecidableTicket(t *testing.T) {
	for _, tc := range []struct {
		name string
		view TicketView
		from State
		want State
	}{
		{"incomplete from HOLD", TicketView{Complete: false}, Hold, Hold},
		{"preview outstanding", TicketView{Complete: true, PreviewRequired: true}, Hold, Hold},
		{"confirmation outstanding", TicketView{Complete: true, ConfirmationRequired: true}, Hold, Hold},
		{"ready", TicketView{Complete: true, PreviewRequired: true, PreviewShown: true}, Hold, Decide},
	} {
		next, err := Step(at(tc.from), Event{Trigger: Tier1Allow, Actor: runtime, Ticket: &tc.view})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if next.State != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, next.State, tc.want)
		}
	}
	// From OPTIONS a chosen option with an incomplete ticket stays in OPTIONS.
	m := at(Options)
	m.Options = []string{"a"}
	next, _ := Step(m, Event{Trigger: ChooseOption, Target: Decide, Actor: alice, Ticket: &TicketView{}})
	if next.State != Options {
		t.Errorf("incomplete ticket chosen from OPTIONS landed in %s", next.State)
	}
	// TESTS_PASS with an outstanding confirmation holds.
	next, _ = Step(at(Test), Event{Trigger: TestsPass, Actor: runtime, Ticket: &TicketView{Complete: true, ConfirmationRequired: true}})
	if next.State != Hold {
		t.Errorf("tests passed with confirmation outstanding landed in %s", next.State)
	}
}

func TestHumanInitiatedTransitions(t *testing.T) {
	// A model actor can issue none, whatever capabilities it claims.
	for trig := range humanTriggers {
		for _, s := range live {
			m := at(s)
			m.SafeMode = true
			m.Options = []string{"a"}
			next, err := Step(m, Event{Trigger: trig, Actor: model, Target: Decide})
			var me *Error
			if !errors.As(err, &me) || me.Code != "MODEL_ACTOR_FORBIDDEN" {
				t.Fatalf("model issued %s in %s: %v", trig, s, err)
			}
			if next.State != s || next.Journey[len(next.Journey)-1].Rejected != "MODEL_ACTOR_FORBIDDEN" {
				t.Fatalf("refused event changed state or was not audited")
			}
		}
	}
	// A model cannot raise runtime triggers either.
	if _, err := Step(at(Test), Event{Trigger: TestsPass, Actor: model}); err == nil {
		t.Fatal("model asserted TESTS_PASS")
	}
	// A person cannot assert runtime facts.
	if _, err := Step(at(Test), Event{Trigger: TestsPass, Actor: alice}); err == nil {
		t.Fatal("a person asserted TESTS_PASS")
	}
	// Capability and role are checked.
	noCap := alice
	noCap.Capabilities = []string{"mrp.pause"}
	if _, err := Step(at(Decide), Event{Trigger: HumanExit, Actor: noCap}); err == nil {
		t.Fatal("exit without mrp.exit")
	}
	badRole := alice
	badRole.Role = "intern"
	if _, err := Step(at(Decide), Event{Trigger: Pause, Actor: badRole}); err == nil {
		t.Fatal("unknown role paused")
	}
	// The system cannot issue a human trigger.
	if _, err := Step(at(Decide), Event{Trigger: Pause, Actor: runtime}); err == nil {
		t.Fatal("runtime issued PAUSE")
	}
	steps := []struct {
		ev   Event
		want State
	}{
		{Event{Trigger: Pause, Actor: alice}, Hold},
		{Event{Trigger: RequestTest, Actor: alice}, Test},
		{Event{Trigger: Tier0Failsafe, Actor: runtime}, Failsafe},
		{Event{Trigger: Resume, Actor: alice}, Hold},
		{Event{Trigger: Tier1Contest, Actor: runtime, Options: []string{"a", "b"}}, Options},
		{Event{Trigger: RejectAll, Actor: alice}, Hold},
		{Event{Trigger: HumanEscalate, Actor: alice}, Escalate},
		{Event{Trigger: HumanExit, Actor: alice}, Exit},
	}
	m := at(Decide)
	for i, s := range steps {
		var err error
		m, err = Step(m, s.ev)
		if err != nil || m.State != s.want {
			t.Fatalf("step %d %s: %v state %s want %s", i, s.ev.Trigger, err, m.State, s.want)
		}
		if e := m.Journey[len(m.Journey)-1]; e.ActorID != s.ev.Actor.ID || e.Role != s.ev.Actor.Role {
			t.Fatalf("step %d: actor not recorded: %+v", i, e)
		}
	}
	if _, err := Step(m, Event{Trigger: Pause, Actor: alice}); err == nil {
		t.Fatal("EXIT is terminal but accepted PAUSE")
	}
}

func TestDegradedSafeMode(t *testing.T) {
	m, err := Step(at(Decide), Event{Trigger: EnterSafeMode, Actor: runtime, Cause: "tripwire: ledger closure"})
	if err != nil || !m.SafeMode || m.State != Hold {
		t.Fatalf("entering safe mode: %v %+v", err, m)
	}
	write := TicketView{Complete: true, Status: "READY"}
	probe := TicketView{Complete: true, Status: "READY", VerificationOnly: true}
	// Everything but verification is held for a person.
	m2, _ := Step(m, Event{Trigger: Tier1Allow, Actor: runtime, Ticket: &write})
	if m2.State != Hold || m2.Admits(write) {
		t.Fatalf("safe mode let a write through: %s", m2.State)
	}
	m3, _ := Step(m, Event{Trigger: Tier1Allow, Actor: runtime, Ticket: &probe})
	if m3.State != Decide || !m3.Admits(probe) || m3.Admits(write) {
		t.Fatalf("safe mode: verification action state %s admits=%v", m3.State, m3.Admits(probe))
	}
	// Nothing but a person leaves safe mode: no runtime trigger clears it.
	for _, trig := range []Trigger{ConflictsResolved, TestsPass, Tier4, CareCooloffOK, Tier1Allow} {
		n, _ := Step(m3, Event{Trigger: trig, Actor: runtime, Target: Test})
		if !n.SafeMode {
			t.Fatalf("%s cleared safe mode", trig)
		}
	}
	if _, err := Step(m3, Event{Trigger: LeaveSafeMode, Actor: runtime}); err == nil {
		t.Fatal("runtime left safe mode")
	}
	out, err := Step(m3, Event{Trigger: LeaveSafeMode, Actor: alice})
	if err != nil || out.SafeMode {
		t.Fatalf("person could not leave safe mode: %v", err)
	}
	if _, err := Step(at(Hold), Event{Trigger: LeaveSafeMode, Actor: alice}); err == nil {
		t.Fatal("left safe mode that was never entered")
	}
}

func TestTestAdmitsVerificationOnly(t *testing.T) {
	m := at(Test)
	if m.Admits(TicketView{Complete: true}) || !m.Admits(TicketView{Complete: true, VerificationOnly: true}) {
		t.Fatal("TEST must admit exactly verification-class actions")
	}
	if at(Hold).Admits(TicketView{Complete: true, VerificationOnly: true}) {
		t.Fatal("HOLD admitted an action")
	}
	d := at(Decide)
	d.Refusal = true
	if d.Admits(TicketView{Complete: true}) {
		t.Fatal("DECIDE(refusal) admitted an action")
	}
}

func TestCareCooldown(t *testing.T) {
	m, _ := Step(at(Decide), Event{Trigger: CareCooldown, Actor: runtime})
	if !m.Cooldown || m.State != Hold {
		t.Fatalf("cool-down: %+v", m)
	}
	// The runtime's deep loop is deferred; a person's request is refused.
	n, err := Step(m, Event{Trigger: ConflictsResolved, Target: Test, Actor: runtime})
	if err != nil || n.State != Hold || n.Budgets.DeepUsed != 0 {
		t.Fatalf("deep loop entered during cool-down: %v %s", err, n.State)
	}
	if _, err := Step(m, Event{Trigger: RequestTest, Actor: alice}); err == nil {
		t.Fatal("person entered TEST during cool-down")
	}
	m, _ = Step(m, Event{Trigger: CareCooloffOK, Actor: runtime})
	n, _ = Step(m, Event{Trigger: ConflictsResolved, Target: Test, Actor: runtime})
	if n.State != Test || n.Budgets.DeepUsed != 1 {
		t.Fatalf("after CARE_COOLOFF_OK: %s deep=%d", n.State, n.Budgets.DeepUsed)
	}
}

func TestClosureBudgets(t *testing.T) {
	// Turn budget spent in HOLD: OPTIONS when options exist, else DECIDE
	// with a summary.
	m := New(Budgets{TurnLimit: 3})
	for i := 0; i < 3; i++ {
		m, _ = Step(m, Event{Trigger: Tier3, Actor: runtime, Progress: true})
	}
	if m.State != Decide || m.Journey[len(m.Journey)-1].Trigger != BudgetTurn || m.Journey[len(m.Journey)-1].Summary == "" {
		t.Fatalf("turn budget: %s %+v", m.State, m.Journey[len(m.Journey)-1])
	}
	// Deep-loop budget exceeded: EXIT with a summary.
	m = New(Budgets{DeepLimit: 1})
	m, _ = Step(m, Event{Trigger: ConflictsResolved, Target: Test, Actor: runtime, Progress: true})
	m, _ = Step(m, Event{Trigger: TestsContradict, Target: Hold, Actor: runtime, Progress: true})
	if m.State != Hold {
		t.Fatalf("one deep loop should be allowed: %s", m.State)
	}
	m, _ = Step(m, Event{Trigger: ConflictsResolved, Target: Test, Actor: runtime, Progress: true})
	if m.State != Exit || m.Journey[len(m.Journey)-1].Trigger != BudgetDeep {
		t.Fatalf("deep budget: %s", m.State)
	}
	// Session budget.
	m = New(Budgets{SessionLimit: 2})
	m, _ = Step(m, Event{Trigger: Tier3, Actor: runtime, Progress: true})
	m, _ = Step(m, Event{Trigger: Tier3, Actor: runtime, Progress: true})
	if m.State != Exit {
		t.Fatalf("session budget: %s", m.State)
	}
	// Loops without progress: EXIT with summary, or ESCALATE when asked.
	for _, esc := range []bool{false, true} {
		m = New(Budgets{NoProgressLimit: 3, EscalateOnNoProgress: esc})
		for i := 0; i < 3 && !m.State.Terminal() && m.State != Escalate; i++ {
			m, _ = Step(m, Event{Trigger: Tier3, Actor: runtime})
		}
		want := Exit
		if esc {
			want = Escalate
		}
		if m.State != want {
			t.Fatalf("no progress (escalate=%v): %s", esc, m.State)
		}
	}
}

func TestStripProjectsInternalStates(t *testing.T) {
	m := at(Hold)
	for _, ev := range []Event{
		{Trigger: ConflictsResolved, Target: Test, Actor: runtime},
		{Trigger: Tier0Failsafe, Actor: runtime},
		{Trigger: Resume, Actor: alice},
		{Trigger: Tier1Allow, Actor: runtime},
	} {
		m, _ = Step(m, ev)
	}
	got := m.Strip()
	want := []State{Hold, Test, Hold, Decide}
	if len(got) != len(want) {
		t.Fatalf("strip %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("strip %v, want %v", got, want)
		}
	}
}

// Property: the machine never leaves EXIT, a model actor never changes
// anything, a refused event never changes the state, and every event adds
// exactly one Journey entry (or two when a budget forces closure).
func TestMachineProperties(t *testing.T) {
	triggers, actors, targets := eventDomain()
	rapid.Check(t, func(rt *rapid.T) {
		m := New(Budgets{
			TurnLimit: rapid.IntRange(0, 5).Draw(rt, "turn"), DeepLimit: rapid.IntRange(0, 3).Draw(rt, "deep"),
			SessionLimit: rapid.IntRange(0, 30).Draw(rt, "session"), NoProgressLimit: rapid.IntRange(0, 4).Draw(rt, "np"),
		})
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		for i := 0; i < n; i++ {
			ev := drawEvent(rt, triggers, actors, targets)
			next, err := Step(m, ev)
			if err != nil {
				if next.State != m.State || next.Refusal != m.Refusal || next.SafeMode != m.SafeMode {
					rt.Fatalf("refused %s changed the machine", ev.Trigger)
				}
				if len(next.Journey) != len(m.Journey)+1 {
					rt.Fatalf("refused event not audited")
				}
			}
			if ev.Actor.Kind == ActorModel && err == nil {
				rt.Fatalf("model actor issued %s", ev.Trigger)
			}
			if m.State == Exit && next.State != Exit {
				rt.Fatalf("left EXIT")
			}
			if m.SafeMode && !next.SafeMode && (ev.Trigger != LeaveSafeMode || ev.Actor.Kind != ActorHuman) {
				rt.Fatalf("safe mode cleared by %s from %s", ev.Trigger, ev.Actor.Kind)
			}
			// The entry for this event (forced closure entries may follow)
			// never enters a non-refusal DECIDE with an undecidable ticket.
			if e := next.Journey[len(m.Journey)]; err == nil && ev.Ticket != nil && e.To == Decide && !e.Refusal {
				if ok, _ := ev.Ticket.Decidable(); !ok {
					rt.Fatalf("entered DECIDE with an undecidable ticket")
				}
			}
			if next.State == Decide && ev.Ticket != nil && next.Admits(*ev.Ticket) {
				if ok, _ := ev.Ticket.Decidable(); !ok {
					rt.Fatalf("admits an undecidable ticket")
				}
			}
			if d := len(next.Journey) - len(m.Journey); d < 1 || d > 3 {
				rt.Fatalf("journey grew by %d", d)
			}
			m = next
		}
	})
}

// eventDomain is what the property tests draw events from: every known
// trigger in order, a runtime, a human and a model actor, and the targets.
func eventDomain() ([]Trigger, []Actor, []State) {
	triggers := []Trigger{}
	for trig := range knownTriggers {
		triggers = append(triggers, trig)
	}
	sortTriggers(triggers)
	return triggers, []Actor{runtime, alice, model}, []State{"", Hold, Options, Test, Decide}
}

// drawEvent draws an event of the given triggers, actors and targets, with
// or without a ticket view, for the machine's property tests.
func drawEvent(rt *rapid.T, triggers []Trigger, actors []Actor, targets []State) Event {
	ev := Event{
		Trigger:  rapid.SampledFrom(triggers).Draw(rt, "trigger"),
		Actor:    rapid.SampledFrom(actors).Draw(rt, "actor"),
		Target:   rapid.SampledFrom(targets).Draw(rt, "target"),
		Progress: rapid.Bool().Draw(rt, "progress"),
	}
	if rapid.Bool().Draw(rt, "withTicket") {
		ev.Ticket = &TicketView{Complete: rapid.Bool().Draw(rt, "complete"), VerificationOnly: rapid.Bool().Draw(rt, "verif")}
	}
	return ev
}

func TestStepIsPure(t *testing.T) {
	m := at(Options)
	m.Options = []string{"a", "b"}
	determinism.Check2(t, m, Event{Trigger: ChooseOption, Target: Test, Actor: alice, Option: "a"}, func(m Machine, e Event) Machine {
		n, _ := Step(m, e)
		return n
	})
}

func sortTriggers(ts []Trigger) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j] < ts[j-1]; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// TestTableDocumented keeps docs/mrp.md in step with the table.
func TestTableDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/mrp.md")
	if err != nil {
		t.Skip("docs not present:", err)
	}
	for _, r := range Table {
		if !strings.Contains(string(doc), "| "+r.ID+" |") {
			t.Errorf("row %s is not documented in docs/mrp.md", r.ID)
		}
	}
}

func TestNewTurnResetsOnlyTheTurnBudget(t *testing.T) {
	m := New(Budgets{TurnLimit: 10, SessionLimit: 100, NoProgressLimit: 50})
	m, _ = Step(m, Event{Trigger: CareCooldown, Actor: runtime})
	m, _ = Step(m, Event{Trigger: Tier3, Actor: runtime})
	m, _ = Step(m, Event{Trigger: EnterSafeMode, Actor: runtime})
	n := NewTurn(m)
	if n.Budgets.TurnUsed != 0 || n.Budgets.SessionUsed != m.Budgets.SessionUsed || n.Budgets.NoProgressRun != m.Budgets.NoProgressRun || !n.SafeMode || !n.Cooldown || n.State != m.State {
		t.Fatalf("new turn: %+v", n)
	}
	if m.Budgets.TurnUsed == 0 {
		t.Fatal("NewTurn changed its input")
	}
}

// matchByScan is match as a scan of the whole table, the definition the
// indexed match is held to.
func matchByScan(m Machine, ev Event) (Row, *Error) {
	if m.State.Terminal() {
		return Row{}, &Error{"TERMINAL_STATE", ev.Trigger, m.State, "the turn has exited"}
	}
	for _, r := range Table {
		if r.Trigger != ev.Trigger || !slices.Contains(r.From, m.State) {
			continue
		}
		if guard(r, m, ev) {
			return r, nil
		}
	}
	return Row{}, &Error{"NO_TRANSITION", ev.Trigger, m.State, "no row admits this event here"}
}

// TestMatchIsTableScan: for every state, every trigger of the table (and
// one it does not know), every target a row names and every setting of
// what the guards read, match finds the row a scan of the table finds.
func TestMatchIsTableScan(t *testing.T) {
	states, triggers, targets := map[State]bool{}, map[Trigger]bool{"NO_SUCH_TRIGGER": true}, map[State]bool{"": true}
	for _, r := range Table {
		triggers[r.Trigger] = true
		for _, s := range r.From {
			states[s] = true
		}
		states[r.To] = true
		if after, ok := strings.CutPrefix(r.Guard, "target="); ok {
			targets[State(after)] = true
		}
	}
	n := 0
	for s := range states {
		for tr := range triggers {
			for target := range targets {
				for _, opts := range [][]string{nil, {"a"}} {
					for _, flags := range [4][2]bool{{}, {true}, {false, true}, {true, true}} {
						m := Machine{State: s, Options: opts, SafeMode: flags[0]}
						m.Budgets.EscalateOnNoProgress = flags[1]
						ev := Event{Trigger: tr, Target: target}
						gr, ge := match(m, ev)
						wr, we := matchByScan(m, ev)
						if !reflect.DeepEqual(gr, wr) || !reflect.DeepEqual(ge, we) {
							t.Fatalf("%s on %s (target %q): %+v %v, want %+v %v", tr, s, target, gr, ge, wr, we)
						}
						n++
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("nothing compared")
	}
}

// TestStepInIsStep holds StepIn to Step over random walks: the same
// machine and error whatever room it is given, nothing of the machine
// stepped from changed, and the journey in room's array, capped at its
// length, only when it and the event's first entry fit, and always when
// the event adds that entry alone (forced closure entries may copy it
// out, as an append past the cap would).
func TestStepInIsStep(t *testing.T) {
	triggers, actors, targets := eventDomain()
	rapid.Check(t, func(rt *rapid.T) {
		m := New(Budgets{TurnLimit: rapid.IntRange(0, 5).Draw(rt, "turn"), NoProgressLimit: rapid.IntRange(0, 4).Draw(rt, "np")})
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		for i := 0; i < n; i++ {
			ev := drawEvent(rt, triggers, actors, targets)
			room := make([]Entry, rapid.IntRange(0, 4).Draw(rt, "room"))
			for k := range room {
				room[k] = Entry{Cause: "sentinel"}
			}
			before := slices.Clone(m.Journey)
			want, wantErr := Step(m, ev)
			got, gotErr := StepIn(m, ev, room)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				rt.Fatalf("StepIn (room %d) = %+v, %v; Step = %+v, %v", len(room), got, gotErr, want, wantErr)
			}
			if !slices.Equal(m.Journey, before) {
				rt.Fatalf("StepIn changed the journey stepped from")
			}
			inRoom := len(room) > 0 && &got.Journey[0] == &room[0]
			one := len(got.Journey) == len(m.Journey)+1
			if inRoom && (len(m.Journey) >= len(room) || cap(got.Journey) != len(room)) || one && !inRoom && len(m.Journey) < len(room) {
				rt.Fatalf("journey of %d in room of %d: %v (cap %d)", len(got.Journey), len(room), inRoom, cap(got.Journey))
			}
			m = want
		}
	})
}
