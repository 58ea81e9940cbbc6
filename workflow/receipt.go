package workflow

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"

	"flrh.dev/flrh/protocol"
)

// receiptOf reads what a tick takes from a receipt input, its intent id
// and outcome, exactly as json.Unmarshal into protocol.ActionReceipt reads
// them, error included. A receipt as the runner records it (cjson's
// encoding of the struct) is read by a scan that decodes nothing; any
// other text is left to encoding/json.
func receiptOf(body []byte) (intentID, outcome string, err error) {
	if id, out, ok := scanReceipt(body); ok {
		return id, out, nil
	}
	var rc protocol.ActionReceipt
	if err := json.Unmarshal(body, &rc); err != nil {
		return "", "", err
	}
	return rc.IntentID, rc.Outcome, nil
}

// What each member of protocol.ActionReceipt takes: a string, a string or
// null (a *string), a boolean, or a list of strings (protocol.DigestSet);
// and its bit in a scan's record of the members seen.
const (
	rcString = iota
	rcBool
	rcStrings
)

type receiptMember struct{ kind, bit int }

// receiptMembers are ActionReceipt's members by JSON name, read from the
// type itself so that a member added to it is known here too. nil — the
// scan reads nothing — if a member is of a type or has a tag option the
// scan does not know, or there are more members than bits.
var receiptMembers = func() map[string]receiptMember {
	t := reflect.TypeFor[protocol.ActionReceipt]()
	if t.NumField() > 32 {
		return nil
	}
	m := map[string]receiptMember{}
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("json")
		if !f.IsExported() || name == "" || name == "-" || strings.Contains(name, ",") ||
			reflect.PointerTo(f.Type).Implements(reflect.TypeFor[json.Unmarshaler]()) {
			return nil
		}
		kind := -1
		switch {
		case f.Type == reflect.TypeFor[string]() || f.Type == reflect.TypeFor[*string]():
			kind = rcString
		case f.Type == reflect.TypeFor[bool]():
			kind = rcBool
		case f.Type == reflect.TypeFor[protocol.DigestSet]():
			kind = rcStrings
		}
		if kind < 0 {
			return nil
		}
		m[name] = receiptMember{kind, i}
	}
	return m
}()

// scanReceipt reads a receipt only where json.Unmarshal is sure to accept
// it and to read the same values: one object, with no whitespace, of
// members of ActionReceipt each named exactly and at most once, each
// holding a value of its type or null (which encoding/json accepts for
// every member, leaving it empty), strings without escapes or control
// characters and in valid UTF-8 (then the decoded string is the text
// itself). Anything else gives ok false: an unknown or repeated member (a
// name only case-folding matches is unknown here), a number, a space.
func scanReceipt(b []byte) (intentID, outcome string, ok bool) {
	i := 0
	str := func() ([]byte, bool) {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		start := i + 1
		for j := start; j < len(b); j++ {
			switch c := b[j]; {
			case c == '"':
				s := b[start:j]
				if !utf8.Valid(s) {
					return nil, false
				}
				i = j + 1
				return s, true
			case c == '\\' || c < 0x20:
				return nil, false
			}
		}
		return nil, false
	}
	lit := func(w string) bool {
		if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
			i += len(w)
			return true
		}
		return false
	}
	if receiptMembers == nil || !lit("{") {
		return "", "", false
	}
	var seen uint32
	for first := true; ; first = false {
		if lit("}") {
			return intentID, outcome, i == len(b)
		}
		if !first && !lit(",") {
			return "", "", false
		}
		k, okk := str()
		if !okk || !lit(":") {
			return "", "", false
		}
		m, known := receiptMembers[string(k)]
		if !known || seen&(1<<m.bit) != 0 {
			return "", "", false
		}
		seen |= 1 << m.bit
		if lit("null") {
			continue
		}
		switch m.kind {
		case rcString:
			v, okv := str()
			if !okv {
				return "", "", false
			}
			switch string(k) {
			case "intent_id":
				intentID = string(v)
			case "outcome":
				outcome = string(v)
			}
		case rcBool:
			if !lit("true") && !lit("false") {
				return "", "", false
			}
		case rcStrings:
			if !lit("[") {
				return "", "", false
			}
			for n := 0; !lit("]"); n++ {
				if n > 0 && !lit(",") {
					return "", "", false
				}
				if _, okv := str(); !okv {
					return "", "", false
				}
			}
		}
	}
}
