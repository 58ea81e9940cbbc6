package control

import (
	_ "embed"
	"regexp"
	"slices"
	"strings"
	"sync"

	"flrh.dev/flrh/cjson"
)

// TableFormat is the format marker of a control table. It is a member of the
// table, so the table digest is domain-separated by construction.
const TableFormat = "flrh-control-fsm/1"

//go:embed runfsm.json
var defaultTable []byte

// DefaultTable returns a copy of the bytes of the embedded run FSM table.
func DefaultTable() []byte { return slices.Clone(defaultTable) }

//go:embed schema/control-fsm.v1.schema.json
var tableSchema []byte

//go:embed schema/loop-contract.v1.schema.json
var contractSchema []byte

// TableSchema returns the JSON Schema (2020-12) of the control table format,
// for editors and external tools. Load checks everything it says and more.
func TableSchema() []byte { return slices.Clone(tableSchema) }

// ContractSchema returns the JSON Schema (2020-12) of the loop contract
// format. LoadContract checks everything it says and more.
func ContractSchema() []byte { return slices.Clone(contractSchema) }

var (
	reUpperID    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`) })
	reLowerID    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })
	reSnake      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })
	reRole       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })
	reCapability = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_.]*$`) })
	reEffectName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`) })
)

// OutcomeCategories is the closed vocabulary of final-state outcome
// categories, in the order the loop contract lists them.
var OutcomeCategories = []string{
	"success", "permanent_failure", "retry_exhausted", "budget_exhausted", "timeout",
	"canceled", "pathology", "saturated", "unknown_external_outcome",
}

// Effect payload fields a table may declare. Step fills each from the event
// and configuration; nothing else can appear in a control effect.
const (
	FieldEventID   = "event_id"
	FieldInterrupt = "interrupt"
	FieldState     = "state"
	FieldEvent     = "event"
	FieldActorRole = "actor_role"
	FieldReason    = "reason"
)

var effectFields = map[string]bool{
	FieldEventID: true, FieldInterrupt: true, FieldState: true,
	FieldEvent: true, FieldActorRole: true, FieldReason: true,
}

// Effect kinds.
const (
	KindCommand = "command" // an instruction to the shell (persist, dispatch)
	KindAudit   = "audit"   // a record of a refused event
)

// State is one state of the machine. A state with an outcome category is final.
type State struct {
	ID      string
	Outcome string // "" for an atomic (non-final) state
}

// Final reports whether the state is a final state.
func (s State) Final() bool { return s.Outcome != "" }

// AuthorityPair is an (actor role, capability) pair allowed to issue an event.
type AuthorityPair struct {
	Role       string
	Capability string
}

// EventSpec declares an event type and who may issue it.
type EventSpec struct {
	ID        string
	Authority []AuthorityPair
}

// Guard is a pure predicate over the configuration context: true when every
// named context field is true. An absent field is false (fail closed).
type Guard struct {
	Name    string
	AllTrue []string
}

// EffectSpec declares an effect the machine may emit and its payload fields.
type EffectSpec struct {
	Name   string
	Kind   string
	Fields []string
}

// Transition is one declared edge.
type Transition struct {
	ID       string
	From     string
	Event    string
	To       string
	Guard    string   // "" when unguarded
	Emit     []string // effects emitted on acceptance, in order
	Evidence []string // evidence the runner must attach, by name
}

// Interrupt is a global interrupt: immediate outside the deferral states,
// persisted as pending inside them and later honored by a dedicated event.
type Interrupt struct {
	Event     string
	To        string
	HonoredBy string
}

// Machine is a loaded, validated control table. It is immutable; its methods
// are safe for concurrent use and pure.
type Machine struct {
	digest  string
	id      string
	initial string

	context    []string
	contextSet map[string]bool
	guards     map[string]Guard
	effects    map[string]EffectSpec
	// guardsTrue holds, per guard, the guard inputs of a step at which
	// all of its fields are true: what StepEvidence's accepted records
	// share rather than build. Never written after Load.
	guardsTrue map[string]map[string]bool

	states   []State
	stateIdx map[string]int
	events   []EventSpec
	eventIdx map[string]int
	allowed  map[string]map[AuthorityPair]bool

	transitions []Transition
	byEdge      map[edge]int

	deferredIn      map[string]bool
	deferredList    []string
	deferredEffect  string
	immediateEffect string
	resumeEvent     string
	interrupts      []Interrupt
	interruptOf     map[string]int // interrupt event -> index
	honoredBy       map[string]int // honoring event -> interrupt index

	rejectEffect string

	strictEvidence bool

	// names maps every name the table declares that a control record
	// repeats (event types, actor roles, capabilities, context fields,
	// evidence names, states, guards, transitions) to the table's own copy.
	names map[string]string

	// forms holds, per transition, the parts of its accepted records that
	// Recheck reads a stored record against. Never written after Load.
	forms []recheckForm
}

type edge struct{ from, event string }

// Digest is the sha256 digest of the table's canonical bytes.
func (m *Machine) Digest() string { return m.digest }

// ID is the machine identifier ("control").
func (m *Machine) ID() string { return m.id }

// InitialState is the state of a run that has not started.
func (m *Machine) InitialState() string { return m.initial }

// States returns the declared states in table order.
func (m *Machine) States() []State { return slices.Clone(m.states) }

// Events returns the declared events with their authority pairs.
func (m *Machine) Events() []EventSpec {
	out := make([]EventSpec, len(m.events))
	for i, e := range m.events {
		out[i] = EventSpec{ID: e.ID, Authority: slices.Clone(e.Authority)}
	}
	return out
}

// Transitions returns the declared transitions in table order.
func (m *Machine) Transitions() []Transition {
	out := make([]Transition, len(m.transitions))
	for i, t := range m.transitions {
		t.Emit = slices.Clone(t.Emit)
		t.Evidence = slices.Clone(t.Evidence)
		out[i] = t
	}
	return out
}

// Interrupts returns the global interrupts in table order.
func (m *Machine) Interrupts() []Interrupt { return slices.Clone(m.interrupts) }

// DeferredIn returns the states in which global interrupts are deferred.
func (m *Machine) DeferredIn() []string { return slices.Clone(m.deferredList) }

// Guard returns the named guard.
func (m *Machine) Guard(name string) (Guard, bool) {
	g, ok := m.guards[name]
	g.AllTrue = slices.Clone(g.AllTrue)
	return g, ok
}

// ContextFields returns the declared guard-context fields, sorted.
func (m *Machine) ContextFields() []string { return slices.Clone(m.context) }

// State returns the named state.
func (m *Machine) State(id string) (State, bool) {
	i, ok := m.stateIdx[id]
	if !ok {
		return State{}, false
	}
	return m.states[i], true
}

// Final reports whether id names a final state.
func (m *Machine) Final(id string) bool {
	s, ok := m.State(id)
	return ok && s.Final()
}

// Authorized reports whether the (role, capability) pair may issue event.
func (m *Machine) Authorized(event, role, capability string) bool {
	return m.allowed[event][AuthorityPair{role, capability}]
}

// WithStrictEvidence returns a machine over the same table that also refuses
// an accepted transition whose event payload does not carry, under
// payload.evidence, a digest for every evidence name the transition requires.
// The runner uses it; conformance traces (which carry no evidence) do not.
func (m *Machine) WithStrictEvidence() *Machine {
	c := *m
	c.strictEvidence = true
	return &c
}

// The embedded table is loaded once, on first use rather than when the
// package is initialised: every command links this package, and most never
// ask for the machine. A Machine is immutable, so every caller can share it.
var defaultMachine = sync.OnceValues(func() (*Machine, error) { return Load(defaultTable) })

// Default returns the machine of the embedded run FSM table. The embedded
// table is part of the build; a test proves it loads, so a failure here is a
// build defect and panics.
func Default() *Machine {
	m, err := defaultMachine()
	if err != nil {
		panic("control: embedded run FSM table is invalid: " + err.Error())
	}
	return m
}

// Load parses and validates a control table. Every defect is a typed *Error
// with the JSON pointer of the offending value; a table that loads is
// complete, deterministic, reachable and satisfies the safety properties.
func Load(text []byte) (*Machine, error) {
	v, err := decodeStrict(text)
	if err != nil {
		return nil, err
	}
	canon, err := cjson.Encode(v)
	if err != nil {
		return nil, &Error{Code: CodeSyntax, Detail: err.Error(), Err: err}
	}
	m, err := parseTable(v)
	if err != nil {
		return nil, err
	}
	m.digest = cjson.Digest(canon)
	m.forms = m.recheckForms()
	return m, nil
}

func parseTable(v any) (*Machine, error) {
	root, err := asObj(v, "")
	if err != nil {
		return nil, err
	}
	format, err := root.str("format", true, nil)
	if err != nil {
		return nil, err
	}
	if format != TableFormat {
		return nil, errorf(CodeFormat, "/format", "format is %q, this code reads %q", format, TableFormat)
	}
	m := &Machine{
		contextSet:  map[string]bool{},
		guards:      map[string]Guard{},
		guardsTrue:  map[string]map[string]bool{},
		effects:     map[string]EffectSpec{},
		stateIdx:    map[string]int{},
		eventIdx:    map[string]int{},
		allowed:     map[string]map[AuthorityPair]bool{},
		byEdge:      map[edge]int{},
		deferredIn:  map[string]bool{},
		interruptOf: map[string]int{},
		honoredBy:   map[string]int{},
	}
	if m.id, err = root.str("machine", true, reLowerID()); err != nil {
		return nil, err
	}
	steps := []func(*obj) error{m.parseContext, m.parseGuards, m.parseEffects, m.parseStates, m.parseEvents, m.parseTransitions, m.parseInterrupts, m.parseRejection}
	for _, step := range steps {
		if err := step(root); err != nil {
			return nil, err
		}
	}
	// initial is read after the states so it can be checked against them.
	if m.initial, err = root.str("initial", true, reUpperID()); err != nil {
		return nil, err
	}
	if err := root.done(); err != nil {
		return nil, err
	}
	s, ok := m.State(m.initial)
	if !ok {
		return nil, errorf(CodeUnknownRef, "/initial", "initial state %q is not declared", m.initial)
	}
	if s.Final() {
		return nil, errorf(CodeFinal, "/initial", "initial state %q is final", m.initial)
	}
	if err := m.checkInterruptRegion(); err != nil {
		return nil, err
	}
	if err := m.checkReachable(); err != nil {
		return nil, err
	}
	if err := m.checkSafety(); err != nil {
		return nil, err
	}
	m.names = m.declaredNames()
	return m, nil
}

// declaredNames is the names index of a loaded table.
func (m *Machine) declaredNames() map[string]string {
	names := map[string]string{}
	add := func(s string) { names[s] = s }
	for _, f := range m.context {
		add(f)
	}
	for _, s := range m.states {
		add(s.ID)
	}
	for _, e := range m.events {
		add(e.ID)
		for _, p := range e.Authority {
			add(p.Role)
			add(p.Capability)
		}
	}
	for _, t := range m.transitions {
		add(t.ID)
		add(t.Guard)
		for _, ev := range t.Evidence {
			add(ev)
		}
	}
	delete(names, "")
	return names
}

// Name returns the bytes b as a string. When b spells a name the table
// declares (an event type, actor role, capability, context field, evidence
// name, state, guard or transition id) it is the table's own copy of that
// name, and nothing is allocated: a reader of many control records, which
// repeat those names, reads them without a copy each. The value is the
// same string either way.
func (m *Machine) Name(b []byte) string {
	if m != nil {
		if s, ok := m.names[string(b)]; ok {
			return s
		}
	}
	return string(b)
}

func (m *Machine) parseContext(root *obj) error {
	fields, err := root.strings("context", true, false, reSnake())
	if err != nil {
		return err
	}
	for _, f := range fields {
		m.contextSet[f] = true
	}
	m.context = slices.Sorted(slices.Values(fields))
	return nil
}

func (m *Machine) parseGuards(root *obj) error {
	g, err := root.object("guards", true)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(g.m) {
		p := child(g.ptr, name)
		if !reSnake().MatchString(name) {
			return errorf(CodeSchema, p, "guard name %q does not match %s", name, reSnake())
		}
		o, err := g.object(name, true)
		if err != nil {
			return err
		}
		reads, err := o.strings("all_true", true, true, reSnake())
		if err != nil {
			return err
		}
		if err := o.done(); err != nil {
			return err
		}
		for i, r := range reads {
			if !m.contextSet[r] {
				return errorf(CodeUnknownRef, index(child(p, "all_true"), i), "guard %q reads undeclared context field %q", name, r)
			}
		}
		m.guards[name] = Guard{Name: name, AllTrue: reads}
		inputs := make(map[string]bool, len(reads))
		for _, r := range reads {
			inputs[r] = true
		}
		m.guardsTrue[name] = inputs
	}
	return g.done()
}

func (m *Machine) parseEffects(root *obj) error {
	e, err := root.object("effects", true)
	if err != nil {
		return err
	}
	if len(e.m) == 0 {
		return errorf(CodeSchema, e.ptr, "no effects declared")
	}
	for _, name := range sortedKeys(e.m) {
		p := child(e.ptr, name)
		if !reEffectName().MatchString(name) {
			return errorf(CodeSchema, p, "effect name %q does not match %s", name, reEffectName())
		}
		o, err := e.object(name, true)
		if err != nil {
			return err
		}
		kind, err := o.str("kind", true, nil)
		if err != nil {
			return err
		}
		if kind != KindCommand && kind != KindAudit {
			return errorf(CodeSchema, child(p, "kind"), "kind %q is neither %q nor %q", kind, KindCommand, KindAudit)
		}
		fields, err := o.strings("fields", true, true, nil)
		if err != nil {
			return err
		}
		for i, f := range fields {
			if !effectFields[f] {
				return errorf(CodeUnknownRef, index(child(p, "fields"), i), "effect field %q is not one the machine can fill", f)
			}
		}
		if err := o.done(); err != nil {
			return err
		}
		m.effects[name] = EffectSpec{Name: name, Kind: kind, Fields: fields}
	}
	return e.done()
}

func (m *Machine) parseStates(root *obj) error {
	arr, p, err := root.array("states", true)
	if err != nil {
		return err
	}
	if len(arr) == 0 {
		return errorf(CodeSchema, p, "no states declared")
	}
	known := map[string]bool{}
	for _, c := range OutcomeCategories {
		known[c] = true
	}
	used := map[string]string{}
	for i, v := range arr {
		o, err := asObj(v, index(p, i))
		if err != nil {
			return err
		}
		id, err := o.str("id", true, reUpperID())
		if err != nil {
			return err
		}
		outcome, err := o.str("outcome", false, nil)
		if err != nil {
			return err
		}
		if err := o.done(); err != nil {
			return err
		}
		if _, dup := m.stateIdx[id]; dup {
			return errorf(CodeDuplicate, child(o.ptr, "id"), "state %q is declared twice", id)
		}
		if o.has("outcome") {
			if !known[outcome] {
				return errorf(CodeOutcome, child(o.ptr, "outcome"), "outcome category %q is not one of %s", outcome, strings.Join(OutcomeCategories, ", "))
			}
			if prev, dup := used[outcome]; dup {
				return errorf(CodeOutcome, child(o.ptr, "outcome"), "outcome category %q is already the category of %q", outcome, prev)
			}
			used[outcome] = id
		}
		m.stateIdx[id] = len(m.states)
		m.states = append(m.states, State{ID: id, Outcome: outcome})
	}
	return nil
}

func (m *Machine) parseEvents(root *obj) error {
	arr, p, err := root.array("events", true)
	if err != nil {
		return err
	}
	if len(arr) == 0 {
		return errorf(CodeSchema, p, "no events declared")
	}
	for i, v := range arr {
		o, err := asObj(v, index(p, i))
		if err != nil {
			return err
		}
		id, err := o.str("id", true, reUpperID())
		if err != nil {
			return err
		}
		if _, dup := m.eventIdx[id]; dup {
			return errorf(CodeDuplicate, child(o.ptr, "id"), "event %q is declared twice", id)
		}
		auth, ap, err := o.array("authority", false)
		if err != nil {
			return err
		}
		if len(auth) == 0 {
			return errorf(CodeAuthority, ap, "event %q has no (actor role, capability) pair: nobody could issue it, or anybody would", id)
		}
		pairs := map[AuthorityPair]bool{}
		var list []AuthorityPair
		for j, a := range auth {
			ao, err := asObj(a, index(ap, j))
			if err != nil {
				return err
			}
			role, err := ao.str("role", true, reRole())
			if err != nil {
				return err
			}
			capability, err := ao.str("capability", true, reCapability())
			if err != nil {
				return err
			}
			if err := ao.done(); err != nil {
				return err
			}
			if untrustedRole(role) {
				return errorf(CodeAuthority, child(ao.ptr, "role"), "role %q is untrusted content and can never issue a control event", role)
			}
			pair := AuthorityPair{role, capability}
			if pairs[pair] {
				return errorf(CodeDuplicate, ao.ptr, "authority pair (%s, %s) is listed twice", role, capability)
			}
			pairs[pair] = true
			list = append(list, pair)
		}
		if err := o.done(); err != nil {
			return err
		}
		m.eventIdx[id] = len(m.events)
		m.events = append(m.events, EventSpec{ID: id, Authority: list})
		m.allowed[id] = pairs
	}
	return nil
}

// untrustedRole reports whether a role names a model or other untrusted
// source. Such roles may propose, never issue control events.
func untrustedRole(role string) bool {
	return strings.Contains(role, "model") || strings.Contains(role, "untrusted")
}

func (m *Machine) parseTransitions(root *obj) error {
	arr, p, err := root.array("transitions", true)
	if err != nil {
		return err
	}
	if len(arr) == 0 {
		return errorf(CodeSchema, p, "no transitions declared")
	}
	ids := map[string]bool{}
	for i, v := range arr {
		o, err := asObj(v, index(p, i))
		if err != nil {
			return err
		}
		var t Transition
		if t.ID, err = o.str("id", true, reLowerID()); err != nil {
			return err
		}
		if ids[t.ID] {
			return errorf(CodeDuplicate, child(o.ptr, "id"), "transition %q is declared twice", t.ID)
		}
		ids[t.ID] = true
		if t.From, err = o.str("from", true, reUpperID()); err != nil {
			return err
		}
		if t.Event, err = o.str("on", true, reUpperID()); err != nil {
			return err
		}
		if t.To, err = o.str("to", true, reUpperID()); err != nil {
			return err
		}
		if t.Guard, err = o.str("guard", false, reSnake()); err != nil {
			return err
		}
		if t.Emit, err = o.strings("emit", true, true, reEffectName()); err != nil {
			return err
		}
		if t.Evidence, err = o.strings("evidence", true, true, reSnake()); err != nil {
			return err
		}
		if err := o.done(); err != nil {
			return err
		}
		from, ok := m.State(t.From)
		if !ok {
			return errorf(CodeUnknownRef, child(o.ptr, "from"), "state %q is not declared", t.From)
		}
		if _, ok := m.State(t.To); !ok {
			return errorf(CodeUnknownRef, child(o.ptr, "to"), "state %q is not declared", t.To)
		}
		if from.Final() {
			return errorf(CodeFinal, child(o.ptr, "from"), "transition %q leaves final state %q", t.ID, t.From)
		}
		if _, ok := m.eventIdx[t.Event]; !ok {
			return errorf(CodeUnknownRef, child(o.ptr, "on"), "event %q is not declared", t.Event)
		}
		if o.has("guard") {
			if _, ok := m.guards[t.Guard]; !ok {
				return errorf(CodeUnknownRef, child(o.ptr, "guard"), "guard %q is not declared", t.Guard)
			}
		}
		for j, e := range t.Emit {
			spec, ok := m.effects[e]
			if !ok {
				return errorf(CodeUnknownRef, index(child(o.ptr, "emit"), j), "effect %q is not declared", e)
			}
			if spec.Kind != KindCommand {
				return errorf(CodeSchema, index(child(o.ptr, "emit"), j), "transition emits %q, which is not a command", e)
			}
		}
		k := edge{t.From, t.Event}
		if prev, dup := m.byEdge[k]; dup {
			return errorf(CodeAmbiguous, o.ptr, "transitions %q and %q both leave %s on %s", m.transitions[prev].ID, t.ID, t.From, t.Event)
		}
		m.byEdge[k] = len(m.transitions)
		m.transitions = append(m.transitions, t)
	}
	return nil
}

func (m *Machine) parseInterrupts(root *obj) error {
	o, err := root.object("interrupts", true)
	if err != nil {
		return err
	}
	deferred, err := o.strings("deferred_in", true, true, reUpperID())
	if err != nil {
		return err
	}
	for i, s := range deferred {
		st, ok := m.State(s)
		if !ok {
			return errorf(CodeUnknownRef, index(child(o.ptr, "deferred_in"), i), "state %q is not declared", s)
		}
		if st.Final() {
			return errorf(CodeInterrupt, index(child(o.ptr, "deferred_in"), i), "final state %q cannot defer interrupts", s)
		}
		m.deferredIn[s] = true
	}
	m.deferredList = deferred
	for _, f := range []struct {
		key  string
		dst  *string
		need []string
	}{
		{"deferred_effect", &m.deferredEffect, []string{FieldEventID, FieldInterrupt}},
		{"immediate_effect", &m.immediateEffect, []string{FieldEventID}},
	} {
		name, err := o.str(f.key, true, reEffectName())
		if err != nil {
			return err
		}
		spec, ok := m.effects[name]
		if !ok {
			return errorf(CodeUnknownRef, child(o.ptr, f.key), "effect %q is not declared", name)
		}
		if spec.Kind != KindCommand {
			return errorf(CodeInterrupt, child(o.ptr, f.key), "effect %q is not a command", name)
		}
		for _, need := range f.need {
			if !slices.Contains(spec.Fields, need) {
				return errorf(CodeInterrupt, child(o.ptr, f.key), "effect %q lacks payload field %q", name, need)
			}
		}
		*f.dst = name
	}
	if m.resumeEvent, err = o.str("resume_event", true, reUpperID()); err != nil {
		return err
	}
	if _, ok := m.eventIdx[m.resumeEvent]; !ok {
		return errorf(CodeUnknownRef, child(o.ptr, "resume_event"), "event %q is not declared", m.resumeEvent)
	}
	arr, p, err := o.array("events", true)
	if err != nil {
		return err
	}
	if len(arr) == 0 {
		return errorf(CodeInterrupt, p, "no interrupts declared")
	}
	for i, v := range arr {
		io, err := asObj(v, index(p, i))
		if err != nil {
			return err
		}
		var in Interrupt
		if in.Event, err = io.str("event", true, reUpperID()); err != nil {
			return err
		}
		if in.To, err = io.str("to", true, reUpperID()); err != nil {
			return err
		}
		if in.HonoredBy, err = io.str("honored_by", true, reUpperID()); err != nil {
			return err
		}
		if err := io.done(); err != nil {
			return err
		}
		for _, ev := range []struct{ key, id string }{{"event", in.Event}, {"honored_by", in.HonoredBy}} {
			if _, ok := m.eventIdx[ev.id]; !ok {
				return errorf(CodeUnknownRef, child(io.ptr, ev.key), "event %q is not declared", ev.id)
			}
		}
		if !m.Final(in.To) {
			return errorf(CodeInterrupt, child(io.ptr, "to"), "interrupt target %q is not a final state", in.To)
		}
		if _, dup := m.interruptOf[in.Event]; dup {
			return errorf(CodeDuplicate, child(io.ptr, "event"), "interrupt %q is declared twice", in.Event)
		}
		if _, dup := m.honoredBy[in.HonoredBy]; dup || in.HonoredBy == m.resumeEvent || in.HonoredBy == in.Event {
			return errorf(CodeInterrupt, child(io.ptr, "honored_by"), "event %q cannot honor interrupt %q: it already has another role", in.HonoredBy, in.Event)
		}
		for _, t := range m.transitions {
			if t.Event == in.Event {
				return errorf(CodeInterrupt, child(io.ptr, "event"), "interrupt %q also labels transition %q; interrupts are global", in.Event, t.ID)
			}
		}
		honored := false
		for _, t := range m.transitions {
			if t.Event != in.HonoredBy {
				continue
			}
			if !m.deferredIn[t.From] || t.To != in.To {
				return errorf(CodeInterrupt, child(io.ptr, "honored_by"), "transition %q honors %q but runs %s -> %s, not from a deferral state to %s", t.ID, in.Event, t.From, t.To, in.To)
			}
			honored = true
		}
		if !honored {
			return errorf(CodeInterrupt, child(io.ptr, "honored_by"), "no transition on %q honors a pending %q", in.HonoredBy, in.Event)
		}
		m.interruptOf[in.Event] = len(m.interrupts)
		m.honoredBy[in.HonoredBy] = len(m.interrupts)
		m.interrupts = append(m.interrupts, in)
	}
	for _, i := range m.interrupts {
		if _, clash := m.interruptOf[i.HonoredBy]; clash {
			return errorf(CodeInterrupt, p, "event %q is both an interrupt and an honoring event", i.HonoredBy)
		}
	}
	return o.done()
}

func (m *Machine) parseRejection(root *obj) error {
	o, err := root.object("rejection", true)
	if err != nil {
		return err
	}
	name, err := o.str("effect", true, reEffectName())
	if err != nil {
		return err
	}
	if err := o.done(); err != nil {
		return err
	}
	spec, ok := m.effects[name]
	if !ok {
		return errorf(CodeUnknownRef, "/rejection/effect", "effect %q is not declared", name)
	}
	if spec.Kind != KindAudit || !slices.Contains(spec.Fields, FieldReason) {
		return errorf(CodeSchema, "/rejection/effect", "rejection effect %q must be an audit effect carrying %q", name, FieldReason)
	}
	m.rejectEffect = name
	return nil
}

// checkInterruptRegion proves pending interrupts cannot leak: the only way
// from a deferral state to a non-final state outside the region is the
// resume event, which Step allows only with nothing pending.
func (m *Machine) checkInterruptRegion() error {
	var resumes int
	for i, t := range m.transitions {
		if t.Event == m.resumeEvent {
			if !m.deferredIn[t.From] {
				return errorf(CodeInterrupt, index("/transitions", i), "resume transition %q starts outside the deferral states", t.ID)
			}
			resumes++
			continue
		}
		if m.deferredIn[t.From] && !m.deferredIn[t.To] && !m.Final(t.To) {
			return errorf(CodeInterrupt, index("/transitions", i), "transition %q leaves the deferral states without honoring pending interrupts", t.ID)
		}
	}
	if resumes == 0 {
		return errorf(CodeInterrupt, "/interrupts/resume_event", "no transition on %q resumes after an effect", m.resumeEvent)
	}
	return nil
}

// successors returns the targets of every edge out of s, including the
// immediate global-interrupt edges, skipping the excluded state.
func (m *Machine) successors(s string) []string {
	var out []string
	for _, t := range m.transitions {
		if t.From == s {
			out = append(out, t.To)
		}
	}
	if !m.Final(s) && !m.deferredIn[s] {
		for _, in := range m.interrupts {
			out = append(out, in.To)
		}
	}
	return out
}

// reachable returns the states reachable from start without passing
// through any state in avoid.
func (m *Machine) reachable(start string, avoid ...string) map[string]bool {
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range m.successors(s) {
			if seen[n] || slices.Contains(avoid, n) {
				continue
			}
			seen[n] = true
			queue = append(queue, n)
		}
	}
	return seen
}

func (m *Machine) checkReachable() error {
	seen := m.reachable(m.initial)
	for i, s := range m.states {
		if !seen[s.ID] {
			return errorf(CodeUnreachable, index("/states", i), "state %q is unreachable from %q", s.ID, m.initial)
		}
	}
	return nil
}
