package kernel

import (
	"slices"

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
	// The preimage is written around the value's own encoding when that
	// is the encoding it has as the preimage's member: canonical text, not
	// too deep, and no kind of its own that would sort its arrays.
	m := map[string]any(value)
	if cjson.CheckString(domain, "") == nil && canonCheckMap(m, 1, false) && rootSetFree(m) {
		// The value is encoded in place, into a recycled buffer, by
		// AppendMarshal: the bytes Encode returns.
		encoded := false
		write := func(b []byte) []byte {
			b = append(b, valueHeadBytes...)
			b = cjson.AppendString(b, domain)
			b = append(b, valueKindBytes...)
			b, err := cjson.AppendMarshal(b, m)
			encoded = err == nil
			return append(b, '}')
		}
		var d string
		switch domain {
		case ValueEffectAction:
			d = actionValues.DigestWritten(write)
		case ValueEffectDestination:
			d = destinationMemo.DigestWritten(&destinationValues, write)
		default:
			d = cjson.DigestWritten(write)
		}
		if encoded {
			return d, nil
		}
	}
	return valueDigestMap(domain, value)
}

// actionValues and destinationValues digest the value preimages of a
// proposal's action and destination, which open with the same contract
// version, domain and kind (and a bundle's destinations with the same
// value) proposal after proposal, from a kept SHA-256 state
// (cjson.Prefix).
var actionValues, destinationValues cjson.Prefix

// destinationMemo keeps the last destination value's preimage and digest:
// the proposals of a run, and the runs of a workflow, mostly name one
// destination, whose digest is then served without hashing its bytes
// again (cjson.Memo compares the whole preimage).
var destinationMemo cjson.Memo

const (
	valueHeadBytes = `{"contract_version":"` + ContractVersion + `","domain":`
	valueKindBytes = `,"kind":"` + valuePreimageKind + `","value":`
)

// valueDigestMap is ValueDigest through a preimage map, whose encoding
// error (non-canonical text, too deep, a Go value without a canonical
// form) is the one to report.
func valueDigestMap(domain string, value protocol.Object) (string, error) {
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

// buildFact returns the fact delta and its canonical bytes. The delta is
// correct by construction: the kernel checked every member it stamps (ids,
// versions, logical time) when it parsed the event, and the tuple and
// provenance pass canonCopy, so its bytes are written directly and no
// schema pass can fail on it. A tuple or provenance outside that fast case
// (Go values beyond the cjson model, a root kind with set-like members, deep
// nesting, text that is not canonical) takes buildFactSlow, the
// round-trip-and-validate path whose verdict on such values is the contract.
//
// own says the tuple and provenance are the domain's to give (a ReadOnly
// domain's): one that is already its canonical copy is then kept as it is.
// The derivation id is carved from ss (see stepStrings; nil: its own),
// the canonical bytes from room (see canonRoom; nil: their own).
func buildFact(p Profile, e Event, f Fact, own bool, ss *stepStrings, room *canonRoom) (protocol.FactDelta, []byte, bool) {
	if (f.Diff != 1 && f.Diff != -1) || len(f.Tuple) == 0 || len(f.Provenance) == 0 {
		return protocol.FactDelta{}, nil, false
	}
	tuple, ok1 := factPart(f.Tuple, own)
	prov, ok2 := factPart(f.Provenance, own)
	if !ok1 || !ok2 || cjson.CheckString(p.FactIdentity, "") != nil {
		return buildFactSlow(p, e, f)
	}
	// (A fact's preimage opens with its domain and the head of the fact,
	// the same from one fact to the next: factIdentities.)
	// The fact is written once, as its identity's value inside the
	// preimage; its canonical bytes are that value with the derivation id
	// spliced in at its head, copied around a gap the id then fills.
	var canon []byte
	head, encoded := 0, false
	id := identityWritten(&factIdentities, ss, "derivation", p.FactIdentity, func(b []byte) []byte {
		start := len(b)
		if b, head, encoded = appendFactValue(b, &e, f.Diff, tuple, prov); !encoded {
			return b
		}
		value := b[start:]
		head -= start
		canon = room.take(len(value) + derivationMember)
		copy(canon, value[:head])
		copy(canon[head+derivationMember:], value[head:])
		return b
	})
	if !encoded || len(id) != derivationIDLen {
		return buildFactSlow(p, e, f)
	}
	gap := canon[head : head+derivationMember]
	n := copy(gap, `,"derivation_id":"`)
	n += copy(gap[n:], id)
	gap[n] = '"'
	return protocol.FactDelta{
		Kind:            protocol.KindFactDelta,
		Tuple:           protocol.Object(tuple),
		LogicalTime:     e.LogicalTime,
		Diff:            f.Diff,
		DerivationID:    id,
		CausationID:     e.ID,
		ProvenanceDelta: protocol.Object(prov),
		RuleSetVersion:  e.Versions.RuleSet,
		DataflowVersion: e.Versions.Dataflow,
	}, canon, true
}

// factPart returns a canonical copy of a tuple or provenance (o itself
// when it is own and already its copy), or false when it is not the fast
// case. It sits two containers deep in the identity preimage (preimage,
// fact, part).
func factPart(o protocol.Object, own bool) (map[string]any, bool) {
	c, ok := map[string]any(o), true
	if !own || !canonStableMap(c, 2, false) {
		c, ok = canonCopyMap(o, 2, false)
	}
	return c, ok && rootSetFree(c)
}

// buildFactSlow is buildFact through encode/decode round trips, a value
// map and the protocol schema.
func buildFactSlow(p Profile, e Event, f Fact) (protocol.FactDelta, []byte, bool) {
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
// false if one is not an id or one repeats. An id has no character that
// canonical text escapes and none below the quote, so its canonical bytes
// sort as the id itself does.
func sortPreconditions(pre []string) ([]string, bool) {
	for _, s := range pre {
		if !cjson.ValidID(s) {
			return nil, false
		}
	}
	out := slices.Clone(pre)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, false
		}
	}
	return out, true
}

// buildProposal returns the proposal and its canonical bytes. As for facts,
// every member is checked here or was checked when the event was parsed,
// so the proposal is valid by construction and its bytes are written
// directly; both identities hash the same value bytes, and are carved
// from ss (see stepStrings; nil: each its own); the canonical bytes are
// written in room (see canonRoom; nil: their own).
func buildProposal(e Event, pr Proposal, cv *CheckedVersions, ss *stepStrings, room *canonRoom) (protocol.EffectProposal, []byte, bool) {
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
	value := appendProposalHead(make([]byte, 0, 1024), &e, &pr, action, dest, pre)
	head := len(value)
	value = appendProposalTail(value, &e, cv)
	id := identityOf(&proposalIdentities, ss, "proposal", identityProposal, value)
	dedup := identityOf(&dedupIdentities, ss, "proposal-dedup", identityProposalDedup, value)
	// The proposal is its value with the two identities between head and
	// tail: copied around them rather than written again.
	canon := room.take(len(value) + 200)[:0]
	canon = appendProposalIDs(append(canon, value[:head]...), id, dedup)
	canon = append(canon, value[head:]...)
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

// factIdentities, proposalIdentities and dedupIdentities digest identity
// preimages of one domain each, which open with the same contract
// version, domain, kind and head of the value (a fact's causation id, a
// proposal's "action_digest" member) call after call, from a kept SHA-256
// state (cjson.Prefix). A proposal's two domains alternate, so each has
// its own.
var factIdentities, proposalIdentities, dedupIdentities cjson.Prefix
