package kernel

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// Profile declares what a domain accepts. The kernel enforces it: a
// snapshot or payload with a member the profile does not declare is
// malformed, and versions must equal the profile's exactly (there is no
// migration chain: a version change is a new profile).
type Profile struct {
	Workflow    string // versions.workflow of every snapshot and event
	StateSchema string // versions.state_schema of every snapshot
	EventSchema string // versions.event_schema of every event

	// EventTypes maps each accepted payload event_type to the payload
	// members the domain owns, besides the kernel's event_type,
	// aggregate_id and expected_revision. Every listed member is required.
	EventTypes map[string][]string

	// StateMembers are the snapshot members the domain owns, beside the
	// kernel's. Every listed member is required.
	StateMembers []string

	// InitialState is the domain state of a new aggregate.
	InitialState protocol.Object

	// FactIdentity names the identity domain of derivation ids, so that the
	// same fact content in two workflows never shares an identity by accident.
	FactIdentity string

	// Bounds on one event's emission.
	MinFacts, MaxFacts, MaxProposals int

	// InsertOnly restricts facts to +1 deltas: the domain records, never
	// retracts.
	InsertOnly bool

	// versions is the envelope the domain had checked (VersionsChecked),
	// set on the step's copy of the profile; nil otherwise.
	versions *CheckedVersions
}

// Fault is a domain's refusal: a rejection code (DOMAIN_REJECTED,
// INVARIANT_VIOLATION or MALFORMED_ACCEPTED_EVENT are the usual ones), the
// JSON Pointer of the offending value within the step input (see
// PayloadPath and SnapshotPath) and a context of scalar values.
type Fault struct {
	Code    string
	Path    string
	Context map[string]any
}

// PayloadPath returns the step-input pointer of a payload member.
func PayloadPath(rel string) string { return "/accepted_event/payload" + rel }

// SnapshotPath returns the step-input pointer of a snapshot member.
func SnapshotPath(rel string) string { return "/snapshot" + rel }

// Evolution is a domain's next state after an event.
type Evolution struct {
	State protocol.Object
	Close bool // close the aggregate: the next snapshot rejects every event
}

// Fact is one base fact change a domain derives from an event. The kernel
// stamps logical time, causation, versions and the derivation identity.
type Fact struct {
	Tuple      protocol.Object // non-empty
	Provenance protocol.Object // non-empty
	Diff       int64           // +1 inserts this support, -1 retracts it
}

// Proposal is an inert effect suggestion. The kernel binds the action and
// destination by digest, stamps cause, correlation and versions, sorts the
// preconditions and derives the proposal identity and dedup key. Nothing
// here can carry authority.
type Proposal struct {
	EffectType    string
	Action        protocol.Object // non-empty explicit action data
	Destination   protocol.Object // non-empty explicit destination data
	GoalID        string
	ObligationID  string
	RiskHint      string // read_only, reversible, high_risk_external or unknown
	Preconditions []string
}

// Emission is what one event yields.
type Emission struct {
	Facts     []Fact
	Proposals []Proposal
}

// Command is a request to change an aggregate, before it became an event.
// Its members are domain-defined; "type" names the command.
type Command = protocol.Object

// Domain is the logic of one workflow. Every method is pure: it may read
// only its arguments, which are copies it may keep (a ReadOnly domain, and
// the package's own, are handed the kernel's values instead, to read).
type Domain interface {
	// Profile declares the versions, payloads and state the domain accepts.
	Profile() Profile

	// Decide turns a command into the payloads of the events to accept
	// (each without event_type, aggregate_id and expected_revision, which
	// the caller stamps), or refuses it.
	Decide(s Snapshot, c Command) ([]protocol.Object, *Fault)

	// CheckState validates the domain-owned members of a snapshot.
	CheckState(state protocol.Object) *Fault

	// CheckPayload validates the domain-owned members of an event payload
	// of a declared type. It runs before versions, aggregate and revision
	// are compared with the snapshot.
	CheckPayload(eventType string, payload protocol.Object) *Fault

	// Evolve folds an accepted event into the domain state.
	Evolve(s Snapshot, e Event) (Evolution, *Fault)

	// Emit derives the facts and proposals of an accepted event.
	Emit(s Snapshot, e Event) (Emission, *Fault)
}

// ReadOnly is a Domain that promises more than purity: its methods never
// modify the values they are handed (a snapshot's state, an event's
// payload) and return nothing that shares them except what the kernel
// only reads (proposals' action and destination objects). Step then hands
// it the values it parsed instead of a fresh copy for each call, and keeps
// the state and the facts' tuples and provenance it returns as they are
// when they are already in the value model's exact form (no copy would
// change them), instead of copying them: what it returns is its own to
// give, and nothing changes it afterwards. Observation
// and *Declarative are treated so already; a type wrapping one of them that
// keeps the promise — say, to record what Emit returned — implements
// ReadOnly to be treated so too. A type embedding one does not inherit it.
type ReadOnly interface {
	Domain
	ReadsOnly()
}

// Wrapping is a Domain built around a *Declarative whose profile is the
// wrapped one's. Step then reads the profile the *Declarative built once at
// Load, as it does for a *Declarative itself, instead of calling Profile
// for a fresh one every step. A type wrapping a *Declarative that keeps its
// profile — say, to record what Emit returned — implements Wrapping to be
// treated so; one that changes the profile must not. *Declarative does not
// implement it, so a type embedding one does not inherit it.
type Wrapping interface {
	Domain
	Wrapped() *Declarative
}

// declarativeOf is d as a *Declarative, or the one it wraps, or nil.
func declarativeOf(d Domain) *Declarative {
	switch t := d.(type) {
	case *Declarative:
		return t
	case Wrapping:
		return t.Wrapped()
	}
	return nil
}

