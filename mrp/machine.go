package mrp

import (
	"fmt"
	"slices"
	"strings"
)

// State is a state of the deliberation machine.
type State string

// User-visible states, then the internal ones behind them.
const (
	Hold     State = "HOLD"
	Options  State = "OPTIONS"
	Test     State = "TEST"
	Decide   State = "DECIDE"
	Failsafe State = "FAILSAFE"
	Exit     State = "EXIT"
	Escalate State = "ESCALATE"
)

// Visible projects an internal state onto the Journey Strip's four states:
// FAILSAFE and ESCALATE are shown as HOLD (nothing is being answered; a
// person is needed), EXIT as DECIDE (the turn closed with a summary).
func (s State) Visible() State {
	switch s {
	case Failsafe, Escalate:
		return Hold
	case Exit:
		return Decide
	}
	return s
}

// Terminal reports whether no transition leaves the state.
func (s State) Terminal() bool { return s == Exit }

// Trigger names what happened.
type Trigger string

// Triggers raised by the runtime (signals resolved by the Meta-Priority
// Matrix, test outcomes, budgets and faults).
const (
	ConflictsResolved Trigger = "CONFLICTS_RESOLVED"
	Tier0Block        Trigger = "TIER0_BLOCK"    // G1/H1 hard refusal
	Tier0Failsafe     Trigger = "TIER0_FAILSAFE" // watchdog or exfiltration
	Tier1Refuse       Trigger = "TIER1_REFUSE"
	Tier1Escalate     Trigger = "TIER1_ESCALATE"
	Tier1AskFirst     Trigger = "TIER1_ASK_FIRST"
	Tier1Contest      Trigger = "TIER1_CONTEST" // Contestable Gate Mode
	Tier1Allow        Trigger = "TIER1_ALLOW"   // ALLOW or SHAPE
	Tier2             Trigger = "TIER2"
	Tier3             Trigger = "TIER3"
	Tier4             Trigger = "TIER4"
	OptionSelected    Trigger = "OPTION_SELECTED"
	AllRejected       Trigger = "ALL_REJECTED"
	TestsPass         Trigger = "TESTS_PASS"
	TestsContradict   Trigger = "TESTS_CONTRADICT"
	BudgetTurn        Trigger = "BUDGET_TURN"
	BudgetDeep        Trigger = "BUDGET_DEEP"
	BudgetSession     Trigger = "BUDGET_SESSION"
	NoProgress        Trigger = "NO_PROGRESS"
	CareCooldown      Trigger = "CARE_COOLDOWN"
	CareCooloffOK     Trigger = "CARE_COOLOFF_OK"
	EnterSafeMode     Trigger = "SAFE_MODE"
	// Redecide records that a proposal H held or escalated is decided
	// again, now that the machine admits a decision (Reopens); Withdraw
	// that a kept proposal is dropped undecided. Neither moves the machine.
	Redecide Trigger = "REDECIDE"
	Withdraw Trigger = "WITHDRAW"
)

// Causes of Degraded Safe Mode: the runtime cannot trust itself.
const (
	SafeModeTripwire = "tripwire"
	SafeModeStore    = "store fault"
	SafeModeClock    = "clock fault"
	SafeModeWatchdog = "watchdog"
	SafeModeKeys     = "key material missing"
)

// Human-initiated triggers. Each needs a human actor holding the matching
// capability; a model actor can issue none of them.
const (
	Pause         Trigger = "PAUSE"
	ChooseOption  Trigger = "CHOOSE_OPTION"
	RejectAll     Trigger = "REJECT_ALL"
	RequestTest   Trigger = "REQUEST_TEST"
	HumanEscalate Trigger = "ESCALATE"
	Resume        Trigger = "RESUME"
	LeaveSafeMode Trigger = "LEAVE_SAFE_MODE"
	HumanExit     Trigger = "EXIT"
)

var humanTriggers = map[Trigger]string{
	Pause: "mrp.pause", ChooseOption: "mrp.choose_option", RejectAll: "mrp.reject_all",
	RequestTest: "mrp.request_test", HumanEscalate: "mrp.escalate", Resume: "mrp.resume",
	LeaveSafeMode: "mrp.leave_safe_mode", HumanExit: "mrp.exit",
}

