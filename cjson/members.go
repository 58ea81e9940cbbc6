package cjson

import "strconv"

// Members writes an object's canonical bytes member by member, for callers
// that know their member names and give them in sorted order: the records
// written on every tick, whose reflective encoding would cost more than
// the record. Member names are the caller's own ASCII constants and are
// written raw; string values are checked as Encode checks them, and the
// first one refused is kept in Err (with its member's pointer) while the
// bytes go on, so a caller checks once at the end.
//
// The zero value writes into a nil buffer; set B to reuse one.
type Members struct {
	B     []byte
	Err   error
	first bool
}

// Open starts an object (the top level or a member's value).
func (w *Members) Open() { w.B = append(w.B, '{'); w.first = true }

// Close ends the innermost open object.
func (w *Members) Close() { w.B = append(w.B, '}'); w.first = false }

// Key writes a member's name and its colon, after a comma unless it is
// the first member of its object.
func (w *Members) Key(k string) {
	if !w.first {
		w.B = append(w.B, ',')
	}
	w.first = false
	w.B = append(w.B, '"')
	w.B = append(w.B, k...)
	w.B = append(w.B, '"', ':')
}

// Quote writes s as a string value of member k (or an item of its list),
// keeping the first refusal in Err, pointed at "/k". The pointer is built
// only for a refusal: Quote is on every tick's path.
func (w *Members) Quote(s, k string) {
	if Plain(s) {
		// Printable ASCII without '"' or '\\': valid, in NFC, verbatim.
		w.B = append(w.B, '"')
		w.B = append(w.B, s...)
		w.B = append(w.B, '"')
		return
	}
	var ascii bool
	w.B, ascii = AppendQuoted(w.B, s)
	if !ascii && w.Err == nil {
		if !stringOK(s) {
			w.Err = CheckString(s, "/"+k)
		}
	}
}

// Str writes a string member.
func (w *Members) Str(k, v string) { w.Key(k); w.Quote(v, k) }

// Int writes an integer member.
func (w *Members) Int(k string, v int64) { w.Key(k); w.B = strconv.AppendInt(w.B, v, 10) }

// Bool writes a boolean member.
func (w *Members) Bool(k string, v bool) { w.Key(k); w.B = strconv.AppendBool(w.B, v) }
