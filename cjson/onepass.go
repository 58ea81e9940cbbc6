package cjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The one-pass encoder writes canonical bytes straight from a Go value,
// checking every rule on the way, without first building the normalized
// value tree that [normalize] returns and without spelling out a JSON
// Pointer for every member. It is the path every successful Encode and
// Marshal takes; it was measured to be the largest single cost of a
// governed step before it existed.
//
// It answers only "these are the bytes" or "some rule failed". On failure
// Encode runs the two-pass encoder (normalize, then encode), whose error —
// code, pointer and which of several bad members is reported — is the
// contract. Both paths must therefore agree exactly on which values
// succeed and on their bytes; TestOnePassMatchesTwoPass and
// FuzzOnePassMatchesTwoPass hold them to it.

// onePass encodes v; ok is false when v breaks a rule (or takes a path the
// one-pass encoder leaves to the two-pass one). The bytes are written into
// a recycled scratch buffer and copied out once at their final length, so
// an encoding allocates its own size once instead of every buffer it grew
// through.
func onePass(v any) (out []byte, ok bool) {
	s := scratchBufs.Get().(*[]byte)
	b, ok := onePassInto((*s)[:0], v)
	if ok {
		out = make([]byte, len(b))
		copy(out, b)
	}
	releaseScratch(s, b)
	return out, ok
}

// onePassInto appends v's canonical bytes to dst.
func onePassInto(dst []byte, v any) ([]byte, bool) {
	var e onePassEncoder
	root, ok := e.rootSets(v)
	if !ok {
		return dst, false
	}
	e.sets = root
	return e.value(dst, v, 0, false)
}

// scratchBufs recycles the buffers canonical bytes are written into before
// they are copied out or digested. A buffer is always written from length
// zero and never handed to a caller, so what it held before reaches no
// output; it is the package's only shared state, invisible to callers
// (decision 0608 on pooled buffers in pure packages).
var scratchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxScratch is the largest buffer given back to the pool; larger ones are
// left to the collector.
const maxScratch = 64 << 10

// releaseScratch gives the pool the buffer b grew into (it may have moved
// from *s).
func releaseScratch(s *[]byte, b []byte) {
	if cap(b) > maxScratch {
		return
	}
	if cap(b) > cap(*s) {
		*s = b[:0]
	}
	scratchBufs.Put(s)
}

type onePassEncoder struct {
	sets []string // root members (as "/name") whose arrays are sets
}

// rootSets finds the set-like paths for v's root kind the way Encode does
// on the normalized value: the root object's "kind" member, when it is a
// string.
func (e *onePassEncoder) rootSets(v any) ([]string, bool) {
	switch x := v.(type) {
	case nil, bool, int64, int, string, []any:
		return nil, true
	case map[string]any:
		item, present := x["kind"]
		if !present {
			return nil, true
		}
		return kindSets(normalize(item, "", 1))
	}
	rv := reflect.ValueOf(v)
	for rv.IsValid() {
		t := rv.Type()
		if t == numberType {
			return nil, true
		}
		if t.Implements(marshalerType) && !isNilRef(rv) {
			// Value writes what MarshalJSON says, decoded; its root
			// kind is that of the decoded value.
			d, ok := marshalled(rv)
			if !ok {
				return nil, false
			}
			return e.rootSets(d)
		}
		if rv.Kind() != reflect.Pointer && rv.Kind() != reflect.Interface {
			break
		}
		if rv.IsNil() {
			return nil, true
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil, true
	}
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || rv.IsNil() {
			return nil, true
		}
		for it := rv.MapRange(); it.Next(); {
			if it.Key().String() == "kind" {
				return kindSets(normalizeReflect(it.Value(), "", 1))
			}
		}
	case reflect.Struct:
		for _, f := range structFields(rv.Type()) {
			if f.name != "kind" {
				continue
			}
			fv := rv.FieldByIndex(f.index)
			if (f.omitEmpty && isEmpty(fv)) || (f.omitZero && fv.IsZero()) {
				return nil, true
			}
			return kindSets(normalizeReflect(fv, "", 1))
		}
	}
	return nil, true
}

// kindSets maps a normalized "kind" member to its set-like paths; a kind
// that breaks a rule leaves the whole value to the two-pass encoder.
func kindSets(n any, err error) ([]string, bool) {
	if err != nil {
		return nil, false
	}
	if k, isStr := n.(string); isStr {
		return setLikePaths[k], true
	}
	return nil, true
}

// isSet reports whether the root member name is set-like.
func (e *onePassEncoder) isSet(name string) bool {
	for _, p := range e.sets {
		if len(p) == len(name)+1 && p[0] == '/' && p[1:] == name {
			return true
		}
	}
	return false
}

// stringOK applies the string rule: valid UTF-8 in NFC. ASCII is both.
func stringOK(s string) bool {
	if asciiString(s) {
		return true
	}
	return utf8.ValidString(s) && norm.NFC.IsNormalString(s)
}

