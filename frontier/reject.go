package frontier

import (
	"fmt"
	"slices"
)

// Code is a closed RRejection code of the flrh-r-kernel/1 contract.
type Code string

// The rejection codes, exactly as the contract names them.
const (
	CodeMalformedReactiveState      Code = "MALFORMED_REACTIVE_STATE"
	CodeMalformedDataflowProfile    Code = "MALFORMED_DATAFLOW_PROFILE"
	CodeMalformedCommand            Code = "MALFORMED_COMMAND"
	CodeMalformedValueDelta         Code = "MALFORMED_VALUE_DELTA"
	CodeCanonicalizationViolation   Code = "CANONICALIZATION_VIOLATION"
	CodeUnsupportedContractVersion  Code = "UNSUPPORTED_CONTRACT_VERSION"
	CodeUnsupportedProfile          Code = "UNSUPPORTED_PROFILE"
	CodeUnsupportedStateSchema      Code = "UNSUPPORTED_STATE_SCHEMA"
	CodeUnsupportedProfileSchema    Code = "UNSUPPORTED_PROFILE_SCHEMA"
	CodeUnsupportedCommandSchema    Code = "UNSUPPORTED_COMMAND_SCHEMA"
	CodeUnsupportedValueDeltaSchema Code = "UNSUPPORTED_VALUE_DELTA_SCHEMA"
	CodeUnsupportedCanonicalization Code = "UNSUPPORTED_CANONICALIZATION"
	CodeProfileMismatch             Code = "PROFILE_MISMATCH"
	CodeDataflowVersionMismatch     Code = "DATAFLOW_VERSION_MISMATCH"
	CodeRuleSetVersionMismatch      Code = "RULE_SET_VERSION_MISMATCH"
	CodeUnknownFrontierSource       Code = "UNKNOWN_FRONTIER_SOURCE"
	CodeFrontierRegression          Code = "FRONTIER_REGRESSION"
	CodeLateDelta                   Code = "LATE_DELTA"
	CodeAmbiguousDeltaBatch         Code = "AMBIGUOUS_DELTA_BATCH"
	CodeUnknownDelivery             Code = "UNKNOWN_DELIVERY"
	CodeValueIdentityConflict       Code = "VALUE_IDENTITY_CONFLICT"
	CodeUnresolvedDependency        Code = "UNRESOLVED_DEPENDENCY"
	CodeInputLimitExceeded          Code = "INPUT_LIMIT_EXCEEDED"
	CodeQueueCapacityExceeded       Code = "QUEUE_CAPACITY_EXCEEDED"
	CodeDemandLimitExceeded         Code = "DEMAND_LIMIT_EXCEEDED"
	CodeInvariantViolation          Code = "INVARIANT_VIOLATION"
)

// Codes lists every rejection code in contract order.
var Codes = []Code{
	CodeMalformedReactiveState, CodeMalformedDataflowProfile, CodeMalformedCommand,
	CodeMalformedValueDelta, CodeCanonicalizationViolation, CodeUnsupportedContractVersion,
	CodeUnsupportedProfile, CodeUnsupportedStateSchema, CodeUnsupportedProfileSchema,
	CodeUnsupportedCommandSchema, CodeUnsupportedValueDeltaSchema, CodeUnsupportedCanonicalization,
	CodeProfileMismatch, CodeDataflowVersionMismatch, CodeRuleSetVersionMismatch,
	CodeUnknownFrontierSource, CodeFrontierRegression, CodeLateDelta, CodeAmbiguousDeltaBatch,
	CodeUnknownDelivery, CodeValueIdentityConflict, CodeUnresolvedDependency,
	CodeInputLimitExceeded, CodeQueueCapacityExceeded, CodeDemandLimitExceeded,
	CodeInvariantViolation,
}

