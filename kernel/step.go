package kernel

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// Step applies one accepted event to a snapshot under a domain. It is
// StepValue on the cjson value form of its typed arguments.
func Step(d Domain, s Snapshot, e protocol.AcceptedEvent) (*Transition, error) {
	t, _, _, err := stepTyped(d, s, nil, "", e, true)
	return t, err
}

// stepTyped is Step, given the snapshot's canonical bytes when the caller
// holds them (see StepEncoded), returning the next snapshot's when the
// step wrote them on its fast path, with their digest. sDigest is "" or
// the digest of sBytes (see StepDigested); it is used only with them.
// Without digests (see StepUntraced), the step takes no digest of its
// own: the transition's PriorSnapshotDigest and TransitionDigest are
// empty, and so is the next snapshot's digest.
func stepTyped(d Domain, s Snapshot, sBytes []byte, sDigest string, e protocol.AcceptedEvent, digests bool) (*Transition, []byte, string, error) {
	// The typed fields are checked where they are; only an input that
	// fails a check takes the value path, which finds the same fault and
	// reports it as StepValue does.
	if p, ok := validProfileOf(d); ok {
		if ps, prior, ok := parseTypedSnapshot(d, p, &s, sBytes); ok {
			if pe, ok := parseTypedEvent(d, p, &e); ok {
				if rej := compatible(p, ps, pe); rej != nil {
					return nil, nil, "", rej
				}
				if sBytes == nil {
					sDigest = "" // the step wrote the prior bytes itself
				}
				return apply(d, p, ps, pe, prior, sDigest, digests)
			}
		}
	}
	t, err := stepWire(d, s, e)
	if t != nil && !digests {
		t.PriorSnapshotDigest, t.TransitionDigest = "", ""
	}
	return t, nil, "", err
}

// stepWire is Step through the snapshot's wire map and the event's value
// form: StepValue on them, with the typed event's own canonical faults.
func stepWire(d Domain, s Snapshot, e protocol.AcceptedEvent) (*Transition, error) {
	sv := s.Wire()
	if ev, ok := eventValue(e); ok {
		return stepValue(d, sv, ev, true)
	}
	ev, err := toValue(e)
	if err != nil {
		id := e.EventID
		var eventID *string
		if cjson.ValidID(id) {
			eventID = &id
		}
		// Snapshot faults keep their precedence over event faults.
		if rej := parseSnapshotOnly(d, sv, eventID); rej != nil {
			return nil, rej
		}
		return nil, canonicalRejection("/accepted_event", err, eventID, revisionOf(sv))
	}
	return StepValue(d, sv, ev)
}

// parseTypedSnapshot is parseSnapshot of s.Wire() for a snapshot that
// passes every check, without building the wire map; ok is false when a
// check fails or the snapshot is outside appendSnapshot's fast case.
// known, when not nil, is what appendSnapshot writes for s (the next
// snapshot's bytes a step returned with it), which then is not written
// again.
func parseTypedSnapshot(d Domain, p Profile, s *Snapshot, known []byte) (Snapshot, []byte, bool) {
	if !cjson.ValidID(s.AggregateID) || s.Revision < 0 || (s.Phase != PhaseOpen && s.Phase != PhaseClosed) ||
		(s.LastLogicalTime != nil && *s.LastLogicalTime < 0) || (s.LastEventID != nil && !cjson.ValidID(*s.LastEventID)) ||
		!p.versionsOK(&s.Versions) {
		return Snapshot{}, nil, false
	}
	prior, ok := known, true
	if known == nil {
		prior, ok = appendSnapshot(make([]byte, 0, snapshotCap(s)), s, false, p.versions)
	}
	if !ok {
		return Snapshot{}, nil, false
	}
	// The wire members are the kernel's and the state's other keys.
	extra := 0
	for k := range s.State { //flrh:orderfree a count
		if !slices.Contains(kernelSnapshotMembers, k) {
			extra++
		}
	}
	if extra != len(p.StateMembers) {
		return Snapshot{}, nil, false
	}
	out := *s
	if s.State != nil && len(s.State) == extra {
		// No kernel member shadows: the state is the declared members
		// when it holds each of them, and is read as it is (a step
		// changes no snapshot it is handed).
		for _, k := range p.StateMembers {
			if _, ok := s.State[k]; !ok {
				return Snapshot{}, nil, false
			}
		}
	} else {
		out.State = make(protocol.Object, len(p.StateMembers))
		for _, k := range p.StateMembers {
			v, ok := s.State[k]
			if !ok {
				return Snapshot{}, nil, false
			}
			out.State[k] = v
		}
	}
	out.State = ownValues(d, out.State)
	if d.CheckState(domainArg(d, out.State)) != nil {
		return Snapshot{}, nil, false
	}
	return out, prior, true
}