// asciiString reports whether every byte of s is below utf8.RuneSelf,
// eight bytes at a time.
func asciiString(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if word(s, i)&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func keyOK(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// value appends v. depth counts enclosing containers as in normalize; set
// says v sits at a set-like path.
func (e *onePassEncoder) value(dst []byte, v any, depth int, set bool) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if x {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case string:
		if !stringOK(x) {
			return nil, false
		}
		return AppendString(dst, x), true
	case map[string]any:
		if depth >= MaxDepth {
			return nil, false
		}
		var kb [16]string
		keys := kb[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if !keyOK(k) {
				return nil, false
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = e.value(dst, x[k], depth+1, depth == 0 && len(e.sets) > 0 && e.isSet(k)); !ok {
				return nil, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if depth >= MaxDepth {
			return nil, false
		}
		if set {
			return e.set(dst, len(x), func(b []byte, i int) ([]byte, bool) { return e.value(b, x[i], depth+1, false) })
		}
		dst = append(dst, '[')
		for i, item := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = e.value(dst, item, depth+1, false); !ok {
				return nil, false
			}
		}
		return append(dst, ']'), true
	}
	return e.reflectValue(dst, reflect.ValueOf(v), depth, set)
}

// set appends n elements as a set: each encoded alone, sorted by bytes,
// duplicates refused.
func (e *onePassEncoder) set(dst []byte, n int, elem func([]byte, int) ([]byte, bool)) ([]byte, bool) {
	encoded := make([][]byte, n)
	for i := range encoded {
		b, ok := elem(nil, i)
		if !ok {
			return nil, false
		}
		encoded[i] = b
	}
	slices.SortFunc(encoded, bytes.Compare)
	dst = append(dst, '[')
	for i, b := range encoded {
		if i > 0 {
			if bytes.Equal(encoded[i-1], b) {
				return nil, false
			}
			dst = append(dst, ',')
		}
		dst = append(dst, b...)
	}
	return append(dst, ']'), true
}

func (e *onePassEncoder) reflectValue(dst []byte, rv reflect.Value, depth int, set bool) ([]byte, bool) {
	if !rv.IsValid() {
		return append(dst, "null"...), true
	}
	t := rv.Type()
	if t == numberType {
		n, err := strconv.ParseInt(rv.String(), 10, 64)
		if err != nil {
			return nil, false
		}
		return strconv.AppendInt(dst, n, 10), true
	}
	if t.Implements(marshalerType) && !isNilRef(rv) {
		b, err := rv.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return nil, false
		}
		// Bytes already canonical below the root, where no array is a
		// set, are what decoding and encoding them again gives: a raw
		// message kept canonical, an id set, are copied as they are; so
		// is a set's array already canonical and in the set's order.
		if depth > 0 && (!set && canonicalAt(b, depth) || set && canonicalSetAt(b, depth)) {
			return append(dst, b...), true
		}
		v, err := Decode(b)
		if err != nil {
			return nil, false
		}
		return e.value(dst, v, depth, set)
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return append(dst, "null"...), true
		}
		if depth >= MaxDepth {
			return nil, false
		}
		return e.reflectValue(dst, rv.Elem(), depth, set)
	case reflect.Bool:
		if rv.Bool() {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > 1<<63-1 {
			return nil, false
		}
		return strconv.AppendInt(dst, int64(u), 10), true
	case reflect.String:
		s := rv.String()
		if !stringOK(s) {
			return nil, false
		}
		return AppendString(dst, s), true
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, false
		}
		if rv.IsNil() {
			return append(dst, "null"...), true
		}
		if depth >= MaxDepth {
			return nil, false
		}
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		dst = append(dst, '{')
		for i, kv := range keys {
			k := kv.String()
			if !keyOK(k) {
				return nil, false
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = e.reflectValue(dst, rv.MapIndex(kv), depth+1, depth == 0 && len(e.sets) > 0 && e.isSet(k)); !ok {
				return nil, false
			}
		}
		return append(dst, '}'), true
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return append(dst, "null"...), true
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, false
		}
		if depth >= MaxDepth {
			return nil, false
		}
		n := rv.Len()
		if set {
			return e.set(dst, n, func(b []byte, i int) ([]byte, bool) { return e.reflectValue(b, rv.Index(i), depth+1, false) })
		}
		dst = append(dst, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = e.reflectValue(dst, rv.Index(i), depth+1, false); !ok {
				return nil, false
			}
		}
		return append(dst, ']'), true
	case reflect.Struct:
		if depth >= MaxDepth {
			return nil, false
		}
		dst = append(dst, '{')
		first := true
		for _, f := range sortedStructFields(t) {
			fv := rv.FieldByIndex(f.index)
			if (f.omitEmpty && isEmpty(fv)) || (f.omitZero && fv.IsZero()) {
				continue
			}
			if !keyOK(f.name) {
				return nil, false
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = AppendString(dst, f.name)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = e.reflectValue(dst, fv, depth+1, depth == 0 && len(e.sets) > 0 && e.isSet(f.name)); !ok {
				return nil, false
			}
		}
		return append(dst, '}'), true
	}
	return nil, false
}

// marshalled is what a value's own MarshalJSON writes, strictly decoded.
func marshalled(rv reflect.Value) (any, bool) {
	b, err := rv.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return nil, false
	}
	v, err := Decode(b)
	return v, err == nil
}

// sortedFieldCache holds each struct type's members in the byte order of
// their names, the order canonical objects are written in.
var sortedFieldCache sync.Map // reflect.Type -> []field

func sortedStructFields(t reflect.Type) []field {
	if fs, ok := sortedFieldCache.Load(t); ok {
		return fs.([]field)
	}
	fs := slices.Clone(structFields(t))
	slices.SortStableFunc(fs, func(a, b field) int { return strings.Compare(a.name, b.name) })
	sortedFieldCache.Store(t, fs)
	return fs
}
