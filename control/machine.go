package control

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
)

// RecordFormat marks a step record; it is a member of every record so that
// record digests are domain-separated.
const RecordFormat = "flrh-control-record/1"

// Configuration is everything Step needs besides the event: where the run is,
// which interrupts are pending, and the guard context for the next event.
//
// The zero Configuration is a run that has not started: Step treats an empty
// State as the initial state. Context is consumed by every accepted event (the
// next configuration's Context is empty), so a guard never passes on a fact
// that was asserted for an earlier event; the runner asserts the facts it has
// evidence for right before each Step.
type Configuration struct {
	Table   string          `json:"table,omitempty"`    // digest of the table this configuration belongs to
	State   string          `json:"state"`              // current state
	Pending []string        `json:"pending_interrupts"` // deferred interrupts, sorted, no duplicates
	Context map[string]bool `json:"context,omitempty"`  // guard inputs for the next event
	Seq     int64           `json:"seq"`                // accepted control events so far
	// Head is the digest of the last accepted step's Record ("" before the
	// first). Each accepted record names its predecessor, so the control
	// history is a hash chain and a checkpoint's Head commits to all of it.
	Head string `json:"head,omitempty"`
}

// Event is a typed control event. Its fields follow the reference event
// schema: a declared type, an actor role and capability that must form an
// authority pair of the table, an event id, and a payload object (nil is the
// empty object).
type Event struct {
	Type       string         `json:"type"`
	ActorRole  string         `json:"actor_role"`
	Capability string         `json:"capability"`
	EventID    string         `json:"event_id"`
	Payload    map[string]any `json:"payload"`
}

// Reason says why an event was refused. It is the reason member of the
// audit effect.
type Reason string

// Refusal reasons. Each is reject-and-audit: the configuration does not
// change and the rejection effect is emitted.
const (
	ReasonSchema        Reason = "schema_failure"        // the event does not match the event schema
	ReasonAuthority     Reason = "authority_failure"     // (actor role, capability) is not a pair for this event
	ReasonTerminal      Reason = "terminal_state"        // the run is already in a final state
	ReasonNoTransition  Reason = "no_transition"         // no transition leaves this state on this event
	ReasonGuardFalse    Reason = "guard_false"           // the transition's guard is false
	ReasonNotPending    Reason = "interrupt_not_pending" // an honoring event for an interrupt that is not pending
	ReasonPending       Reason = "interrupts_pending"    // the resume event while interrupts are pending
	ReasonEvidence      Reason = "evidence_missing"      // strict evidence: a required evidence digest is absent
	ReasonConfiguration Reason = "configuration_invalid" // the configuration is not one this machine produces
)

// Effect is a command or audit record emitted by Step, for the shell to
// persist (and, for commands, act on) after the step.
type Effect struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind"`
	Payload map[string]string `json:"payload"`
}

// Rejection describes a refused event.
type Rejection struct {
	Reason Reason
	// Pointer locates the fault: a JSON pointer into the event ("/type",
	// "/actor_role", "/payload/evidence/cursor"), or into the configuration
	// for configuration_invalid and guard_false ("/state", "/context/intent_durable").
	Pointer string
	State   string
	Event   string
	EventID string
	Detail  string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("control: %s rejected in %s (%s): %s", r.Event, r.State, r.Reason, r.Detail)
}

// Record is the audit record of one step, accepted or refused: the data a
// trace line and the durable transition log are made of.
type Record struct {
	Format           string            `json:"format"`
	Table            string            `json:"table"`
	Seq              int64             `json:"seq"`
	Prev             string            `json:"prev,omitempty"` // Head of the configuration the event met
	Accepted         bool              `json:"accepted"`
	Reason           Reason            `json:"reason,omitempty"`
	Pointer          string            `json:"pointer,omitempty"`
	Detail           string            `json:"detail,omitempty"`
	EventID          string            `json:"event_id"`
	Event            string            `json:"event"`
	ActorRole        string            `json:"actor_role"`
	Capability       string            `json:"capability"`
	From             string            `json:"from"`
	To               string            `json:"to"`
	Transition       string            `json:"transition,omitempty"`
	Guard            string            `json:"guard,omitempty"`
	GuardInputs      map[string]bool   `json:"guard_inputs,omitempty"`
	EvidenceRequired []string          `json:"evidence_required,omitempty"`
	Evidence         map[string]string `json:"evidence,omitempty"`
	Pending          []string          `json:"pending_interrupts"`
	Effects          []string          `json:"effects"`
}

