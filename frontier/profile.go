package frontier

import (
	"slices"

	"flrh.dev/flrh/cjson"
)

// Versions of the contract, its wire objects and its canonicalization. They
// are exact: there is no registry fallback or upcast.
const (
	ContractVersion   = "flrh-r-kernel/1"
	ProfileID         = "flrh-r-scalar-frontier/1"
	ProfileSchema     = "flrh-r-profile/1"
	StateSchema       = "flrh-r-state/1"
	CommandSchema     = "flrh-r-command/1"
	ValueDeltaSchema  = "flrh-r-value-delta/1"
	ResultSchema      = "flrh-r-result/1"
	Canonicalization  = "flrh-cjson/1"
	LateEventPolicy   = "reject"
	OverflowPolicy    = "reject_new"
	maxSourcesPerFlow = 256
)

// Limits are the caller-declared bounds of a profile. Each must be at least 1
// and at most its contract ceiling ([Ceilings]).
type Limits struct {
	MaxDeltasPerCommand  int64 `json:"max_deltas_per_command"`
	MaxActiveValues      int64 `json:"max_active_values"`
	MaxOpenEpochs        int64 `json:"max_open_epochs"`
	MaxReadyBatches      int64 `json:"max_ready_batches"`
	MaxDemandPerCommand  int64 `json:"max_demand_per_command"`
	MaxOutstandingDemand int64 `json:"max_outstanding_demand"`
}

// Ceilings are the contract's upper bounds for every limit.
var Ceilings = Limits{
	MaxDeltasPerCommand:  10000,
	MaxActiveValues:      10000,
	MaxOpenEpochs:        1024,
	MaxReadyBatches:      1024,
	MaxDemandPerCommand:  1024,
	MaxOutstandingDemand: 10000,
}

// limitFields pairs each limit's wire name with its value and ceiling, in
// the order the reference validates them.
func (l Limits) fields() [6]struct {
	name        string
	value, ceil int64
} {
	c := Ceilings
	return [6]struct {
		name        string
		value, ceil int64
	}{
		{"max_deltas_per_command", l.MaxDeltasPerCommand, c.MaxDeltasPerCommand},
		{"max_active_values", l.MaxActiveValues, c.MaxActiveValues},
		{"max_open_epochs", l.MaxOpenEpochs, c.MaxOpenEpochs},
		{"max_ready_batches", l.MaxReadyBatches, c.MaxReadyBatches},
		{"max_demand_per_command", l.MaxDemandPerCommand, c.MaxDemandPerCommand},
		{"max_outstanding_demand", l.MaxOutstandingDemand, c.MaxOutstandingDemand},
	}
}

func (l *Limits) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = appendKey(b, "max_active_values", true)
	b = appendInt(b, l.MaxActiveValues)
	b = appendKey(b, "max_deltas_per_command", false)
	b = appendInt(b, l.MaxDeltasPerCommand)
	b = appendKey(b, "max_demand_per_command", false)
	b = appendInt(b, l.MaxDemandPerCommand)
	b = appendKey(b, "max_open_epochs", false)
	b = appendInt(b, l.MaxOpenEpochs)
	b = appendKey(b, "max_outstanding_demand", false)
	b = appendInt(b, l.MaxOutstandingDemand)
	b = appendKey(b, "max_ready_batches", false)
	b = appendInt(b, l.MaxReadyBatches)
	return append(b, '}')
}

// Profile is a validated RDataflowProfile (flrh-r-scalar-frontier/1): the
// dataflow version, the complete declared source set and the bounds.
type Profile struct {
	dataflow string
	sources  []string // canonical (sorted) order
	limits   Limits
	digest   string
}

