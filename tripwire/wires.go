package tripwire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"flrh.dev/flrh/control"
)

// Wire names. Each is a stable identifier in reports and docs.
const (
	WireTurnConservation    = "turn-conservation"
	WireLedgerClosure       = "ledger-closure"
	WireAppendOnly          = "append-only"
	WireApprovalConsumption = "approval-consumption"
	WireFencing             = "fencing"
	WireWedge               = "wedge"
	WireLivelock            = "livelock"
	WireCodeCoherence       = "code-coherence"
	WireAlphabet            = "alphabet"
)

// Effect stages of the runner's checkpoint.
const (
	StagePlanned          = "planned"
	StageAwaitingApproval = "awaiting_approval"
	StageCommitted        = "committed"
	StageUnknown          = "unknown"
	StageClosed           = "closed"
)

// Alphabet is every symbol the runtime may meet outside the FSM table (the
// table itself supplies states, events, interrupts and outcomes). A symbol
// outside it trips the alphabet wire instead of being given a default
// meaning.
type Alphabet struct {
	EventKinds      []string // kinds of a run's log entries
	InputKinds      []string // kinds of accepted inputs
	InboxKinds      []string // kinds of inbox entries
	Stages          []string // stages of an open effect
	OutboxStatuses  []string
	AttemptStatuses []string
	ReceiptOutcomes []string // outcomes that may close an intent
	ApprovalStates  []string
}

// Event kinds of a run's log, as the runner writes them.
const (
	EventControl  = "control"
	EventRejected = "control.rejected"
	EventAccepted = "accepted"
)

// DefaultAlphabet is the runner's and the store's vocabulary.
func DefaultAlphabet() Alphabet {
	return Alphabet{
		EventKinds:      []string{EventControl, EventRejected, EventAccepted},
		InputKinds:      []string{"input", "receipt", "choice", "mrp"},
		InboxKinds:      []string{"input", "choice", "mrp", "approve", "deny", "cancel", "reconcile"},
		Stages:          []string{StagePlanned, StageAwaitingApproval, StageCommitted, StageUnknown, StageClosed},
		OutboxStatuses:  []string{"pending", "in_flight", "retry", "reconcile", "human", "done"},
		AttemptStatuses: []string{"started", "succeeded", "failed_transient", "failed_permanent", "unknown", "reconciled_applied", "reconciled_not_applied"},
		ReceiptOutcomes: []string{"confirmed_success", "confirmed_failure"},
		ApprovalStates:  []string{"granted", "consumed", "revoked"},
	}
}

// Config assembles a Set. The zero Config is the default FSM table, the
// default alphabet and the runner's waits.
type Config struct {
	// Machine is the run FSM; nil means control.Default().
	Machine *control.Machine
	// Alphabet; a zero Alphabet means DefaultAlphabet().
	Alphabet *Alphabet
	// Waits maps each state in which a run may rest to the inbox kinds
	// that can move it there. A live run resting anywhere else is wedged.
	// nil means DefaultWaits().
	Waits map[string][]string
	// Decisions names the control events that decide a turn: each accepted
	// input is followed by EVENT_ACCEPTED and then exactly one of them.
	// nil means EPOCH_STABLE and RULE_BUDGET_EXHAUSTED.
	Decisions []string
}

// DefaultWaits are the runner's resting states: INGEST waits for input,
// WAIT_APPROVAL for a person's grant or denial, HUMAN_RECONCILIATION for a
// person's reconciliation.
func DefaultWaits() map[string][]string {
	return map[string][]string{
		"INGEST":               {"input", "choice", "mrp"},
		"WAIT_APPROVAL":        {"approve", "deny"},
		"HUMAN_RECONCILIATION": {"reconcile"},
	}
}

// Set is a configured set of wires. It is immutable and its methods are pure.
type Set struct {
	m         *control.Machine
	alpha     Alphabet
	waits     map[string][]string
	decisions []string
	wires     []wire
	events    map[string]bool // declared control events
	interrupt map[string]bool // global interrupt events
	alphaSets alphaSets
	// checkings holds what Check hands the wires, cleared, for the next
	// Check.
	checkings sync.Pool
}

type wire struct {
	name     string
	severity Severity
	phases   []Phase
	check    func(s *Set, b *Boundary, out *finder)
}

