package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/seam"
)

// Input kinds the workflow understands.
const (
	KindInput   = "input"   // {"type": EVENT_TYPE, "payload": {...}, "occurred_at"?: RFC 3339}
	KindReceipt = "receipt" // a canonical protocol.ActionReceipt
	KindChoice  = "choice"  // {"proposal_id": ..., "option": ...}: a choice among the options H offered
	// KindControl ("mrp", control.go) is a person's MRP transition.
)

// Input is one accepted input, as the runner hands it over.
type Input struct {
	Seq    int64 // the logical time: 1, 2, … in acceptance order
	Kind   string
	Body   []byte // canonical JSON
	Digest string
	Actor  string
	// ActorRole and Capability are the submitter's authenticated role and
	// the capability it exercised; a choice is judged by them.
	ActorRole  string
	Capability string
}

// Completion says whether the run is done once its effects are closed.
type Completion string

// Completions.
const (
	Continue Completion = "continue"
	Complete Completion = "complete"
	Fail     Completion = "fail"
)

// ApprovalNeed is an approval a person must give before an effect.
type ApprovalNeed struct {
	RequestID     string
	RequestDigest string
	IntentID      string
	Preview       string
	// Quorum is how many people the gate policy asks to approve it, when
	// more than one (0 otherwise): the runner records it with the request
	// and takes that many grants, or the approval policy's quorum if
	// larger, before the intent commits.
	Quorum int
	// Approver is the approver the request names when the gate policy
	// named one other than the approval policy's ("" otherwise): the
	// runner records it with the request, and a grant must come from them
	// (or their group's members).
	Approver string
}

// Effect is one effect H authorized, or would authorize once approved.
type Effect struct {
	Intent        protocol.EffectIntent
	Payload       []byte // canonical action parameters
	ContentDigest string
	Approval      *ApprovalNeed
}

// Note is one record of the turn's trace.
type Note struct {
	Kind string
	Body []byte // canonical JSON
}

// Result is what one tick decided.
//
// State is the workflow's to keep: nobody changes its bytes, the caller
// included, which reads them, hands them to the next Decide, stores a
// copy, and lets them go. Decide keeps the document as it returned it, as
// the key of the state it decoded it from (decision 1725), and a refusal's
// State is the document the caller handed in, as it was.
type Result struct {
	State      []byte
	Effects    []Effect
	Completion Completion
	Refusal    string // non-empty: the input was refused and State is the prior state
	Trace      []Note
	// Offered are the proposals this input left waiting for a person to
	// choose among options (OPTIONS): offered by this turn and not chosen
	// by the controller in it.
	Offered []string
}

// ErrRuleBudget wraps an L budget exhaustion: the run's rules ran out of
// budget on this input, which is a control event, not a refusal.
var ErrRuleBudget = errors.New("rule budget exhausted")

// Init returns the initial state of a run.
func (w *Workflow) Init(runID string) ([]byte, error) {
	st, err := w.initial(runID)
	if err != nil {
		return nil, err
	}
	b, err := st.encode()
	if err != nil {
		return nil, err
	}
	// The run's first tick takes the state from here, as any tick takes
	// the state the tick before kept.
	w.cache.put(b, nil, st)
	return b, nil
}

// tick carries one Decide call's working values.
type tick struct {
	w     *Workflow
	st    *state
	lt    int64
	in    Input
	trace []Note
	// scorecard is the digest of the controller's scorecard for the
	// decision H is about to make, "" when there is none.
	scorecard string
	tried     map[string]bool // proposals the controller already chose for in this tick
	// offers are the proposals this tick offered options for (Result.Offered
	// keeps those still offered at its end: no controller chose).
	offers   []string
	why      *explainer // nil but in Explain
	consumed bool       // L consumed the materialization the tick started from
	outcome  string     // the kind of H's last outcome in this tick
	// em and rec are F's emission and the domain the step is handed,
	// kept in the tick (already on the heap) rather than allocated for
	// the step.
	em  kernel.Emission
	rec recorder
	// notes is the trace's first room: a tick writes three to five notes,
	// and the trace starts here rather than in an allocation of its own.
	notes [6]Note
	// room is where the notes written as bytes are written (noteroom.go).
	room noteRoom
	// untraced says the tick writes no trace and F takes no digests
	// (DecideUntraced).
	untraced bool
}

// noteValue records a trace note whose body holds typed records.
func (t *tick) noteValue(kind string, body map[string]any) { t.note(kind, body) }

func (t *tick) note(kind string, body map[string]any) {
	if t.untraced {
		return
	}
	b, err := cjson.Marshal(body)
	if err != nil {
		b, _ = cjson.Marshal(map[string]any{"unencodable": err.Error()})
	}
	t.trace = append(t.trace, Note{Kind: kind, Body: b})
}

// Decide folds one accepted input through F → L → seam → R → H and says
// what should happen next. It is pure. A malformed or rejected input is a
// Refusal with the prior state; an error means the state itself is broken
// (or ErrRuleBudget).
func (w *Workflow) Decide(stateJSON []byte, in Input) (Result, error) {
	return w.decide(stateJSON, in, nil)
}

