package seam

import (
	"fmt"

	"flrh.dev/flrh/cjson"
)

// Code is a closed LRProjectionRejection code.
type Code string

// The rejection codes of flrh-lr-seam/1.
const (
	CodeMalformedLResult            Code = "MALFORMED_L_RESULT"
	CodeMalformedRuleBundle         Code = "MALFORMED_RULE_BUNDLE"
	CodeMalformedRProfile           Code = "MALFORMED_R_PROFILE"
	CodeMalformedBindingProfile     Code = "MALFORMED_BINDING_PROFILE"
	CodeMalformedQueryBatch         Code = "MALFORMED_QUERY_BATCH"
	CodeCanonicalizationViolation   Code = "CANONICALIZATION_VIOLATION"
	CodeUnsupportedContractVersion  Code = "UNSUPPORTED_CONTRACT_VERSION"
	CodeUnsupportedSchema           Code = "UNSUPPORTED_SCHEMA"
	CodeUnsupportedProfile          Code = "UNSUPPORTED_PROFILE"
	CodeUnsupportedCanonicalization Code = "UNSUPPORTED_CANONICALIZATION"
	CodeDigestMismatch              Code = "DIGEST_MISMATCH"
	CodeVersionMismatch             Code = "VERSION_MISMATCH"
	CodeProfileMismatch             Code = "PROFILE_MISMATCH"
	CodeQueryAtomNotDeclared        Code = "QUERY_ATOM_NOT_DECLARED"
	CodeFactStateNotFound           Code = "FACT_STATE_NOT_FOUND"
	CodePreconditionBindingMismatch Code = "PRECONDITION_BINDING_MISMATCH"
	CodeDuplicateProposal           Code = "DUPLICATE_PROPOSAL"
	CodeLimitExceeded               Code = "LIMIT_EXCEEDED"
	CodeInvariantViolation          Code = "INVARIANT_VIOLATION"
)

// Context is the closed rejection context. Unset members are omitted;
// Expected and Actual hold a string or an int64 when set.
type Context struct {
	Expected       any
	Actual         any
	Invariant      string
	ProposalID     string
	PreconditionID string
	SourceID       string
	TruthState     TruthState
	Limit          *int64
	Observed       *int64
}

// Rejection is an LRProjectionRejection. It carries only digests that were
// already validated when the problem was found; the others are empty
// (null on the wire), so a malformed input never echoes a caller's digest.
type Rejection struct {
	Code                 Code
	Path                 string
	LogicalTime          *int64
	BindingProfileDigest string
	LFixpointDigest      string
	QueryBatchDigest     string
	RProfileDigest       string
	Context              Context
}

func (r *Rejection) Error() string {
	msg := fmt.Sprintf("seam: %s at %q", r.Code, r.Path)
	if r.Context.Invariant != "" {
		msg += " (" + r.Context.Invariant + ")"
	}
	if r.Context.ProposalID != "" {
		msg += " for " + r.Context.ProposalID
	}
	return msg
}

func reject(code Code, path string) *Rejection { return &Rejection{Code: code, Path: path} }

func (r *Rejection) expect(expected, actual any) *Rejection {
	r.Context.Expected, r.Context.Actual = expected, actual
	return r
}

func (r *Rejection) limit(limit, observed int64) *Rejection {
	r.Context.Limit, r.Context.Observed = &limit, &observed
	return r
}

func (r *Rejection) invariant(name, proposalID string) *Rejection {
	r.Context.Invariant, r.Context.ProposalID = name, proposalID
	return r
}

// MarshalJSON writes the canonical LRProjectionRejection.
func (r *Rejection) MarshalJSON() ([]byte, error) { return r.AppendCanonical(nil), nil }

// AppendCanonical appends the canonical LRProjectionRejection bytes to b.
func (r *Rejection) AppendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = key(b, "binding_profile_digest", true)
	b = nullableString(b, r.BindingProfileDigest)
	b = key(b, "code", false)
	b = cjson.AppendString(b, string(r.Code))
	b = key(b, "context", false)
	b = r.Context.appendCanonical(b)
	b = key(b, "contract_version", false)
	b = cjson.AppendString(b, ContractVersion)
	b = key(b, "kind", false)
	b = cjson.AppendString(b, "LRProjectionRejection")
	b = key(b, "l_fixpoint_digest", false)
	b = nullableString(b, r.LFixpointDigest)
	b = key(b, "logical_time", false)
	if r.LogicalTime == nil {
		b = append(b, "null"...)
	} else {
		b = cjson.AppendInt(b, *r.LogicalTime)
	}
	b = key(b, "path", false)
	b = cjson.AppendString(b, r.Path)
	b = key(b, "query_batch_digest", false)
	b = nullableString(b, r.QueryBatchDigest)
	b = key(b, "r_profile_digest", false)
	b = nullableString(b, r.RProfileDigest)
	b = key(b, "schema_version", false)
	b = cjson.AppendString(b, ResultSchema)
	return append(b, '}')
}

func (c *Context) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	first := true
	member := func(k string) {
		b = key(b, k, first)
		first = false
	}
	scalar := func(v any) {
		switch x := v.(type) {
		case string:
			b = cjson.AppendString(b, x)
		case int64:
			b = cjson.AppendInt(b, x)
		default:
			b = append(b, "null"...)
		}
	}
	if c.Actual != nil {
		member("actual")
		scalar(c.Actual)
	}
	if c.Expected != nil {
		member("expected")
		scalar(c.Expected)
	}
	if c.Invariant != "" {
		member("invariant")
		b = cjson.AppendString(b, c.Invariant)
	}
	if c.Limit != nil {
		member("limit")
		b = cjson.AppendInt(b, *c.Limit)
	}
	if c.Observed != nil {
		member("observed")
		b = cjson.AppendInt(b, *c.Observed)
	}
	if c.PreconditionID != "" {
		member("precondition_id")
		b = cjson.AppendString(b, c.PreconditionID)
	}
	if c.ProposalID != "" {
		member("proposal_id")
		b = cjson.AppendString(b, c.ProposalID)
	}
	if c.SourceID != "" {
		member("source_id")
		b = cjson.AppendString(b, c.SourceID)
	}
	if c.TruthState != "" {
		member("truth_state")
		b = cjson.AppendString(b, string(c.TruthState))
	}
	return append(b, '}')
}

func key(b []byte, k string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func nullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return cjson.AppendString(b, s)
}