// New validates cfg and returns its Set. Every resting state must be a
// declared non-final state out of which the FSM accepts some event that is
// not a global interrupt; otherwise the runner could rest where nothing can
// ever move it.
func New(cfg Config) (*Set, error) {
	s := &Set{m: cfg.Machine, waits: cfg.Waits, decisions: slices.Clone(cfg.Decisions)}
	if s.m == nil {
		s.m = control.Default()
	}
	if cfg.Alphabet != nil {
		s.alpha = *cfg.Alphabet
	} else {
		s.alpha = DefaultAlphabet()
	}
	if s.waits == nil {
		s.waits = DefaultWaits()
	}
	if s.decisions == nil {
		s.decisions = []string{"EPOCH_STABLE", "RULE_BUDGET_EXHAUSTED"}
	}
	for _, st := range sortedKeys(s.waits) {
		if _, ok := s.m.State(st); !ok || s.m.Final(st) {
			return nil, fmt.Errorf("tripwire: resting state %q is not a live state of the FSM", st)
		}
		moves := false
		for _, a := range s.m.Awaiting(control.Configuration{Table: s.m.Digest(), State: st, Pending: []string{}}) {
			moves = moves || !strings.Contains(a.Transition, ":")
		}
		if !moves {
			return nil, fmt.Errorf("tripwire: nothing but an interrupt leaves resting state %s", st)
		}
	}
	s.events, s.interrupt = map[string]bool{}, map[string]bool{}
	for _, e := range s.m.Events() {
		s.events[e.ID] = true
	}
	for _, in := range s.m.Interrupts() {
		s.interrupt[in.Event] = true
	}
	s.alphaSets = newAlphaSets(s.alpha)
	for _, d := range s.decisions {
		if !s.hasEvent(d) {
			return nil, fmt.Errorf("tripwire: decision event %q is not declared", d)
		}
	}
	s.wires = []wire{
		{WireAlphabet, SeverityDegrade, []Phase{PhaseLoad, PhaseCommit, PhaseIdle}, checkAlphabet},
		{WireAppendOnly, SeverityHalt, []Phase{PhaseLoad, PhaseCommit}, checkAppendOnly},
		{WireFencing, SeverityHalt, []Phase{PhaseLoad, PhaseCommit}, checkFencing},
		{WireCodeCoherence, SeverityDegrade, []Phase{PhaseLoad, PhaseCommit}, checkCoherence},
		{WireTurnConservation, SeverityDegrade, []Phase{PhaseLoad, PhaseCommit, PhaseIdle}, checkConservation},
		{WireLedgerClosure, SeverityHalt, []Phase{PhaseLoad, PhaseCommit, PhaseIdle}, checkLedger},
		{WireApprovalConsumption, SeverityHalt, []Phase{PhaseLoad, PhaseCommit, PhaseIdle}, checkApprovals},
		{WireWedge, SeverityDegrade, []Phase{PhaseIdle}, checkWedge},
		{WireLivelock, SeverityDegrade, []Phase{PhaseCommit, PhaseIdle}, checkLivelock},
	}
	return s, nil
}

// defaultSet is built on first use, not while packages initialise: it
// loads the FSM table, which most commands of the executable never need.
var defaultSet = sync.OnceValue(func() *Set {
	s, err := New(Config{})
	if err != nil {
		panic("tripwire: the default configuration is invalid: " + err.Error())
	}
	return s
})

// Default returns the Set over the embedded FSM table and the runner's
// vocabulary.
func Default() *Set { return defaultSet() }

// Check runs the default wires over a boundary.
func Check(b Boundary) []Trip { return defaultSet().Check(b) }

// Wires returns the names of the wires in the order they are checked.
func (s *Set) Wires() []string {
	out := make([]string, len(s.wires))
	for i, w := range s.wires {
		out[i] = w.name
	}
	return out
}

// WiresAt returns the names of the wires checked at a phase.
func (s *Set) WiresAt(p Phase) []string {
	var out []string
	for _, w := range s.wires {
		if slices.Contains(w.phases, p) {
			out = append(out, w.name)
		}
	}
	return out
}

// Check runs every wire of the boundary's phase and returns the trips in
// wire order. An unknown phase is itself an alphabet trip. Check never
// modifies b.
func (s *Set) Check(b Boundary) []Trip {
	if b.Phase != PhaseLoad && b.Phase != PhaseCommit && b.Phase != PhaseIdle {
		f := &finder{wire: WireAlphabet, severity: SeverityDegrade}
		f.trip("/phase", fmt.Sprintf("unknown boundary phase %q", b.Phase), evidenceDigest("phase", string(b.Phase)))
		return f.trips
	}
	// One finder serves every wire in turn, each appending its trips after
	// the last one's, and it holds the wires' copy of b: the two reach the
	// wires through pointers, and so live on the heap. They are taken from
	// the set's pool and put back cleared (checkings), so that a check
	// allocates only the trips it finds.
	c, _ := s.checkings.Get().(*checking)
	if c == nil {
		c = new(checking)
	}
	c.b = b
	for _, w := range s.wires {
		if !slices.Contains(w.phases, b.Phase) {
			continue
		}
		c.f.wire, c.f.severity = w.name, w.severity
		w.check(s, &c.b, &c.f)
	}
	trips := c.f.trips
	// Nothing of b nor of the trips may stay behind in the pool.
	*c = checking{}
	s.checkings.Put(c)
	return trips
}

// checking is what Check hands each wire.
type checking struct {
	b Boundary
	f finder
}

// finder collects one wire's trips.
type finder struct {
	wire     string
	severity Severity
	trips    []Trip
}

func (f *finder) trip(where, explanation string, evidence ...string) {
	f.trips = append(f.trips, Trip{Wire: f.wire, Severity: f.severity, Where: where, Evidence: evidence, Explanation: explanation})
}

func (s *Set) hasEvent(id string) bool { return s.events[id] }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ptr(base string, i int) string { return base + "/" + strconv.Itoa(i) }

// at is the JSON Pointer ptr(base, i), spelled out only when a wire trips
// there: a wire checks every event and effect of a boundary, and almost
// never trips.
type at struct {
	base string
	i    int
}

// tripAt is trip at the pointer where followed by suffix.
func (f *finder) tripAt(where at, suffix, explanation string, evidence ...string) {
	f.trip(ptr(where.base, where.i)+suffix, explanation, evidence...)
}
