package effect

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// ProtocolOutcome maps an attempt's outcome to the outcome of an
// ActionReceipt. A transient failure has none: it closes nothing, the effect
// is retried (same key, same content) or, once retries are spent,
// reconciled before any failure receipt may be minted.
func (r Receipt) ProtocolOutcome() (string, bool) {
	switch r.Outcome {
	case Succeeded:
		return protocol.OutcomeConfirmedSuccess, true
	case FailedPermanent:
		return protocol.OutcomeConfirmedFailure, true
	case Unknown:
		return protocol.OutcomeUnknown, true
	}
	return "", false
}

// ProtocolOutcome maps a lookup's status to the outcome of an
// ActionReceipt. Only confirmed statuses have one: still-unknown and
// human-required leave the effect pending.
func (r LookupResult) ProtocolOutcome() (string, bool) {
	switch r.Status {
	case ConfirmedSuccess:
		return protocol.OutcomeConfirmedSuccess, true
	case ConfirmedFailure:
		return protocol.OutcomeConfirmedFailure, true
	}
	return "", false
}

// ReceiptBinding is the part of a receipt fixed when the intent was
// committed, before any adapter I/O.
type ReceiptBinding struct {
	CommandDigest   string
	InputRootDigest string
	PlatformDigest  string
}

// Observation is what one attempt or lookup witnessed, as the receipt
// records it.
type Observation struct {
	AttemptID     string
	Outcome       string   // a protocol outcome, see ProtocolOutcome
	OutputDigests []string // digests of the destination's evidence
	TraceRef      *string
	RecordedAt    string // RFC 3339, from the caller's clock reading
}

// NewActionReceipt builds the protocol ActionReceipt of one observation of
// an intent. The receipt repeats every binding member of the intent; the
// result is validated (protocol.Check) and checked against the intent
// (protocol.CheckReceiptBinding) before it is returned, so a receipt that
// could be refused on re-read is never produced.
func NewActionReceipt(e protocol.EffectIntent, b ReceiptBinding, o Observation) (protocol.ActionReceipt, error) {
	c, err := NewCheckedActionReceipt(e, b, o)
	return c.Receipt, err
}

// CheckedReceipt is a receipt with what its check made of it: its canonical
// bytes (what cjson.Marshal writes of it) and their cjson value.
type CheckedReceipt struct {
	Receipt   protocol.ActionReceipt
	Canonical []byte
	Value     any // cjson.Decode(Canonical), the caller's to keep
}

// NewCheckedActionReceipt is NewActionReceipt that also returns the bytes
// and the value protocol.Check's validation works on. A caller that records
// the receipt would otherwise encode it again and decode those bytes again.
func NewCheckedActionReceipt(e protocol.EffectIntent, b ReceiptBinding, o Observation) (CheckedReceipt, error) {
	return newCheckedActionReceipt(e, b, o, true)
}

// NewCanonicalActionReceipt is NewCheckedActionReceipt for a caller that
// keeps the canonical bytes and not the value (Value is nil): the bytes
// are validated as text (protocol.Validate), which gives the verdict and
// the error that validating their decoded value gives, without decoding
// them where the kind's schema can be checked on the text.
func NewCanonicalActionReceipt(e protocol.EffectIntent, b ReceiptBinding, o Observation) (CheckedReceipt, error) {
	return newCheckedActionReceipt(e, b, o, false)
}

func newCheckedActionReceipt(e protocol.EffectIntent, b ReceiptBinding, o Observation, value bool) (CheckedReceipt, error) {
	out := slices.Clone(o.OutputDigests)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	r := protocol.ActionReceipt{
		Kind: protocol.KindActionReceipt, IntentID: e.IntentID, ActionDigest: e.ActionDigest,
		CommandDigest: b.CommandDigest, InputRootDigest: b.InputRootDigest, PlatformDigest: b.PlatformDigest,
		CauseID: e.CauseID, CorrelationID: e.CorrelationID, Capability: e.Capability,
		AuthorityDigest: e.AuthorityDigest, DestinationDigest: e.DestinationDigest, GoalID: e.GoalID,
		ObligationID: e.ObligationID, AdapterVersion: e.AdapterVersion, AssessedRisk: e.AssessedRisk,
		ApprovalRequired: e.ApprovalRequired, ApprovalDigest: e.ApprovalDigest, AttemptID: o.AttemptID,
		IdempotencyKey: e.IdempotencyKey, OutputDigests: out, Outcome: o.Outcome,
		TraceRef: o.TraceRef, RecordedAt: o.RecordedAt,
	}
	if r.ApprovalDigest != nil {
		d := *r.ApprovalDigest
		r.ApprovalDigest = &d
	}
	if r.TraceRef != nil {
		t := *r.TraceRef
		r.TraceRef = &t
	}
	if o.Outcome == protocol.OutcomeConfirmedSuccess && len(out) == 0 {
		return CheckedReceipt{}, fmt.Errorf("effect: a confirmed success names the destination evidence it rests on; output digests are empty")
	}
	// protocol.Check, keeping what it makes on the way.
	canon, err := marshalReceipt(&r)
	if err != nil {
		return CheckedReceipt{}, err
	}
	var v any
	if value {
		if v, err = cjson.Decode(canon); err != nil {
			return CheckedReceipt{}, err
		}
	}
	// A receipt whose typed members conform is one the schema accepts
	// (receiptConforms); any other is validated, for the schema's verdict
	// and its error.
	if !receiptConforms(&r) {
		if value {
			err = protocol.ValidateValue(r.WireKind(), v)
		} else {
			err = protocol.Validate(r.WireKind(), canon)
		}
		if err != nil {
			return CheckedReceipt{}, err
		}
	}
	if err := protocol.CheckReceiptBinding(e, r); err != nil {
		return CheckedReceipt{}, err
	}
	return CheckedReceipt{Receipt: r, Canonical: canon, Value: v}, nil
}
