package control

import (
	"regexp"
	"sort"
	"strconv"

	"flrh.dev/flrh/cjson"
)

// obj is a decoded JSON object being read member by member. It remembers
// which members were read so that unknown members can be refused: a typo in
// a control table must not silently become "absent".
type obj struct {
	ptr  string
	m    map[string]any
	seen map[string]bool
}

func child(ptr, key string) string { return ptr + "/" + cjson.EscapePointer(key) }

func index(ptr string, i int) string { return ptr + "/" + itoa(i) }

func itoa(i int) string { return strconv.Itoa(i) }

func asObj(v any, ptr string) (*obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(CodeSchema, ptr, "want an object, got %s", kindOf(v))
	}
	return &obj{ptr: ptr, m: m, seen: map[string]bool{}}, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case int64:
		return "an integer"
	case bool:
		return "a boolean"
	}
	return "an unsupported value"
}

func (o *obj) has(key string) bool { _, ok := o.m[key]; return ok }

func (o *obj) get(key string, required bool) (any, bool, error) {
	o.seen[key] = true
	v, ok := o.m[key]
	if !ok && required {
		return nil, false, errorf(CodeSchema, child(o.ptr, key), "required member %q is missing", key)
	}
	return v, ok, nil
}

func (o *obj) str(key string, required bool, re *regexp.Regexp) (string, error) {
	v, ok, err := o.get(key, required)
	if err != nil || !ok {
		return "", err
	}
	s, isStr := v.(string)
	if !isStr {
		return "", errorf(CodeSchema, child(o.ptr, key), "want a string, got %s", kindOf(v))
	}
	if re != nil && !re.MatchString(s) {
		return "", errorf(CodeSchema, child(o.ptr, key), "%q does not match %s", s, re)
	}
	return s, nil
}

func (o *obj) integer(key string, required bool) (int64, bool, error) {
	v, ok, err := o.get(key, required)
	if err != nil || !ok {
		return 0, ok, err
	}
	n, isInt := v.(int64)
	if !isInt {
		return 0, false, errorf(CodeSchema, child(o.ptr, key), "want an integer, got %s", kindOf(v))
	}
	return n, true, nil
}

func (o *obj) boolean(key string, required bool) (bool, error) {
	v, ok, err := o.get(key, required)
	if err != nil || !ok {
		return false, err
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, errorf(CodeSchema, child(o.ptr, key), "want a boolean, got %s", kindOf(v))
	}
	return b, nil
}

func (o *obj) object(key string, required bool) (*obj, error) {
	v, ok, err := o.get(key, required)
	if err != nil || !ok {
		return nil, err
	}
	return asObj(v, child(o.ptr, key))
}

func (o *obj) array(key string, required bool) ([]any, string, error) {
	p := child(o.ptr, key)
	v, ok, err := o.get(key, required)
	if err != nil || !ok {
		return nil, p, err
	}
	a, isArr := v.([]any)
	if !isArr {
		return nil, p, errorf(CodeSchema, p, "want an array, got %s", kindOf(v))
	}
	return a, p, nil
}

// strings reads an array of unique strings, each matching re when re is set.
func (o *obj) strings(key string, required, nonEmpty bool, re *regexp.Regexp) ([]string, error) {
	a, p, err := o.array(key, required)
	if err != nil || a == nil {
		if err == nil && required && nonEmpty {
			return nil, errorf(CodeSchema, p, "must not be empty")
		}
		return nil, err
	}
	if nonEmpty && len(a) == 0 {
		return nil, errorf(CodeSchema, p, "must not be empty")
	}
	out := make([]string, 0, len(a))
	seen := map[string]bool{}
	for i, v := range a {
		s, ok := v.(string)
		if !ok {
			return nil, errorf(CodeSchema, index(p, i), "want a string, got %s", kindOf(v))
		}
		if re != nil && !re.MatchString(s) {
			return nil, errorf(CodeSchema, index(p, i), "%q does not match %s", s, re)
		}
		if seen[s] {
			return nil, errorf(CodeDuplicate, index(p, i), "%q is listed twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

// done refuses members that no reader asked for, reporting the first in
// sorted order so the error does not depend on map iteration.
func (o *obj) done() error {
	var extra []string
	for k := range o.m {
		if !o.seen[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return errorf(CodeSchema, child(o.ptr, extra[0]), "unknown member %q", extra[0])
}

// sortedKeys returns the keys of m in byte order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedKeysIn is sortedKeys appending to buf[:0], for a caller that holds
// the keys only while it reads them.
func sortedKeysIn[V any](buf []string, m map[string]V) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
