package frontier

import (
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// ValueKind names which protocol value an RValueDelta carries.
type ValueKind string

// The two value kinds R transports.
const (
	KindEffectProposal     ValueKind = "effect_proposal"
	KindEligibilityVerdict ValueKind = "eligibility_verdict"
)

// The protocol wire objects R carries. They are the protocol package's
// types; R never rewrites, enriches or interprets them.
type (
	Versions           = protocol.VersionEnvelope
	EffectProposal     = protocol.EffectProposal
	EligibilityVerdict = protocol.EligibilityVerdict
)

// Value is one validated, normalized protocol value with its canonical bytes
// and M3 value digest computed once. A Value is immutable: its accessors
// return copies. It is a handle on the sealed contents, so deltas, states
// and batches copy one pointer per value, not the value. The zero Value
// holds nothing and is refused wherever a value is needed.
type Value struct{ *sealedValue }

type sealedValue struct {
	kind     ValueKind
	proposal EffectProposal
	verdict  EligibilityVerdict
	canon    []byte // canonical bytes of the bare value
	digest   string // sha256 of the M3ValuePreimage
	// ids holds the value's sorted id set (a proposal's preconditions, a
	// verdict's support ids) when it has room for them.
	ids [valueIDs]string
}

// valueIDs is how many ids of its set a sealed value holds itself: a
// refund's proposal has three preconditions, its verdict two supports.
const valueIDs = 4

// sealed reports whether v was built by a constructor.
func (v Value) sealed() bool { return v.sealedValue != nil }

// Kind reports which protocol value v holds ("" for the zero Value).
func (v Value) Kind() ValueKind {
	if !v.sealed() {
		return ""
	}
	return v.kind
}

// Proposal returns a copy of the proposal; ok is false for a verdict.
func (v Value) Proposal() (EffectProposal, bool) {
	if !v.sealed() {
		return EffectProposal{}, false
	}
	p := v.proposal
	p.Preconditions = slices.Clone(p.Preconditions)
	return p, v.kind == KindEffectProposal
}

// SharedProposal is Proposal without the copy of the preconditions: the
// list shares the value's array (capped, so an append moves it). It is
// for a caller that only reads the proposal; writing to an element of
// the list would change the sealed value.
func (v Value) SharedProposal() (EffectProposal, bool) {
	if !v.sealed() {
		return EffectProposal{}, false
	}
	p := v.proposal
	p.Preconditions = slices.Clip(p.Preconditions)
	return p, v.kind == KindEffectProposal
}

// SharedVerdict is Verdict without the copy of the support ids, on the
// terms of SharedProposal.
func (v Value) SharedVerdict() (EligibilityVerdict, bool) {
	if !v.sealed() {
		return EligibilityVerdict{}, false
	}
	e := v.verdict
	e.SupportDerivationIDs = slices.Clip(e.SupportDerivationIDs)
	return e, v.kind == KindEligibilityVerdict
}

// Verdict returns a copy of the verdict; ok is false for a proposal.
func (v Value) Verdict() (EligibilityVerdict, bool) {
	if !v.sealed() {
		return EligibilityVerdict{}, false
	}
	e := v.verdict
	e.SupportDerivationIDs = slices.Clone(e.SupportDerivationIDs)
	return e, v.kind == KindEligibilityVerdict
}

// Digest is the value_digest: sha256 over the M3ValuePreimage.
func (v Value) Digest() string {
	if !v.sealed() {
		return ""
	}
	return v.digest
}

// CanonicalJSON returns the value's flrh-cjson/1 bytes.
func (v Value) CanonicalJSON() []byte {
	if !v.sealed() {
		return nil
	}
	return slices.Clone(v.canon)
}

// AppendCanonical appends the value's flrh-cjson/1 bytes to b.
func (v Value) AppendCanonical(b []byte) []byte {
	if !v.sealed() {
		return b
	}
	return append(b, v.canon...)
}

// CanonicalSize is the length of the value's canonical bytes.
func (v Value) CanonicalSize() int {
	if !v.sealed() {
		return 0
	}
	return len(v.canon)
}

// id is the nested protocol identity: proposal_id or verdict_id.
func (v Value) id() string {
	if v.kind == KindEffectProposal {
		return v.proposal.ProposalID
	}
	return v.verdict.VerdictID
}

var riskHints = map[string]bool{"read_only": true, "reversible": true, "high_risk_external": true, "unknown": true}
var verdictStatuses = map[string]bool{"eligible": true, "ineligible": true, "conflicted": true}

// NewProposalValue validates p, sorts its precondition set, and seals it.
// A malformed proposal is MALFORMED_VALUE_DELTA at path (relative to the value).
func NewProposalValue(p EffectProposal) (Value, *Rejection) {
	return newProposalValue(p, "")
}

func newProposalValue(p EffectProposal, path string) (Value, *Rejection) {
	bad := func(sub string) (Value, *Rejection) {
		return Value{}, reject(CodeMalformedValueDelta, path+sub)
	}
	switch p.Kind {
	case "":
		p.Kind = protocol.KindEffectProposal // a Go caller may leave it implied
	case protocol.KindEffectProposal:
	default:
		return bad("/kind")
	}
	for _, id := range []string{p.ProposalID, p.EffectType, p.CauseID, p.CorrelationID, p.ProposalDedupKey, p.GoalID, p.ObligationID} {
		if !cjson.ValidID(id) {
			return bad("")
		}
	}
	if !validDigest(p.ActionDigest) || !validDigest(p.DestinationDigest) {
		return bad("")
	}
	if !riskHints[p.DeclaredRiskHint] {
		return bad("/declared_risk_hint")
	}
	sv := &sealedValue{kind: KindEffectProposal}
	pre, ok := sortedIDSetIn(sv.ids[:0], p.Preconditions)
	if !ok {
		return bad("/preconditions")
	}
	ver := p.Versions
	for _, s := range []string{ver.Workflow, ver.StateSchema, ver.EventSchema, ver.GraphSchema, ver.RuleSet, ver.Dataflow, ver.Canonicalization, ver.Tool, ver.Model, ver.Oracle, ver.Gate, ver.Resolver, ver.CompositionProfile} {
		if !cjson.ValidVersion(s) {
			return bad("/versions")
		}
	}
	p.Preconditions = pre
	sv.proposal = p
	v := Value{sv}
	b := valuePreimageOpen(proposalSize(&v.proposal))
	start := len(b)
	b = appendProposal(b, &v.proposal)
	v.canon, v.digest = sealValueBytes(v.kind, b, start)
	return v, nil
}

// NewVerdictValue validates e, sorts its support set, and seals it.
func NewVerdictValue(e EligibilityVerdict) (Value, *Rejection) {
	return newVerdictValue(e, "")
}

func newVerdictValue(e EligibilityVerdict, path string) (Value, *Rejection) {
	switch e.Kind {
	case "":
		e.Kind = protocol.KindEligibilityVerdict
	case protocol.KindEligibilityVerdict:
	default:
		return Value{}, reject(CodeMalformedValueDelta, path+"/kind")
	}
	if !cjson.ValidID(e.VerdictID) || !cjson.ValidID(e.ProposalID) || !cjson.ValidID(e.CauseID) {
		return Value{}, reject(CodeMalformedValueDelta, path)
	}
	if !verdictStatuses[e.Status] {
		return Value{}, reject(CodeMalformedValueDelta, path+"/status")
	}
	sv := &sealedValue{kind: KindEligibilityVerdict}
	sup, ok := sortedIDSetIn(sv.ids[:0], e.SupportDerivationIDs)
	if !ok {
		return Value{}, reject(CodeMalformedValueDelta, path+"/support_derivation_ids")
	}
	if !cjson.ValidVersion(e.RuleSetVersion) {
		return Value{}, reject(CodeMalformedValueDelta, path+"/rule_set_version")
	}
	e.SupportDerivationIDs = sup
	sv.verdict = e
	v := Value{sv}
	b := valuePreimageOpen(verdictSize(&v.verdict))
	start := len(b)
	b = appendVerdict(b, &v.verdict)
	v.canon, v.digest = sealValueBytes(v.kind, b, start)
	return v, nil
}

// sortedIDSet returns a sorted copy of ids, or ok=false if one is not an id
// or two are equal. For identifiers, byte order of the strings equals the
// order of their canonical encodings.
func sortedIDSet(ids []string) ([]string, bool) { return sortedIDSetIn(nil, ids) }

// sortedIDSetIn is sortedIDSet with the copy written in room when room
// is not nil and has the capacity for it.
func sortedIDSetIn(room, ids []string) ([]string, bool) {
	var out []string
	if room != nil && len(ids) <= cap(room) {
		out = room[:len(ids):len(ids)]
	} else {
		out = make([]string, len(ids))
	}
	copy(out, ids)
	for _, s := range out {
		if !cjson.ValidID(s) {
			return nil, false
		}
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, false
		}
	}
	return out, true
}

