package effect

import (
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// receiptConforms reports that r, encoded, is an ActionReceipt the
// protocol's schema accepts, read from its typed members: every id and
// version matches its pattern and length, every digest is sha256 and 64
// lowercase hex digits, the risk and the outcome are among their values,
// the output digests are distinct digests, the time is an RFC 3339
// date-time, and the approval binding holds. It says yes only where
// protocol.Validate of r's encoding says yes (TestReceiptConformsOnlyWhereValid);
// false is no verdict, and the caller validates the bytes, which gives the
// schema's own error.
func receiptConforms(r *protocol.ActionReceipt) bool {
	if r.Kind != protocol.KindActionReceipt {
		return false
	}
	for _, s := range [...]string{r.IntentID, r.CauseID, r.CorrelationID, r.Capability, r.GoalID,
		r.ObligationID, r.AttemptID, r.IdempotencyKey} {
		if !cjson.ValidID(s) {
			return false
		}
	}
	for _, s := range [...]string{r.ActionDigest, r.CommandDigest, r.InputRootDigest, r.PlatformDigest,
		r.AuthorityDigest, r.DestinationDigest} {
		if !cjson.ValidDigest(s) {
			return false
		}
	}
	if !cjson.ValidVersion(r.AdapterVersion) {
		return false
	}
	switch r.AssessedRisk {
	case protocol.RiskReadOnly, protocol.RiskReversible:
	case protocol.RiskHighRiskExternal:
		if !r.ApprovalRequired {
			return false
		}
	default:
		return false
	}
	if r.ApprovalRequired != (r.ApprovalDigest != nil) {
		return false
	}
	if r.ApprovalDigest != nil && !cjson.ValidDigest(*r.ApprovalDigest) {
		return false
	}
	if r.TraceRef != nil && !cjson.ValidID(*r.TraceRef) {
		return false
	}
	switch r.Outcome {
	case protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure, protocol.OutcomeUnknown:
	default:
		return false
	}
	for i, d := range r.OutputDigests {
		if !cjson.ValidDigest(d) {
			return false
		}
		for _, e := range r.OutputDigests[:i] {
			if e == d {
				return false
			}
		}
	}
	return protocol.ValidTimestamp(r.RecordedAt)
}
