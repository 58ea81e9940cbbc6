package verify

import (
	"encoding"
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
	nested []*structReader
}

func newStructReader(v any) *structReader {
	r := structReaderOf(reflect.TypeOf(v))
	if r == nil {
		panic("verify: structReader needs a struct with every field named by its json tag: " + reflect.TypeOf(v).String())
	}
	return r
}

// structReaderOf returns the reader of t, or nil if t is not a struct
// whose every field is exported and named by its json tag.
func structReaderOf(t reflect.Type) *structReader {
	if t.Kind() != reflect.Struct {
		return nil
	}
	r := &structReader{typ: t}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" || f.Anonymous {
			return nil
		}
		k := f.Type.Kind()
		// ",string" changes how encoding/json reads the value; only the
		// options that shape encoding leave decoding as it is.
		for _, o := range strings.Split(opts, ",") {
			if o != "" && o != "omitempty" && o != "omitzero" {
				k = reflect.Invalid
			}
		}
		var nested *structReader
		switch k {
		case reflect.Invalid:
		case reflect.String, reflect.Bool, reflect.Int64:
			if f.Type.PkgPath() != "" && f.Type.Kind() != reflect.String {
				k = reflect.Invalid // a named type may decode itself
			}
		case reflect.Pointer:
			if f.Type.Elem().Kind() != reflect.String || f.Type.Elem().PkgPath() != "" {
				k = reflect.Invalid
			}
		case reflect.Struct:
			if nested = structReaderOf(f.Type); nested == nil {
				k = reflect.Invalid
			}
		default:
			k = reflect.Invalid
		}
		if implementsUnmarshaler(f.Type) {
			k, nested = reflect.Invalid, nil
		}
		r.keys, r.fields, r.kinds, r.nested = append(r.keys, name), append(r.fields, i), append(r.kinds, k), append(r.nested, nested)
	}
	return r
}

// implementsUnmarshaler reports whether encoding/json hands t's values to
// a method of t's own (UnmarshalJSON, or UnmarshalText for a string).
func implementsUnmarshaler(t reflect.Type) bool {
	for _, u := range []reflect.Type{reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return true
		}
	}
	return false
}

// read decodes b into v, a pointer to a zero value of the reader's struct.
// On false v may be partly written: the caller starts again from zero.
func (r *structReader) read(b []byte, v any) bool {
	return r.readValue(b, reflect.ValueOf(v).Elem())
}

func (r *structReader) readValue(b []byte, s reflect.Value) bool {
	m, ok := members(b, r.keys...)
	if !ok {
		return false
	}
	for i, raw := range m {
		if raw == nil || string(raw) == "null" && r.kinds[i] != reflect.Invalid {
			// Absent, or null into a type without an UnmarshalJSON, which
			// encoding/json leaves as the zero value it finds (the target
			// is zero).
			continue
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
		case reflect.Int64:
			sc := newScan(raw)
			n := sc.int()
			if !sc.end() {
				return false
			}
			f.SetInt(n)
		case reflect.Pointer:
			str, ok := plainText(raw)
			if !ok {
				return false
			}
			f.Set(reflect.ValueOf(&str))
		case reflect.Struct:
			if !r.nested[i].readValue(raw, f) {
				return false
			}
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
