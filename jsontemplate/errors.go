package jsontemplate

import "fmt"

// Error is a template, a condition or a document refused, or a document
// that does not give a template what it names.
type Error struct {
	// Where is the JSON pointer of the template's value (or the
	// condition's pointer) the refusal is about.
	Where  string
	Detail string
}

func (e *Error) Error() string {
	if e.Where != "" {
		return e.Where + ": " + e.Detail
	}
	return e.Detail
}

func refuse(where, format string, args ...any) *Error {
	return &Error{Where: where, Detail: fmt.Sprintf(format, args...)}
}
