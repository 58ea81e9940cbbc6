package kernel

import (
	"bytes"
	"sort"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// Preimage kinds. Every identity and value digest the kernel derives hashes
// an object naming its kind, the contract version and a domain, so that no
// two purposes can ever share a preimage.
const (
	identityPreimageKind = "M1IdentityPreimage"
	valuePreimageKind    = "M1ValueDigestPreimage"
)

// Value digest domains.
const (
	ValueObservation       = "observation"
	ValueEffectAction      = "effect-action"
	ValueEffectDestination = "effect-destination"
)

// Identity domains of proposals.
const (
	identityProposal      = "effect-proposal-value"
	identityProposalDedup = "proposal-dedup-value"
)

// ValueDigest binds explicit application data (an observation, an action,
// a destination) under a named domain. The value is canonicalised as the
// member of a preimage object, so its arrays keep their order whatever
// kind member it may carry.
func ValueDigest(domain string, value protocol.Object) (string, error) {
	return cjson.DigestOf(map[string]any{
		"kind":             valuePreimageKind,
		"contract_version": ContractVersion,
		"domain":           domain,
		"value":            map[string]any(value),
	})
}

// identity derives "prefix:<hex>" from the complete emitted value (without
// its own identity members) under an identity domain.
func identity(prefix, domain string, value map[string]any) (string, error) {
	b, err := cjson.Encode(map[string]any{
		"kind":             identityPreimageKind,
		"contract_version": ContractVersion,
		"domain":           domain,
		"value":            value,
	})
	if err != nil {
		return "", err
	}
	return prefix + ":" + cjson.HexDigest(b), nil
}

// buildFact returns the fact delta and its canonical bytes.
func buildFact(p Profile, e Event, f Fact) (protocol.FactDelta, []byte, bool) {
	if (f.Diff != 1 && f.Diff != -1) || len(f.Tuple) == 0 || len(f.Provenance) == 0 {
		return protocol.FactDelta{}, nil, false
	}
	tuple, err1 := toValue(map[string]any(f.Tuple))
	prov, err2 := toValue(map[string]any(f.Provenance))
	if err1 != nil || err2 != nil {
		return protocol.FactDelta{}, nil, false
	}
	value := map[string]any{
		"kind":             protocol.KindFactDelta,
		"tuple":            tuple,
		"logical_time":     e.LogicalTime,
		"diff":             f.Diff,
		"causation_id":     e.ID,
		"provenance_delta": prov,
		"rule_set_version": e.Versions.RuleSet,
		"dataflow_version": e.Versions.Dataflow,
	}
	id, err := identity("derivation", p.FactIdentity, value)
	if err != nil {
		return protocol.FactDelta{}, nil, false
	}
	value["derivation_id"] = id
	if protocol.ValidateValue(protocol.KindFactDelta, value) != nil {
		return protocol.FactDelta{}, nil, false
	}
	canon, err := cjson.Encode(value)
	if err != nil {
		return protocol.FactDelta{}, nil, false
	}
	return protocol.FactDelta{
		Kind:            protocol.KindFactDelta,
		Tuple:           protocol.Object(tuple.(map[string]any)),
		LogicalTime:     e.LogicalTime,
		Diff:            f.Diff,
		DerivationID:    id,
		CausationID:     e.ID,
		ProvenanceDelta: protocol.Object(prov.(map[string]any)),
		RuleSetVersion:  e.Versions.RuleSet,
		DataflowVersion: e.Versions.Dataflow,
	}, canon, true
}

var riskHints = map[string]bool{
	protocol.RiskReadOnly: true, protocol.RiskReversible: true,
	protocol.RiskHighRiskExternal: true, protocol.RiskUnknown: true,
}

// sortPreconditions returns the preconditions sorted by canonical bytes, or
// false if one is not an id or one repeats.
func sortPreconditions(pre []string) ([]string, bool) {
	type item struct {
		b []byte
		s string
	}
	items := make([]item, len(pre))
	for i, s := range pre {
		if !cjson.ValidID(s) {
			return nil, false
		}
		items[i] = item{cjson.AppendString(nil, s), s}
	}
	sort.Slice(items, func(i, j int) bool { return bytes.Compare(items[i].b, items[j].b) < 0 })
	out := make([]string, len(items))
	for i, it := range items {
		if i > 0 && it.s == items[i-1].s {
			return nil, false
		}
		out[i] = it.s
	}
	return out, true
}

// buildProposal returns the proposal and its canonical bytes.
func buildProposal(e Event, pr Proposal) (protocol.EffectProposal, []byte, bool) {
	if !cjson.ValidID(pr.EffectType) || !cjson.ValidID(pr.GoalID) || !cjson.ValidID(pr.ObligationID) ||
		!riskHints[pr.RiskHint] || len(pr.Action) == 0 || len(pr.Destination) == 0 {
		return protocol.EffectProposal{}, nil, false
	}
	pre, ok := sortPreconditions(pr.Preconditions)
	if !ok {
		return protocol.EffectProposal{}, nil, false
	}
	action, err1 := ValueDigest(ValueEffectAction, pr.Action)
	dest, err2 := ValueDigest(ValueEffectDestination, pr.Destination)
	if err1 != nil || err2 != nil {
		return protocol.EffectProposal{}, nil, false
	}
	preValues := make([]any, len(pre))
	for i, s := range pre {
		preValues[i] = s
	}
	value := map[string]any{
		"kind":               protocol.KindEffectProposal,
		"effect_type":        pr.EffectType,
		"action_digest":      action,
		"cause_id":           e.ID,
		"correlation_id":     e.CorrelationID,
		"destination_digest": dest,
		"goal_id":            pr.GoalID,
		"obligation_id":      pr.ObligationID,
		"declared_risk_hint": pr.RiskHint,
		"preconditions":      preValues,
		"versions":           versionsValue(e.Versions),
	}
	id, err1 := identity("proposal", identityProposal, value)
	dedup, err2 := identity("proposal-dedup", identityProposalDedup, value)
	if err1 != nil || err2 != nil {
		return protocol.EffectProposal{}, nil, false
	}
	value["proposal_id"] = id
	value["proposal_dedup_key"] = dedup
	if protocol.ValidateValue(protocol.KindEffectProposal, value) != nil {
		return protocol.EffectProposal{}, nil, false
	}
	canon, err := cjson.Encode(value)
	if err != nil {
		return protocol.EffectProposal{}, nil, false
	}
	return protocol.EffectProposal{
		Kind:              protocol.KindEffectProposal,
		ProposalID:        id,
		EffectType:        pr.EffectType,
		ActionDigest:      action,
		CauseID:           e.ID,
		CorrelationID:     e.CorrelationID,
		ProposalDedupKey:  dedup,
		DestinationDigest: dest,
		GoalID:            pr.GoalID,
		ObligationID:      pr.ObligationID,
		DeclaredRiskHint:  pr.RiskHint,
		Preconditions:     protocol.IDSet(pre),
		Versions:          e.Versions,
	}, canon, true
}

// deepCopy copies a value of the cjson model; other values are returned as is.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case protocol.Object:
		return deepCopyObject(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func deepCopyObject(o map[string]any) protocol.Object {
	if o == nil {
		return nil
	}
	return protocol.Object(deepCopy(map[string]any(o)).(map[string]any))
}

func copySnapshot(s Snapshot) Snapshot {
	s.State = deepCopyObject(s.State)
	if s.LastLogicalTime != nil {
		n := *s.LastLogicalTime
		s.LastLogicalTime = &n
	}
	if s.LastEventID != nil {
		id := *s.LastEventID
		s.LastEventID = &id
	}
	return s
}

func copyEvent(e Event) Event {
	e.Payload = deepCopyObject(e.Payload)
	if e.CausationID != nil {
		c := *e.CausationID
		e.CausationID = &c
	}
	return e
}
