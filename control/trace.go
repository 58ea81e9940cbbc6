package control

import (
	"fmt"
	"regexp"
	"slices"
	"sync"
)

// TraceFormat is the schema_version of a run-FSM trace vector file, the
// format the reference conformance vectors use.
const TraceFormat = "flrh-run-fsm-traces/v1"

// MaxTraceFileBytes bounds a trace file; larger input is refused unread.
const MaxTraceFileBytes = 8 << 20

var (
	reCaseID     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })
	reEffectWant = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`) })
)

// TraceFile is a decoded trace vector file.
type TraceFile struct {
	Coverage string
	Cases    []TraceCase
}

// TraceCase is one scripted run: events fed in order to a fresh machine.
type TraceCase struct {
	ID      string
	Machine string
	Pointer string // where the case sits in its file
	Steps   []TraceStep
}

// TraceStep is one event with the guard outcomes the environment reports for
// it, and the state and effects the machine must produce.
type TraceStep struct {
	Event       Event
	Guards      map[string]bool
	WantState   string
	WantEffects []string
}

// DecodeTraces parses a trace vector file strictly: unknown members, wrong
// types, bad patterns and duplicate case ids are typed *Error values with the
// JSON pointer of the defect.
func DecodeTraces(text []byte) (*TraceFile, error) {
	if len(text) > MaxTraceFileBytes {
		return nil, errorf(CodeLimit, "", "trace file is %d bytes, more than %d", len(text), MaxTraceFileBytes)
	}
	v, err := decodeStrict(text)
	if err != nil {
		return nil, err
	}
	root, err := asObj(v, "")
	if err != nil {
		return nil, err
	}
	format, err := root.str("schema_version", true, nil)
	if err != nil {
		return nil, err
	}
	if format != TraceFormat {
		return nil, errorf(CodeFormat, "/schema_version", "schema_version is %q, this code reads %q", format, TraceFormat)
	}
	tf := &TraceFile{}
	if tf.Coverage, err = root.str("coverage_claim", true, nil); err != nil {
		return nil, err
	}
	if tf.Coverage == "" {
		return nil, errorf(CodeSchema, "/coverage_claim", "must not be empty")
	}
	cases, p, err := root.array("cases", true)
	if err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, errorf(CodeSchema, p, "no cases")
	}
	if err := root.done(); err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for i, cv := range cases {
		tc, err := decodeCase(cv, index(p, i))
		if err != nil {
			return nil, err
		}
		if ids[tc.ID] {
			return nil, errorf(CodeDuplicate, child(tc.Pointer, "id"), "case id %q is used twice", tc.ID)
		}
		ids[tc.ID] = true
		tf.Cases = append(tf.Cases, tc)
	}
	return tf, nil
}

func decodeCase(v any, ptr string) (TraceCase, error) {
	tc := TraceCase{Pointer: ptr}
	o, err := asObj(v, ptr)
	if err != nil {
		return tc, err
	}
	if tc.ID, err = o.str("id", true, reCaseID()); err != nil {
		return tc, err
	}
	if tc.Machine, err = o.str("machine", true, nil); err != nil {
		return tc, err
	}
	if tc.Machine != "control" {
		return tc, errorf(CodeSchema, child(ptr, "machine"), "machine is %q, want \"control\"", tc.Machine)
	}
	steps, sp, err := o.array("steps", true)
	if err != nil {
		return tc, err
	}
	if len(steps) == 0 {
		return tc, errorf(CodeSchema, sp, "no steps")
	}
	if err := o.done(); err != nil {
		return tc, err
	}
	for i, s := range steps {
		st, err := decodeStep(s, index(sp, i))
		if err != nil {
			return tc, err
		}
		tc.Steps = append(tc.Steps, st)
	}
	return tc, nil
}

func decodeStep(v any, ptr string) (TraceStep, error) {
	var st TraceStep
	o, err := asObj(v, ptr)
	if err != nil {
		return st, err
	}
	eo, err := o.object("event", true)
	if err != nil {
		return st, err
	}
	if st.Event, err = decodeEvent(eo); err != nil {
		return st, err
	}
	g, err := o.object("guard_results", true)
	if err != nil {
		return st, err
	}
	st.Guards = map[string]bool{}
	for _, name := range sortedKeys(g.m) {
		if !reSnake().MatchString(name) {
			return st, errorf(CodeSchema, child(g.ptr, name), "guard name %q does not match %s", name, reSnake())
		}
		b, err := g.boolean(name, true)
		if err != nil {
			return st, err
		}
		st.Guards[name] = b
	}
	if st.WantState, err = o.str("expected_state", true, reUpperID()); err != nil {
		return st, err
	}
	if st.WantEffects, err = o.strings("expected_effects", true, false, reEffectWant()); err != nil {
		return st, err
	}
	if st.WantEffects == nil {
		st.WantEffects = []string{}
	}
	return st, o.done()
}

// decodeEvent reads an event in the trace schema. It checks only the shape
// the trace format fixes; the machine's own event schema is applied by Step,
// which refuses and audits an event that fails it.
func decodeEvent(o *obj) (Event, error) {
	var ev Event
	var err error
	if ev.Type, err = o.str("type", true, reUpperID()); err != nil {
		return ev, err
	}
	if ev.ActorRole, err = o.str("actor_role", true, reRole()); err != nil {
		return ev, err
	}
	if ev.Capability, err = o.str("capability", true, reCapability()); err != nil {
		return ev, err
	}
	if ev.EventID, err = o.str("event_id", true, nil); err != nil {
		return ev, err
	}
	if ev.EventID == "" {
		return ev, errorf(CodeSchema, child(o.ptr, "event_id"), "must not be empty")
	}
	p, err := o.object("payload", true)
	if err != nil {
		return ev, err
	}
	ev.Payload = p.m
	return ev, o.done()
}

// CaseResult is the verdict on one trace case.
type CaseResult struct {
	ID          string   `json:"id"`
	Steps       int      `json:"steps"`
	Passed      bool     `json:"passed"`
	FailedStep  int      `json:"failed_step,omitempty"` // 1-based
	GotState    string   `json:"got_state,omitempty"`
	WantState   string   `json:"want_state,omitempty"`
	GotEffects  []string `json:"got_effects,omitempty"`
	WantEffects []string `json:"want_effects,omitempty"`
	Final       string   `json:"final_state"`
	// Records are the audit records of the steps that ran, in order.
	Records []Record `json:"-"`
}

// ContextFromGuards turns reported guard outcomes into a guard context: a
// true guard sets every field it reads to true, a false one sets them all to
// false. Unknown guard names and outcomes that contradict each other on a
// shared field are typed errors.
func (m *Machine) ContextFromGuards(guards map[string]bool, ptr string) (map[string]bool, error) {
	ctx := map[string]bool{}
	for _, name := range sortedKeys(guards) {
		g, ok := m.guards[name]
		if !ok {
			return nil, errorf(CodeUnknownRef, child(ptr, name), "guard %q is not declared by the table", name)
		}
		for _, f := range g.AllTrue {
			if prev, set := ctx[f]; set && prev != guards[name] {
				return nil, errorf(CodeSchema, child(ptr, name), "guard outcomes disagree on context field %q", f)
			}
			ctx[f] = guards[name]
		}
	}
	return ctx, nil
}

// RunCase runs a trace case from the initial configuration and compares the
// state and the emitted effect names after every step. The error is non-nil
// only when the case is malformed for this machine (an unknown guard name).
func (m *Machine) RunCase(tc TraceCase) (CaseResult, error) {
	res := CaseResult{ID: tc.ID, Steps: len(tc.Steps), Passed: true}
	c := m.Initial()
	for i, st := range tc.Steps {
		ctx, err := m.ContextFromGuards(st.Guards, child(index(child(tc.Pointer, "steps"), i), "guard_results"))
		if err != nil {
			return res, err
		}
		c.Context = ctx
		r := m.Step(c, st.Event)
		res.Records = append(res.Records, r.Record)
		got := r.EffectNames()
		if r.Next.State != st.WantState || !slices.Equal(got, st.WantEffects) {
			res.Passed = false
			res.FailedStep = i + 1
			res.GotState, res.WantState = r.Next.State, st.WantState
			res.GotEffects, res.WantEffects = got, slices.Clone(st.WantEffects)
			res.Final = r.Next.State
			return res, nil
		}
		c = r.Next
	}
	res.Final = c.State
	return res, nil
}

// String renders a one-line human verdict.
func (r CaseResult) String() string {
	if r.Passed {
		return fmt.Sprintf("ok   %s (%d steps, ends in %s)", r.ID, r.Steps, r.Final)
	}
	return fmt.Sprintf("FAIL %s step %d: state %s effects %v, want state %s effects %v",
		r.ID, r.FailedStep, r.GotState, r.GotEffects, r.WantState, r.WantEffects)
}

// MaxEventBytes bounds one encoded control event.
const MaxEventBytes = 1 << 20

// DecodeEvent parses one control event from JSON text: an object with
// exactly type, actor_role, capability, event_id and payload (an object).
// Shape errors are typed *Error values with a pointer; whether the event is
// declared and authorized is for Step to judge (and audit).
func DecodeEvent(text []byte) (Event, error) {
	if len(text) > MaxEventBytes {
		return Event{}, errorf(CodeLimit, "", "event is %d bytes, more than %d", len(text), MaxEventBytes)
	}
	v, err := decodeStrict(text)
	if err != nil {
		return Event{}, err
	}
	o, err := asObj(v, "")
	if err != nil {
		return Event{}, err
	}
	return decodeEvent(o)
}