// RequiredCapability returns the capability a human actor needs to issue a
// human-initiated trigger, and whether the trigger is human-initiated.
func RequiredCapability(t Trigger) (string, bool) {
	c, ok := humanTriggers[t]
	return c, ok
}

// TriggerFor maps a resolved move onto the trigger that carries it.
func TriggerFor(m Move, hardGate bool) Trigger {
	switch m {
	case MoveFailsafe:
		return Tier0Failsafe
	case MoveRefuse:
		if hardGate {
			return Tier0Block
		}
		return Tier1Refuse
	case MoveEscalate:
		return Tier1Escalate
	case MoveAskFirst:
		return Tier1AskFirst
	case MoveOptions:
		return Tier1Contest
	case MoveHold:
		return Tier3
	case MoveTest:
		return Tier2
	}
	return Tier1Allow
}

// Actor kinds. Only a human may issue human-initiated triggers; only the
// runtime may raise runtime triggers; a model may issue nothing.
const (
	ActorHuman  = "human"
	ActorSystem = "system"
	ActorModel  = "model"
)

// HumanRoles are the roles a human actor may hold.
var HumanRoles = []string{"operator", "reviewer", "human_approver"}

// Actor is who issues an event.
type Actor struct {
	ID           string   `json:"id"`
	Kind         string   `json:"kind"`
	Role         string   `json:"role"`
	Capabilities []string `json:"capabilities"`
}

// Event is one input to the machine.
type Event struct {
	Trigger Trigger `json:"trigger"`
	Actor   Actor   `json:"actor"`
	// Target picks between the two destinations some rows allow
	// (CONFLICTS_RESOLVED, OPTION_SELECTED, TESTS_CONTRADICT, CHOOSE_OPTION).
	Target State `json:"target"`
	// Ticket, when the turn is about an action, is its reduced view: MRP
	// enters DECIDE for it only if it is decidable.
	Ticket *TicketView `json:"ticket"`
	// Options offered (entering OPTIONS) or the one chosen.
	Options []string `json:"options"`
	Option  string   `json:"option"`
	// Progress marks a loop step that made progress (new evidence, a
	// resolved conflict); repeated loops without it are bounded.
	Progress bool   `json:"progress"`
	Cause    string `json:"cause"`
	Summary  string `json:"summary"`
}

// Budgets are the closure budgets of a session. A zero limit is unbounded.
type Budgets struct {
	TurnLimit       int `json:"turn_limit"`
	TurnUsed        int `json:"turn_used"`
	DeepLimit       int `json:"deep_limit"`
	DeepUsed        int `json:"deep_used"`
	SessionLimit    int `json:"session_limit"`
	SessionUsed     int `json:"session_used"`
	NoProgressLimit int `json:"no_progress_limit"`
	NoProgressRun   int `json:"no_progress_run"`
	// EscalateOnNoProgress sends a stalled loop to a person instead of
	// closing it with a summary.
	EscalateOnNoProgress bool `json:"escalate_on_no_progress"`
}

// Entry is one line of the Journey Strip: every state change and every
// refused event, with its cause.
type Entry struct {
	Seq      int     `json:"seq"`
	From     State   `json:"from"`
	To       State   `json:"to"`
	Refusal  bool    `json:"refusal"`
	Trigger  Trigger `json:"trigger"`
	Row      string  `json:"row"`
	ActorID  string  `json:"actor_id"`
	Role     string  `json:"role"`
	Cause    string  `json:"cause"`
	Summary  string  `json:"summary"`
	SafeMode bool    `json:"safe_mode"`
	Rejected string  `json:"rejected"` // the rejection code, when the event changed nothing
}

// Machine is the deliberation machine's whole state: a value, advanced
// only by Step.
type Machine struct {
	State    State    `json:"state"`
	Refusal  bool     `json:"refusal"`
	SafeMode bool     `json:"safe_mode"`
	SafeWhy  string   `json:"safe_mode_cause"`
	Cooldown bool     `json:"care_cooldown"`
	Options  []string `json:"options"`
	Budgets  Budgets  `json:"budgets"`
	Journey  []Entry  `json:"journey"`
}

