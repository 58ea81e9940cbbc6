package protocol

// CheckReceiptBinding reports whether a receipt is a receipt of the given
// intent: every member the two objects share must be equal. A receipt that
// names a different action, destination, authority, capability, approval,
// risk or idempotency key than its intent witnesses some other effect and is
// rejected with CodeReceiptBinding at the first differing member, in the
// fixed order below.
//
// It does not judge the outcome or validate the objects' shapes; call Check
// on each first.
func CheckReceiptBinding(intent EffectIntent, receipt ActionReceipt) error {
	type pair struct {
		member      string
		intent, rec string
	}
	ptr := func(p *string) string {
		if p == nil {
			return "\x00null"
		}
		return *p
	}
	boolStr := func(b bool) string {
		if b {
			return "true"
		}
		return "false"
	}
	pairs := []pair{
		{"intent_id", intent.IntentID, receipt.IntentID},
		{"action_digest", intent.ActionDigest, receipt.ActionDigest},
		{"cause_id", intent.CauseID, receipt.CauseID},
		{"correlation_id", intent.CorrelationID, receipt.CorrelationID},
		{"capability", intent.Capability, receipt.Capability},
		{"authority_digest", intent.AuthorityDigest, receipt.AuthorityDigest},
		{"destination_digest", intent.DestinationDigest, receipt.DestinationDigest},
		{"goal_id", intent.GoalID, receipt.GoalID},
		{"obligation_id", intent.ObligationID, receipt.ObligationID},
		{"adapter_version", intent.AdapterVersion, receipt.AdapterVersion},
		{"assessed_risk", intent.AssessedRisk, receipt.AssessedRisk},
		{"approval_required", boolStr(intent.ApprovalRequired), boolStr(receipt.ApprovalRequired)},
		{"approval_digest", ptr(intent.ApprovalDigest), ptr(receipt.ApprovalDigest)},
		{"idempotency_key", intent.IdempotencyKey, receipt.IdempotencyKey},
	}
	for _, p := range pairs {
		if p.intent != p.rec {
			return errorf(KindActionReceipt, CodeReceiptBinding, "/"+p.member,
				"the receipt's %s differs from its intent's", p.member)
		}
	}
	return nil
}