func appendProposal(b []byte, p *EffectProposal) []byte {
	b = append(b, '{')
	b = appendKey(b, "action_digest", true)
	b = cjson.AppendChecked(b, p.ActionDigest)
	b = appendKey(b, "cause_id", false)
	b = cjson.AppendChecked(b, p.CauseID)
	b = appendKey(b, "correlation_id", false)
	b = cjson.AppendChecked(b, p.CorrelationID)
	b = appendKey(b, "declared_risk_hint", false)
	b = cjson.AppendChecked(b, p.DeclaredRiskHint)
	b = appendKey(b, "destination_digest", false)
	b = cjson.AppendChecked(b, p.DestinationDigest)
	b = appendKey(b, "effect_type", false)
	b = cjson.AppendChecked(b, p.EffectType)
	b = appendKey(b, "goal_id", false)
	b = cjson.AppendChecked(b, p.GoalID)
	b = appendKey(b, "kind", false)
	b = cjson.AppendChecked(b, "EffectProposal")
	b = appendKey(b, "obligation_id", false)
	b = cjson.AppendChecked(b, p.ObligationID)
	b = appendKey(b, "preconditions", false)
	b = appendPlains(b, p.Preconditions)
	b = appendKey(b, "proposal_dedup_key", false)
	b = cjson.AppendChecked(b, p.ProposalDedupKey)
	b = appendKey(b, "proposal_id", false)
	b = cjson.AppendChecked(b, p.ProposalID)
	b = appendKey(b, "versions", false)
	v := &p.Versions
	b = append(b, '{')
	b = appendKey(b, "canonicalization", true)
	b = cjson.AppendChecked(b, v.Canonicalization)
	b = appendKey(b, "composition_profile", false)
	b = cjson.AppendChecked(b, v.CompositionProfile)
	b = appendKey(b, "dataflow", false)
	b = cjson.AppendChecked(b, v.Dataflow)
	b = appendKey(b, "event_schema", false)
	b = cjson.AppendChecked(b, v.EventSchema)
	b = appendKey(b, "gate", false)
	b = cjson.AppendChecked(b, v.Gate)
	b = appendKey(b, "graph_schema", false)
	b = cjson.AppendChecked(b, v.GraphSchema)
	b = appendKey(b, "model", false)
	b = cjson.AppendChecked(b, v.Model)
	b = appendKey(b, "oracle", false)
	b = cjson.AppendChecked(b, v.Oracle)
	b = appendKey(b, "resolver", false)
	b = cjson.AppendChecked(b, v.Resolver)
	b = appendKey(b, "rule_set", false)
	b = cjson.AppendChecked(b, v.RuleSet)
	b = appendKey(b, "state_schema", false)
	b = cjson.AppendChecked(b, v.StateSchema)
	b = appendKey(b, "tool", false)
	b = cjson.AppendChecked(b, v.Tool)
	b = appendKey(b, "workflow", false)
	b = cjson.AppendChecked(b, v.Workflow)
	return append(b, '}', '}')
}