// DecideUntraced is Decide for a caller that reads no trace: a replay,
// which compares the states and effects a run's inputs lead to. Its
// Result is Decide's — the same State bytes, Effects, Completion and
// Refusal, or the same error — with no Trace, and the tick writes none
// of its notes; F's step takes none of the digests that only its
// transition record binds (kernel.StepUntraced): the prior and next
// snapshots', the facts' and proposals' and the transition's
// (TestDecideUntracedIsDecide).
func (w *Workflow) DecideUntraced(stateJSON []byte, in Input) (Result, error) {
	return w.decideTraced(stateJSON, in, nil, false)
}

// decide is Decide, collecting explanations in why when it is not nil.
func (w *Workflow) decide(stateJSON []byte, in Input, why *explainer) (Result, error) {
	return w.decideTraced(stateJSON, in, why, true)
}

// decideTraced is decide, writing the tick's trace when traced is set.
func (w *Workflow) decideTraced(stateJSON []byte, in Input, why *explainer, traced bool) (Result, error) {
	st, key, taken, err := w.stateOf(stateJSON)
	if err != nil {
		return Result{}, err
	}
	if in.Seq <= st.Time {
		w.cache.putBack(key, taken)
		return Result{}, fmt.Errorf("workflow: logical time %d does not follow %d", in.Seq, st.Time)
	}
	// A tick writes three to five notes: room for them from the start,
	// in the tick (TestTraceStartsInTheTick).
	t := &tick{w: w, st: st, lt: in.Seq, in: in, why: why, untraced: !traced}
	t.trace = t.notes[:0]
	journeyStart := len(st.Machine.Journey)
	var mat *logic.Materialization // owned by this tick once materialized
	refuse := func(format string, args ...any) (Result, error) {
		// The state is not advanced: keep its materialization for the
		// next input, unless L consumed it.
		if !t.consumed {
			if mat != nil {
				w.cache.putBack(key, mat)
			} else {
				w.cache.putBack(key, taken)
			}
		}
		return Result{State: stateJSON, Completion: Continue, Refusal: fmt.Sprintf(format, args...)}, nil
	}
	var evType string
	var evTypeValue any // evType as the payload's member holds it
	var members map[string]any
	occurred := ""
	var obs *observation // the controller's observation of this input, if any
	switch in.Kind {
	case KindInput:
		evType, evTypeValue, members, occurred, err = w.parseInput(in.Body)
		if err != nil {
			return refuse("%v", err)
		}
		if evType == ReceiptEventType {
			return refuse("input: event type %s is reserved for receipts", ReceiptEventType)
		}
		if w.ctl != nil {
			obs = w.ctl.ofEvent(evType, members)
		}
	case KindReceipt:
		intentID, outcome, err := ParseReceipt(in.Body)
		if err != nil {
			return refuse("receipt: %v", err)
		}
		k := slices.IndexFunc(st.Open, func(o openIntent) bool { return o.IntentID == intentID })
		if k < 0 {
			return refuse("receipt for %s, which this run has not planned", intentID)
		}
		o := st.Open[k]
		st.Open = slices.Delete(st.Open, k, k+1)
		if j := slices.IndexFunc(st.Pending, func(p pending) bool { return p.IntentID == o.IntentID }); j >= 0 {
			// The grant's turn is the deliberation's end only if nothing
			// was decided or steered since the request (the same turn, as
			// many journey entries): a later EXIT, RESUME or decision is
			// never rewound by a receipt.
			if pd := st.Pending[j]; st.Turn == pd.Turn {
				if m, ok := w.approvedMachine(pd); ok && len(m.Journey) == len(st.Machine.Journey) {
					st.Machine = m
				}
			}
			st.Pending = slices.Delete(st.Pending, j, j+1)
		}
		if !t.untraced {
			body, ok := receiptNote(&t.room, o.IntentID, o.ProposalID, outcome)
			t.noteBytes("receipt", body, ok, func() map[string]any { return receiptNoteMap(o.IntentID, o.ProposalID, outcome) })
		}
		t.closeTest(o, outcome)
		if w.ctl != nil {
			obs = w.ctl.ofReceipt(outcome)
		}
		if w.receipts != nil {
			evType, evTypeValue = ReceiptEventType, receiptEventTypeValue
			// The members the bundle names, each the receipt's value (a
			// name it does not have is null).
			members = make(map[string]any, len(w.receipts)+3) // room for the stamped members
			for _, k := range w.receipts {
				var v any
				switch k {
				case "intent_id":
					v = o.IntentID
				case "effect_type":
					v = o.EffectType
				case "outcome":
					v = outcomeValue(outcome)
				case "action_digest":
					v = o.ActionDigest
				case "proposal_id":
					v = o.ProposalID
				}
				members[k] = v
			}
		}
	case KindChoice, KindControl:
		// A choice changes no domain fact: it re-decides the proposal it
		// answers, over the materialization the run already holds. A
		// person's control input steps the deliberation machine only.
	default:
		return refuse("unknown input kind %q", in.Kind)
	}

	var effects []Effect
	mat, err = w.materialize(key, st, taken)
	if err != nil {
		return Result{}, err
	}
	if obs != nil {
		if err := t.observe(*obs); err != nil {
			return Result{}, err
		}
	}
	if in.Kind == KindChoice {
		var refusal string
		effects, refusal, err = t.choose(in)
		if err != nil {
			return Result{}, err
		}
		if refusal != "" {
			return refuse("%s", refusal)
		}
	}
	if in.Kind == KindControl {
		refusal, err := t.control(in)
		if err != nil {
			return Result{}, err
		}
		if refusal != "" {
			return refuse("%s", refusal)
		}
	}
	// A test passed, a person resumed or left safe mode: the proposals H
	// held or escalated are decided again (decision 0612).
	if len(st.Held) > 0 {
		if e, ok := reopened(st.Machine.Journey[journeyStart:]); ok {
			again, err := t.redecide(e)
			if err != nil {
				return Result{}, err
			}
			effects = append(effects, again...)
		}
	}
	if evType != "" {
		var refusal string
		var fresh []Effect
		fresh, mat, refusal, err = t.pipeline(mat, evType, evTypeValue, members, occurred)
		if err != nil {
			return Result{}, err
		}
		if refusal != "" {
			return refuse("%s", refusal)
		}
		if effects == nil {
			effects = fresh // as it is: most ticks decided nothing again
		} else {
			effects = append(effects, fresh...)
		}
	}
	st.Time = in.Seq
	if !t.untraced {
		body, ok := journeyNote(&t.room, st.Machine, len(st.Pending), len(st.Open))
		t.noteBytes("mrp.journey", body, ok, func() map[string]any { return journeyNoteMap(st.Machine, len(st.Pending), len(st.Open)) })
	}
	completion := Continue
	if w.failWhen != nil && holds(mat, *w.failWhen) {
		completion = Fail
	} else if w.completeWhen != nil && holds(mat, *w.completeWhen) {
		completion = Complete
	} else if st.Machine.State.Terminal() {
		// Deliberation exited (a person's EXIT, or a closure budget): no
		// proposal can be decided any more, so the work cannot be done
		// and the run ends with that typed outcome (decision 0611).
		completion = Fail
	}
	st.normalize()
	next, err := st.encodeKept()
	if err != nil {
		return Result{}, err
	}
	// Read before the state goes to the cache, where the next tick of
	// any run with this state may take it and change it.
	offered := stillOffered(t.offers, st.Offered)
	// A run that is over waits for nothing: complete or failed with no
	// intent, request or offer open, the runner verifies it and takes no
	// further input. Its state is not cached, where it would keep its
	// materialization and a copy of the document alive until the cache
	// starts over; deciding it again anyway decodes the document, as any
	// miss does.
	// Its materialization's update scratch is kept for a fresh clone's
	// first update, which would make one.
	if completion == Continue || len(st.Open) > 0 || len(st.Pending) > 0 || len(st.Offered) > 0 || len(st.Held) > 0 {
		w.cache.putResult(next, mat, st)
	} else {
		w.cache.drop(mat)
	}
	if t.untraced {
		return Result{State: next, Effects: effects, Completion: completion, Offered: offered}, nil
	}
	return Result{State: next, Effects: effects, Completion: completion, Trace: t.trace, Offered: offered}, nil
}