// Result is the outcome of Step. When Rejection is nil the event was
// accepted; otherwise Next equals the input configuration and Effects holds
// the single audit effect.
type Result struct {
	Next      Configuration
	Effects   []Effect
	Record    Record
	Rejection *Rejection
}

// Accepted reports whether the event was accepted.
func (r Result) Accepted() bool { return r.Rejection == nil }

// EffectNames lists the names of the emitted effects in order.
func (r Result) EffectNames() []string {
	out := make([]string, len(r.Effects))
	for i, e := range r.Effects {
		out[i] = e.Name
	}
	return out
}

// Initial returns the configuration of a run that has not started.
func (m *Machine) Initial() Configuration {
	return Configuration{Table: m.digest, State: m.initial, Pending: []string{}}
}

// Outcome returns the outcome category of a final configuration, or "".
func (m *Machine) Outcome(c Configuration) string {
	s, _ := m.State(c.State)
	return s.Outcome
}

// Transition interrupt labels used in records for global-interrupt steps.
const (
	labelInterrupt = "interrupt:"
	labelDefer     = "defer:"
)

// Step reduces one event against a configuration. It is pure: the same
// configuration and event always give the same result, and neither input is
// modified. The order of checks follows the table's action order: event
// schema, then authority, then the state (final, interrupt, transition,
// pending interrupts, guard, evidence). A refused event changes nothing and
// emits exactly the table's rejection effect.
func (m *Machine) Step(c Configuration, ev Event) Result {
	var buf [1024]byte
	res, _ := m.step(buf[:0], c, ev, stepOpts{})
	return res
}

// StepAppend is Step that also appends the step's record, in its
// canonical bytes (Record.AppendCanonical), to b. An accepted record is
// written once, for both: the bytes appended are those whose digest is
// the next configuration's Head, so a caller that keeps them needs
// neither to encode the record again nor to hash it. A refused record is
// encoded as AppendCanonical encodes it; err is that encoder's error,
// with b returned as it was.
func (m *Machine) StepAppend(b []byte, c Configuration, ev Event) (Result, []byte, error) {
	return m.stepAppend(b, c, ev, stepOpts{})
}

// StepEvidence is StepAppend of ev with the payload
// {"evidence": evidence} (ev.Payload is not read), for a caller that
// keeps the record and not the effects: it holds its evidence digests by
// name and need not box them into a payload for the machine to read them
// back out, and an accepted step's result has no Effects (their names
// are the record's Effects; a refused step's audit effect is built). When evidence holds exactly the
// transition's required names, each a valid digest, the record keeps the
// map itself as its Evidence; the caller must not change it afterwards.
// An accepted record's EvidenceRequired and Effects are the table's own
// lists (clipped: appending copies them), and its GuardInputs, when every
// one is true, the table's own map; the caller must not change them
// either.
func (m *Machine) StepEvidence(b []byte, c Configuration, ev Event, evidence map[string]string) (Result, []byte, error) {
	return m.stepAppend(b, c, ev, stepOpts{evidence: evidence, typed: true, noEffects: true})
}

// A Digester takes an accepted record's digest from the record's canonical
// bytes: "sha256:" and the lower-case hex of their SHA-256, the digest
// the machine takes itself (cjson.DigestOf of the record). A caller that
// hands the record on with its own proof of that digest (the runner hands
// its store the store's proof) takes the digest through its Digester, so
// that the record is hashed once, not once here and once there. A
// Digester that returns any other text breaks the chain of heads.
type Digester interface {
	DigestRecord(canonical []byte) string
}

