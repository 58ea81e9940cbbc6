package verify

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"
)

// structReader decodes a JSON object into a struct as encoding/json does,
// reading plain strings, booleans and nullable strings itself and handing
// every other member to encoding/json on its own. It reads only text the
// member reader accepts (no key repeated or matching a field only
// case-insensitively, no key that is not ASCII), which encoding/json reads
// member by member exactly so; wherever it cannot vouch for its result
// (ok false) the caller decodes the whole text with encoding/json, whose
// result and error stand.
type structReader struct {
	typ    reflect.Type
	keys   []string
	fields []int
	kinds  []reflect.Kind // reflect.Pointer: a *string
}

func newStructReader(v any) *structReader {
	t := reflect.TypeOf(v)
	r := &structReader{typ: t}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			panic("verify: structReader needs every field named by its json tag: " + t.String() + "." + f.Name)
		}
		k := f.Type.Kind()
		if k == reflect.Pointer && f.Type.Elem().Kind() != reflect.String {
			k = reflect.Invalid
		}
		r.keys, r.fields, r.kinds = append(r.keys, name), append(r.fields, i), append(r.kinds, k)
	}
	return r
}

// read decodes b into v, a pointer to a zero value of the reader's struct.
// On false v may be partly written: the caller starts again from zero.
func (r *structReader) read(b []byte, v any) bool {
	m, ok := members(b, r.keys...)
	if !ok {
		return false
	}
	s := reflect.ValueOf(v).Elem()
	for i, raw := range m {
		if raw == nil {
			continue // absent: encoding/json leaves the zero value
		}
		f := s.Field(r.fields[i])
		switch r.kinds[i] {
		case reflect.String:
			str, ok := plainText(raw)
			if !ok {
				return false
			}
			f.SetString(str)
		case reflect.Bool:
			switch string(raw) {
			case "true":
				f.SetBool(true)
			case "false":
			default:
				return false
			}
		case reflect.Pointer:
			if string(raw) == "null" {
				continue
			}
			str, ok := plainText(raw)
			if !ok {
				return false
			}
			f.Set(reflect.ValueOf(&str))
		default:
			if json.Unmarshal(raw, f.Addr().Interface()) != nil {
				return false
			}
		}
	}
	return true
}

// plainText reads a JSON string without escapes whose bytes are valid
// UTF-8: encoding/json reads it as exactly those bytes.
func plainText(b []byte) (string, bool) {
	str, ok := plainString(b)
	return str, ok && utf8.ValidString(str)
}