// stillOffered are the proposals of ids that offers holds, each once.
func stillOffered(ids []string, offers []offer) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) && slices.ContainsFunc(offers, func(o offer) bool { return o.ProposalID == id }) {
			out = append(out, id)
		}
	}
	return out
}

func holds(m *logic.Materialization, f logic.Fact) bool {
	if m == nil {
		return false
	}
	s, err := m.State(f)
	return err == nil && s.String() == string(seam.TrueOnly)
}

// parseInput reads an input's body. typValue is typ as the decoded body
// holds it, which the event's payload takes as it is rather than a string
// boxed again.
func (w *Workflow) parseInput(body []byte) (typ string, typValue any, members map[string]any, occurred string, err error) {
	if typ, typValue, members, occurred, ok := w.parseInputCanonical(body); ok {
		return typ, typValue, members, occurred, nil
	}
	return parseInputDecoded(body)
}

// parseInputCanonical is parseInput of a body in flrh-cjson/1 form, as
// the runner records every input: its members read in place
// (jsonread.OnlyMembersIn), only the payload decoded, where
// parseInputDecoded decodes the whole body into a map, and the type and
// its interface value the domain's own. It answers, and answers as
// parseInputDecoded does, only where parseInputDecoded accepts the body
// (TestParseInputCanonicalIsDecoded); ok is false for every other body,
// which parseInputDecoded then reads.
func (w *Workflow) parseInputCanonical(body []byte) (typ string, typValue any, members map[string]any, occurred string, ok bool) {
	var raw [3][]byte
	if !jsonread.OnlyMembersIn(raw[:], body, "type", "payload", "occurred_at") || raw[0] == nil || raw[1] == nil {
		return "", nil, nil, "", false
	}
	t, ok := jsonread.PlainTextBytes(raw[0])
	if !ok {
		return "", nil, nil, "", false
	}
	if typValue, ok = w.inputTypes[string(t)]; !ok {
		return "", nil, nil, "", false
	}
	typ = typValue.(string)
	if raw[2] != nil {
		at, ok := jsonread.PlainTextBytes(raw[2])
		if !ok {
			return "", nil, nil, "", false
		}
		occurred = string(at)
		if _, perr := time.Parse(time.RFC3339, occurred); perr != nil {
			return "", nil, nil, "", false
		}
	}
	// The payload is a member of the body's object: its containers are
	// counted from depth 1, as decoding the whole body counts them.
	v, derr := cjson.DecodeAt(raw[1], 1)
	if members, ok = v.(map[string]any); derr != nil || !ok {
		return "", nil, nil, "", false
	}
	for _, k := range stampedMembers {
		if _, present := members[k]; present {
			return "", nil, nil, "", false
		}
	}
	return typ, typValue, members, occurred, true
}

