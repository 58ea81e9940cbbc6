package protocol

import "fmt"

// Error codes of Validate. They are stable strings: tools and people branch
// on them. Canonical-encoding failures carry the flrh-cjson/1 code of the
// cjson package instead (for example FLOAT_FORBIDDEN or NON_NFC_STRING).
const (
	// CodeUnknownKind: the kind asked for, or found in the object, is not a
	// wire kind of this protocol version.
	CodeUnknownKind = "UNKNOWN_KIND"
	// CodeKindMismatch: the object's kind member differs from the kind asked for.
	CodeKindMismatch = "KIND_MISMATCH"
	// CodeNotObject: the JSON text is not an object.
	CodeNotObject = "NOT_AN_OBJECT"
	// CodeAuthorityField: an object produced below the authority (F, L or R)
	// carries a member only the authority may set, such as an assessed risk
	// or an effect idempotency key.
	CodeAuthorityField = "AUTHORITY_FIELD_FORBIDDEN"

	// Schema failures, by what is wrong.
	CodeMissingField = "MISSING_FIELD"     // a required member is absent
	CodeUnknownField = "UNKNOWN_FIELD"     // a member the closed shape does not have
	CodeWrongType    = "WRONG_TYPE"        // a member of the wrong JSON type
	CodeNotAllowed   = "VALUE_NOT_ALLOWED" // not one of the enumerated or constant values
	CodeMalformed    = "MALFORMED_VALUE"   // a string outside its pattern, length or format
	CodeOutOfRange   = "OUT_OF_RANGE"      // a number outside its bounds
	CodeEmptyObject  = "EMPTY_OBJECT"      // an object that must have members has none
	CodeDuplicate    = "DUPLICATE_ELEMENT" // a set-like array with a repeated element
	CodeSchema       = "SCHEMA_VIOLATION"  // any other schema failure

	// Cross-field rules.
	CodeHighRiskNeedsApproval  = "HIGH_RISK_REQUIRES_APPROVAL"
	CodeApprovalNeedsDigest    = "APPROVAL_REQUIRES_DIGEST"
	CodeUnrequiredApprovalBind = "UNREQUIRED_APPROVAL_HAS_DIGEST"
	CodeFalseEquivalence       = "FALSE_EQUIVALENCE_CLAIM"
	CodeBatchNotStable         = "BATCH_NOT_STABLE"
	CodeReceiptBinding         = "RECEIPT_BINDING_MISMATCH"
)

// Error is a validation failure: what (Code), where (Pointer, an RFC 6901
// JSON Pointer into the object, "/" for the object itself) and a human
// Detail that is not part of any contract.
type Error struct {
	Kind    string // the wire kind being validated, if known
	Code    string
	Pointer string
	Detail  string
}

func (e *Error) Error() string {
	s := "protocol: "
	if e.Kind != "" {
		s += e.Kind + ": "
	}
	s += fmt.Sprintf("%s at %s", e.Code, e.Pointer)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func errorf(kind, code, ptr, format string, args ...any) *Error {
	if ptr == "" {
		ptr = "/"
	}
	return &Error{Kind: kind, Code: code, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}
