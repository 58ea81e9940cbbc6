package effect

import (
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// marshalReceipt is cjson.Marshal(*r): written member by member where
// appendReceipt can, through cjson's reflection otherwise (which also
// words any refusal).
func marshalReceipt(r *protocol.ActionReceipt) ([]byte, error) {
	if b, ok := appendReceipt(make([]byte, 0, receiptSize(r)), r); ok {
		return b, nil
	}
	return cjson.Marshal(*r)
}

// receiptStrings are r's string members other than the two optional ones
// and the output digests, in no particular order.
func receiptStrings(r *protocol.ActionReceipt) [19]string {
	return [19]string{r.Kind, r.IntentID, r.ActionDigest, r.CommandDigest, r.InputRootDigest,
		r.PlatformDigest, r.CauseID, r.CorrelationID, r.Capability, r.AuthorityDigest,
		r.DestinationDigest, r.GoalID, r.ObligationID, r.AdapterVersion, r.AssessedRisk,
		r.AttemptID, r.IdempotencyKey, r.Outcome, r.RecordedAt}
}

// receiptSize is the length of appendReceipt's bytes for r when every
// string is plain, give or take the room left for keys and punctuation.
func receiptSize(r *protocol.ActionReceipt) int {
	n := 560 // the keys, quotes and separators, with room to spare
	for _, s := range receiptStrings(r) {
		n += len(s)
	}
	for _, d := range r.OutputDigests {
		n += len(d) + 3
	}
	if r.ApprovalDigest != nil {
		n += len(*r.ApprovalDigest)
	}
	if r.TraceRef != nil {
		n += len(*r.TraceRef)
	}
	return n
}

// appendReceipt appends the bytes cjson.Marshal writes for r, without the
// encoder's reflection, when r is of the receipt kind (whose output
// digests are a set), every string in it is plain (its encoding is itself
// between quotes, and it is NFC) and its output digests are distinct. ok
// is false otherwise (b is then to be dropped). TestReceiptEncodingMatchesMarshal
// holds the bytes to cjson.Marshal's.
func appendReceipt(b []byte, r *protocol.ActionReceipt) ([]byte, bool) {
	if r.Kind != protocol.KindActionReceipt {
		return b, false
	}
	for _, s := range receiptStrings(r) {
		if !cjson.Plain(s) {
			return b, false
		}
	}
	if r.ApprovalDigest != nil && !cjson.Plain(*r.ApprovalDigest) || r.TraceRef != nil && !cjson.Plain(*r.TraceRef) {
		return b, false
	}
	// Members in byte order of their keys; every key is plain ASCII.
	str := func(member, s string) {
		b = append(b, member...)
		b = cjson.AppendChecked(b, s)
	}
	opt := func(member string, s *string) {
		b = append(b, member...)
		if s == nil {
			b = append(b, "null"...)
		} else {
			b = cjson.AppendChecked(b, *s)
		}
	}
	str(`{"action_digest":`, r.ActionDigest)
	str(`,"adapter_version":`, r.AdapterVersion)
	opt(`,"approval_digest":`, r.ApprovalDigest)
	if r.ApprovalRequired {
		b = append(b, `,"approval_required":true`...)
	} else {
		b = append(b, `,"approval_required":false`...)
	}
	str(`,"assessed_risk":`, r.AssessedRisk)
	str(`,"attempt_id":`, r.AttemptID)
	str(`,"authority_digest":`, r.AuthorityDigest)
	str(`,"capability":`, r.Capability)
	str(`,"cause_id":`, r.CauseID)
	str(`,"command_digest":`, r.CommandDigest)
	str(`,"correlation_id":`, r.CorrelationID)
	str(`,"destination_digest":`, r.DestinationDigest)
	str(`,"goal_id":`, r.GoalID)
	str(`,"idempotency_key":`, r.IdempotencyKey)
	str(`,"input_root_digest":`, r.InputRootDigest)
	str(`,"intent_id":`, r.IntentID)
	str(`,"kind":`, r.Kind)
	str(`,"obligation_id":`, r.ObligationID)
	str(`,"outcome":`, r.Outcome)
	b = append(b, `,"output_digests":`...)
	var ok bool
	if b, ok = cjson.AppendPlainSet(b, r.OutputDigests); !ok {
		return b, false
	}
	str(`,"platform_digest":`, r.PlatformDigest)
	str(`,"recorded_at":`, r.RecordedAt)
	opt(`,"trace_ref":`, r.TraceRef)
	return append(b, '}'), true
}
