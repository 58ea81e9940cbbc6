// Package label holds the rules of a run's labels: the names and values
// a person or a system gives a run when it starts it ("order=A-1042",
// "team=payments"), so that the run is found again by what it is for
// rather than by its id.
//
// A label is a key and a value. A key is 1 to 63 of a–z, 0–9 and ". _ /
// -", beginning and ending with a letter or digit; a value is 1 to 256
// bytes of UTF-8 in Unicode NFC holding no control character. A run has at most 16
// labels. Keys beginning "flrh." are flrh's own (the schedule or webhook
// that started a run): Check admits them, CheckGiven, what a caller may
// set, does not.
//
// Labels are not evidence. They ride with the run's header, not its
// event chain: they never reach F, L, R or H, a replay ignores them, and
// two runs with the same events but different labels verify alike. They
// are fixed when the run is created.
//
// The package is pure.
package label