// Context is the closed RRejectionContext. Absent members are left unset;
// Expected and Actual hold a string or an int64 when set.
type Context struct {
	Expected   any
	Actual     any
	SourceID   string
	DeliveryID string
	ValueKind  ValueKind
	Limit      *int64
	Observed   *int64
	Reason     string
}

// Rejection is an RRejection: the typed refusal of a command. A rejection
// never carries a next state; the prior state stays exactly as it was.
type Rejection struct {
	Code          Code
	Path          string // JSON Pointer into {prior_state, profile, command}
	LogicalTime   *int64 // the epoch concerned, when one is
	ProfileDigest string // the trusted profile digest, "" when none was trusted
	Context       Context
}

func (r *Rejection) Error() string {
	msg := fmt.Sprintf("frontier: %s at %q", r.Code, r.Path)
	if r.LogicalTime != nil {
		msg += fmt.Sprintf(" (logical time %d)", *r.LogicalTime)
	}
	if r.Context.Reason != "" {
		msg += ": " + r.Context.Reason
	}
	return msg
}

func reject(code Code, path string) *Rejection { return &Rejection{Code: code, Path: path} }

func (r *Rejection) at(t int64) *Rejection { r.LogicalTime = &t; return r }

func (r *Rejection) limit(limit, observed int64) *Rejection {
	r.Context.Limit, r.Context.Observed = &limit, &observed
	return r
}

func (r *Rejection) expect(expected, actual any) *Rejection {
	r.Context.Expected, r.Context.Actual = expected, actual
	return r
}

// MarshalJSON writes the RRejection wire object in canonical form.
func (r *Rejection) MarshalJSON() ([]byte, error) { return r.AppendCanonical(nil), nil }

// AppendCanonical appends the canonical RRejection bytes to b.
func (r *Rejection) AppendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = appendKey(b, "code", true)
	b = appendString(b, string(r.Code))
	b = appendKey(b, "context", false)
	b = r.Context.appendCanonical(b)
	b = appendKey(b, "contract_version", false)
	b = appendString(b, ContractVersion)
	b = appendKey(b, "kind", false)
	b = appendString(b, "RRejection")
	b = appendKey(b, "logical_time", false)
	if r.LogicalTime == nil {
		b = append(b, "null"...)
	} else {
		b = appendInt(b, *r.LogicalTime)
	}
	b = appendKey(b, "path", false)
	b = appendString(b, r.Path)
	b = appendKey(b, "profile_digest", false)
	if r.ProfileDigest == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, r.ProfileDigest)
	}
	b = appendKey(b, "schema_version", false)
	b = appendString(b, ResultSchema)
	return append(b, '}')
}

func appendScalar(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return appendString(b, x)
	case int64:
		return appendInt(b, x)
	default:
		return append(b, "null"...)
	}
}

func (c *Context) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	first := true
	member := func(key string) {
		b = appendKey(b, key, first)
		first = false
	}
	// Keys in sorted order: actual, delivery_id, expected, limit, observed,
	// reason, source_id, value_kind.
	if c.Actual != nil {
		member("actual")
		b = appendScalar(b, c.Actual)
	}
	if c.DeliveryID != "" {
		member("delivery_id")
		b = appendString(b, c.DeliveryID)
	}
	if c.Expected != nil {
		member("expected")
		b = appendScalar(b, c.Expected)
	}
	if c.Limit != nil {
		member("limit")
		b = appendInt(b, *c.Limit)
	}
	if c.Observed != nil {
		member("observed")
		b = appendInt(b, *c.Observed)
	}
	if c.Reason != "" {
		member("reason")
		b = appendString(b, c.Reason)
	}
	if c.SourceID != "" {
		member("source_id")
		b = appendString(b, c.SourceID)
	}
	if c.ValueKind != "" {
		member("value_kind")
		b = appendString(b, string(c.ValueKind))
	}
	return append(b, '}')
}

// knownCode reports whether c is one of the closed codes.
func knownCode(c Code) bool { return slices.Contains(Codes, c) }
