package cjson

import "fmt"

// Code names why a value is outside flrh-cjson/1. Codes are stable strings:
// they appear in rejections that are themselves hashed and persisted.
type Code string

// The rejection codes. The names follow the reference canonicalizer where it
// defines one, so rejections agree across implementations.
const (
	CodeSyntax             Code = "INVALID_JSON"           // not JSON text at all
	CodeInvalidUTF8        Code = "INVALID_UTF8"           // bytes that are not UTF-8, or a BOM
	CodeNonScalar          Code = "NON_UNICODE_SCALAR"     // an escaped lone surrogate
	CodeFloat              Code = "FLOAT_FORBIDDEN"        // a fraction, exponent, NaN or Infinity
	CodeNegativeZero       Code = "NEGATIVE_ZERO"          // -0
	CodeIntRange           Code = "INTEGER_OUTSIDE_INT64"  // an integer outside int64
	CodeNonNFC             Code = "NON_NFC_STRING"         // a string value not in NFC
	CodeNonNFCKey          Code = "NON_NFC_OBJECT_KEY"     // an object key not in NFC
	CodeNonASCIIKey        Code = "NON_ASCII_OBJECT_KEY"   // an object key with non-ASCII characters
	CodeNonStringKey       Code = "NON_STRING_OBJECT_KEY"  // a Go map whose keys are not strings
	CodeDuplicateKey       Code = "DUPLICATE_OBJECT_KEY"   // the same key twice in one object
	CodeDuplicateSet       Code = "DUPLICATE_SET_ELEMENT"  // a set-like array with equal elements
	CodeNestingDepth       Code = "NESTING_DEPTH_EXCEEDED" // containers nested MaxDepth deep or more
	CodeUnsupportedType    Code = "UNSUPPORTED_JSON_TYPE"  // a Go value with no JSON form here
	CodeTrailingData       Code = "TRAILING_DATA"          // more input after the value
	CodeInvalidID          Code = "INVALID_ID"             // an identifier outside the id pattern
	CodeInvalidDigestValue Code = "INVALID_DIGEST"         // not sha256:<64 lowercase hex>
)

// Error reports a value outside flrh-cjson/1.
type Error struct {
	Code    Code   // why
	Pointer string // where, as an RFC 6901 JSON Pointer ("/" for the root)
	Detail  string // a human explanation; not part of any digest
	Offset  int    // byte offset in the input text, or -1 for Go values
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("cjson: %s at %s", e.Code, e.Pointer)
	if e.Offset >= 0 {
		msg += fmt.Sprintf(" (byte %d)", e.Offset)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func errAt(code Code, ptr string, off int, format string, args ...any) *Error {
	if ptr == "" {
		ptr = "/"
	}
	return &Error{Code: code, Pointer: ptr, Detail: fmt.Sprintf(format, args...), Offset: off}
}