// parseTypedEvent is parseEvent of the event's value form for an event
// that passes every check, building only the payload's value; ok is false
// when a check fails.
func parseTypedEvent(d Domain, p Profile, e *protocol.AcceptedEvent) (Event, bool) {
	if e.Kind != protocol.KindAcceptedEvent || !cjson.ValidID(e.EventID) || !cjson.ValidID(e.CorrelationID) ||
		!cjson.ValidID(e.IdempotencyKey) || (e.CausationID != nil && !cjson.ValidID(*e.CausationID)) ||
		e.LogicalTime < 0 || !protocol.ValidTimestamp(e.OccurredAt) || !protocol.ValidTimestamp(e.ReceivedAt) ||
		!p.versionsOK(&e.Versions) || e.Payload == nil {
		return Event{}, false
	}
	payload, ok := e.Payload, true
	if !readsOnly(d) || !canonStableMap(payload, 1, true) {
		// The copy is the value a domain that reads only would be handed
		// as it is (nothing the step returns holds the payload): only
		// another domain, or a payload the copy would change, needs it.
		if payload, ok = canonCopyMap(e.Payload, 1, true); !ok {
			return Event{}, false
		}
	}
	typ, isString := payload["event_type"].(string)
	members, known := p.EventTypes[typ]
	if !isString || !known || !exactMembers2(payload, kernelPayloadMembers, members) {
		return Event{}, false
	}
	ev := Event{ID: e.EventID, LogicalTime: e.LogicalTime, CorrelationID: e.CorrelationID, Type: typ,
		Payload: payload, Versions: e.Versions}
	if ev.AggregateID, ok = payload["aggregate_id"].(string); !ok || !cjson.ValidID(ev.AggregateID) {
		return Event{}, false
	}
	if ev.ExpectedRevision, ok = nonNegInt(payload["expected_revision"]); !ok {
		return Event{}, false
	}
	if e.CausationID != nil {
		c := *e.CausationID
		ev.CausationID = &c
	}
	if d.CheckPayload(typ, domainArg(d, payload)) != nil {
		return Event{}, false
	}
	return ev, true
}

func versionsValid(v *protocol.VersionEnvelope) bool {
	for _, s := range [...]string{v.Workflow, v.StateSchema, v.EventSchema, v.GraphSchema, v.RuleSet, v.Dataflow,
		v.Canonicalization, v.Tool, v.Model, v.Oracle, v.Gate, v.Resolver, v.CompositionProfile} {
		if !cjson.ValidVersion(s) {
			return false
		}
	}
	return true
}

// eventValue is the cjson value form of an event, built without the
// marshal-and-decode round trip of toValue, when every member and the whole
// payload pass canonCopy: then the round trip would succeed and return
// exactly this value, and the value is canonical, so the step need not
// encode it to find out. ok is false otherwise.
func eventValue(e protocol.AcceptedEvent) (map[string]any, bool) {
	if e.Payload == nil {
		return nil, false
	}
	for _, s := range [...]string{e.Kind, e.EventID, e.OccurredAt, e.ReceivedAt, e.CorrelationID, e.IdempotencyKey,
		e.Versions.Workflow, e.Versions.StateSchema, e.Versions.EventSchema, e.Versions.GraphSchema, e.Versions.RuleSet,
		e.Versions.Dataflow, e.Versions.Canonicalization, e.Versions.Tool, e.Versions.Model, e.Versions.Oracle,
		e.Versions.Gate, e.Versions.Resolver, e.Versions.CompositionProfile} {
		if cjson.CheckString(s, "") != nil {
			return nil, false
		}
	}
	if e.CausationID != nil && cjson.CheckString(*e.CausationID, "") != nil {
		return nil, false
	}
	payload, ok := canonCopyMap(e.Payload, 1, true)
	if !ok {
		return nil, false
	}
	m := map[string]any{
		"kind":            e.Kind,
		"event_id":        e.EventID,
		"payload":         payload,
		"occurred_at":     e.OccurredAt,
		"received_at":     e.ReceivedAt,
		"logical_time":    e.LogicalTime,
		"correlation_id":  e.CorrelationID,
		"causation_id":    nullableString(e.CausationID),
		"idempotency_key": e.IdempotencyKey,
		"versions":        versionsValue(e.Versions),
	}
	if !rootSetFree(m) {
		return nil, false
	}
	return m, true
}

// StepJSON applies one accepted event, given as JSON text, to a snapshot,
// given as JSON text. Text that is not flrh-cjson/1 (a float, an integer
// outside int64, a non-NFC string, an escaped lone surrogate, a duplicate
// key) is rejected with CANONICALIZATION_VIOLATION and the flrh-cjson/1
// code in the context; text that is not JSON at all is malformed.
func StepJSON(d Domain, snapshotJSON, eventJSON []byte) (*Transition, error) {
	sv, serr := cjson.Decode(snapshotJSON)
	ev, eerr := cjson.Decode(eventJSON)
	if serr != nil || eerr != nil {
		// The rejection still names the event id and snapshot revision
		// when a lenient reading finds them.
		eventID := lenientEventID(eventJSON)
		revision := lenientRevision(snapshotJSON)
		if serr != nil {
			return nil, canonicalRejection("/snapshot", serr, eventID, revision)
		}
		if r := parseSnapshotOnly(d, sv, eventID); r != nil {
			return nil, r
		}
		return nil, canonicalRejection("/accepted_event", eerr, eventID, revision)
	}
	// Decoded text is canonical but for the sorting of set-like arrays,
	// which only a root kind that has them can bring in.
	m, isObj := ev.(map[string]any)
	return stepValue(d, sv, ev, !isObj || rootSetFree(m))
}

// StepValue applies one accepted event to a snapshot, both given in the
// cjson value model (map[string]any, []any, string, int64, bool, nil).
//
// Checks run in this order; the first failure is returned as a *Rejection:
//
//  1. the snapshot: canonical form, closed member set, kind, schema
//     version, aggregate id, revision, domain state, phase, last logical
//     time, last event id, versions;
//  2. the event: canonical form, closed member set, kind, ids, causation,
//     logical time, timestamps, versions, payload shape, event type,
//     payload aggregate id and expected revision, domain payload;
//  3. compatibility: workflow, state schema, event schema,
//     canonicalization, whole version envelope, aggregate id, expected
//     revision, logical time, closed phase, revision headroom;
//  4. the domain's evolution and emission, then the output invariants.
//
// StepValue never mutates its arguments.
func StepValue(d Domain, snapshot, event any) (*Transition, error) {
	return stepValue(d, snapshot, event, false)
}