// NewProfile validates the fields of a profile, puts the source set in
// canonical order and derives its profile_digest.
func NewProfile(dataflowVersion string, sourceIDs []string, limits Limits) (Profile, *Rejection) {
	if !cjson.ValidVersion(dataflowVersion) {
		return Profile{}, reject(CodeMalformedDataflowProfile, "/profile/dataflow_version")
	}
	sources, ok := sortedIDSet(sourceIDs)
	if !ok || len(sources) < 1 || len(sources) > maxSourcesPerFlow {
		return Profile{}, reject(CodeMalformedDataflowProfile, "/profile/source_ids")
	}
	for _, f := range limits.fields() {
		if f.value < 1 || f.value > f.ceil {
			return Profile{}, reject(CodeMalformedDataflowProfile, "/profile/limits/"+f.name)
		}
	}
	p := Profile{dataflow: dataflowVersion, sources: sources, limits: limits}
	p.digest = digestOf(p.appendPreimage(nil))
	return p, nil
}

// DataflowVersion is the exact dataflow version every object must bind.
func (p Profile) DataflowVersion() string { return p.dataflow }

// SourceIDs returns the declared sources in canonical order.
func (p Profile) SourceIDs() []string { return slices.Clone(p.sources) }

// DeclaresSource reports whether id is one of the declared sources:
// whether it is in SourceIDs, without copying them.
func (p Profile) DeclaresSource(id string) bool { return p.sourceIndex(id) >= 0 }

// Limits returns the declared bounds.
func (p Profile) Limits() Limits { return p.limits }

// Digest is the profile_digest.
func (p Profile) Digest() string { return p.digest }

// sourceIndex finds a declared source; -1 if it is not declared.
func (p *Profile) sourceIndex(id string) int {
	i, ok := slices.BinarySearch(p.sources, id)
	if !ok {
		return -1
	}
	return i
}

func (p *Profile) appendPreimage(b []byte) []byte {
	b = append(b, '{')
	b = appendVersions(b, p.dataflow)
	b = appendKey(b, "kind", false)
	b = appendString(b, "M3ProfilePreimage")
	b = appendKey(b, "late_event_policy", false)
	b = appendString(b, LateEventPolicy)
	b = appendKey(b, "limits", false)
	b = p.limits.appendCanonical(b)
	b = appendKey(b, "ordered_source_ids", false)
	b = appendStrings(b, p.sources)
	b = appendKey(b, "overflow_policy", false)
	b = appendString(b, OverflowPolicy)
	b = appendKey(b, "profile_id", false)
	b = appendString(b, ProfileID)
	return append(b, '}')
}

// MarshalJSON writes the RDataflowProfile wire object in canonical form.
func (p Profile) MarshalJSON() ([]byte, error) { return p.AppendCanonical(nil), nil }

// AppendCanonical appends the canonical RDataflowProfile bytes to b.
func (p Profile) AppendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = appendVersions(b, p.dataflow)
	b = appendKey(b, "kind", false)
	b = appendString(b, "RDataflowProfile")
	b = appendKey(b, "late_event_policy", false)
	b = appendString(b, LateEventPolicy)
	b = appendKey(b, "limits", false)
	b = p.limits.appendCanonical(b)
	b = appendKey(b, "overflow_policy", false)
	b = appendString(b, OverflowPolicy)
	b = appendKey(b, "profile_digest", false)
	b = appendString(b, p.digest)
	b = appendKey(b, "profile_id", false)
	b = appendString(b, ProfileID)
	b = appendKey(b, "schema_version", false)
	b = appendString(b, ProfileSchema)
	b = appendKey(b, "source_ids", false)
	b = appendStrings(b, p.sources)
	return append(b, '}')
}

// appendVersions writes the members the profile's and the state's encodings
// open with, after their '{': the canonicalization, contract and dataflow
// versions.
func appendVersions(b []byte, dataflow string) []byte {
	b = appendKey(b, "canonicalization_version", true)
	b = appendString(b, Canonicalization)
	b = appendKey(b, "contract_version", false)
	b = appendString(b, ContractVersion)
	b = appendKey(b, "dataflow_version", false)
	return appendString(b, dataflow)
}
