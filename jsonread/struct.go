package jsonread

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Reader decodes a JSON object into a struct as encoding/json does,
// reading plain strings, booleans, integers, nullable strings, lists of
// strings and nested structs of such members itself and handing every
// other member to encoding/json on its own. It reads only text Members
// accepts (no key repeated or matching a field only case-insensitively, no
// key that is not ASCII), which encoding/json reads member by member
// exactly so; wherever it cannot vouch for its result (Read false) the
// caller decodes the whole text with encoding/json, whose result and error
// stand.
type Reader struct {
	typ    reflect.Type
	keys   []string
	fields []int
	kinds  []reflect.Kind // reflect.Pointer: a *string; reflect.Slice: a list of strings
	nested []*Reader
	index  *keyIndex // keys, indexed
	// keep says which members Read stores; nil: every one. A member not
	// kept is read as closely as a kept one, so that Read accepts exactly
	// the same text, but left zero.
	keep []bool
	// strict: read as a json.Decoder with DisallowUnknownFields reads,
	// refusing a member no field names (Strict).
	strict bool
	// oneCopy: the strings read are cut from one copy of the text
	// (OneCopy).
	oneCopy bool
}

// NewReader returns the reader of v's type, a struct every field of which
// is exported and named by its json tag. It panics on any other type: the
// types a program reads are fixed when it is written.
func NewReader(v any) *Reader {
	r := readerOf(reflect.TypeOf(v))
	if r == nil {
		panic("jsonread: a Reader needs a struct with every field named by its json tag: " + reflect.TypeOf(v).String())
	}
	return r
}

// Keeping returns a reader that accepts what r accepts but stores only the
// named members (by their JSON names), for a caller that needs a few
// members of a record yet must refuse, as encoding/json would, a record
// any member of which is wrong.
func (r *Reader) Keeping(names ...string) *Reader {
	k := *r
	k.keep = make([]bool, len(r.keys))
	for i, key := range r.keys {
		for _, n := range names {
			k.keep[i] = k.keep[i] || key == n
		}
	}
	return &k
}

// Strict returns a reader that reads as a json.Decoder with
// DisallowUnknownFields (and UseNumber, which changes nothing it reads)
// does: an object, or a nested one, with a member no field names is not
// read, and neither is one with a member r would hand to encoding/json, so
// that Read answers only for text read entirely here. Read false leaves the
// text to the strict decoder, whose result and error stand.
func (r *Reader) Strict() *Reader {
	k := *r
	k.strict = true
	return &k
}

// OneCopy returns a reader that reads what r reads, but copies the text
// once and cuts every string it reads from that copy, instead of making
// one string per member: one allocation for a record of many short
// strings, which then keep the whole copy alive.
func (r *Reader) OneCopy() *Reader {
	k := *r
	k.oneCopy = true
	return &k
}

// source is the text a one-copy reader reads and its copy; a member's
// bytes are a slice of b, and where they sit in it is what their
// capacity says.
type source struct {
	b    []byte
	text string
}

// cut returns the copy's string of raw, a slice of src.b.
func (src *source) cut(raw []byte) string {
	off := cap(src.b) - cap(raw)
	return src.text[off : off+len(raw)]
}

// readerOf returns the reader of t, or nil if t is not a struct whose
// every field is exported and named by its json tag.
func readerOf(t reflect.Type) *Reader {
	if t.Kind() != reflect.Struct {
		return nil
	}
	r := &Reader{typ: t}
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
		var nested *Reader
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
		case reflect.Slice:
			if f.Type.Elem() != reflect.TypeFor[string]() {
				k = reflect.Invalid
			}
		case reflect.Struct:
			if nested = readerOf(f.Type); nested == nil {
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
	r.index = newKeyIndex(r.keys)
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

// Read decodes b into v, a pointer to a zero value of the reader's struct.
// On false v may be partly written: the caller starts again from zero.
func (r *Reader) Read(b []byte, v any) bool {
	var src *source
	if r.oneCopy {
		src = &source{b: b, text: string(b)}
	}
	return r.readValue(b, reflect.ValueOf(v).Elem(), r.strict, src)
}

// readValue reads b into s; with src, b is a slice of src.b, from whose
// copy it cuts its strings.
func (r *Reader) readValue(b []byte, s reflect.Value, strict bool, src *source) bool {
	// The members' slots are on the stack for a struct of up to
	// len(slots) members (a slice of a length known only here is made on
	// the heap, one allocation a struct read).
	var slots [32][]byte
	out := slots[:0]
	if len(r.keys) <= len(slots) {
		out = slots[:len(r.keys)]
	} else {
		out = make([][]byte, len(r.keys))
	}
	m, ok := readMembers(out, b, strict, r.keys, r.index)
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
		keep := r.keep == nil || r.keep[i]
		var f reflect.Value
		if keep {
			f = s.Field(r.fields[i])
		}
		switch r.kinds[i] {
		case reflect.String, reflect.Pointer:
			if !keep {
				if _, ok := PlainTextBytes(raw); !ok {
					return false
				}
				continue
			}
			var str string
			if src != nil {
				if _, ok := PlainTextBytes(raw); !ok {
					return false
				}
				str = src.cut(raw[1 : len(raw)-1])
			} else if str, ok = PlainText(raw); !ok {
				return false
			}
			if r.kinds[i] == reflect.String {
				f.SetString(str)
			} else {
				// A string of its own for the pointer: taking str's
				// address would move str to the heap for every member.
				p := new(string)
				*p = str
				f.Set(reflect.ValueOf(p))
			}
		case reflect.Bool:
			switch string(raw) {
			case "true":
				if keep {
					f.SetBool(true)
				}
			case "false":
			default:
				return false
			}
		case reflect.Int64:
			sc := NewScanner(raw)
			n := sc.Int()
			if !sc.End() {
				return false
			}
			if keep {
				f.SetInt(n)
			}
		case reflect.Slice:
			if !readStrings(raw, f, keep, src) {
				return false
			}
		case reflect.Struct:
			if !keep {
				f = reflect.New(s.Field(r.fields[i]).Type()).Elem()
			}
			if !r.nested[i].readValue(raw, f, strict, src) {
				return false
			}
		default:
			if strict {
				return false
			}
			if !keep {
				f = reflect.New(s.Field(r.fields[i]).Type()).Elem()
			}
			if json.Unmarshal(raw, f.Addr().Interface()) != nil {
				return false
			}
		}
	}
	return true
}

// readStrings reads a list of plain strings into the slice f (a fresh
// slice, empty but not nil for [], as encoding/json makes it), or only
// checks it when keep is false.
func readStrings(raw []byte, f reflect.Value, keep bool, src *source) bool {
	var out []string
	sc := NewScanner(raw)
	sc.Array(func() {
		b := sc.StrBytes()
		if sc.OK() && !utf8.Valid(b) {
			sc.Fail()
		}
		if sc.OK() && keep {
			if src != nil {
				out = append(out, src.cut(b))
			} else {
				out = append(out, string(b))
			}
		}
	})
	if !sc.End() {
		return false
	}
	if keep {
		if out == nil {
			out = []string{}
		}
		f.Set(reflect.ValueOf(out).Convert(f.Type()))
	}
	return true
}