// New returns a machine in HOLD (not answering yet) with the given budgets.
func New(b Budgets) Machine {
	return Machine{State: Hold, Budgets: b, Options: []string{}, Journey: []Entry{}}
}

// Error is a refused event. The machine is unchanged, and the refusal is
// recorded in the Journey Strip of the returned machine.
type Error struct {
	Code    string
	Trigger Trigger
	State   State
	Msg     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("mrp: %s: %s in %s: %s", e.Code, e.Trigger, e.State, e.Msg)
}

// Row is one transition of the machine: from which states, on which
// trigger, under which guard, to which state. Test names the test that
// exercises it.
type Row struct {
	ID      string
	From    []State
	Trigger Trigger
	Guard   string
	To      State
	Refusal bool
	Source  string // where the row comes from: "AD-05 §5.2", "AD-07 §6", "SPEC §7.3" or "flrh"
}

var userStates = []State{Hold, Options, Test, Decide}
var live = []State{Hold, Options, Test, Decide, Escalate, Failsafe}

// Table is the transition table. Rows are tried in order; the first whose
// state, trigger and guard match is taken.
var Table = []Row{
	{"R01", []State{Hold}, ConflictsResolved, "target=OPTIONS", Options, false, "AD-05 §5.2"},
	{"R02", []State{Hold}, ConflictsResolved, "target=TEST", Test, false, "AD-05 §5.2"},
	{"R03", []State{Hold}, Tier1Refuse, "", Decide, true, "AD-05 §5.2"},
	{"R04", []State{Hold}, Tier1Escalate, "", Escalate, false, "AD-05 §5.2"},
	{"R05", []State{Hold}, BudgetDeep, "", Exit, false, "AD-05 §5.2"},
	{"R06", []State{Hold}, BudgetSession, "", Exit, false, "AD-05 §5.2"},
	{"R07", []State{Hold}, BudgetTurn, "options on record", Options, false, "AD-07 §6"},
	{"R08", []State{Hold}, BudgetTurn, "", Decide, false, "AD-07 §6"},
	{"R09", []State{Options}, OptionSelected, "target=TEST", Test, false, "AD-05 §5.2"},
	{"R10", []State{Options}, OptionSelected, "target=DECIDE", Decide, false, "AD-05 §5.2"},
	{"R11", []State{Options}, AllRejected, "", Hold, false, "AD-05 §5.2"},
	{"R12", []State{Options}, Tier1Refuse, "", Decide, true, "AD-05 §5.2"},
	{"R13", []State{Options}, Tier1Escalate, "", Escalate, false, "AD-05 §5.2"},
	{"R14", []State{Options}, Tier1AskFirst, "", Hold, false, "AD-05 §5.2"},
	{"R15", []State{Options}, Tier2, "", Test, false, "AD-05 §5.2"},
	{"R16", []State{Test}, TestsPass, "", Decide, false, "AD-05 §5.2"},
	{"R17", []State{Test}, TestsContradict, "target=HOLD", Hold, false, "AD-05 §5.2"},
	{"R18", []State{Test}, TestsContradict, "target=OPTIONS", Options, false, "AD-05 §5.2"},
	{"R19", []State{Test}, Tier0Failsafe, "", Failsafe, false, "AD-05 §5.2"},
	{"R20", []State{Decide}, Tier0Block, "", Decide, true, "AD-05 §5.2"},
	{"R21", []State{Decide}, Tier0Failsafe, "", Failsafe, false, "AD-05 §5.2"},
	{"R22", []State{Decide}, Tier1Refuse, "", Decide, true, "AD-05 §5.2"},
	{"R23", []State{Decide}, Tier2, "", Test, false, "AD-05 §5.2"},
	{"R24", []State{Decide}, Tier3, "", Hold, false, "AD-05 §5.2"},
	{"R25", []State{Decide}, Tier4, "", Decide, false, "AD-05 §5.2"},
	// Rows the card leaves implicit, stated by SPEC §7.2/§7.3 or by us.
	{"R26", []State{Hold, Options, Test}, Tier0Block, "", Decide, true, "SPEC §7.2"},
	{"R27", []State{Hold, Options}, Tier0Failsafe, "", Failsafe, false, "SPEC §7.2"},
	{"R28", []State{Test}, Tier1Refuse, "", Decide, true, "SPEC §7.2"},
	{"R29", []State{Test, Decide}, Tier1Escalate, "", Escalate, false, "SPEC §7.2"},
	{"R30", []State{Hold, Test, Decide}, Tier1AskFirst, "", Hold, false, "SPEC §7.2"},
	{"R31", userStates, Tier1Contest, "", Options, false, "SPEC §7.2"},
	{"R32", []State{Hold, Options}, Tier3, "", Hold, false, "SPEC §7.2"},
	{"R33", []State{Hold}, Tier2, "", Test, false, "SPEC §7.2"},
	{"R34", []State{Hold, Decide}, Tier1Allow, "", Decide, false, "flrh"}, // held instead if the ticket is not decidable
	{"R35", []State{Options, Test}, Tier1Allow, "", "", false, "flrh"},    // stays: a choice or a test is still owed
	{"R45", []State{Hold, Options, Test}, Tier4, "", "", false, "flrh"},   // tone only: stays
	{"R36", []State{Options, Test, Decide}, BudgetDeep, "", Exit, false, "SPEC §7.3"},
	{"R37", []State{Options, Test, Decide}, BudgetSession, "", Exit, false, "SPEC §7.3"},
	{"R38", live, NoProgress, "escalate on no progress", Escalate, false, "AD-05 §5.2"},
	{"R39", live, NoProgress, "", Exit, false, "AD-05 §5.2"},
	{"R40", userStates, EnterSafeMode, "", Hold, false, "SPEC §7.3"},
	{"R41", userStates, CareCooldown, "", Hold, false, "AD-07 §6"},
	{"R46", []State{Failsafe, Escalate}, EnterSafeMode, "", "", false, "SPEC §7.3"}, // a person is already needed: stays
	{"R47", []State{Failsafe, Escalate}, CareCooldown, "", "", false, "AD-07 §6"},
	{"R42", live, CareCooloffOK, "", "", false, "AD-07 §6"}, // stays where it is
	{"R43", []State{Test}, Tier3, "", Hold, false, "SPEC §7.2"},
	{"R44", []State{Test}, Tier2, "", Test, false, "SPEC §7.2"},
	// A kept proposal decided again or withdrawn: recorded, stays
	// (decision 0612).
	{"R48", live, Redecide, "", "", false, "flrh"},
	{"R49", live, Withdraw, "", "", false, "flrh"},
	// Human-initiated transitions.
	{"H01", live, Pause, "", Hold, false, "SPEC §7.3"},
	{"H02", []State{Options}, ChooseOption, "target=TEST", Test, false, "SPEC §7.3"},
	{"H03", []State{Options}, ChooseOption, "target=DECIDE", Decide, false, "SPEC §7.3"},
	{"H04", []State{Options}, RejectAll, "", Hold, false, "SPEC §7.3"},
	// A person declines what deliberation keeps (a held or escalated
	// proposal) without ending it; the workflow sets the target only when
	// something is kept (decision 0612).
	{"H12", []State{Hold, Escalate}, RejectAll, "target=HOLD", Hold, false, "flrh"},
	{"H05", []State{Hold, Options, Decide}, RequestTest, "", Test, false, "SPEC §7.3"},
	{"H06", []State{Hold, Options, Test, Decide}, HumanEscalate, "", Escalate, false, "SPEC §7.3"},
	// A person's PAUSE, ESCALATE or REQUEST_TEST out of OPTIONS suspends
	// the choice and keeps the options on record; RESUME returns to them
	// (decision 0611).
	// Tried before H07 and H10, which resume into HOLD.
	{"H11", []State{Hold, Escalate}, Resume, "options on record", Options, false, "flrh"},
	{"H07", []State{Failsafe}, Resume, "", Hold, false, "SPEC §7.3"},
	{"H08", live, LeaveSafeMode, "in safe mode", Hold, false, "SPEC §7.3"},
	{"H09", live, HumanExit, "", Exit, false, "SPEC §7.3"},
	{"H10", []State{Escalate}, Resume, "", Hold, false, "flrh"},
}

