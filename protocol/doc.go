// Package protocol defines the wire objects that cross flrh's boundaries —
// accepted events, fact deltas, effect proposals, eligibility verdicts,
// stable proposal batches, effect intents, action receipts and the graph
// objects — together with the JSON Schemas (draft 2020-12) that close their
// shapes and the cross-field rules a schema alone does not say well.
//
// The Go types carry json tags that are exactly the wire member names, so a
// value marshalled through flrh-cjson/1 has the same canonical bytes, and
// therefore the same digest, as the object it was decoded from.
//
// Validate is the boundary check: every object that enters the runtime from
// outside (API input, store read, adapter output) goes through it, and a
// failure is a *Error naming a stable code and the JSON Pointer of the
// offending value. Decode validates and then decodes into the Go type.
//
// The schemas are also compiled into plain checks that only answer "valid"
// (fast.go, and for flat kinds over the text itself, fasttext.go); a value
// they do not accept goes to the JSON Schema validator, which decides and
// produces the error, so verdicts and errors are the schema's either way.
//
// The package is pure: it reads no clock, environment, file or network.
// The schemas are embedded in the binary.
package protocol
