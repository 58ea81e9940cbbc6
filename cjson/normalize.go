package cjson

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	numberType    = reflect.TypeFor[json.Number]()
)

// normalize converts any Go value into the value model (map[string]any,
// []any, string, int64, bool, nil), checking every rule that does not depend
// on the root kind. depth counts enclosing containers.
func normalize(v any, ptr string, depth int) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case string:
		return x, CheckString(x, ptr)
	case map[string]any:
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, ptr, -1, "nesting depth reaches %d", MaxDepth)
		}
		out := make(map[string]any, len(x))
		// Visit keys in order so that, of several bad members, the one
		// reported is the same on every run.
		for _, k := range sortedKeys(x) {
			item := x[k]
			child := ptr + "/" + EscapePointer(k)
			if err := checkKey(k, child, -1); err != nil {
				return nil, err
			}
			n, err := normalize(item, child, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, ptr, -1, "nesting depth reaches %d", MaxDepth)
		}
		out := make([]any, len(x))
		for i, item := range x {
			n, err := normalize(item, ptr+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return normalizeReflect(reflect.ValueOf(v), ptr, depth)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func normalizeReflect(rv reflect.Value, ptr string, depth int) (any, error) {
	if !rv.IsValid() {
		return nil, nil
	}
	t := rv.Type()
	if t == numberType {
		n, err := strconv.ParseInt(rv.String(), 10, 64)
		if err != nil {
			return nil, errAt(CodeFloat, ptr, -1, "json.Number %q is not a signed int64", rv.String())
		}
		return n, nil
	}
	if t.Implements(marshalerType) && !isNilRef(rv) {
		b, err := rv.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return nil, errAt(CodeUnsupportedType, ptr, -1, "MarshalJSON of %s failed: %v", t, err)
		}
		v, err := Decode(b)
		if err != nil {
			if ce, ok := err.(*Error); ok {
				ce.Pointer = joinPointer(ptr, ce.Pointer)
				ce.Offset = -1
			}
			return nil, err
		}
		return normalize(v, ptr, depth)
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, ptr, -1, "nesting depth reaches %d", MaxDepth)
		}
		return normalizeReflect(rv.Elem(), ptr, depth)
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > 1<<63-1 {
			return nil, errAt(CodeIntRange, ptr, -1, "%d is outside the signed int64 range", u)
		}
		return int64(u), nil
	case reflect.Float32, reflect.Float64:
		return nil, errAt(CodeFloat, ptr, -1, "floating-point values are not allowed; use a scaled integer")
	case reflect.String:
		s := rv.String()
		return s, CheckString(s, ptr)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, errAt(CodeNonStringKey, ptr, -1, "map key type %s is not a string", t.Key())
		}
		if rv.IsNil() {
			return nil, nil
		}
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, ptr, -1, "nesting depth reaches %d", MaxDepth)
		}
		out := make(map[string]any, rv.Len())
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, kv := range keys {
			k := kv.String()
			child := ptr + "/" + EscapePointer(k)
			if err := checkKey(k, child, -1); err != nil {
				return nil, err
			}
			n, err := normalizeReflect(rv.MapIndex(kv), child, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, errAt(CodeUnsupportedType, ptr, -1, "byte slices have no canonical form; encode them as a string")
		}
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, ptr, -1, "nesting depth reaches %d", MaxDepth)
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, err := normalizeReflect(rv.Index(i), ptr+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case reflect.Struct:
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, ptr, -1, "nesting depth reaches %d", MaxDepth)
		}
		out := map[string]any{}
		for _, f := range structFields(t) {
			fv := rv.FieldByIndex(f.index)
			if (f.omitEmpty && isEmpty(fv)) || (f.omitZero && fv.IsZero()) {
				continue
			}
			child := ptr + "/" + EscapePointer(f.name)
			if err := checkKey(f.name, child, -1); err != nil {
				return nil, err
			}
			n, err := normalizeReflect(fv, child, depth+1)
			if err != nil {
				return nil, err
			}
			out[f.name] = n
		}
		return out, nil
	}
	return nil, errAt(CodeUnsupportedType, ptr, -1, "value of type %s has no canonical form", t)
}

// isNilRef reports a nil pointer or interface: such a value is null, never
// asked to marshal itself.
func isNilRef(rv reflect.Value) bool {
	return (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && rv.IsNil()
}

func joinPointer(base, rel string) string {
	if rel == "/" {
		if base == "" {
			return "/"
		}
		return base
	}
	return base + rel
}

type field struct {
	name      string
	index     []int
	depth     int
	omitEmpty bool
	omitZero  bool
	tagged    bool
}

// fieldCache remembers each struct type's members: computing them walks the
// type with reflection, and the same few types are marshalled again and
// again. The cache holds only facts about types, so it cannot change any
// output.
var fieldCache sync.Map // reflect.Type -> []field

// structFields lists the JSON members of a struct type the way encoding/json
// does: exported fields, json tags, embedded structs flattened, a shallower
// field hiding a deeper one of the same name, equal-depth ambiguity dropping
// both unless exactly one is tagged.
func structFields(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	fs := computeFields(t)
	fieldCache.Store(t, fs)
	return fs
}

func computeFields(t reflect.Type) []field {
	var all []field
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			ft := sf.Type
			if sf.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct && depth < 16 {
					walk(ft, idx, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			f := field{name: name, index: idx, depth: depth, tagged: name != ""}
			if f.name == "" {
				f.name = sf.Name
			}
			for _, o := range strings.Split(opts, ",") {
				switch o {
				case "omitempty":
					f.omitEmpty = true
				case "omitzero":
					f.omitZero = true
				}
			}
			all = append(all, f)
		}
	}
	walk(t, nil, 0)
	byName := map[string][]field{}
	var order []string
	for _, f := range all {
		if _, seen := byName[f.name]; !seen {
			order = append(order, f.name)
		}
		byName[f.name] = append(byName[f.name], f)
	}
	var out []field
	for _, name := range order {
		fs := byName[name]
		best := fs[0]
		ambiguous := false
		for _, f := range fs[1:] {
			switch {
			case f.depth < best.depth:
				best, ambiguous = f, false
			case f.depth == best.depth:
				if f.tagged && !best.tagged {
					best, ambiguous = f, false
				} else if f.tagged == best.tagged {
					ambiguous = true
				}
			}
		}
		if !ambiguous {
			out = append(out, best)
		}
	}
	return out
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
