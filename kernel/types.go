package kernel

import (
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// Versions and kinds of the kernel contract.
const (
	ContractVersion       = "flrh-f-kernel/1"
	SnapshotSchemaVersion = "flrh-f-snapshot/1"
	ResultSchemaVersion   = "flrh-f-result/1"
	Canonicalization      = "flrh-cjson/1"

	KindSnapshot   = "FStateSnapshot"
	KindTransition = "FTransition"
	KindRejection  = "FRejection"
)

// Snapshot phases. A closed snapshot rejects every event.
const (
	PhaseOpen   = "open"
	PhaseClosed = "closed"
)

// Rejection codes, in the order of the contract. The order in which Step
// checks (and so which code wins when an input has several faults) is
// documented on Step.
const (
	CodeMalformedSnapshot           = "MALFORMED_SNAPSHOT"
	CodeMalformedAcceptedEvent      = "MALFORMED_ACCEPTED_EVENT"
	CodeCanonicalizationViolation   = "CANONICALIZATION_VIOLATION"
	CodeUnsupportedStateSchema      = "UNSUPPORTED_STATE_SCHEMA"
	CodeUnsupportedEventSchema      = "UNSUPPORTED_EVENT_SCHEMA"
	CodeUnsupportedCanonicalization = "UNSUPPORTED_CANONICALIZATION"
	CodeWorkflowVersionMismatch     = "WORKFLOW_VERSION_MISMATCH"
	CodeVersionEnvelopeMismatch     = "VERSION_ENVELOPE_MISMATCH"
	CodeSnapshotEventMismatch       = "SNAPSHOT_EVENT_MISMATCH"
	CodeStaleRevision               = "STALE_REVISION"
	CodeLogicalTimeRegression       = "LOGICAL_TIME_REGRESSION"
	CodeUnsupportedEventPayload     = "UNSUPPORTED_EVENT_PAYLOAD"
	CodeDomainRejected              = "DOMAIN_REJECTED"
	CodeInvariantViolation          = "INVARIANT_VIOLATION"
)

// Codes lists the fourteen rejection codes.
var Codes = []string{
	CodeMalformedSnapshot, CodeMalformedAcceptedEvent, CodeCanonicalizationViolation,
	CodeUnsupportedStateSchema, CodeUnsupportedEventSchema, CodeUnsupportedCanonicalization,
	CodeWorkflowVersionMismatch, CodeVersionEnvelopeMismatch, CodeSnapshotEventMismatch,
	CodeStaleRevision, CodeLogicalTimeRegression, CodeUnsupportedEventPayload,
	CodeDomainRejected, CodeInvariantViolation,
}

// Snapshot is the accepted state of one aggregate. The kernel owns the
// named fields; State holds the members the domain owns, which appear on
// the wire beside the kernel's own (for the reference profile:
// observation_count and last_observation_digest).
type Snapshot struct {
	AggregateID     string
	Revision        int64
	Phase           string
	LastLogicalTime *int64
	LastEventID     *string
	Versions        protocol.VersionEnvelope
	State           protocol.Object
}

// kernelSnapshotMembers are the snapshot members the kernel owns.
var kernelSnapshotMembers = []string{
	"kind", "schema_version", "aggregate_id", "revision", "phase",
	"last_logical_time", "last_event_id", "versions",
}

// Wire returns the snapshot as a value of the cjson model, the form that is
// hashed. Domain state members never override kernel members.
func (s Snapshot) Wire() map[string]any {
	m := make(map[string]any, len(kernelSnapshotMembers)+len(s.State))
	for k, v := range s.State {
		m[k] = v
	}
	m["kind"] = KindSnapshot
	m["schema_version"] = SnapshotSchemaVersion
	m["aggregate_id"] = s.AggregateID
	m["revision"] = s.Revision
	m["phase"] = s.Phase
	m["last_logical_time"] = nullableInt(s.LastLogicalTime)
	m["last_event_id"] = nullableString(s.LastEventID)
	m["versions"] = versionsValue(s.Versions)
	return m
}

// MarshalJSON encodes the snapshot in canonical form.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	b, _, err := s.Encoded()
	return b, err
}

// Encoded is MarshalJSON, and says whether the bytes are those a step
// writes for s as its prior (known): StepEncoded may be handed them with s.
func (s Snapshot) Encoded() (b []byte, known bool, err error) {
	return s.EncodedChecked(nil)
}

// EncodedChecked is Encoded for a caller that holds a checked version
// envelope (CheckVersions): when the snapshot carries it, its canonical
// bytes are copied instead of its thirteen labels checked and written
// again. cv may be nil, or any checked envelope; the bytes are Encoded's.
func (s Snapshot) EncodedChecked(cv *CheckedVersions) (b []byte, known bool, err error) {
	if b, ok := appendSnapshot(make([]byte, 0, snapshotCap(&s)), &s, false, cv); ok {
		return b, true, nil
	}
	b, err = cjson.Encode(s.Wire())
	return b, false, err
}

// Digest is the sha256 digest of the snapshot's canonical bytes.
func (s Snapshot) Digest() (string, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return "", err
	}
	return cjson.Digest(b), nil
}