func appendVerdict(b []byte, e *EligibilityVerdict) []byte {
	b = append(b, '{')
	b = appendKey(b, "cause_id", true)
	b = cjson.AppendChecked(b, e.CauseID)
	b = appendKey(b, "kind", false)
	b = cjson.AppendChecked(b, "EligibilityVerdict")
	b = appendKey(b, "proposal_id", false)
	b = cjson.AppendChecked(b, e.ProposalID)
	b = appendKey(b, "rule_set_version", false)
	b = cjson.AppendChecked(b, e.RuleSetVersion)
	b = appendKey(b, "status", false)
	b = cjson.AppendChecked(b, e.Status)
	b = appendKey(b, "support_derivation_ids", false)
	b = appendPlains(b, e.SupportDerivationIDs)
	b = appendKey(b, "verdict_id", false)
	b = cjson.AppendChecked(b, e.VerdictID)
	return append(b, '}')
}

// A value's canonical bytes are written inside its M3ValuePreimage, which
// is hashed as it stands: the value keeps the middle of that buffer as its
// canonical bytes, so they are neither copied into a preimage nor written
// twice. valuePreimageOpen returns a buffer, sized for a value of about n
// bytes, holding the preimage up to the value; sealValueBytes closes the
// preimage after the value written from start and returns the value's
// bytes (capped, so nothing appended to them reaches the rest) and the
// value digest.
func valuePreimageOpen(n int) []byte {
	b := make([]byte, 0, n+128)
	b = append(b, '{')
	b = appendKey(b, "contract_version", true)
	b = cjson.AppendChecked(b, ContractVersion)
	b = appendKey(b, "kind", false)
	b = cjson.AppendChecked(b, "M3ValuePreimage")
	return appendKey(b, "value", false)
}