// stampedMembers are the payload members the runtime stamps: an input
// that writes one is refused.
var stampedMembers = [...]string{"event_type", "aggregate_id", "expected_revision"}

// parseInputDecoded is parseInput of any body, decoded whole.
func parseInputDecoded(body []byte) (typ string, typValue any, members map[string]any, occurred string, err error) {
	v, derr := cjson.Decode(body)
	m, ok := v.(map[string]any)
	if derr != nil || !ok {
		return "", nil, nil, "", errors.New("input: must be a JSON object {\"type\", \"payload\"}")
	}
	for _, k := range sortedKeys(m) {
		if k != "type" && k != "payload" && k != "occurred_at" {
			return "", nil, nil, "", fmt.Errorf("input: unknown member /%s", cjson.EscapePointer(k))
		}
	}
	typValue = m["type"]
	typ, ok = typValue.(string)
	if !ok || typ == "" {
		return "", nil, nil, "", errors.New("input: /type must be an event type")
	}
	members, ok = m["payload"].(map[string]any)
	if !ok {
		return "", nil, nil, "", errors.New("input: /payload must be an object")
	}
	for _, k := range stampedMembers {
		if _, present := members[k]; present {
			return "", nil, nil, "", fmt.Errorf("input: /payload/%s is stamped by the runtime", k)
		}
	}
	if raw, present := m["occurred_at"]; present {
		s, ok := raw.(string)
		if _, perr := time.Parse(time.RFC3339, s); !ok || perr != nil {
			return "", nil, nil, "", errors.New("input: /occurred_at must be an RFC 3339 timestamp")
		}
		occurred = s
	}
	return typ, typValue, members, occurred, nil
}

// receiptEventTypeValue is ReceiptEventType as a receipt's payload holds
// it, boxed once.
var receiptEventTypeValue any = ReceiptEventType

// outcomeValue is a receipt's outcome as its payload holds it: one of the
// protocol's outcomes is its string boxed once (no allocation a receipt),
// any other is boxed as it is. Either holds the same string
// (TestOutcomeValueIsBoxed).
func outcomeValue(outcome string) any {
	switch outcome {
	case protocol.OutcomeConfirmedSuccess:
		return outcomeSuccessValue
	case protocol.OutcomeConfirmedFailure:
		return outcomeFailureValue
	case protocol.OutcomeUnknown:
		return outcomeUnknownValue
	}
	return outcome
}

var (
	outcomeSuccessValue any = protocol.OutcomeConfirmedSuccess
	outcomeFailureValue any = protocol.OutcomeConfirmedFailure
	outcomeUnknownValue any = protocol.OutcomeUnknown
)

// recorder is the bundle's declarative domain, keeping what Emit returned:
// the proposals' action and destination objects, which the proposals
// themselves bind only by digest.
type recorder struct {
	*kernel.Declarative
	em *kernel.Emission
	cv *kernel.CheckedVersions
}

// CheckedVersions implements kernel.VersionsChecked: every event the tick
// steps carries the bundle's version envelope, checked at Compile, and so
// does every snapshot of its runs.
func (r recorder) CheckedVersions() *kernel.CheckedVersions { return r.cv }

// ReadsOnly implements kernel.ReadOnly: the recorder keeps the emission it
// returns and changes nothing it is handed, and what it keeps of the kernel's
// values — the proposals' action and destination objects — the tick only
// reads (to match, digest and encode them), as the kernel does. The kernel
// so hands it the values it parsed rather than a copy for each call.
func (recorder) ReadsOnly() {}

// Wrapped implements kernel.Wrapping: the recorder's profile is the
// declarative domain's, which the kernel built once at Load.
func (r recorder) Wrapped() *kernel.Declarative { return r.Declarative }

// Emit renders through EmitShared: the tick reads the proposals'
// destination objects (their id and scope for H, their digest and
// encoding) and never modifies them, so a destination made only of
// literals is the one the domain rendered at Load. A test-only check
// compares each shared emission with a fresh one (verifyShared).
func (r recorder) Emit(s kernel.Snapshot, e kernel.Event) (kernel.Emission, *kernel.Fault) {
	em, f := r.Declarative.EmitShared(s, e)
	if verifyShared != nil {
		verifyShared(r.Declarative, s, e, em, f)
	}
	*r.em = em
	return em, f
}

// verifyShared, set by tests, is handed every emission the recorder
// returns: it holds it to what Emit renders afresh, so that a shared
// destination any code modified would show (it panics if one did).
var verifyShared func(d *kernel.Declarative, s kernel.Snapshot, e kernel.Event, em kernel.Emission, f *kernel.Fault)