// StepEvidenceDigested is StepEvidence whose accepted record's digest
// (the next configuration's Head) is d's of the record's bytes, read
// before the call returns; a refused step does not call d.
func (m *Machine) StepEvidenceDigested(b []byte, c Configuration, ev Event, evidence map[string]string, d Digester) (Result, []byte, error) {
	return m.stepAppend(b, c, ev, stepOpts{evidence: evidence, typed: true, noEffects: true, digester: d})
}

// stepOpts are how a step departs from Step: with typed, the event's
// evidence is evidence rather than what its payload holds; with
// noEffects, an accepted step's result carries no Effects; with a
// digester, an accepted record's digest is the digester's.
type stepOpts struct {
	evidence  map[string]string
	typed     bool
	noEffects bool
	digester  Digester
}

func (m *Machine) stepAppend(b []byte, c Configuration, ev Event, o stepOpts) (Result, []byte, error) {
	res, out := m.step(b, c, ev, o)
	if res.Rejection == nil {
		return res, out, nil
	}
	// A copy is encoded, so that only a refused step's record (which
	// AppendCanonical's receiver makes escape) goes to the heap, not every
	// step's result.
	rec := res.Record
	out, err := rec.AppendCanonical(b)
	if err != nil {
		return res, b, err
	}
	return res, out, nil
}

// step is Step; an accepted step's record is appended to b, which is
// returned (as it was for a refused step).
func (m *Machine) step(b []byte, c Configuration, ev Event, o stepOpts) (Result, []byte) {
	// The context is only read here; reject, whose result holds c, copies
	// it. An accepted step's next configuration has none.
	c.Pending = slices.Clone(c.Pending)
	if c.State == "" && c.Seq == 0 && len(c.Pending) == 0 {
		c.State = m.initial
	}
	if c.Pending == nil {
		c.Pending = []string{}
	}
	if ptr, detail := m.checkConfiguration(c); detail != "" {
		return m.reject(c, ev, ReasonConfiguration, ptr, detail), b
	}
	if ptr, detail := m.checkEvent(ev); detail != "" {
		return m.reject(c, ev, ReasonSchema, ptr, detail), b
	}
	if !m.Authorized(ev.Type, ev.ActorRole, ev.Capability) {
		return m.reject(c, ev, ReasonAuthority, "/actor_role", fmt.Sprintf("(%s, %s) may not issue %s", ev.ActorRole, ev.Capability, ev.Type)), b
	}
	if m.Final(c.State) {
		return m.reject(c, ev, ReasonTerminal, "/type", fmt.Sprintf("%s is final", c.State)), b
	}
	if i, ok := m.interruptOf[ev.Type]; ok {
		return m.interrupt(b, c, ev, m.interrupts[i], o.noEffects, o.digester)
	}
	ti, ok := m.byEdge[edge{c.State, ev.Type}]
	if !ok {
		return m.reject(c, ev, ReasonNoTransition, "/type", fmt.Sprintf("no transition leaves %s on %s", c.State, ev.Type)), b
	}
	t := m.transitions[ti]
	next := Configuration{Table: m.digest, State: t.To, Pending: c.Pending, Seq: c.Seq + 1}
	if i, honors := m.honoredBy[ev.Type]; honors {
		irq := m.interrupts[i].Event
		if !slices.Contains(c.Pending, irq) {
			return m.reject(c, ev, ReasonNotPending, "/type", fmt.Sprintf("%s honors %s, which is not pending", ev.Type, irq)), b
		}
		next.Pending = slices.DeleteFunc(slices.Clone(c.Pending), func(p string) bool { return p == irq })
	}
	if ev.Type == m.resumeEvent && len(c.Pending) > 0 {
		return m.reject(c, ev, ReasonPending, "/type", fmt.Sprintf("interrupts %v are pending", c.Pending)), b
	}
	rec := m.record(c, ev)
	if t.Guard != "" {
		g := m.guards[t.Guard]
		rec.Guard = t.Guard
		if o.noEffects && allTrue(c.Context, g.AllTrue) {
			// StepEvidence's caller reads the record only: it shares
			// the inputs the table's guard holds at.
			rec.GuardInputs = m.guardsTrue[t.Guard]
		} else if r, refused := m.guardInputs(c, ev, t, g, &rec); refused {
			return r, b
		}
	}
	var evidence map[string]string
	var missing string
	if o.typed {
		evidence, missing = evidenceIn(o.evidence, t.Evidence)
	} else {
		evidence, missing = evidenceOf(ev.Payload, t.Evidence)
	}
	if m.strictEvidence && missing != "" {
		return m.reject(c, ev, ReasonEvidence, "/payload/evidence/"+missing, fmt.Sprintf("transition %s needs evidence %q as a sha256 digest under payload.evidence", t.ID, missing)), b
	}
	var effects []Effect
	if !o.noEffects {
		effects = make([]Effect, len(t.Emit))
		for i, name := range t.Emit {
			effects[i] = m.effect(name, c, ev, "", "")
		}
	}
	rec.Seq = next.Seq
	rec.Accepted = true
	rec.To = next.State
	rec.Transition = t.ID
	if o.noEffects {
		// StepEvidence's caller keeps the record and reads it only: it
		// shares the table's lists, clipped so that an append copies them.
		rec.EvidenceRequired, rec.Effects = slices.Clip(t.Evidence), slices.Clip(t.Emit)
	} else {
		rec.EvidenceRequired, rec.Effects = slices.Clone(t.Evidence), slices.Clone(t.Emit)
	}
	rec.Evidence = evidence
	rec.Pending = slices.Clone(next.Pending)
	return m.accept(b, next, effects, rec, o.digester)
}

