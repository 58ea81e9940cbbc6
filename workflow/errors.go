package workflow

import "fmt"

// Error codes of a bad bundle.
const (
	CodeMissingFile     = "MISSING_FILE"     // a file the bundle names is not there
	CodeMalformed       = "MALFORMED"        // not the shape workflow.json requires
	CodeBadDomain       = "BAD_DOMAIN"       // the declarative domain does not load
	CodeBadRules        = "BAD_RULES"        // rules.dl does not parse or check
	CodeBadGates        = "BAD_GATES"        // the gate policy does not compile
	CodeBadCapability   = "BAD_CAPABILITY"   // a capability chain does not verify
	CodeBadBinding      = "BAD_BINDING"      // a fact, eligibility or completion mapping does not fit the rules
	CodeVersionMismatch = "VERSION_MISMATCH" // the version envelope disagrees with a component
	CodeBadController   = "BAD_CONTROLLER"   // the AIF controller's model does not decode
	CodeBadLoop         = "BAD_LOOP"         // the loop section does not fit the loop contract
	CodeKeyMismatch     = "KEY_MISMATCH"     // the key signing capabilities is not the bundle's operator key
	CodeBadTest         = "BAD_TEST"         // a policy test file (package policytest) cannot be read
)

// Error is a bundle that cannot be compiled: which file, where in it (a
// JSON Pointer, or line:col for Datalog), and what is wrong.
type Error struct {
	Code    string `json:"code"`
	File    string `json:"file"`
	Pointer string `json:"pointer,omitempty"`
	// Line and Column, 1-based, are where in a file written in YAML the
	// value at Pointer was written; 0 in any other file.
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Detail string `json:"detail"`
}

func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where += fmt.Sprintf(":%d", e.Line)
		if e.Column > 0 {
			where += fmt.Sprintf(":%d", e.Column)
		}
	}
	if e.Pointer != "" {
		where += " at " + e.Pointer
	}
	return fmt.Sprintf("workflow bundle: %s: %s: %s", where, e.Code, e.Detail)
}

func bundleErr(code, file, ptr, format string, args ...any) *Error {
	return &Error{Code: code, File: file, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}
