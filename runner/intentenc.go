package runner

import (
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// intentJSON is encodedJSON(pi): the intent a workflow planned, written
// by appendIntent where it can, through cjson's reflection otherwise.
func intentJSON(pi *protocol.EffectIntent) (canonJSON, error) {
	if b, ok := appendIntent(make([]byte, 0, intentSize(pi)), pi); ok {
		return canonJSON{b: b, depth: intentDepth}, nil
	}
	return encodedJSON(*pi)
}

// intentDepth is how deep an intent's containers nest: the object, and
// its preconditions array and versions object one level below.
const intentDepth = 2

// intentSize is the length of appendIntent's bytes for pi when every
// string is plain: the members' quoted keys and punctuation, and the
// strings' own bytes.
func intentSize(pi *protocol.EffectIntent) int {
	n := 640 // the keys, quotes and separators, with room to spare
	for _, s := range intentStrings(pi) {
		n += len(s)
	}
	for _, p := range pi.Preconditions {
		n += len(p) + 3
	}
	if pi.ApprovalDigest != nil {
		n += len(*pi.ApprovalDigest)
	}
	return n
}

// intentStrings are pi's string members other than the approval digest
// and the preconditions, in no particular order.
func intentStrings(pi *protocol.EffectIntent) [29]string {
	v := &pi.Versions
	return [29]string{pi.Kind, pi.IntentID, pi.ProposalID, pi.BatchID, pi.EffectType, pi.ActionDigest,
		pi.Capability, pi.AuthorityDigest, pi.CauseID, pi.CorrelationID, pi.IdempotencyKey,
		pi.DestinationDigest, pi.GoalID, pi.ObligationID, pi.AdapterVersion, pi.AssessedRisk,
		v.Workflow, v.StateSchema, v.EventSchema, v.GraphSchema, v.RuleSet, v.Dataflow,
		v.Canonicalization, v.Tool, v.Model, v.Oracle, v.Gate, v.Resolver, v.CompositionProfile}
}

// appendIntent appends the bytes cjson.Marshal writes for pi, without the
// encoder's reflection, when that is simple to do: pi is of the intent
// kind (whose preconditions are a set), every string in it is plain (its
// encoding is itself between quotes, and it is NFC), and its
// preconditions are distinct. ok is false otherwise (b is then to be
// dropped), and the caller encodes pi through cjson, which also words any
// refusal. TestIntentEncodingMatchesMarshal holds the bytes to
// cjson.Marshal's.
func appendIntent(b []byte, pi *protocol.EffectIntent) ([]byte, bool) {
	if pi.Kind != protocol.KindEffectIntent {
		return b, false
	}
	for _, s := range intentStrings(pi) {
		if !cjson.Plain(s) {
			return b, false
		}
	}
	if pi.ApprovalDigest != nil && !cjson.Plain(*pi.ApprovalDigest) {
		return b, false
	}
	// Members in byte order of their keys; every key is plain ASCII.
	str := func(member, s string) {
		b = append(b, member...)
		b = cjson.AppendChecked(b, s)
	}
	str(`{"action_digest":`, pi.ActionDigest)
	str(`,"adapter_version":`, pi.AdapterVersion)
	b = append(b, `,"approval_digest":`...)
	if pi.ApprovalDigest == nil {
		b = append(b, "null"...)
	} else {
		b = cjson.AppendChecked(b, *pi.ApprovalDigest)
	}
	if pi.ApprovalRequired {
		b = append(b, `,"approval_required":true`...)
	} else {
		b = append(b, `,"approval_required":false`...)
	}
	str(`,"assessed_risk":`, pi.AssessedRisk)
	str(`,"authority_digest":`, pi.AuthorityDigest)
	str(`,"batch_id":`, pi.BatchID)
	str(`,"capability":`, pi.Capability)
	str(`,"cause_id":`, pi.CauseID)
	str(`,"correlation_id":`, pi.CorrelationID)
	str(`,"destination_digest":`, pi.DestinationDigest)
	str(`,"effect_type":`, pi.EffectType)
	str(`,"goal_id":`, pi.GoalID)
	str(`,"idempotency_key":`, pi.IdempotencyKey)
	str(`,"intent_id":`, pi.IntentID)
	str(`,"kind":`, pi.Kind)
	str(`,"obligation_id":`, pi.ObligationID)
	b = append(b, `,"preconditions":`...)
	var ok bool
	if b, ok = cjson.AppendPlainSet(b, pi.Preconditions); !ok {
		return b, false
	}
	str(`,"proposal_id":`, pi.ProposalID)
	v := &pi.Versions
	str(`,"versions":{"canonicalization":`, v.Canonicalization)
	str(`,"composition_profile":`, v.CompositionProfile)
	str(`,"dataflow":`, v.Dataflow)
	str(`,"event_schema":`, v.EventSchema)
	str(`,"gate":`, v.Gate)
	str(`,"graph_schema":`, v.GraphSchema)
	str(`,"model":`, v.Model)
	str(`,"oracle":`, v.Oracle)
	str(`,"resolver":`, v.Resolver)
	str(`,"rule_set":`, v.RuleSet)
	str(`,"state_schema":`, v.StateSchema)
	str(`,"tool":`, v.Tool)
	str(`,"workflow":`, v.Workflow)
	return append(b, "}}"...), true
}