// guardInputs records the guard's inputs in rec; refused is true, with
// the refusal, when one of them is false.
func (m *Machine) guardInputs(c Configuration, ev Event, t Transition, g Guard, rec *Record) (Result, bool) {
	rec.GuardInputs = make(map[string]bool, len(g.AllTrue))
	falseAt := ""
	for _, f := range g.AllTrue {
		v := c.Context[f]
		rec.GuardInputs[f] = v
		if !v && falseAt == "" {
			falseAt = f
		}
	}
	if falseAt == "" {
		return Result{}, false
	}
	r := m.reject(c, ev, ReasonGuardFalse, "/context/"+falseAt, fmt.Sprintf("guard %s is false: %s does not hold", t.Guard, falseAt))
	r.Record.Guard, r.Record.GuardInputs = rec.Guard, rec.GuardInputs
	return r, true
}

// allTrue reports whether every one of fields is true in ctx.
func allTrue(ctx map[string]bool, fields []string) bool {
	for _, f := range fields {
		if !ctx[f] {
			return false
		}
	}
	return true
}

// accept chains an accepted step's record onto the history and returns the
// result, with the record's canonical bytes appended to b. The head is the
// digest of those bytes, the same digest cjson.DigestOf(rec) gives, taken
// by d when there is one.
func (m *Machine) accept(b []byte, next Configuration, effects []Effect, rec Record, d Digester) (Result, []byte) {
	start := len(b)
	b = appendRecord(b, &rec)
	if d != nil {
		next.Head = d.DigestRecord(b[start:len(b):len(b)])
	} else {
		next.Head = recordDigest(b[start:])
	}
	return Result{Next: next, Effects: effects, Record: rec}, b
}

// interrupt handles a global interrupt in a non-final state: deferred (state
// kept, interrupt made pending) inside the effect-critical states, immediate
// (straight to the interrupt's final state) elsewhere.
func (m *Machine) interrupt(b []byte, c Configuration, ev Event, in Interrupt, noEffects bool, d Digester) (Result, []byte) {
	rec := m.record(c, ev)
	next := Configuration{Table: m.digest, Seq: c.Seq + 1}
	var effect Effect
	if m.deferredIn[c.State] {
		next.State = c.State
		next.Pending = slices.Clone(c.Pending)
		if !slices.Contains(next.Pending, in.Event) {
			next.Pending = append(next.Pending, in.Event)
			slices.Sort(next.Pending)
		}
		effect = Effect{Name: m.deferredEffect}
		if !noEffects {
			effect = m.effect(m.deferredEffect, c, ev, in.Event, "")
		}
		rec.Transition = labelDefer + in.Event
	} else {
		next.State = in.To
		next.Pending = []string{}
		effect = Effect{Name: m.immediateEffect}
		if !noEffects {
			effect = m.effect(m.immediateEffect, c, ev, in.Event, "")
		}
		rec.Transition = labelInterrupt + in.Event
	}
	rec.Seq = next.Seq
	rec.Accepted = true
	rec.To = next.State
	rec.Pending = slices.Clone(next.Pending)
	rec.Effects = []string{effect.Name}
	var effects []Effect
	if !noEffects {
		effects = []Effect{effect}
	}
	return m.accept(b, next, effects, rec, d)
}