// profileOf is d.Profile() for the kernel's own reading: the profile a
// *Declarative (or one it wraps) built at Load, shared, where there is one.
// The kernel never modifies a profile it is handed.
func profileOf(d Domain) Profile {
	if dd := declarativeOf(d); dd != nil && dd.profile != nil {
		return *dd.profile
	}
	return d.Profile()
}

// validProfileOf is profileOf(d) and profileValid of it, the verdict a
// declarative domain's Load decided for the profile it built.
func validProfileOf(d Domain) (Profile, bool) {
	if dd := declarativeOf(d); dd != nil && dd.profile != nil {
		p := *dd.profile
		if vc, ok := d.(VersionsChecked); ok {
			p.versions = vc.CheckedVersions()
		}
		return p, dd.profileOK
	}
	p := d.Profile()
	if vc, ok := d.(VersionsChecked); ok {
		p.versions = vc.CheckedVersions()
	}
	return p, profileValid(p)
}

// CheckedVersions is a version envelope every label of which is a version
// label, with the canonical bytes a step writes for it. A domain whose
// snapshots and events carry one envelope (a workflow's, checked when it
// is loaded) may hand it to the step by implementing VersionsChecked: an
// envelope equal to it is then not checked label by label, nor written
// again, on every step. Any other envelope is checked and written as
// before.
type CheckedVersions struct {
	env   protocol.VersionEnvelope
	canon []byte
}

// CheckVersions returns v checked, or false when one of its labels is not
// a version label.
func CheckVersions(v protocol.VersionEnvelope) (*CheckedVersions, bool) {
	if !versionsValid(&v) {
		return nil, false
	}
	return &CheckedVersions{env: v, canon: appendVersions(nil, &v, nil)}, true
}

// is reports whether v is the checked envelope (false for a nil cv).
func (cv *CheckedVersions) is(v *protocol.VersionEnvelope) bool {
	return cv != nil && cv.env == *v
}

// VersionsChecked is implemented by a domain that knows the version
// envelope its snapshots and events carry, checked by CheckVersions.
type VersionsChecked interface {
	CheckedVersions() *CheckedVersions
}

// versionsOK is versionsValid, answered by comparison for the envelope
// the domain had checked.
func (p *Profile) versionsOK(v *protocol.VersionEnvelope) bool {
	return p.versions.is(v) || versionsValid(v)
}

// CheckProfile reports what is wrong with a profile, or nil. Step refuses
// to run a domain whose profile is inconsistent (INVARIANT_VIOLATION,
// invariant domain_profile_valid), because its closed member sets would
// otherwise make every input malformed or let a domain member shadow a
// kernel member.
func CheckProfile(p Profile) error {
	for _, v := range []string{p.Workflow, p.StateSchema, p.EventSchema} {
		if !cjson.ValidVersion(v) {
			return fmt.Errorf("kernel: profile version %q is not a version label", v)
		}
	}
	if p.FactIdentity == "" || p.MinFacts < 0 || p.MaxFacts < p.MinFacts || p.MaxProposals < 0 {
		return fmt.Errorf("kernel: profile needs a fact identity domain and bounds 0 <= min <= max")
	}
	if len(p.EventTypes) == 0 {
		return fmt.Errorf("kernel: profile declares no event type")
	}
	if err := distinctMembers("state", p.StateMembers, kernelSnapshotMembers); err != nil {
		return err
	}
	for _, t := range sortedKeys(p.EventTypes) {
		if !cjson.ValidID(t) {
			return fmt.Errorf("kernel: event type %q is not an id", t)
		}
		if err := distinctMembers("payload", p.EventTypes[t], kernelPayloadMembers); err != nil {
			return err
		}
	}
	return nil
}

// profileValid is CheckProfile(p) == nil without building an error or
// sorting the event types: Step asks it on every call, and only the verdict
// matters there.
func profileValid(p Profile) bool {
	if !cjson.ValidVersion(p.Workflow) || !cjson.ValidVersion(p.StateSchema) || !cjson.ValidVersion(p.EventSchema) {
		return false
	}
	if p.FactIdentity == "" || p.MinFacts < 0 || p.MaxFacts < p.MinFacts || p.MaxProposals < 0 || len(p.EventTypes) == 0 {
		return false
	}
	if !membersDistinct(p.StateMembers, kernelSnapshotMembers) {
		return false
	}
	for t, members := range p.EventTypes { //flrh:orderfree every failure gives the same verdict
		if !cjson.ValidID(t) || !membersDistinct(members, kernelPayloadMembers) {
			return false
		}
	}
	return true
}

// membersDistinct reports what distinctMembers reports, without its map
// for the short lists profiles have.
func membersDistinct(members, reserved []string) bool {
	if len(members) > 32 {
		return distinctMembers("", members, reserved) == nil
	}
	for i, m := range members {
		if slices.Contains(reserved, m) || slices.Contains(members[:i], m) {
			return false
		}
	}
	return true
}

func distinctMembers(what string, members, reserved []string) error {
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m] || slices.Contains(reserved, m) {
			return fmt.Errorf("kernel: %s member %q is repeated or reserved by the kernel", what, m)
		}
		seen[m] = true
	}
	return nil
}

// Error makes a Fault an error, for callers of Decide.
func (f *Fault) Error() string {
	s := fmt.Sprintf("kernel: %s at %s", f.Code, f.Path)
	if len(f.Context) > 0 {
		if b, err := cjson.Encode(f.Context); err == nil {
			s += " " + string(b)
		}
	}
	return s
}
