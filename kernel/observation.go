package kernel

import (
	"math"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// The reference profile: one event type recording an observation about an
// aggregate, optionally proposing one effect and optionally closing the
// aggregate.
const (
	ObservationEventType   = "flrh.m1.observation-recorded/1"
	ObservationWorkflow    = "flrh-workflow/0.1"
	ObservationStateSchema = "flrh-f-state/1"
	ObservationEventSchema = "flrh-f-event/1"
)

// Observation is the reference domain. Each event yields exactly one +1
// fact observation_recorded(subject=aggregate, object_digest=digest of the
// observation) and at most one effect proposal; the domain state counts
// observations and remembers the digest of the last one.
type Observation struct{}

var _ Domain = Observation{}

var effectRequestMembers = []string{
	"effect_type", "action", "destination", "goal_id", "obligation_id", "declared_risk_hint", "preconditions",
}

// Profile implements Domain.
func (Observation) Profile() Profile {
	return Profile{
		Workflow:     ObservationWorkflow,
		StateSchema:  ObservationStateSchema,
		EventSchema:  ObservationEventSchema,
		EventTypes:   map[string][]string{ObservationEventType: {"observation", "mark_complete", "effect_request"}},
		StateMembers: []string{"observation_count", "last_observation_digest"},
		InitialState: protocol.Object{"observation_count": int64(0), "last_observation_digest": nil},
		FactIdentity: "observation-fact-value",
		MinFacts:     1,
		MaxFacts:     1,
		MaxProposals: 1,
		InsertOnly:   true,
	}
}

// CheckState implements Domain.
func (Observation) CheckState(st protocol.Object) *Fault {
	if _, ok := nonNegInt(st["observation_count"]); !ok {
		return &Fault{Code: CodeMalformedSnapshot, Path: SnapshotPath("/observation_count")}
	}
	if d := st["last_observation_digest"]; d != nil {
		if s, ok := d.(string); !ok || !cjson.ValidDigest(s) {
			return &Fault{Code: CodeMalformedSnapshot, Path: SnapshotPath("/last_observation_digest")}
		}
	}
	return nil
}

// CheckPayload implements Domain.
func (Observation) CheckPayload(_ string, p protocol.Object) *Fault {
	bad := func(rel string) *Fault {
		return &Fault{Code: CodeMalformedAcceptedEvent, Path: PayloadPath(rel)}
	}
	if obs, ok := p["observation"].(map[string]any); !ok || len(obs) == 0 {
		return bad("/observation")
	}
	if _, ok := p["mark_complete"].(bool); !ok {
		return bad("/mark_complete")
	}
	raw := p["effect_request"]
	if raw == nil {
		return nil
	}
	req, ok := raw.(map[string]any)
	if !ok || !exactMembers(req, effectRequestMembers) {
		return bad("/effect_request")
	}
	for _, f := range []string{"effect_type", "goal_id", "obligation_id"} {
		if s, ok := req[f].(string); !ok || !cjson.ValidID(s) {
			return bad("/effect_request/" + f)
		}
	}
	for _, f := range []string{"action", "destination"} {
		if o, ok := req[f].(map[string]any); !ok || len(o) == 0 {
			return bad("/effect_request/" + f)
		}
	}
	if h, _ := req["declared_risk_hint"].(string); !riskHints[h] {
		return bad("/effect_request/declared_risk_hint")
	}
	list, ok := req["preconditions"].([]any)
	if !ok {
		return bad("/effect_request/preconditions")
	}
	seen := map[string]bool{}
	dup := false
	for _, item := range list {
		s, ok := item.(string)
		if !ok || !cjson.ValidID(s) {
			return bad("/effect_request/preconditions")
		}
		dup = dup || seen[s]
		seen[s] = true
	}
	if dup {
		return &Fault{Code: CodeInvariantViolation, Path: PayloadPath("/effect_request/preconditions"),
			Context: map[string]any{"invariant": "unique_preconditions"}}
	}
	return nil
}

func observationDigest(e Event) (string, *Fault) {
	obs, _ := e.Payload["observation"].(map[string]any)
	d, err := ValueDigest(ValueObservation, obs)
	if err != nil {
		return "", &Fault{Code: CodeCanonicalizationViolation, Path: PayloadPath("/observation")}
	}
	return d, nil
}

// Evolve implements Domain.
func (Observation) Evolve(s Snapshot, e Event) (Evolution, *Fault) {
	count, _ := s.State["observation_count"].(int64)
	if count == math.MaxInt64 {
		return Evolution{}, &Fault{Code: CodeInvariantViolation, Path: SnapshotPath("/observation_count"),
			Context: map[string]any{"invariant": "observation_count_increment_within_int64"}}
	}
	d, f := observationDigest(e)
	if f != nil {
		return Evolution{}, f
	}
	closeIt, _ := e.Payload["mark_complete"].(bool)
	return Evolution{
		State: protocol.Object{"observation_count": count + 1, "last_observation_digest": d},
		Close: closeIt,
	}, nil
}

// Emit implements Domain.
func (Observation) Emit(s Snapshot, e Event) (Emission, *Fault) {
	d, f := observationDigest(e)
	if f != nil {
		return Emission{}, f
	}
	em := Emission{Facts: []Fact{{
		Tuple:      protocol.Object{"predicate": "observation_recorded", "subject": s.AggregateID, "object_digest": d},
		Provenance: protocol.Object{"source_event_id": e.ID, "observation_digest": d},
		Diff:       1,
	}}}
	if req, ok := e.Payload["effect_request"].(map[string]any); ok {
		var pre []string
		for _, p := range req["preconditions"].([]any) {
			pre = append(pre, p.(string))
		}
		em.Proposals = []Proposal{{
			EffectType:    req["effect_type"].(string),
			Action:        protocol.Object(req["action"].(map[string]any)),
			Destination:   protocol.Object(req["destination"].(map[string]any)),
			GoalID:        req["goal_id"].(string),
			ObligationID:  req["obligation_id"].(string),
			RiskHint:      req["declared_risk_hint"].(string),
			Preconditions: pre,
		}}
	}
	return em, nil
}

// Decide implements Domain. A command is
//
//	{"observation": {…}, "mark_complete": bool?, "effect_request": {…}|null?}
//
// and yields one observation payload; a closed aggregate refuses it.
func (o Observation) Decide(s Snapshot, c Command) ([]protocol.Object, *Fault) {
	if s.Phase == PhaseClosed {
		return nil, &Fault{Code: CodeDomainRejected, Path: SnapshotPath("/phase"), Context: map[string]any{"phase": PhaseClosed}}
	}
	p := protocol.Object{"observation": deepCopy(c["observation"]), "mark_complete": false, "effect_request": nil}
	if v, ok := c["mark_complete"]; ok {
		p["mark_complete"] = v
	}
	if v, ok := c["effect_request"]; ok {
		p["effect_request"] = deepCopy(v)
	}
	for _, k := range sortedKeys(c) {
		if k != "observation" && k != "mark_complete" && k != "effect_request" {
			return nil, &Fault{Code: CodeMalformedAcceptedEvent, Path: "/command/" + cjson.EscapePointer(k)}
		}
	}
	if f := o.CheckPayload(ObservationEventType, p); f != nil {
		return nil, f
	}
	return []protocol.Object{p}, nil
}

// NewSnapshot returns revision 0 of an aggregate under a domain: open, no
// event seen, the domain's initial state.
func NewSnapshot(d Domain, aggregateID string, versions protocol.VersionEnvelope) Snapshot {
	return Snapshot{
		AggregateID: aggregateID,
		Phase:       PhaseOpen,
		Versions:    versions,
		// The profile a declarative domain built at Load, read and not
		// built again: its initial state is copied here.
		State: deepCopyObject(profileOf(d).InitialState),
	}
}

// NewSharedSnapshot is NewSnapshot with the domain's initial state shared
// rather than copied, when a copy would equal it (copyStable): the
// snapshot's State is then the profile's own map, which nothing may
// change. It is for a caller that only hands the snapshot to steps of a
// domain that reads only (ReadOnly, a Declarative), which change no
// snapshot they are handed, and never writes into its state itself.
func NewSharedSnapshot(d Domain, aggregateID string, versions protocol.VersionEnvelope) Snapshot {
	state := profileOf(d).InitialState
	if !copyStable(map[string]any(state)) {
		state = deepCopyObject(state)
	}
	return Snapshot{AggregateID: aggregateID, Phase: PhaseOpen, Versions: versions, State: state}
}