// Step applies one event. It returns the next machine; on a refused event
// it returns the unchanged machine with the refusal appended to the
// Journey Strip, and the typed error.
func Step(m Machine, ev Event) (Machine, error) { return StepIn(m, ev, nil) }

// StepIn is Step with the returned machine's journey copied into room's
// array, capped at room's length, when the journey and the entry the
// event adds fit it (else into a new array, as Step copies it): a caller
// that holds room for a decision's records spares the journey an
// allocation of its own. Whatever room held is overwritten; nothing of
// m is. room is the returned journey's only while the caller hands it
// to no other step.
func StepIn(m Machine, ev Event, room []Entry) (Machine, error) {
	next := m.cloneIn(room)
	if err := checkActor(ev); err != nil {
		return next.refuse(ev, err), err
	}
	row, err := match(m, ev)
	if err != nil {
		return next.refuse(ev, err), err
	}
	to, refusal, cause := row.To, row.Refusal, ev.Cause
	if to == "" {
		to, refusal = m.State, m.Refusal
	}
	// Entering DECIDE for an action needs a decidable ticket; otherwise
	// MRP stays in OPTIONS (if there) or HOLD.
	if to == Decide && !refusal && ev.Ticket != nil {
		if ok, why := ev.Ticket.Decidable(); !ok {
			to = Hold
			if m.State == Options {
				to = Options
			}
			cause = join(cause, "ticket not decidable: "+why)
		}
	}
	// Degraded Safe Mode holds every non-verification action for a person.
	if (m.SafeMode || ev.Trigger == EnterSafeMode) && to == Decide && !refusal && ev.Ticket != nil && !ev.Ticket.VerificationOnly {
		to = Hold
		cause = join(cause, "degraded safe mode: non-verification action held for a person")
	}
	deep := to == Test && m.State != Test
	if deep && (m.Cooldown || ev.Trigger == CareCooldown) {
		if ev.Actor.Kind == ActorHuman {
			err := &Error{"CARE_COOLDOWN_ACTIVE", ev.Trigger, m.State, "no deep loop until CARE_COOLOFF_OK"}
			return next.refuse(ev, err), err
		}
		to, deep = Hold, false
		cause = join(cause, "care cool-down: deep loop deferred")
	}
	switch ev.Trigger {
	case EnterSafeMode:
		next.SafeMode, next.SafeWhy = true, ev.Cause
	case LeaveSafeMode:
		next.SafeMode, next.SafeWhy = false, ""
	case CareCooldown:
		next.Cooldown = true
	case CareCooloffOK:
		next.Cooldown = false
	}
	// Leaving OPTIONS withdraws the options, except when a person pauses,
	// escalates or asks for a test: that suspends the choice, and RESUME
	// (H11, from HOLD or ESCALATE) returns to the same options.
	switch {
	case to == Options && len(ev.Options) > 0:
		next.Options = append([]string(nil), ev.Options...)
	case to != Options && m.State == Options && !suspendsChoice[ev.Trigger]:
		next.Options = []string{}
	}
	b := &next.Budgets
	b.SessionUsed++
	if m.State == Hold || to == Hold {
		b.TurnUsed++
	}
	if deep {
		b.DeepUsed++
	}
	if loop := to == Hold || to == Test; loop && !ev.Progress {
		b.NoProgressRun++
	} else if ev.Progress {
		b.NoProgressRun = 0
	}
	next.State, next.Refusal = to, refusal && to == Decide
	next.record(m.State, ev, row.ID, cause, "")
	return next.enforceBudgets(ev.Progress), nil
}

