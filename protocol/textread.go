package protocol

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Reading while checking.
//
// A caller that validates a wire object's text and then decodes a few of
// its members reads the text twice. When the text path of Validate accepts
// (fasttext.go), the text is inside its narrow grammar — printable-ASCII
// strings without escapes, keys that appear once, a closed object whose
// every key is a declared member — and the span of each top-level member's
// value is known as it is checked. A TextReader keeps those spans and
// fills the named members of a struct from them, as encoding/json would
// read them from the same text. Anything else (the full path, or a kept
// member whose value is not of the field's shape) is not read here: the
// caller decodes as it did before.

// A TextReader validates texts of one kind and reads named top-level
// members of the accepted ones into a T, a struct whose fields carry their
// JSON names in json tags.
type TextReader[T any] struct {
	kind string
	keep []string

	once   sync.Once
	root   *fastNode
	fields []keptField
}

// keptField is one member a TextReader fills.
type keptField struct {
	idx   int          // the member's index in the root node's declared members
	field int          // the struct field
	kind  reflect.Kind // String, Bool, Pointer (*string) or Slice ([]string)
}

// NewTextReader returns the reader of kind that keeps the members named
// keep (their JSON names). The kind's schema is read on first use; a kind,
// a member or a field type the reader cannot serve makes that use panic:
// the readers a program uses are fixed when it is written.
func NewTextReader[T any](kind string, keep ...string) *TextReader[T] {
	return &TextReader[T]{kind: kind, keep: keep}
}

func (r *TextReader[T]) resolve() {
	fail := func(why string) { panic("protocol: TextReader of " + r.kind + ": " + why) }
	if !textKind(r.kind) {
		fail("not a kind the text path checks")
	}
	root := compiledFast()[r.kind]
	if root == nil || !root.closed || len(root.declared) > 64 {
		fail("no closed fast check of at most 64 members")
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct || implementsUnmarshal(t) {
		fail("not a plain struct")
	}
	tags := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if _, dup := tags[name]; dup || t.Field(i).Anonymous {
			fail("field names are not one per field")
		}
		tags[name] = i
	}
	for _, name := range r.keep {
		p, declared := root.props[name]
		i, named := tags[name]
		if !declared || !named {
			fail(name + " is not a member of both the schema and the struct")
		}
		f := t.Field(i)
		_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		for _, o := range strings.Split(opts, ",") {
			if o != "" && o != "omitempty" && o != "omitzero" {
				fail(name + " has a json option that changes decoding")
			}
		}
		k := f.Type.Kind()
		switch {
		case implementsUnmarshal(f.Type):
			k = reflect.Invalid
		case k == reflect.String, k == reflect.Bool && f.Type.PkgPath() == "":
		case k == reflect.Pointer && f.Type.Elem() == reflect.TypeFor[string]():
		case k == reflect.Slice && f.Type.Elem() == reflect.TypeFor[string]():
		default:
			k = reflect.Invalid
		}
		if k == reflect.Invalid {
			fail(name + " is not a string, bool, *string or []string field")
		}
		// encoding/json gives a key that only folds to a field's name to
		// that field; an accepted text holds declared keys only, and none
		// may fold to a kept name it is not.
		for _, d := range root.declared {
			if d.name != name && strings.EqualFold(d.name, name) || !ascii(d.name) {
				fail(d.name + " folds to " + name)
			}
		}
		r.fields = append(r.fields, keptField{idx: p.idx, field: i, kind: k})
	}
	r.root = root
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func implementsUnmarshal(t reflect.Type) bool {
	for _, u := range []reflect.Type{reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return true
		}
	}
	return false
}

