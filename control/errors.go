package control

import (
	"errors"
	"fmt"

	"flrh.dev/flrh/cjson"
)

// Code names why a table, contract, trace file or value was refused. Codes
// are stable strings: scripts and stored reports compare them.
type Code string

// Load and decode error codes. Every one is reported with the JSON pointer of
// the offending value.
const (
	CodeSyntax      Code = "SYNTAX"      // not strict flrh-cjson/1 JSON text (wraps *cjson.Error)
	CodeSchema      Code = "SCHEMA"      // wrong type, missing or unknown member, bad pattern
	CodeFormat      Code = "FORMAT"      // the format/version marker is not the one this code reads
	CodeDuplicate   Code = "DUPLICATE"   // a state, event, transition, guard or effect declared twice
	CodeUnknownRef  Code = "UNKNOWN_REF" // a reference to an undeclared state, event, guard, effect or context field
	CodeUnreachable Code = "UNREACHABLE" // a state no path from the initial state reaches
	CodeAmbiguous   Code = "AMBIGUOUS"   // two transitions could fire for one (state, event, guard)
	CodeAuthority   Code = "AUTHORITY"   // an event without an authority pair, or an untrusted one
	CodeOutcome     Code = "OUTCOME"     // final-state outcome categories missing, repeated or misplaced
	CodeFinal       Code = "FINAL_EXIT"  // a transition leaving a final state
	CodeInterrupt   Code = "INTERRUPT"   // a malformed global-interrupt declaration
	CodeSafety      Code = "SAFETY"      // the table violates one of the five safety properties
	CodeBinding     Code = "BINDING"     // the loop contract does not match the machine it binds
	CodeLimit       Code = "LIMIT"       // a contract number out of its admissible range
	CodeInput       Code = "INPUT"       // an argument to a pure function is out of range
)

// Error is a typed refusal: a code, where (a JSON pointer, and the file when
// known) and a human explanation.
type Error struct {
	Code    Code
	File    string // the file the value came from, when known
	Pointer string // RFC 6901 JSON pointer; "" means the whole document
	Detail  string
	Err     error // the underlying error, e.g. a *cjson.Error
}

func (e *Error) Error() string {
	where := e.Pointer
	if where == "" {
		where = "/"
	}
	if e.File != "" {
		where = e.File + ":" + where
	}
	return fmt.Sprintf("control: %s at %s: %s", e.Code, where, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(code Code, ptr, format string, args ...any) *Error {
	return &Error{Code: code, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}

// withFile stamps a file name onto a typed error, leaving others untouched.
func withFile(err error, file string) error {
	var e *Error
	if file != "" && errors.As(err, &e) && e.File == "" {
		c := *e
		c.File = file
		return &c
	}
	return err
}

// decodeStrict parses text with the strict canonical decoder and converts a
// decoding failure into a typed SYNTAX error that keeps the pointer.
func decodeStrict(text []byte) (any, error) {
	v, err := cjson.Decode(text)
	if err != nil {
		var ce *cjson.Error
		if errors.As(err, &ce) {
			ptr := ce.Pointer
			if ptr == "/" {
				ptr = ""
			}
			return nil, &Error{Code: CodeSyntax, Pointer: ptr, Detail: fmt.Sprintf("%s (byte %d): %s", ce.Code, ce.Offset, ce.Detail), Err: err}
		}
		return nil, &Error{Code: CodeSyntax, Detail: err.Error(), Err: err}
	}
	return v, nil
}
