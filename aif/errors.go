package aif

import "fmt"

// Code names why a model, an observation or a count file was refused. Codes
// are stable strings; callers branch on them.
type Code string

// Rejection codes.
const (
	CodeSyntax        Code = "AIF_SYNTAX"         // the file is not JSON of the expected form
	CodeMissing       Code = "AIF_MISSING"        // a required member is absent
	CodeShape         Code = "AIF_SHAPE_MISMATCH" // an array has the wrong length or nesting
	CodeNotNormalized Code = "AIF_NOT_NORMALIZED" // a distribution does not sum to 1 (±1e-6)
	CodeNegative      Code = "AIF_NEGATIVE"       // a probability or count below zero
	CodeNotFinite     Code = "AIF_NOT_FINITE"     // NaN or ±Inf
	CodeNumber        Code = "AIF_BAD_NUMBER"     // not representable at the 1e-9 fixed-point scale
	CodeRange         Code = "AIF_OUT_OF_RANGE"   // a parameter outside its allowed interval
	CodeName          Code = "AIF_BAD_NAME"       // an empty, duplicate or malformed name
	CodePolicy        Code = "AIF_BAD_POLICY"     // a policy names an action that does not exist
	CodeObservation   Code = "AIF_BAD_OBSERVATION"
	CodeLimit         Code = "AIF_LIMIT_EXCEEDED" // the model is larger than the stated limits
)

// Error is a typed rejection with the JSON Pointer of the offending value
// (relative to the model document, or to the Go Model's exported fields,
// which use the same names).
type Error struct {
	Code    Code
	Pointer string
	Detail  string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("aif: %s at %s", e.Code, e.Pointer)
	}
	return fmt.Sprintf("aif: %s at %s: %s", e.Code, e.Pointer, e.Detail)
}

func errf(code Code, ptr, format string, args ...any) *Error {
	return &Error{Code: code, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}