// stepValue is StepValue; eventCanonical says the caller knows the event
// encodes canonically (it was decoded from text, or built by eventValue),
// which spares the encoding that would only confirm it.
func stepValue(d Domain, snapshot, event any, eventCanonical bool) (*Transition, error) {
	p, ok := validProfileOf(d)
	if !ok {
		return nil, reject(CodeInvariantViolation, "/", snapshot, event, map[string]any{"invariant": "domain_profile_valid"})
	}
	s, prior, rej := parseSnapshot(d, p, snapshot, event, nil, false)
	if rej != nil {
		return nil, rej
	}
	e, rej := parseEvent(d, p, event, snapshot, eventCanonical)
	if rej != nil {
		return nil, rej
	}
	if rej := compatible(p, s, e); rej != nil {
		return nil, rej
	}
	t, _, _, err := apply(d, p, s, e, prior, "", true)
	return t, err
}

// readsOnly reports whether d is one of this package's own domains, which
// never modify their arguments and return nothing that shares them but
// what the kernel only reads (Observation's proposals name the payload's
// action and destination objects, which the kernel digests), or a domain
// that says so by implementing ReadOnly. The kernel hands them its own
// values instead of copies. A type that merely embeds one of the package's
// domains is not such a domain: its own methods may do either.
func readsOnly(d Domain) bool {
	switch d.(type) {
	case Observation, *Declarative, ReadOnly:
		return true
	}
	return false
}

// ownValues is o as the kernel keeps it for a domain that only reads (for
// any other, o as it is: each of its calls gets its own copy). A value that
// copying would change is copied once here — a nil map or slice becomes an
// empty one, which encodes differently below a protocol.Object — so that
// such a domain sees what the copies have always shown it.
func ownValues(d Domain, o protocol.Object) protocol.Object {
	if readsOnly(d) && !copyStable(map[string]any(o)) {
		return deepCopyObject(o)
	}
	return o
}

// copyStable reports whether deepCopy(v) equals v, types and nil-ness
// included.
func copyStable(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return false
		}
		for _, e := range t { //flrh:orderfree every failure gives the same verdict
			if !copyStable(e) {
				return false
			}
		}
	case protocol.Object:
		for _, e := range t { //flrh:orderfree every failure gives the same verdict
			if !copyStable(e) {
				return false
			}
		}
	case []any:
		if t == nil {
			return false
		}
		for _, e := range t {
			if !copyStable(e) {
				return false
			}
		}
	}
	return true
}

// domainArg is o as a domain method may receive it: o itself for a domain
// that only reads, else a copy the method may modify or keep.
func domainArg(d Domain, o protocol.Object) protocol.Object {
	if readsOnly(d) {
		return o
	}
	return deepCopyObject(o)
}

func toValue(v any) (any, error) {
	b, err := cjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	return cjson.Decode(b)
}

// reject builds a rejection, reading the event id and snapshot revision
// from the raw inputs only when they are well-formed.
func reject(code, path string, snapshot, event any, ctx map[string]any) *Rejection {
	if ctx == nil {
		ctx = map[string]any{}
	}
	r := &Rejection{
		Kind:            KindRejection,
		SchemaVersion:   ResultSchemaVersion,
		ContractVersion: ContractVersion,
		Code:            code,
		Path:            path,
		Context:         ctx,
	}
	r.EventID, r.SnapshotRevision = eventIDOf(event), revisionOf(snapshot)
	return sanitize(r)
}

// rejectParsed builds a rejection once the snapshot and the event have
// both parsed: the event id and revision reject would read from the raw
// inputs are then exactly the parsed ones.
func rejectParsed(code, path string, s *Snapshot, e *Event, ctx map[string]any) *Rejection {
	if ctx == nil {
		ctx = map[string]any{}
	}
	id, rev := e.ID, s.Revision
	return sanitize(&Rejection{
		Kind:             KindRejection,
		SchemaVersion:    ResultSchemaVersion,
		ContractVersion:  ContractVersion,
		Code:             code,
		Path:             path,
		EventID:          &id,
		SnapshotRevision: &rev,
		Context:          ctx,
	})
}

// sanitize keeps a rejection canonical whatever its inputs were: a path
// through a key that is not canonical text (a non-NFC key is itself the
// fault being reported) is cut back to its longest canonical prefix, and a
// context a domain filled with values outside the cjson model is replaced
// by a marker. A rejection must always be hashable and persistable.
func sanitize(r *Rejection) *Rejection {
	if cjson.CheckString(r.Path, "") != nil || !strings.HasPrefix(r.Path, "/") {
		keep := ""
		for _, tok := range strings.Split(r.Path, "/")[1:] {
			if cjson.CheckString(tok, "") != nil {
				break
			}
			keep += "/" + tok
		}
		if keep == "" {
			keep = "/"
		}
		r.Path = keep
	}
	if _, err := cjson.Encode(r.Context); err != nil {
		r.Context = map[string]any{"context_unrepresentable": true}
	}
	for _, v := range r.Context { //flrh:orderfree every non-scalar leads to the same marker
		switch v.(type) {
		case string, int64, bool, nil:
		default:
			r.Context = map[string]any{"context_unrepresentable": true}
		}
	}
	return r
}