// enforceBudgets applies forced closure transitions once a budget is
// spent: session or deep-loop budget → EXIT with a summary; turn budget in
// HOLD → OPTIONS (if options are on record) or DECIDE with a summary;
// repeated loops without progress → EXIT with a summary or ESCALATE.
func (m Machine) enforceBudgets(progress bool) Machine {
	if m.State.Terminal() {
		return m
	}
	b := m.Budgets
	sys := Actor{ID: "closure-budget", Kind: ActorSystem, Role: "budget_governor"}
	force := func(t Trigger, summary string) Machine {
		next, err := Step(m, Event{Trigger: t, Actor: sys, Cause: "closure budget", Summary: summary, Progress: true})
		if err != nil {
			return m
		}
		return next
	}
	switch {
	case b.SessionLimit > 0 && b.SessionUsed >= b.SessionLimit && m.State != Failsafe && m.State != Escalate:
		return force(BudgetSession, fmt.Sprintf("session budget of %d steps spent", b.SessionLimit))
	case b.DeepLimit > 0 && b.DeepUsed > b.DeepLimit && m.State != Failsafe && m.State != Escalate:
		return force(BudgetDeep, fmt.Sprintf("deep-loop budget of %d spent", b.DeepLimit))
	case b.NoProgressLimit > 0 && b.NoProgressRun >= b.NoProgressLimit && !progress && m.State != Escalate && m.State != Failsafe:
		return force(NoProgress, fmt.Sprintf("%d loop steps without progress", b.NoProgressRun))
	case b.TurnLimit > 0 && b.TurnUsed >= b.TurnLimit && m.State == Hold:
		next := force(BudgetTurn, fmt.Sprintf("turn budget of %d spent in HOLD", b.TurnLimit))
		next.Budgets.TurnUsed = 0
		return next
	}
	return m
}

