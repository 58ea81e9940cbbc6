// Package unchanged views bytes that are never written again as a string,
// without copying them: for a pure package that keys a map by a document
// it handed out under the promise that nobody changes it
// (workflow.Result.State). It holds no state and reads no clock,
// randomness or I/O; unsafe is its whole point, kept here, in one
// function, rather than in the pure package.
package unchanged

import "unsafe"

// String returns a string holding b's bytes, sharing them. b must not be
// changed as long as the string (or any string cut from it) is in use:
// a string whose bytes change breaks the map that holds it as a key, and
// every comparison made with it.
func String(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