func (m *Machine) reject(c Configuration, ev Event, reason Reason, ptr, detail string) Result {
	c = cloneConfiguration(c)
	rec := m.record(c, ev)
	rec.Reason = reason
	rec.Pointer = ptr
	rec.Detail = detail
	rec.Effects = []string{m.rejectEffect}
	return Result{
		Next:      c,
		Effects:   []Effect{m.effect(m.rejectEffect, c, ev, "", reason)},
		Record:    rec,
		Rejection: &Rejection{Reason: reason, Pointer: ptr, State: c.State, Event: ev.Type, EventID: ev.EventID, Detail: detail},
	}
}

func (m *Machine) record(c Configuration, ev Event) Record {
	return Record{
		Format:     RecordFormat,
		Table:      m.digest,
		Seq:        c.Seq,
		EventID:    ev.EventID,
		Event:      ev.Type,
		ActorRole:  ev.ActorRole,
		Capability: ev.Capability,
		From:       c.State,
		To:         c.State,
		Prev:       c.Head,
		Pending:    slices.Clone(c.Pending),
	}
}

// effect builds an effect's payload from exactly the fields its spec names.
func (m *Machine) effect(name string, c Configuration, ev Event, interrupt string, reason Reason) Effect {
	spec := m.effects[name]
	p := make(map[string]string, len(spec.Fields))
	for _, f := range spec.Fields {
		switch f {
		case FieldEventID:
			p[f] = ev.EventID
		case FieldInterrupt:
			p[f] = interrupt
		case FieldState:
			p[f] = c.State
		case FieldEvent:
			p[f] = ev.Type
		case FieldActorRole:
			p[f] = ev.ActorRole
		case FieldReason:
			p[f] = string(reason)
		}
	}
	return Effect{Name: name, Kind: spec.Kind, Payload: p}
}

// lowerName reports whether s matches reRole (a lowercase letter, then
// lowercase letters, digits and underscores) or, with dot, reCapability
// (dots allowed too). checkEvent runs for every event a runner fires, and
// the regular expressions' matcher cost more than the rest of the check;
// TestLowerNameMatchesThePatterns holds the loop to them.
func lowerName(s string, dot bool) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || dot && c == '.') {
			return false
		}
	}
	return true
}

// checkEvent applies the event schema. It returns the pointer and a detail
// for the first defect, or two empty strings.
func (m *Machine) checkEvent(ev Event) (string, string) {
	if _, ok := m.eventIdx[ev.Type]; !ok {
		return "/type", fmt.Sprintf("event type %q is not declared", ev.Type)
	}
	if !lowerName(ev.ActorRole, false) {
		return "/actor_role", fmt.Sprintf("actor_role %q does not match %s", ev.ActorRole, reRole())
	}
	if !lowerName(ev.Capability, true) {
		return "/capability", fmt.Sprintf("capability %q does not match %s", ev.Capability, reCapability())
	}
	if !cjson.ValidID(ev.EventID) {
		return "/event_id", fmt.Sprintf("event_id %q is not a protocol identifier", ev.EventID)
	}
	return "", ""
}