// Event is an accepted event as a domain sees it: the envelope members the
// kernel has already checked, and the payload.
type Event struct {
	ID               string
	LogicalTime      int64
	CorrelationID    string
	CausationID      *string
	Type             string // payload event_type
	AggregateID      string // payload aggregate_id
	ExpectedRevision int64  // payload expected_revision
	Payload          protocol.Object
	Versions         protocol.VersionEnvelope
}

// Transition is a successful step.
type Transition struct {
	Kind                string                    `json:"kind"`
	SchemaVersion       string                    `json:"schema_version"`
	ContractVersion     string                    `json:"contract_version"`
	EventID             string                    `json:"event_id"`
	PriorSnapshotDigest string                    `json:"prior_snapshot_digest"`
	NextSnapshot        Snapshot                  `json:"next_snapshot"`
	FactDeltas          []protocol.FactDelta      `json:"fact_deltas"`
	EffectProposals     []protocol.EffectProposal `json:"effect_proposals"`
	TransitionDigest    string                    `json:"transition_digest"`
}

// Rejection is a refused step: a code, the JSON Pointer of the fault
// (relative to the step input {"snapshot":…, "accepted_event":…}, except
// for version checks that concern both, which point into the envelope as
// "/versions/…"), the event id and snapshot revision when they could be
// read, and a context of scalars. A Rejection is an error.
type Rejection struct {
	Kind             string         `json:"kind"`
	SchemaVersion    string         `json:"schema_version"`
	ContractVersion  string         `json:"contract_version"`
	Code             string         `json:"code"`
	Path             string         `json:"path"`
	EventID          *string        `json:"event_id"`
	SnapshotRevision *int64         `json:"snapshot_revision"`
	Context          map[string]any `json:"context"`
}

func (r *Rejection) Error() string {
	s := fmt.Sprintf("kernel: %s at %s", r.Code, r.Path)
	if len(r.Context) > 0 {
		b, err := cjson.Encode(r.Context)
		if err == nil {
			s += " " + string(b)
		}
	}
	return s
}

// Canonical returns the canonical bytes of a transition.
func (t *Transition) Canonical() ([]byte, error) { return cjson.Marshal(t) }

// Canonical returns the canonical bytes of a rejection.
func (r *Rejection) Canonical() ([]byte, error) { return cjson.Marshal(r) }

func nullableInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullableString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func versionsValue(v protocol.VersionEnvelope) map[string]any {
	return map[string]any{
		"workflow":            v.Workflow,
		"state_schema":        v.StateSchema,
		"event_schema":        v.EventSchema,
		"graph_schema":        v.GraphSchema,
		"rule_set":            v.RuleSet,
		"dataflow":            v.Dataflow,
		"canonicalization":    v.Canonicalization,
		"tool":                v.Tool,
		"model":               v.Model,
		"oracle":              v.Oracle,
		"gate":                v.Gate,
		"resolver":            v.Resolver,
		"composition_profile": v.CompositionProfile,
	}
}

// UnmarshalJSON decodes a snapshot from strict flrh-cjson/1 text: the
// kernel members into the named fields (each must have its wire type) and
// every other member into State. It does not check the members against a
// domain; ParseSnapshot does.
func (s *Snapshot) UnmarshalJSON(data []byte) error {
	v, err := cjson.Decode(data)
	if err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("kernel: a snapshot is a JSON object")
	}
	if m["kind"] != KindSnapshot || m["schema_version"] != SnapshotSchemaVersion {
		return fmt.Errorf("kernel: not a %s of schema %s", KindSnapshot, SnapshotSchemaVersion)
	}
	var out Snapshot
	var okID, okRev, okPhase, okVer bool
	out.AggregateID, okID = m["aggregate_id"].(string)
	out.Revision, okRev = nonNegInt(m["revision"])
	out.Phase, okPhase = m["phase"].(string)
	out.Versions, okVer = parseVersions(m["versions"])
	if !okID || !okRev || !okPhase || !okVer {
		return fmt.Errorf("kernel: snapshot members aggregate_id, revision, phase or versions malformed")
	}
	if t := m["last_logical_time"]; t != nil {
		n, ok := nonNegInt(t)
		if !ok {
			return fmt.Errorf("kernel: snapshot last_logical_time malformed")
		}
		out.LastLogicalTime = &n
	}
	if id := m["last_event_id"]; id != nil {
		sid, ok := id.(string)
		if !ok {
			return fmt.Errorf("kernel: snapshot last_event_id malformed")
		}
		out.LastEventID = &sid
	}
	out.State = protocol.Object{}
	for k, val := range m {
		out.State[k] = val
	}
	for _, k := range kernelSnapshotMembers {
		delete(out.State, k)
	}
	*s = out
	return nil
}

// ParseSnapshot reads a snapshot under a domain with exactly the checks
// Step applies to its snapshot argument, returning the *Rejection Step
// would return. Stores use it to refuse a corrupt checkpoint before any
// event is applied to it.
func ParseSnapshot(d Domain, jsonText []byte) (Snapshot, error) {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		return Snapshot{}, canonicalRejection("/snapshot", err, nil, lenientRevision(jsonText))
	}
	// Decoded text encodes, but for the sorting of set-like arrays, which
	// only a root kind that has them can bring in.
	m, isObj := v.(map[string]any)
	s, _, rej := parseSnapshot(d, profileOf(d), v, nil, nil, !isObj || rootSetFree(m))
	if rej != nil {
		return Snapshot{}, rej
	}
	return s, nil
}