// suspendsChoice are the person's triggers that leave OPTIONS without
// answering it; the options stay on record (decision 0611).
var suspendsChoice = map[Trigger]bool{Pause: true, HumanEscalate: true, RequestTest: true}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func checkActor(ev Event) *Error {
	capability, human := humanTriggers[ev.Trigger]
	switch ev.Actor.Kind {
	case ActorModel:
		return &Error{"MODEL_ACTOR_FORBIDDEN", ev.Trigger, "", "a model actor can issue no control event"}
	case ActorHuman:
		if !human {
			return &Error{"NOT_A_HUMAN_TRIGGER", ev.Trigger, "", "a person cannot assert a runtime trigger"}
		}
		if !slices.Contains(HumanRoles, ev.Actor.Role) {
			return &Error{"UNKNOWN_ACTOR_ROLE", ev.Trigger, "", fmt.Sprintf("role %q may not steer MRP", ev.Actor.Role)}
		}
		if !slices.Contains(ev.Actor.Capabilities, capability) {
			return &Error{"CAPABILITY_MISSING", ev.Trigger, "", fmt.Sprintf("needs capability %s", capability)}
		}
	case ActorSystem:
		if human {
			return &Error{"HUMAN_TRIGGER_REQUIRES_HUMAN", ev.Trigger, "", "only a person may issue " + string(ev.Trigger)}
		}
		if _, ok := knownTriggers[ev.Trigger]; !ok {
			return &Error{"UNKNOWN_TRIGGER", ev.Trigger, "", "not a trigger of this machine"}
		}
	default:
		return &Error{"UNKNOWN_ACTOR_KIND", ev.Trigger, "", fmt.Sprintf("actor kind %q", ev.Actor.Kind)}
	}
	return nil
}

var knownTriggers = func() map[Trigger]bool {
	m := map[Trigger]bool{}
	for _, r := range Table {
		m[r.Trigger] = true
	}
	return m
}()

func match(m Machine, ev Event) (Row, *Error) {
	if m.State.Terminal() {
		return Row{}, &Error{"TERMINAL_STATE", ev.Trigger, m.State, "the turn has exited"}
	}
	for _, k := range rowsByTrigger[ev.Trigger] {
		r := Table[k]
		if r.Trigger != ev.Trigger || !slices.Contains(r.From, m.State) {
			continue
		}
		if guard(r, m, ev) {
			return r, nil
		}
	}
	return Row{}, &Error{"NO_TRANSITION", ev.Trigger, m.State, "no row admits this event here"}
}

