// Package evidence keeps the controller from certifying itself.
//
//   - Tags at birth (R9): every evidence record carries tags the apparatus
//     cannot fake after the fact: independent or not, measured or a
//     target-absent fallback, settled or transient. A record counts only if
//     it is tagged and every tag clears; untagged evidence never counts.
//   - Two-layer calibration (R12): Layer 1 compares predictions with the
//     model's own later scores (self-consistency, never value evidence);
//     Layer 2 compares them with outcomes witnessed outside the model. They
//     live under different fields, and only Layer 2 clears value. A missing,
//     failed, author-controlled or self-witnessed Layer 2 fails closed.
//   - Grounded actuation (R16): the loop closes only on a typed witness from
//     outside the model: an action receipt verified by someone other than
//     the actor that proposed the action.
//   - Scheduled observer (R10): a scheduled tick counts as live only when it
//     changed observable state; a schedule that can only no-op disables itself.
package evidence

import (
	"flrh.dev/flrh/cjson"
)

// Tags are fixed when a record is created.
type Tags struct {
	Independent bool `json:"independent"` // produced by someone other than the party it judges
	Measured    bool `json:"measured"`    // measured, not a target-absent fallback
	Settled     bool `json:"settled"`     // settled, not transient
}

// Record is one piece of evidence.
type Record struct {
	ID       string `json:"id"`
	Producer string `json:"producer"`
	Subject  string `json:"subject"`
	Tags     *Tags  `json:"tags"` // nil: untagged
}

// Refusal reasons for evidence.
const (
	ReasonUntagged       = "UNTAGGED"
	ReasonNotIndependent = "NOT_INDEPENDENT"
	ReasonFallback       = "TARGET_ABSENT_FALLBACK"
	ReasonTransient      = "TRANSIENT"
	ReasonSelfProduced   = "SELF_PRODUCED" // tagged independent, but the producer is the subject
)

// Counts reports whether a record may count and, if not, why.
func Counts(r Record) (bool, string) {
	switch {
	case r.Tags == nil:
		return false, ReasonUntagged
	case !r.Tags.Independent:
		return false, ReasonNotIndependent
	case r.Producer == "" || r.Producer == r.Subject:
		return false, ReasonSelfProduced
	case !r.Tags.Measured:
		return false, ReasonFallback
	case !r.Tags.Settled:
		return false, ReasonTransient
	}
	return true, ""
}

// Refused is a record that did not count, with the reason.
type Refused struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Filter splits records into those that count and those refused, in order.
func Filter(rs []Record) (counted []Record, refused []Refused) {
	for _, r := range rs {
		if ok, why := Counts(r); ok {
			counted = append(counted, r)
		} else {
			refused = append(refused, Refused{r.ID, why})
		}
	}
	return counted, refused
}

// Layer1 is self-consistency: predictions against the model's own later
// scores. Cheap, run every cycle, and never value evidence.
type Layer1 struct {
	Predictions int64 `json:"predictions"`
	Agreements  int64 `json:"agreements"`
	Passed      bool  `json:"passed"`
}

// Layer2 is external calibration: predictions against witnessed outcomes.
type Layer2 struct {
	Witness  string   `json:"witness"`  // who witnessed the outcomes
	Passed   bool     `json:"passed"`   // predictions matched the witnessed outcomes
	Evidence []Record `json:"evidence"` // the witnessed outcome records
}

// Calibration keeps the two layers under different fields; they never share
// a label.
type Calibration struct {
	Model string `json:"model"` // the predictor's identity
	// AuthorControlled lists identities the model's authors control; a
	// witness among them is not external.
	AuthorControlled []string `json:"author_controlled"`
	Layer1           *Layer1  `json:"layer1_self_consistency"`
	Layer2           *Layer2  `json:"layer2_external_witness"`
}

// Calibration verdict reasons.
const (
	CalMissing         = "LAYER2_MISSING"
	CalFailed          = "LAYER2_FAILED"
	CalSelfWitnessed   = "LAYER2_SELF_WITNESSED"
	CalAuthorControl   = "LAYER2_AUTHOR_CONTROLLED"
	CalNoEvidence      = "LAYER2_NO_COUNTING_EVIDENCE"
	CalCleared         = "LAYER2_CLEARED"
	CalLayer1NotEnough = "LAYER1_IS_NEVER_VALUE_EVIDENCE"
)

// Verdict is the outcome of a calibration check.
type Verdict struct {
	ClearsValue bool   `json:"clears_value"`
	Reason      string `json:"reason"`
	// Layer1Consistent reports Layer 1 separately; it never affects
	// ClearsValue.
	Layer1Consistent bool `json:"layer1_consistent"`
}