func sealValueBytes(kind ValueKind, b []byte, start int) (canon []byte, digest string) {
	end := len(b)
	b = appendKey(b, "value_kind", false)
	b = cjson.AppendChecked(b, string(kind))
	b = append(b, '}')
	return b[start:end:end], digestString(valueDigests.Sum(b))
}

// Value and stable batch preimages open with the same bytes call after
// call (the contract's version and kind, and a batch's logical time and
// watermarks), which these digest from a kept SHA-256 state (cjson.Prefix).
var valueDigests, stableBatchDigests cjson.Prefix

// proposalSize estimates the canonical length of a proposal (member names
// and punctuation take under 500 bytes), so that it is written without
// the buffer growing; a string that needs escapes only makes it grow.
func proposalSize(p *EffectProposal) int {
	n := 512 + len(p.ActionDigest) + len(p.CauseID) + len(p.CorrelationID) + len(p.DeclaredRiskHint) +
		len(p.DestinationDigest) + len(p.EffectType) + len(p.GoalID) + len(p.ObligationID) +
		len(p.ProposalDedupKey) + len(p.ProposalID)
	for _, s := range p.Preconditions {
		n += len(s) + 3
	}
	v := &p.Versions
	for _, s := range []string{v.Canonicalization, v.CompositionProfile, v.Dataflow, v.EventSchema, v.Gate, v.GraphSchema,
		v.Model, v.Oracle, v.Resolver, v.RuleSet, v.StateSchema, v.Tool, v.Workflow} {
		n += len(s)
	}
	return n
}

// verdictSize is proposalSize for a verdict.
func verdictSize(e *EligibilityVerdict) int {
	n := 160 + len(e.CauseID) + len(e.ProposalID) + len(e.RuleSetVersion) + len(e.Status) + len(e.VerdictID)
	for _, s := range e.SupportDerivationIDs {
		n += len(s) + 3
	}
	return n
}