// eventIDOf reads a well-formed event_id from a raw event, or nil.
func eventIDOf(event any) *string {
	if m, ok := event.(map[string]any); ok {
		if id, ok := m["event_id"].(string); ok && cjson.ValidID(id) {
			return &id
		}
	}
	return nil
}

// revisionOf reads a well-formed revision from a raw snapshot, or nil.
func revisionOf(snapshot any) *int64 {
	if m, ok := snapshot.(map[string]any); ok {
		if rev, ok := m["revision"].(int64); ok && rev >= 0 {
			return &rev
		}
	}
	return nil
}

func canonicalRejection(root string, err error, eventID *string, revision *int64) *Rejection {
	r := &Rejection{
		Kind:             KindRejection,
		SchemaVersion:    ResultSchemaVersion,
		ContractVersion:  ContractVersion,
		EventID:          eventID,
		SnapshotRevision: revision,
	}
	ce, ok := err.(*cjson.Error)
	if !ok {
		r.Code, r.Path, r.Context = CodeCanonicalizationViolation, root, map[string]any{}
		return r
	}
	switch ce.Code {
	case cjson.CodeSyntax, cjson.CodeTrailingData, cjson.CodeInvalidUTF8:
		// Not JSON text at all: malformed rather than non-canonical.
		r.Code = CodeMalformedSnapshot
		if root == "/accepted_event" {
			r.Code = CodeMalformedAcceptedEvent
		}
		r.Path = root
		r.Context = map[string]any{"canonical_code": string(ce.Code)}
		return r
	}
	r.Code = CodeCanonicalizationViolation
	r.Path = root
	if ce.Pointer != "/" {
		r.Path += ce.Pointer
	}
	r.Context = map[string]any{"canonical_code": string(ce.Code)}
	return sanitize(r)
}

// lenientEventID reads event_id the way a plain JSON reader would, so a
// rejection of non-canonical event text can still name the event.
func lenientEventID(text []byte) *string {
	var probe struct {
		EventID any `json:"event_id"`
	}
	if json.Unmarshal(text, &probe) != nil {
		return nil
	}
	if id, ok := probe.EventID.(string); ok && cjson.ValidID(id) {
		return &id
	}
	return nil
}

func lenientRevision(text []byte) *int64 {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var probe struct {
		Revision *json.Number `json:"revision"`
	}
	if dec.Decode(&probe) != nil || probe.Revision == nil {
		return nil
	}
	n, err := probe.Revision.Int64()
	if err != nil || n < 0 || strings.ContainsAny(string(*probe.Revision), ".eE") {
		return nil
	}
	return &n
}

// parseSnapshotOnly checks a decoded snapshot when the event text failed to
// decode, so that snapshot faults keep their precedence.
func parseSnapshotOnly(d Domain, sv any, eventID *string) *Rejection {
	_, _, rej := parseSnapshot(d, profileOf(d), sv, nil, nil, false)
	if rej != nil {
		rej.EventID = eventID
	}
	return rej
}