// Check decides whether the calibration clears value. Only Layer 2 can,
// and every doubt fails closed.
func Check(c Calibration) Verdict {
	v := Verdict{Layer1Consistent: c.Layer1 != nil && c.Layer1.Passed}
	l2 := c.Layer2
	switch {
	case l2 == nil:
		v.Reason = CalMissing
		if v.Layer1Consistent {
			v.Reason = CalLayer1NotEnough
		}
		return v
	case l2.Witness == "" || l2.Witness == c.Model:
		v.Reason = CalSelfWitnessed
		return v
	case contains(c.AuthorControlled, l2.Witness):
		v.Reason = CalAuthorControl
		return v
	case !l2.Passed:
		v.Reason = CalFailed
		return v
	}
	n := 0
	for _, r := range l2.Evidence {
		if ok, _ := Counts(r); ok && r.Producer != c.Model && !contains(c.AuthorControlled, r.Producer) {
			n++
		}
	}
	if n == 0 {
		v.Reason = CalNoEvidence
		return v
	}
	v.ClearsValue, v.Reason = true, CalCleared
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// WitnessKindReceipt is the only witness kind that closes the loop.
const WitnessKindReceipt = "action_receipt"

// Witness is the typed external evidence an action happened.
type Witness struct {
	Kind          string `json:"kind"`
	ReceiptDigest string `json:"receipt_digest"`
	Producer      string `json:"producer"`    // who wrote the receipt (the destination, adapter)
	VerifiedBy    string `json:"verified_by"` // who verified it independently
	Verified      bool   `json:"verified"`
	Tags          *Tags  `json:"tags"`
}

// Loop-closure refusal reasons.
const (
	CloseWrongKind    = "NOT_AN_ACTION_RECEIPT"
	CloseBadDigest    = "RECEIPT_DIGEST_INVALID"
	CloseUnverified   = "NOT_VERIFIED"
	CloseSelfVerified = "VERIFIED_BY_ACTOR"
	CloseSelfProduced = "PRODUCED_BY_ACTOR"
)

// Closes reports whether a witness closes the loop for an action proposed
// by actor, and if not, why.
func Closes(w Witness, actor string) (bool, string) {
	switch {
	case w.Kind != WitnessKindReceipt:
		return false, CloseWrongKind
	case !cjson.ValidDigest(w.ReceiptDigest):
		return false, CloseBadDigest
	case !w.Verified || w.VerifiedBy == "":
		return false, CloseUnverified
	case w.VerifiedBy == actor:
		return false, CloseSelfVerified
	case w.Producer == "" || w.Producer == actor:
		return false, CloseSelfProduced
	}
	if ok, why := Counts(Record{ID: w.ReceiptDigest, Producer: w.Producer, Subject: actor, Tags: w.Tags}); !ok {
		return false, why
	}
	return true, ""
}

// Observer is the state of a scheduled entrypoint. The zero value is an
// enabled observer that disables itself after DefaultNoOpLimit no-op ticks.
type Observer struct {
	NoOpLimit   int64  `json:"noop_limit"` // 0 means DefaultNoOpLimit
	ConsecNoOps int64  `json:"consecutive_noops"`
	LiveTicks   int64  `json:"live_ticks"`
	Disabled    bool   `json:"disabled"`
	Reason      string `json:"reason"`
}

// DefaultNoOpLimit is how many consecutive no-op ticks disable a schedule.
const DefaultNoOpLimit = 3

// Observer reasons.
const (
	ObsLive          = "STATE_CHANGED"
	ObsNoOp          = "NO_OBSERVABLE_CHANGE"
	ObsOnlyNoOp      = "SCHEDULE_CAN_ONLY_NOOP"
	ObsNoOpLimit     = "NOOP_LIMIT_REACHED"
	ObsAlreadyFrozen = "DISABLED"
)

// Tick records one scheduled firing. before and after are digests of the
// observable state around the tick; canChange is false when nothing
// downstream of the loop can change (it can only no-op). It returns the
// next observer state and whether this tick counts as live.
func (o Observer) Tick(before, after string, canChange bool) (Observer, bool) {
	if o.Disabled {
		o.Reason = ObsAlreadyFrozen
		return o, false
	}
	limit := o.NoOpLimit
	if limit <= 0 {
		limit = DefaultNoOpLimit
	}
	if !canChange {
		o.Disabled, o.Reason = true, ObsOnlyNoOp
		return o, false
	}
	if before != after {
		o.ConsecNoOps = 0
		o.LiveTicks++
		o.Reason = ObsLive
		return o, true
	}
	o.ConsecNoOps++
	o.Reason = ObsNoOp
	if o.ConsecNoOps >= limit {
		o.Disabled, o.Reason = true, ObsNoOpLimit
	}
	return o, false
}