// Validate returns Validate(kind, text), and read true when the text path
// accepted the text and *v, which must be zero, now holds the kept members
// exactly as encoding/json reads them from text (the others left zero).
// With read false, *v may be partly written and the caller decodes text
// itself; with an error, read is false.
func (r *TextReader[T]) Validate(text []byte, v *T) (read bool, err error) {
	r.once.Do(r.resolve)
	var buf [64][]byte
	spans := buf[:len(r.root.declared)]
	if i := skipWS(text, 0); i < len(text) && text[i] == '{' {
		end, ok := r.root.acceptsTextAt(text, i, 0, 0, false, false, spans)
		if ok && skipWS(text, end) == len(text) {
			return r.fill(text, spans, v), nil
		}
	}
	return false, validateFull(r.kind, text)
}

// fill sets the kept members of *v from their spans in text, or answers
// false for a value encoding/json would not read into its field as it
// stands. The strings it sets are cut from one copy of the part of text
// that holds every kept member, instead of a copy each.
func (r *TextReader[T]) fill(text []byte, spans [][]byte, v *T) bool {
	lo, hi := len(text), 0
	for _, k := range r.fields {
		if raw := spans[k.idx]; raw != nil && k.kind != reflect.Bool {
			at := offsetIn(text, raw)
			lo, hi = min(lo, at), max(hi, at+len(raw))
		}
	}
	var held string
	if lo < hi {
		held = string(text[lo:hi])
	}
	// cut is the string of b, bytes of text inside text[lo:hi].
	cut := func(b []byte) string {
		at := offsetIn(text, b) - lo
		return held[at : at+len(b)]
	}
	s := reflect.ValueOf(v).Elem()
	for _, k := range r.fields {
		raw := spans[k.idx]
		if raw == nil || string(raw) == "null" && k.kind != reflect.Pointer && k.kind != reflect.Slice {
			// Absent, or null into a string or a bool: left zero.
			continue
		}
		f := s.Field(k.field)
		switch k.kind {
		case reflect.String:
			if raw[0] != '"' {
				return false
			}
			f.SetString(cut(raw[1 : len(raw)-1]))
		case reflect.Bool:
			switch string(raw) {
			case "true":
				f.SetBool(true)
			case "false":
			default:
				return false
			}
		case reflect.Pointer:
			switch {
			case string(raw) == "null":
				f.SetZero()
			case raw[0] == '"':
				str := cut(raw[1 : len(raw)-1])
				f.Set(reflect.ValueOf(&str))
			default:
				return false
			}
		case reflect.Slice:
			if string(raw) == "null" {
				f.SetZero()
				continue
			}
			// The list is made in the field itself (Grow), its strings
			// set in place: making it apart and setting the field from
			// reflect.ValueOf of it boxed the slice, one allocation more
			// a list. An empty list is [] as encoding/json makes it, not
			// nil.
			n, ok := textStrings(raw, nil)
			if !ok {
				return false
			}
			if n == 0 {
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
				continue
			}
			f.Grow(n)
			f.SetLen(n)
			textStrings(raw, func(i int, b []byte) { f.Index(i).SetString(cut(b)) })
		}
	}
	return true
}

// offsetIn is where b, a part of text cut from it, starts in text.
func offsetIn(text, b []byte) int { return cap(text) - cap(b) }

// textStrings reads an array of strings whose text the text path accepted
// (no escapes: a quote always ends a string), [] as an empty list: it
// returns how many strings it holds, and calls each, when not nil, with
// each string's index and bytes.
func textStrings(raw []byte, each func(i int, b []byte)) (int, bool) {
	if raw[0] != '[' {
		return 0, false
	}
	n := 0
	i := skipWS(raw, 1)
	if raw[i] == ']' {
		return 0, true
	}
	for {
		if raw[i] != '"' {
			return 0, false
		}
		j := bytes.IndexByte(raw[i+1:], '"')
		if each != nil {
			each(n, raw[i+1:i+1+j])
		}
		n++
		i = skipWS(raw, i+2+j)
		if raw[i] == ']' {
			return n, true
		}
		i = skipWS(raw, i+1) // past the comma
	}
}
