package evidence

import (
	"fmt"

	"flrh.dev/flrh/protocol"
)

// Receipt outcomes that settle what happened. An outcome_unknown receipt is
// transient: unknown is not success, and it never closes the loop.
const (
	OutcomeSuccess = "confirmed_success"
	OutcomeFailure = "confirmed_failure"
	OutcomeUnknown = "outcome_unknown"
)

// FromReceipt builds the loop-closing witness for a protocol ActionReceipt:
// the receipt must be a valid wire object (its digest is the one the store
// binds), producer names who wrote it (the adapter or destination), and
// verifiedBy names the independent verifier that checked it (verified
// reports its verdict). The tags are set at birth from the receipt itself:
// independent when producer and verifier differ, measured because a receipt
// is a destination's answer, settled unless the outcome is unknown.
// It also returns whether the outcome was a success.
func FromReceipt(r protocol.ActionReceipt, producer, verifiedBy string, verified bool) (Witness, bool, error) {
	d, err := protocol.Digest(r)
	if err != nil {
		return Witness{}, false, fmt.Errorf("evidence: receipt is not a valid wire object: %w", err)
	}
	w := Witness{
		Kind:          WitnessKindReceipt,
		ReceiptDigest: d,
		Producer:      producer,
		VerifiedBy:    verifiedBy,
		Verified:      verified,
		Tags: &Tags{
			Independent: producer != "" && verifiedBy != "" && producer != verifiedBy,
			Measured:    true,
			Settled:     r.Outcome == OutcomeSuccess || r.Outcome == OutcomeFailure,
		},
	}
	return w, r.Outcome == OutcomeSuccess, nil
}