func exactMembers(m map[string]any, want []string) bool {
	if len(m) != len(want) {
		return false
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// exactMembers2 is exactMembers against the concatenation of two lists,
// without building it.
func exactMembers2(m map[string]any, a, b []string) bool {
	if len(m) != len(a)+len(b) {
		return false
	}
	for _, k := range a {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	for _, k := range b {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func nonNegInt(v any) (int64, bool) {
	n, ok := v.(int64)
	return n, ok && n >= 0
}

var versionMembers = []string{
	"workflow", "state_schema", "event_schema", "graph_schema", "rule_set", "dataflow",
	"canonicalization", "tool", "model", "oracle", "gate", "resolver", "composition_profile",
}

func parseVersions(v any) (protocol.VersionEnvelope, bool) {
	m, ok := v.(map[string]any)
	if !ok || !exactMembers(m, versionMembers) {
		return protocol.VersionEnvelope{}, false
	}
	get := func(k string) (string, bool) {
		s, ok := m[k].(string)
		return s, ok && cjson.ValidVersion(s)
	}
	var env protocol.VersionEnvelope
	fields := []*string{&env.Workflow, &env.StateSchema, &env.EventSchema, &env.GraphSchema, &env.RuleSet,
		&env.Dataflow, &env.Canonicalization, &env.Tool, &env.Model, &env.Oracle, &env.Gate, &env.Resolver,
		&env.CompositionProfile}
	for i, k := range versionMembers {
		s, ok := get(k)
		if !ok {
			return protocol.VersionEnvelope{}, false
		}
		*fields[i] = s
	}
	return env, true
}

// parseSnapshot checks a raw snapshot and returns it with its canonical
// bytes. canon, when not nil, is those bytes already known to the caller,
// which spares encoding raw again; checked says the caller knows raw
// encodes and does not need the bytes (nil is returned for them). The
// returned State shares raw's values: the kernel only reads it, and hands
// the domain copies.
func parseSnapshot(d Domain, p Profile, raw, event any, canon []byte, checked bool) (Snapshot, []byte, *Rejection) {
	deferred := false
	if canon == nil && !checked {
		if m, ok := raw.(map[string]any); ok && canonCheckMap(m, 0, false) && rootSetFree(m) {
			// It encodes; its bytes are written once it has parsed, from
			// the parsed members, without sorting a map.
			deferred = true
		} else {
			var err error
			if canon, err = cjson.Encode(raw); err != nil {
				return Snapshot{}, nil, canonicalRejection("/snapshot", err, eventIDOf(event), revisionOf(raw))
			}
		}
	}
	bad := func(rel string) (Snapshot, []byte, *Rejection) {
		return Snapshot{}, nil, reject(CodeMalformedSnapshot, "/snapshot"+rel, raw, event, nil)
	}
	m, ok := raw.(map[string]any)
	if !ok || !exactMembers2(m, kernelSnapshotMembers, p.StateMembers) {
		return bad("")
	}
	if m["kind"] != KindSnapshot {
		return bad("/kind")
	}
	if m["schema_version"] != SnapshotSchemaVersion {
		return Snapshot{}, nil, reject(CodeUnsupportedStateSchema, "/snapshot/schema_version", raw, event,
			map[string]any{"expected": SnapshotSchemaVersion})
	}
	var s Snapshot
	if s.AggregateID, ok = m["aggregate_id"].(string); !ok || !cjson.ValidID(s.AggregateID) {
		return bad("/aggregate_id")
	}
	if s.Revision, ok = nonNegInt(m["revision"]); !ok {
		return bad("/revision")
	}
	s.State = make(protocol.Object, len(p.StateMembers))
	for _, k := range p.StateMembers {
		s.State[k] = m[k]
	}
	rawState := s.State
	s.State = ownValues(d, s.State)
	if f := d.CheckState(domainArg(d, s.State)); f != nil {
		return Snapshot{}, nil, reject(f.Code, f.Path, raw, event, f.Context)
	}
	if s.Phase, _ = m["phase"].(string); s.Phase != PhaseOpen && s.Phase != PhaseClosed {
		return bad("/phase")
	}
	if v := m["last_logical_time"]; v != nil {
		n, ok := nonNegInt(v)
		if !ok {
			return bad("/last_logical_time")
		}
		s.LastLogicalTime = &n
	}
	if v := m["last_event_id"]; v != nil {
		id, ok := v.(string)
		if !ok || !cjson.ValidID(id) {
			return bad("/last_event_id")
		}
		s.LastEventID = &id
	}
	if s.Versions, ok = parseVersions(m["versions"]); !ok {
		return bad("/versions")
	}
	if deferred {
		// Parsed, raw is exactly the wire form of s with its own state
		// values, every one checked by canonCheckMap.
		w := s
		w.State = rawState
		var ok bool
		if canon, ok = appendSnapshot(make([]byte, 0, snapshotCap(&w)), &w, true, p.versions); !ok {
			var err error
			if canon, err = cjson.Encode(raw); err != nil {
				return Snapshot{}, nil, canonicalRejection("/snapshot", err, eventIDOf(event), revisionOf(raw))
			}
		}
	}
	return s, canon, nil
}

var eventMembers = []string{
	"kind", "event_id", "payload", "occurred_at", "received_at", "logical_time",
	"correlation_id", "causation_id", "idempotency_key", "versions",
}

var kernelPayloadMembers = []string{"event_type", "aggregate_id", "expected_revision"}

// parseEvent checks a raw event. canonical says raw is known to encode,
// which spares encoding it only to find out. The returned Payload shares
// raw's values: the kernel only reads it, and hands the domain copies.
func parseEvent(d Domain, p Profile, raw, snapshot any, canonical bool) (Event, *Rejection) {
	if !canonical {
		if _, err := cjson.Encode(raw); err != nil {
			return Event{}, canonicalRejection("/accepted_event", err, eventIDOf(raw), revisionOf(snapshot))
		}
	}
	bad := func(rel string) (Event, *Rejection) {
		return Event{}, reject(CodeMalformedAcceptedEvent, "/accepted_event"+rel, snapshot, raw, nil)
	}
	m, ok := raw.(map[string]any)
	if !ok || !exactMembers(m, eventMembers) {
		return bad("")
	}
	if m["kind"] != protocol.KindAcceptedEvent {
		return bad("/kind")
	}
	var e Event
	for _, f := range []struct {
		name string
		dst  *string
	}{{"event_id", &e.ID}, {"correlation_id", &e.CorrelationID}, {"idempotency_key", new(string)}} {
		if *f.dst, ok = m[f.name].(string); !ok || !cjson.ValidID(*f.dst) {
			return bad("/" + f.name)
		}
	}
	if v := m["causation_id"]; v != nil {
		id, ok := v.(string)
		if !ok || !cjson.ValidID(id) {
			return bad("/causation_id")
		}
		e.CausationID = &id
	}
	if e.LogicalTime, ok = nonNegInt(m["logical_time"]); !ok {
		return bad("/logical_time")
	}
	for _, f := range []string{"occurred_at", "received_at"} {
		if ts, ok := m[f].(string); !ok || !protocol.ValidTimestamp(ts) {
			return bad("/" + f)
		}
	}
	if e.Versions, ok = parseVersions(m["versions"]); !ok {
		return bad("/versions")
	}
	payload, ok := m["payload"].(map[string]any)
	if !ok {
		return bad("/payload")
	}
	// A non-string event_type is simply not a type the domain knows.
	e.Type, _ = payload["event_type"].(string)
	members, known := p.EventTypes[e.Type]
	if _, isString := payload["event_type"].(string); !known || !isString {
		// A payload shaped like no declared type is malformed; one shaped
		// like a declared type but naming another type is unsupported.
		for _, t := range sortedKeys(p.EventTypes) {
			if exactMembers2(payload, kernelPayloadMembers, p.EventTypes[t]) {
				return Event{}, reject(CodeUnsupportedEventPayload, "/accepted_event/payload/event_type", snapshot, raw,
					map[string]any{"expected": strings.Join(sortedKeys(p.EventTypes), ",")})
			}
		}
		return bad("/payload")
	}
	if !exactMembers2(payload, kernelPayloadMembers, members) {
		return bad("/payload")
	}
	if e.AggregateID, ok = payload["aggregate_id"].(string); !ok || !cjson.ValidID(e.AggregateID) {
		return bad("/payload/aggregate_id")
	}
	if e.ExpectedRevision, ok = nonNegInt(payload["expected_revision"]); !ok {
		return bad("/payload/expected_revision")
	}
	e.Payload = ownValues(d, payload)
	if f := d.CheckPayload(e.Type, domainArg(d, e.Payload)); f != nil {
		return Event{}, reject(f.Code, f.Path, snapshot, raw, f.Context)
	}
	return e, nil
}

func compatible(p Profile, s Snapshot, e Event) *Rejection {
	expect := func(code, path, want string) *Rejection {
		return rejectParsed(code, path, &s, &e, map[string]any{"expected": want})
	}
	switch {
	case s.Versions.Workflow != p.Workflow || e.Versions.Workflow != p.Workflow:
		return expect(CodeWorkflowVersionMismatch, "/versions/workflow", p.Workflow)
	case s.Versions.StateSchema != p.StateSchema:
		return expect(CodeUnsupportedStateSchema, "/snapshot/versions/state_schema", p.StateSchema)
	case e.Versions.EventSchema != p.EventSchema:
		return expect(CodeUnsupportedEventSchema, "/accepted_event/versions/event_schema", p.EventSchema)
	case s.Versions.Canonicalization != Canonicalization || e.Versions.Canonicalization != Canonicalization:
		return expect(CodeUnsupportedCanonicalization, "/versions/canonicalization", Canonicalization)
	case s.Versions != e.Versions:
		return rejectParsed(CodeVersionEnvelopeMismatch, "/versions", &s, &e, nil)
	case s.AggregateID != e.AggregateID:
		return rejectParsed(CodeSnapshotEventMismatch, "/accepted_event/payload/aggregate_id", &s, &e, nil)
	case s.Revision != e.ExpectedRevision:
		return rejectParsed(CodeStaleRevision, "/accepted_event/payload/expected_revision", &s, &e,
			map[string]any{"expected": s.Revision})
	case s.LastLogicalTime != nil && e.LogicalTime < *s.LastLogicalTime:
		return rejectParsed(CodeLogicalTimeRegression, "/accepted_event/logical_time", &s, &e,
			map[string]any{"minimum": *s.LastLogicalTime})
	case s.Phase == PhaseClosed:
		return rejectParsed(CodeDomainRejected, "/snapshot/phase", &s, &e, map[string]any{"phase": PhaseClosed})
	case s.Revision == math.MaxInt64:
		return rejectParsed(CodeInvariantViolation, "/snapshot/revision", &s, &e,
			map[string]any{"invariant": "revision_increment_within_int64"})
	}
	return nil
}

func invariant(name string, s *Snapshot, e *Event) *Rejection {
	return rejectParsed(CodeInvariantViolation, "/accepted_event/payload", s, e, map[string]any{"invariant": name})
}

// apply evolves and emits for a parsed snapshot and event and checks the
// outputs; priorBytes are the snapshot's canonical bytes and priorDigest
// their digest, or "" to take it here. nextCanon is the
// next snapshot's canonical bytes when the fast path wrote them — exactly what appendSnapshot, and so MarshalJSON, writes for
// t.NextSnapshot: its state is the checked state's declared members, the
// only ones of its non-kernel keys appendSnapshot writes — and nil
// otherwise; nextDigest is their digest when nextCanon is not nil.
func apply(d Domain, p Profile, s Snapshot, e Event, priorBytes []byte, priorDigest string, digests bool) (t *Transition, nextCanon []byte, nextDigest string, err error) {
	ds, de := s, e
	if !readsOnly(d) {
		ds, de = copySnapshot(s), copyEvent(e)
	}
	ev, f := d.Evolve(ds, de)
	if f != nil {
		return nil, nil, "", rejectParsed(f.Code, f.Path, &s, &e, f.Context)
	}
	if !readsOnly(d) {
		ds, de = copySnapshot(s), copyEvent(e)
	}
	var em Emission
	if dd, ok := d.(*Declarative); ok {
		// The emission is read here and dropped: its shared destinations
		// are never modified.
		em, f = dd.EmitShared(ds, de)
	} else {
		em, f = d.Emit(ds, de)
	}
	if f != nil {
		return nil, nil, "", rejectParsed(f.Code, f.Path, &s, &e, f.Context)
	}
	if len(em.Facts) < p.MinFacts || len(em.Facts) > p.MaxFacts {
		return nil, nil, "", invariant("fact_count_within_profile", &s, &e)
	}
	if len(em.Proposals) > p.MaxProposals {
		return nil, nil, "", invariant("proposal_count_within_profile", &s, &e)
	}

	own := readsOnly(d) // its emission is its own (see ReadOnly)
	box := new(transitionBox)
	ss := &box.strs
	ss.sb.Grow(stepStringsSize(len(em.Facts), len(em.Proposals), priorDigest == "", digests))
	room := canonRooms.Get().(*canonRoom)
	defer room.release()
	facts := box.factSlice(len(em.Facts))
	factBytes := make([][]byte, 0, len(em.Facts))
	for _, fact := range em.Facts {
		if p.InsertOnly && fact.Diff != 1 {
			return nil, nil, "", invariant("insert_only_facts", &s, &e)
		}
		fd, b, ok := buildFact(p, e, fact, own, ss, room)
		if !ok {
			return nil, nil, "", invariant("fact_well_formed", &s, &e)
		}
		for i := range facts {
			if facts[i].DerivationID == fd.DerivationID {
				return nil, nil, "", invariant("unique_derivation_ids", &s, &e)
			}
		}
		facts, factBytes = append(facts, fd), append(factBytes, b)
	}
	proposals := box.proposalSlice(len(em.Proposals))
	propBytes := make([][]byte, 0, len(em.Proposals))
	for _, prop := range em.Proposals {
		ep, b, ok := buildProposal(e, prop, p.versions, ss, room)
		if !ok {
			return nil, nil, "", invariant("proposal_well_formed", &s, &e)
		}
		for i := range proposals {
			if proposals[i].ProposalID == ep.ProposalID {
				return nil, nil, "", invariant("unique_proposal_ids", &s, &e)
			}
		}
		proposals, propBytes = append(proposals, ep), append(propBytes, b)
	}
	sortByBytes(facts, factBytes)
	sortByBytes(proposals, propBytes)

	box.logicalTime, box.eventID = e.LogicalTime, e.ID
	next := Snapshot{
		AggregateID:     s.AggregateID,
		Revision:        s.Revision + 1,
		Phase:           s.Phase,
		LastLogicalTime: &box.logicalTime,
		LastEventID:     &box.eventID,
		Versions:        s.Versions,
		State:           ev.State,
	}
	if ev.Close {
		next.Phase = PhaseClosed
	}
	// The next snapshot must itself be a valid input: replay depends on it.
	nextState, nextBytes, verdict, fast := nextSnapshot(d, p, next)
	if verdict != "" {
		return nil, nil, "", invariant(verdict, &s, &e)
	}
	next.State = nextState
	if !digests {
		priorDigest = ""
	} else if priorDigest == "" {
		priorDigest = digestIn(ss, priorBytes)
	}
	t = &box.t
	*t = Transition{
		Kind:                KindTransition,
		SchemaVersion:       ResultSchemaVersion,
		ContractVersion:     ContractVersion,
		EventID:             e.ID,
		PriorSnapshotDigest: priorDigest,
		NextSnapshot:        next,
		FactDeltas:          facts,
		EffectProposals:     proposals,
	}
	if !digests {
		// Nothing the caller keeps is bound by a digest: the transition
		// is the record's, and the caller records none.
		if !fast {
			return t, nil, "", nil
		}
		return t, nextBytes, "", nil
	}
	nextDigest = digestIn(ss, nextBytes)
	t.TransitionDigest, err = transitionDigest(ss, t.EventID, t.PriorSnapshotDigest, nextDigest, factBytes, propBytes)
	if err != nil {
		return nil, nil, "", invariant("transition_digest", &s, &e)
	}
	if !fast {
		return t, nil, "", nil
	}
	return t, nextBytes, nextDigest, nil
}

// transitionBox is one allocation for what a transition holds of its own
// beside its values: the transition, the logical time and event id its
// next snapshot points to, and the one fact delta and one proposal of the
// usual emission, which its slices then hold (capacity one, as the
// emission's counts made them before). Its parts are never shared
// between transitions, so a caller that keeps one part keeps the box,
// but no other transition's values.
type transitionBox struct {
	t           Transition
	logicalTime int64
	eventID     string
	fact        [1]protocol.FactDelta
	proposal    [1]protocol.EffectProposal
	strs        stepStrings // the step's ids and digests
}

// factSlice is an empty slice for n fact deltas, of capacity n: the box's
// own element when n is one.
func (b *transitionBox) factSlice(n int) []protocol.FactDelta {
	if n == len(b.fact) {
		return b.fact[:0:n]
	}
	return make([]protocol.FactDelta, 0, n)
}

// proposalSlice is factSlice for n proposals.
func (b *transitionBox) proposalSlice(n int) []protocol.EffectProposal {
	if n == len(b.proposal) {
		return b.proposal[:0:n]
	}
	return make([]protocol.EffectProposal, 0, n)
}

// nextSnapshot checks a next snapshot as parseSnapshot would check it as
// an input, and returns its state (the declared members, in the value model)
// and canonical bytes; verdict names the invariant it breaks, or is empty.
// Its kernel members were built from checked values, so only the domain
// state can break it: when that state passes canonCopy the check and the
// bytes need no wire map, no round trip and no second encoding.
// fast says the fast path wrote the bytes.
func nextSnapshot(d Domain, p Profile, next Snapshot) (protocol.Object, []byte, string, bool) {
	if state, b, verdict, ok := nextSnapshotFast(d, p, next); ok {
		return state, b, verdict, true
	}
	state, b, verdict := nextSnapshotSlow(d, p, next)
	return state, b, verdict, false
}

// nextSnapshotFast is nextSnapshot when the state passes canonCopy and
// appendSnapshot; ok is false otherwise.
func nextSnapshotFast(d Domain, p Profile, next Snapshot) (protocol.Object, []byte, string, bool) {
	state := next.State
	if state == nil || !readsOnly(d) || !canonStableMap(state, 0, false) {
		// A domain that reads only returns a state that is its own (see
		// ReadOnly): when it is already its canonical copy it is kept as
		// it is; another domain's is copied.
		state = make(protocol.Object, len(next.State))
		for k, v := range next.State { //flrh:orderfree a copy; every failure gives the same verdict
			c, ok := canonCopy(v, 1, false)
			if !ok || !asciiKey(k) {
				return nil, nil, "", false
			}
			state[k] = c
		}
		next.State = state
	}
	b, ok := appendSnapshot(make([]byte, 0, snapshotCap(&next)), &next, true, p.versions)
	if !ok {
		return nil, nil, "", false
	}
	// The wire members are the kernel's and the state's; with a valid
	// profile the declared members are disjoint from the kernel's, so they
	// must be exactly the state's other keys.
	extra := 0
	for k := range state { //flrh:orderfree a count
		if !slices.Contains(kernelSnapshotMembers, k) {
			extra++
		}
	}
	declared := state // when it holds no kernel member, the state is the declared members
	if extra != len(state) {
		declared = make(protocol.Object, len(p.StateMembers))
	}
	for _, k := range p.StateMembers {
		v, ok := state[k]
		if !ok {
			return nil, nil, "next_snapshot_valid", true
		}
		if extra != len(state) {
			declared[k] = v
		}
	}
	if extra != len(p.StateMembers) || d.CheckState(domainArg(d, declared)) != nil {
		return nil, nil, "next_snapshot_valid", true
	}
	return declared, b, "", true
}

// nextSnapshotSlow is nextSnapshot through the round trip and
// parseSnapshot.
func nextSnapshotSlow(d Domain, p Profile, next Snapshot) (protocol.Object, []byte, string) {
	nextValue, nextBytes, ok := nextSnapshotValueSlow(next)
	if !ok {
		return nil, nil, "next_snapshot_canonical"
	}
	if _, _, rej := parseSnapshot(d, p, nextValue, nil, nextBytes, false); rej != nil {
		return nil, nil, "next_snapshot_valid"
	}
	declared := make(protocol.Object, len(p.StateMembers))
	for _, k := range p.StateMembers {
		declared[k] = nextValue[k]
	}
	return declared, nextBytes, ""
}

// nextSnapshotValueSlow returns the cjson value of a next snapshot, what
// its canonical bytes decode to, and those bytes, through an encode-and-
// decode round trip that normalizes whatever Go values the domain returned;
// ok is false when it has no canonical form.
func nextSnapshotValueSlow(next Snapshot) (map[string]any, []byte, bool) {
	v, err := toValue(next.Wire())
	if err != nil {
		return nil, nil, false
	}
	b, err := cjson.Encode(v)
	if err != nil {
		return nil, nil, false
	}
	return v.(map[string]any), b, true
}

// sortByBytes sorts items and their canonical bytes together, by the bytes.
func sortByBytes[T any](items []T, canon [][]byte) {
	if len(items) < 2 {
		return // most steps emit one fact and at most one proposal
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return bytes.Compare(canon[idx[a]], canon[idx[b]]) < 0 })
	sortedItems := make([]T, len(items))
	sortedBytes := make([][]byte, len(items))
	for i, j := range idx {
		sortedItems[i], sortedBytes[i] = items[j], canon[j]
	}
	copy(items, sortedItems)
	copy(canon, sortedBytes)
}

// sortCanonical sorts objects in place by their canonical bytes (each
// canonicalised at its own root kind) and returns those bytes in order.
func sortCanonical[T protocol.Wire](items []T) ([][]byte, error) {
	type pair struct {
		b    []byte
		item T
	}
	pairs := make([]pair, len(items))
	for i, it := range items {
		b, err := cjson.Marshal(it)
		if err != nil {
			return nil, err
		}
		pairs[i] = pair{b, it}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return bytes.Compare(pairs[i].b, pairs[j].b) < 0 })
	out := make([][]byte, len(pairs))
	for i, p := range pairs {
		items[i] = p.item
		out[i] = p.b
	}
	return out, nil
}

// transitionDigest hashes the contract's projection of a transition: the
// contract version, the event id, the prior and next snapshot digests and
// the ordered digests of the emitted facts and proposals. Ingress-only
// members of the event (timestamps, causation, ingress key) are not bound.
// The digest is carved from ss (nil: its own string).
func transitionDigest(ss *stepStrings, eventID, prior, next string, facts, proposals [][]byte) (string, error) {
	for _, s := range [...]string{eventID, prior, next} {
		if cjson.CheckString(s, "") != nil {
			return transitionDigestValue(eventID, prior, next, facts, proposals)
		}
	}
	return sumDigest(ss, cjson.SumWritten(func(b []byte) []byte {
		b = append(b, `{"contract_version":"`+ContractVersion+`","event_id":`...)
		b = cjson.AppendString(b, eventID)
		b = append(b, `,"kind":"FTransitionDigestProjection","next_snapshot_digest":`...)
		b = cjson.AppendString(b, next)
		b = append(b, `,"ordered_effect_proposal_digests":`...)
		b = appendDigests(b, proposals)
		b = append(b, `,"ordered_fact_delta_digests":`...)
		b = appendDigests(b, facts)
		b = append(b, `,"prior_snapshot_digest":`...)
		b = cjson.AppendString(b, prior)
		return append(b, '}')
	})), nil
}

// transitionDigestValue is transitionDigest through a value map, for text
// that is not canonical (a verifier may be handed anything); its error is
// the encoder's.
func transitionDigestValue(eventID, prior, next string, facts, proposals [][]byte) (string, error) {
	digests := func(bs [][]byte) []any {
		out := make([]any, len(bs))
		for i, b := range bs {
			out[i] = cjson.Digest(b)
		}
		return out
	}
	return cjson.DigestOf(map[string]any{
		"kind":                            "FTransitionDigestProjection",
		"contract_version":                ContractVersion,
		"event_id":                        eventID,
		"prior_snapshot_digest":           prior,
		"next_snapshot_digest":            next,
		"ordered_fact_delta_digests":      digests(facts),
		"ordered_effect_proposal_digests": digests(proposals),
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
