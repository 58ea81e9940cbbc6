// Package jsonread reads JSON text into Go values exactly as encoding/json
// would, where it can vouch for that, and says so when it cannot.
//
// Records flrh stores are canonical JSON (flrh-cjson/1: no whitespace,
// members in order, strings mostly without escapes), and the paths that
// read them back — verifying a run, re-deciding its ticks — read the same
// few structs many times. encoding/json reads them by reflection, token by
// token; this package reads the canonical form directly and gives up
// (ok false) on anything else: whitespace, escapes where a value is read,
// a key given twice or matching a field only case-insensitively, a number
// that is not an integer, a type that decodes itself. The caller then
// decodes the whole text with encoding/json, whose result and error stand.
// Whatever the package reads, encoding/json reads the same way and without
// error; its fuzz tests hold it to that.
//
// The package is pure: it reads only its arguments.
package jsonread