// checkConfiguration returns the pointer and a detail for the first reason c
// is not a configuration this machine can have produced, or two empty strings.
func (m *Machine) checkConfiguration(c Configuration) (string, string) {
	if c.Table != "" && c.Table != m.digest {
		return "/table", fmt.Sprintf("configuration belongs to table %s, not %s", c.Table, m.digest)
	}
	if _, ok := m.State(c.State); !ok {
		return "/state", fmt.Sprintf("state %q is not declared", c.State)
	}
	if c.Seq < 0 {
		return "/seq", "seq is negative"
	}
	if c.Head != "" && !cjson.ValidDigest(c.Head) {
		return "/head", fmt.Sprintf("head %q is not a sha256 digest", c.Head)
	}
	for i, p := range c.Pending {
		ptr := index("/pending_interrupts", i)
		if _, ok := m.interruptOf[p]; !ok {
			return ptr, fmt.Sprintf("pending interrupt %q is not declared", p)
		}
		if i > 0 && c.Pending[i-1] >= p {
			return ptr, "pending interrupts are not sorted and unique"
		}
	}
	if len(c.Pending) > 0 && !m.deferredIn[c.State] && !m.Final(c.State) {
		return "/pending_interrupts", fmt.Sprintf("interrupts are pending outside the deferral states, in %s", c.State)
	}
	// The fields are sorted only to name the first undeclared one.
	declared := true
	for k := range c.Context { //flrh:orderfree a conjunction: every field must be declared
		if !m.contextSet[k] {
			declared = false
			break
		}
	}
	if !declared {
		for _, k := range sortedKeys(c.Context) {
			if !m.contextSet[k] {
				return child("/context", k), fmt.Sprintf("context field %q is not declared", k)
			}
		}
	}
	return "", ""
}

// evidenceOf collects the required evidence digests found under
// payload.evidence and names the first required one that is missing.
func evidenceOf(payload map[string]any, required []string) (map[string]string, string) {
	var have map[string]any
	if e, ok := payload["evidence"].(map[string]any); ok {
		have = e
	}
	return requiredDigests(required, func(name string) (string, bool) {
		d, ok := have[name].(string)
		return d, ok
	})
}

// evidenceIn is evidenceOf for evidence held by name: have itself when it
// holds exactly the required names, each a valid digest (the common case,
// with nothing to copy; a table lists no evidence name twice, so equal
// sizes mean no other name), otherwise a map of the required ones it
// holds.
func evidenceIn(have map[string]string, required []string) (map[string]string, string) {
	if len(required) == 0 {
		return nil, ""
	}
	exact := len(have) == len(required)
	for _, name := range required {
		d, ok := have[name]
		if !ok || !cjson.ValidDigest(d) {
			exact = false
			break
		}
	}
	if exact {
		return have, ""
	}
	return requiredDigests(required, func(name string) (string, bool) {
		d, ok := have[name]
		return d, ok
	})
}

// requiredDigests collects the required names whose lookup is a valid
// digest, and names the first required one that is not.
func requiredDigests(required []string, lookup func(string) (string, bool)) (map[string]string, string) {
	var out map[string]string
	missing := ""
	for _, name := range required {
		d, ok := lookup(name)
		if !ok || !cjson.ValidDigest(d) {
			if missing == "" {
				missing = name
			}
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = d
	}
	return out, missing
}

func cloneConfiguration(c Configuration) Configuration {
	c.Pending = slices.Clone(c.Pending)
	if c.Context != nil {
		ctx := make(map[string]bool, len(c.Context))
		for _, k := range sortedKeys(c.Context) {
			ctx[k] = c.Context[k]
		}
		c.Context = ctx
	}
	return c
}

// Input is one recorded control step: the guard context the runner asserted
// and the event it fed.
type Input struct {
	Context map[string]bool `json:"context,omitempty"`
	Event   Event           `json:"event"`
}

// Replay steps inputs in order from the initial configuration and returns
// the final configuration and every step's result. Replaying a run's
// recorded inputs reproduces its records exactly; a verifier compares them.
func (m *Machine) Replay(inputs []Input) (Configuration, []Result) {
	c := m.Initial()
	results := make([]Result, 0, len(inputs))
	for _, in := range inputs {
		c.Context = in.Context
		r := m.Step(c, in.Event)
		results = append(results, r)
		c = r.Next
	}
	return c, results
}