// pipeline runs F, L, the seam, R and H for one domain event.
// prior is the materialization of the state's live supports, which the
// pipeline consumes.
//
// evTypeValue is evType as an interface value (nil: evType is boxed here).
func (t *tick) pipeline(prior *logic.Materialization, evType string, evTypeValue any, members map[string]any, occurred string) ([]Effect, *logic.Materialization, string, error) {
	w, st := t.w, t.st
	// F
	var snap kernel.Snapshot
	var err error
	if st.parsed != nil {
		snap = *st.parsed
	} else if snap, err = kernel.ParseSnapshot(w.domain, st.Snapshot); err != nil {
		return nil, nil, "", fmt.Errorf("workflow state: snapshot: %w", err)
	}
	if evTypeValue == nil {
		evTypeValue = evType
	}
	payload := stampPayload(members, evTypeValue, st.aggregateValueOf(snap.AggregateID), snap.Revision)
	eventID, idemKey, stamp := tickStrings(st.RunID, t.lt)
	if occurred == "" {
		occurred = stamp
	}
	ev := protocol.AcceptedEvent{Kind: protocol.KindAcceptedEvent, EventID: eventID, Payload: payload,
		OccurredAt: occurred, ReceivedAt: stamp, LogicalTime: t.lt, CorrelationID: st.RunID,
		IdempotencyKey: idemKey, Versions: w.versions}
	// The snapshot's canonical bytes go with it when the tick that wrote
	// them kept it: the kernel then need not write them again.
	// Their digest too, when the step that wrote them took it.
	var known []byte
	knownDigest := ""
	if st.parsed != nil && st.kernelBytes {
		known, knownDigest = st.Snapshot, st.snapDigest
	}
	t.rec = recorder{w.domain, &t.em, w.checkedVersions}
	var tr *kernel.Transition
	var nextBytes []byte
	nextDigest := "" // none taken untraced: the next traced step digests the snapshot itself
	if t.untraced {
		tr, nextBytes, err = kernel.StepUntraced(&t.rec, snap, known, ev)
	} else {
		tr, nextBytes, nextDigest, err = kernel.StepDigested(&t.rec, snap, known, knownDigest, ev)
	}
	if err != nil {
		return nil, nil, "F rejected the input: " + err.Error(), nil
	}
	// The snapshot's own canonical encoding: what cjson.Marshal writes for
	// it, without decoding and encoding it again; the kernel's, when it
	// wrote them.
	if nextBytes != nil {
		st.Snapshot = nextBytes
	} else if st.Snapshot, err = tr.NextSnapshot.MarshalJSON(); err != nil {
		return nil, nil, "", err
	}
	// The next snapshot is kept where the step returned it: nothing
	// changes a transition once stepped.
	st.canonSnapshot, st.parsed, st.kernelBytes, st.snapDigest = true, &tr.NextSnapshot, nextBytes != nil, nextDigest
	// Room for the tick's notes from here on: this one, each proposal's
	// verdict and outcome, and the journey.
	if !t.untraced {
		t.room.reserve(noteRoomTick + noteRoomProposal*len(tr.EffectProposals))
		body, ok := transitionNote(&t.room, ev.EventID, evType, tr.TransitionDigest, len(tr.FactDeltas), len(tr.EffectProposals))
		t.noteBytes("f.transition", body, ok, func() map[string]any {
			return transitionNoteMap(ev.EventID, evType, tr.TransitionDigest, len(tr.FactDeltas), len(tr.EffectProposals))
		})
	}

	// L
	changes, supports, refusal := t.factChanges(tr.FactDeltas)
	if refusal != "" {
		return nil, nil, refusal, nil
	}
	t.consumed = true
	res, err := logic.SolveWithoutChanges(prior, w.rules, changes, t.lt, w.limits)
	if err != nil {
		if isBudget(err) {
			return nil, nil, "", fmt.Errorf("%w: %v", ErrRuleBudget, err)
		}
		return nil, nil, "L refused the facts: " + err.Error(), nil
	}
	st.Supports, st.ownSupports = supports, true
	mat := res.Materialization
	if len(res.Conflicts) > 0 {
		var cs []string
		for _, c := range res.Conflicts {
			cs = append(cs, fmt.Sprint(c))
		}
		slices.Sort(cs)
		t.note("l.conflicts", map[string]any{"conflicts": anySlice(cs)})
	}

	// seam, R and H, one epoch and one batch per proposal
	if len(tr.EffectProposals) == 0 {
		st.Watermark = (t.lt + 1) * EpochStride
		return nil, mat, "", nil
	}
	if len(tr.EffectProposals) >= EpochStride {
		return nil, nil, "", fmt.Errorf("workflow: %d proposals in one tick", len(tr.EffectProposals))
	}
	specs, err := matchEmission(tr.EffectProposals, t.em.Proposals)
	if err != nil {
		return nil, nil, "", err
	}
	// A secret parameter never enters the record: its value is the
	// shell's, read at dispatch. An action that carries one is refused
	// before it is digested into a ticket, a preview or a trace.
	for i, p := range tr.EffectProposals {
		for _, m := range t.w.secrets[p.EffectType] {
			if _, ok := specs[i].Action[m.Name]; ok {
				return nil, nil, fmt.Sprintf("SECRET_IN_ACTION: proposal %s: parameter %s of %s is secret; its value is read from %s at dispatch and the domain must not emit it",
					p.ProposalID, m.Name, p.EffectType, m.Env), nil
			}
		}
	}
	var cmds []frontier.Command
	for i, p := range tr.EffectProposals {
		proj, refusal := t.project(mat, p, specs[i], t.lt*EpochStride+int64(i))
		if refusal != "" {
			return nil, nil, refusal, nil
		}
		cmds = append(cmds, proj)
	}
	batches, err := t.react(cmds)
	if err != nil {
		return nil, nil, "", err
	}
	var effects []Effect
	for _, sb := range batches {
		b := sb.batch
		p := b.Proposals[0]
		k := slices.IndexFunc(tr.EffectProposals, func(q protocol.EffectProposal) bool { return q.ProposalID == p.ProposalID })
		if k < 0 {
			return nil, nil, "", fmt.Errorf("workflow: R published unknown proposal %s", p.ProposalID)
		}
		e, err := t.authorize(b, specs[k], nil, nil, sb.checked)
		if err != nil {
			return nil, nil, "", err
		}
		switch {
		case len(e) == 0:
		case effects == nil:
			effects = e // as it is: a tick's one batch, or the first with effects
		default:
			effects = append(effects, e...)
		}
	}
	return effects, mat, "", nil
}