// rowsByTrigger lists, for each trigger, the positions in Table of its
// rows, in Table's order: match tries only those rows, in the order a
// scan of the whole table would meet them (TestMatchIsTableScan).
var rowsByTrigger = func() map[Trigger][]int {
	m := map[Trigger][]int{}
	for k, r := range Table {
		m[r.Trigger] = append(m[r.Trigger], k)
	}
	return m
}()

func guard(r Row, m Machine, ev Event) bool {
	switch {
	case r.Guard == "":
		return true
	case strings.HasPrefix(r.Guard, "target="):
		return string(ev.Target) == strings.TrimPrefix(r.Guard, "target=")
	case r.Guard == "options on record":
		return len(m.Options) > 0
	case r.Guard == "escalate on no progress":
		return m.Budgets.EscalateOnNoProgress
	case r.Guard == "in safe mode":
		return m.SafeMode
	}
	return false
}

func (m Machine) clone() Machine { return m.cloneIn(nil) }

// cloneIn is clone with the journey in room when it and one more entry
// fit (see StepIn).
func (m Machine) cloneIn(room []Entry) Machine {
	m.Options = append([]string{}, m.Options...)
	if len(m.Journey) < len(room) {
		m.Journey = append(room[:0:len(room)], m.Journey...)
	} else {
		m.Journey = append([]Entry{}, m.Journey...)
	}
	return m
}

func (m Machine) refuse(ev Event, err *Error) Machine {
	err.State = m.State
	m.record(m.State, ev, "", ev.Cause, err.Code)
	return m
}

func (m *Machine) record(from State, ev Event, row, cause, rejected string) {
	m.Journey = append(m.Journey, Entry{
		Seq: len(m.Journey) + 1, From: from, To: m.State, Refusal: m.Refusal, Trigger: ev.Trigger,
		Row: row, ActorID: ev.Actor.ID, Role: ev.Actor.Role, Cause: cause, Summary: ev.Summary,
		SafeMode: m.SafeMode, Rejected: rejected,
	})
}

// reopening are the triggers after which a proposal H held or escalated
// may be decided again: a test passed, a person resumed deliberation or
// left Degraded Safe Mode, the conflicts resolved.
var reopening = map[Trigger]bool{TestsPass: true, Resume: true, LeaveSafeMode: true, ConflictsResolved: true}

// Reopens reports whether an accepted journey entry reopens deliberation
// for the proposals H held or escalated: one of the triggers TESTS_PASS,
// RESUME, LEAVE_SAFE_MODE or CONFLICTS_RESOLVED that landed in HOLD or a
// non-refusal DECIDE, where H decides. Landing in OPTIONS (a choice is
// owed) or TEST (only verification runs) reopens nothing (decision 0612).
func Reopens(e Entry) bool {
	return e.Rejected == "" && reopening[e.Trigger] && (e.To == Hold || e.To == Decide && !e.Refusal)
}

// Admits reports whether an action with this reduced ticket may run now:
// never with an undecidable ticket; in TEST and in Degraded Safe Mode only
// verification-class actions run; otherwise only from a non-refusal DECIDE.
func (m Machine) Admits(v TicketView) bool {
	if ok, _ := v.Decidable(); !ok {
		return false
	}
	if m.SafeMode || m.State == Test {
		return v.VerificationOnly && (m.State == Test || (m.State == Decide && !m.Refusal))
	}
	return m.State == Decide && !m.Refusal
}

// Strip is the user-visible Journey Strip: each accepted state change
// projected onto HOLD / OPTIONS / TEST / DECIDE.
func (m Machine) Strip() []State { return m.AppendStrip(nil) }

// AppendStrip appends the Journey Strip to dst: Strip's states, in a
// list the caller may keep (a writer's room on its stack).
func (m Machine) AppendStrip(dst []State) []State {
	out := append(dst, Hold)
	for _, e := range m.Journey {
		if e.Rejected != "" {
			continue
		}
		if v := e.To.Visible(); v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

// NewTurn starts a new turn: the turn budget is fresh; the session and
// deep-loop budgets, the no-progress run, safe mode and cool-down carry
// over, since they bound the session, not the turn.
func NewTurn(m Machine) Machine {
	n := m.clone()
	n.Budgets.TurnUsed = 0
	return n
}