// stampPayload is an event's payload: the input's members with the
// stamped ones added, where a member of a stamped name keeps its value (as
// over a copy of the stamps the members were written into). The members'
// map is the tick's own — decoded from the input or built from the
// receipt — and read by nothing after F's event is built, so the stamps go
// into it rather than into a copy of it (TestStampPayloadIsTheCopy).
// evType is the event type as an interface value holding its string.
// aggregateID is the aggregate id as an interface value holding its
// string (state.aggregateValueOf).
func stampPayload(members map[string]any, evType, aggregateID any, revision int64) protocol.Object {
	payload := protocol.Object(members)
	if payload == nil {
		payload = make(protocol.Object, 3)
	}
	if _, ok := payload["event_type"]; !ok {
		payload["event_type"] = evType
	}
	if _, ok := payload["aggregate_id"]; !ok {
		payload["aggregate_id"] = aggregateID
	}
	if _, ok := payload["expected_revision"]; !ok {
		payload["expected_revision"] = revision
	}
	return payload
}

// aggregateValueOf returns id as an interface value: the one the state
// keeps when it holds id, else id boxed, which the state then keeps. A
// run's aggregate id is the same string tick after tick and a cached
// state goes from one tick to the next, so the id is boxed once a state
// rather than once a tick (TestAggregateValueOf).
func (st *state) aggregateValueOf(id string) any {
	if kept, ok := st.aggregateValue.(string); !ok || kept != id {
		st.aggregateValue = id
	}
	return st.aggregateValue
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func isBudget(err error) bool {
	var le *logic.Error
	if !errors.As(err, &le) {
		return false
	}
	return strings.HasSuffix(string(le.Code), "_BUDGET_EXHAUSTED") && le.Code != "INPUT_BUDGET_EXHAUSTED" || le.Code == "DERIVATION_DEPTH_EXCEEDED"
}

// action is what the domain emitted for one proposal.
type action struct {
	Action, Destination map[string]any
}

// matchEmission pairs each proposal with the action and destination
// objects it binds by digest. F builds exactly one proposal from each
// emitted one, of its effect type, in an order of its own: an effect type
// that only one emitted proposal has pairs it with the only proposal of
// that type without digesting anything (the digests F took of the same
// objects could not differ). Only proposals whose type several emitted
// proposals share are paired by digest (TestMatchEmissionIsByDigest, and
// every other test of the package through a hook, hold this to pairing
// every proposal by digest).
func matchEmission(props []protocol.EffectProposal, emitted []kernel.Proposal) ([]action, error) {
	out := make([]action, len(props))
	used := make([]bool, len(emitted))
	for i, p := range props {
		only, n := -1, 0
		for j, e := range emitted {
			if e.EffectType == p.EffectType {
				only, n = j, n+1
			}
		}
		if n == 1 && !used[only] {
			e := emitted[only]
			out[i], used[only] = action{e.Action, e.Destination}, true
			continue
		}
		found := false
		for j, e := range emitted {
			if used[j] || e.EffectType != p.EffectType {
				continue
			}
			ad, err1 := kernel.ValueDigest(kernel.ValueEffectAction, e.Action)
			dd, err2 := kernel.ValueDigest(kernel.ValueEffectDestination, e.Destination)
			if err1 == nil && err2 == nil && ad == p.ActionDigest && dd == p.DestinationDigest {
				out[i], used[j], found = action{e.Action, e.Destination}, true, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("workflow: proposal %s has no emitted action", p.ProposalID)
		}
	}
	if verifyMatch != nil {
		if err := verifyMatch(props, emitted, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// verifyMatch, when set (by tests), checks matchEmission's pairing
// against pairing every proposal by digest.
var verifyMatch func(props []protocol.EffectProposal, emitted []kernel.Proposal, got []action) error

// factChanges maps F's fact deltas to named L support changes through the
// bundle's facts table, and returns the live supports after them.
func (t *tick) factChanges(deltas []protocol.FactDelta) ([]logic.FactChange, []support, string) {
	var room *factRoom
	if len(deltas) == 1 {
		room = new(factRoom)
	}
	return t.factChangesIn(deltas, room)
}

// factRoom holds what one fact delta's change is made of — the change,
// the support's arguments and the fact's values — in one allocation, for
// a delta of up to factRoomColumns columns. Its parts go to the one
// support and change they were made for, and to nothing else.
type factRoom struct {
	change [1]logic.FactChange
	args   [factRoomColumns]any
	vals   [factRoomColumns]logic.Value
}

const factRoomColumns = 3

// factChangesIn is factChanges taking the one delta's parts from room
// (nil: each allocated on its own).
func (t *tick) factChangesIn(deltas []protocol.FactDelta, room *factRoom) ([]logic.FactChange, []support, string) {
	// A copy with room for the tick's insertions, not grown by the first
	// (nil stays nil, as slices.Clone keeps it); or, when the state owns
	// its array (state.ownSupports) and the tick only inserts, the list
	// itself, appended to in place (append grows it by doubling when it
	// is full): a long run's tick no longer copies every live support.
	var supports []support
	ordered := 0 // how many leading supports are known to be in order
	switch {
	case t.st.ownSupports && insertsOnly(deltas):
		supports = t.st.Supports
		ordered = len(supports) // a tick's own list, sorted by that tick
	case t.st.Supports != nil:
		supports = append(make([]support, 0, len(t.st.Supports)+len(deltas)), t.st.Supports...)
	}
	var changes []logic.FactChange
	if room != nil {
		changes = room.change[:0:1]
	}
	for _, fd := range deltas {
		pred, _ := fd.Tuple["predicate"].(string)
		cols, ok := t.w.facts[pred]
		if !ok {
			t.note("l.unmapped_fact", map[string]any{"predicate": pred, "derivation_id": fd.DerivationID})
			continue
		}
		if len(fd.Tuple) != len(cols)+1 {
			return nil, nil, fmt.Sprintf("fact %s: the tuple has members %v, the facts table names %v", pred, sortedKeys(fd.Tuple), cols)
		}
		var args, vals = []any(nil), []logic.Value(nil)
		if room != nil && len(cols) <= factRoomColumns {
			// The room's arguments and values serve one delta.
			args, vals = room.args[:len(cols):len(cols)], room.vals[:len(cols):len(cols)]
			room = nil
		} else {
			args = make([]any, len(cols))
		}
		for i, c := range cols {
			v, present := fd.Tuple[c]
			if !present {
				return nil, nil, fmt.Sprintf("fact %s: the tuple has no member %q", pred, c)
			}
			switch v.(type) {
			case string, int64:
			default:
				return nil, nil, fmt.Sprintf("fact %s: member %q is neither a symbol nor an integer", pred, c)
			}
			args[i] = v
		}
		id, prov, err := supportIDAndProvenance(fd.DerivationID, fd.ProvenanceDelta)
		if err != nil {
			return nil, nil, fmt.Sprintf("fact %s: provenance: %v", pred, err)
		}
		s := support{ID: id, Predicate: pred, Args: args, Provenance: prov}
		f, err := t.w.factInto(s, vals)
		if err != nil {
			return nil, nil, fmt.Sprintf("fact %s: %v", pred, err)
		}
		if fd.Diff == 1 {
			changes = append(changes, logic.FactChange{ID: s.ID, Fact: f, Diff: 1, Provenance: s.Provenance})
			supports = append(supports, s)
			continue
		}
		// F names each delta by its own content, time and cause, so a -1
		// never carries the id of the +1 that inserted the fact: it
		// retracts every live support of the same fact.
		// The key holds the predicate: only supports of the same predicate
		// can match, and only theirs are encoded.
		key := supportKey(s)
		same := func(x support) bool { return x.Predicate == s.Predicate && supportKey(x) == key }
		n := 0
		for _, x := range supports {
			if same(x) {
				changes = append(changes, logic.FactChange{ID: x.ID, Fact: f, Diff: -1, Provenance: x.Provenance})
				n++
			}
		}
		if n == 0 {
			return nil, nil, fmt.Sprintf("fact %s: a retraction of a fact with no live support", pred)
		}
		supports = slices.DeleteFunc(supports, same)
	}
	if len(changes) == 0 {
		changes = nil // as when nothing was appended
	}
	sortSupports(supports, ordered)
	return changes, supports, ""
}

// sortSupports sorts supports by id, as slices.SortFunc does; the first
// ordered of them are already in order. One support after them, the
// tick's one insertion, is moved to where a binary search puts it: with
// every id distinct there is one order, and SortFunc, which would compare
// and swap over the whole list, finds the same. Anything else (an id met
// twice, more than one insertion, nothing known in order) is sorted by
// SortFunc, as before.
func sortSupports(supports []support, ordered int) {
	if n := len(supports); ordered > 0 && n == ordered+1 {
		x := &supports[ordered]
		at, found := slices.BinarySearchFunc(supports[:ordered], x.ID, func(s support, id string) int { return strings.Compare(s.ID, id) })
		if !found {
			if at < ordered {
				s := *x
				copy(supports[at+1:], supports[at:ordered])
				supports[at] = s
			}
			return
		}
	}
	slices.SortFunc(supports, func(a, b support) int { return strings.Compare(a.ID, b.ID) })
}

// insertsOnly reports whether every delta inserts a support.
func insertsOnly(deltas []protocol.FactDelta) bool {
	for i := range deltas {
		if deltas[i].Diff != 1 {
			return false
		}
	}
	return true
}

// supportKey is a support's fact: predicate and arguments.
func supportKey(s support) string {
	b, _ := cjson.Marshal([]any{s.Predicate, s.Args})
	return string(b)
}

// baseID names F's derivation as an L base support: L reserves the
// "derivation:" prefix for derived supports, so F's derivation ids carry
// the prefix "fact:" instead, with the same digest.
func baseID(derivationID string) string {
	return "fact:" + strings.TrimPrefix(derivationID, "derivation:")
}

// supportIDAndProvenance is a base support's id, baseID(derivationID),
// and its provenance's canonical encoding, written into one buffer and
// made one string, each cut from it (TestSupportIDAndProvenance).
func supportIDAndProvenance(derivationID string, provenance protocol.Object) (id, prov string, err error) {
	k := 0
	both := cjson.WrittenString(func(b []byte) []byte {
		b = append(append(b, "fact:"...), strings.TrimPrefix(derivationID, "derivation:")...)
		k = len(b)
		// As a plain map: the encoder writes it without reflection.
		b, err = cjson.AppendMarshal(b, map[string]any(provenance))
		return b
	})
	if err != nil {
		return "", "", err
	}
	return both[:k], both[k:], nil
}

// fact converts a stored support to a logic fact, checking column types.
func (w *Workflow) fact(s support) (logic.Fact, error) { return w.factInto(s, nil) }

// factInto is fact with the fact's values written into vals when it has
// one per argument (nil: allocated).
func (w *Workflow) factInto(s support, vals []logic.Value) (logic.Fact, error) {
	schema, ok := w.rules.SharedSchema(s.Predicate) // read only
	if !ok || len(schema) != len(s.Args) {
		return logic.Fact{}, fmt.Errorf("relation %s/%d is not declared", s.Predicate, len(s.Args))
	}
	if len(vals) != len(s.Args) {
		vals = make([]logic.Value, len(s.Args))
	}
	f := logic.Fact{Rel: s.Predicate, Args: vals}
	for i, a := range s.Args {
		v, err := value(a, schema[i])
		if err != nil {
			return logic.Fact{}, fmt.Errorf("column %d: %v", i, err)
		}
		f.Args[i] = v
	}
	return f, nil
}

func value(a any, t logic.Type) (logic.Value, error) {
	switch v := a.(type) {
	case string:
		if t != logic.TypeSymbol {
			return logic.Value{}, fmt.Errorf("%q is a symbol, the column a number", v)
		}
		return logic.Sym(v), nil
	case int64:
		if t != logic.TypeNumber {
			return logic.Value{}, fmt.Errorf("%d is a number, the column a symbol", v)
		}
		return logic.Num(v), nil
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return logic.Value{}, err
		}
		return value(n, t)
	}
	return logic.Value{}, fmt.Errorf("%v is neither a symbol nor an integer", a)
}

// rebuild evaluates the live base supports from scratch: the state keeps
// supports, never a materialization, so replay needs nothing else.
func (w *Workflow) rebuild(supports []support, lt int64) (*logic.Materialization, error) {
	changes := make([]logic.FactChange, 0, len(supports))
	for _, s := range supports {
		f, err := w.fact(s)
		if err != nil {
			return nil, fmt.Errorf("workflow state: support %s: %w", s.ID, err)
		}
		changes = append(changes, logic.FactChange{ID: s.ID, Fact: f, Diff: 1, Provenance: s.Provenance})
	}
	res, err := logic.SolveWithoutChanges(nil, w.rules, changes, lt, w.limits)
	if err != nil {
		if isBudget(err) {
			return nil, fmt.Errorf("%w: %v", ErrRuleBudget, err)
		}
		return nil, fmt.Errorf("workflow state: rebuilding L: %w", err)
	}
	return res.Materialization, nil
}

// tickStrings returns a tick's event id, "event:<run>:<time>", its
// idempotency key, "accepted:<run>:<time>", and the timestamp derived from
// its logical time (RFC 3339, UTC), so that an input without its own time
// still steps deterministically: three parts of one string, one
// allocation a tick where the timestamp took one of its own.
func tickStrings(runID string, lt int64) (eventID, idemKey, stamp string) {
	var num [20]byte
	n := strconv.AppendInt(num[:0], lt, 10)
	var buf [192]byte
	b := append(append(append(append(buf[:0], "event:"...), runID...), ':'), n...)
	k := len(b)
	b = append(append(append(append(b, "accepted:"...), runID...), ':'), n...)
	j := len(b)
	b = time.Unix(lt, 0).UTC().AppendFormat(b, time.RFC3339)
	s := string(b)
	return s[:k], s[k:j], s[j:]
}
