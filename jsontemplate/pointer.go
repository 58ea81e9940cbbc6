package jsontemplate

import (
	"errors"
	"strconv"
	"strings"
)

// unescapePointer splits a JSON pointer (RFC 6901) into its tokens.
func unescapePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New("a JSON pointer starts with /")
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, errors.New("~ is written ~0, and / as ~1")
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// escapeToken is a member name as a JSON pointer token.
func escapeToken(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// resolve is the value at the pointer's tokens in v.
func resolve(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[t]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, ok := index(t, len(x))
			if !ok {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// index reads an array index token: decimal, no leading zero, in range.
func index(t string, n int) (int, bool) {
	if t == "" || (len(t) > 1 && t[0] == '0') || strings.Trim(t, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(t)
	return i, err == nil && i < n
}

// A Condition holds when a body's value at a pointer equals a value.
type Condition struct {
	Pointer string
	tokens  []string
	want    any
}

// NewCondition reads a condition: a JSON pointer and the JSON text of the
// value the body must hold there.
func NewCondition(pointer string, value []byte) (Condition, error) {
	tokens, err := unescapePointer(pointer)
	if err != nil || pointer == "" {
		return Condition{}, refuse(pointer, "a condition's key is a JSON pointer into the body, starting with /")
	}
	v, err := Decode(value)
	if err == nil {
		v, err = plain(v)
	}
	if err != nil {
		return Condition{}, refuse(pointer, "the value: %v", err)
	}
	return Condition{Pointer: pointer, tokens: tokens, want: v}, nil
}

// Holds reports whether body holds the condition's value at its pointer.
func (c Condition) Holds(body any) bool {
	v, ok := resolve(body, c.tokens)
	if !ok {
		return false
	}
	got, err := plain(v)
	return err == nil && equal(got, c.want)
}

// equal compares two plain values.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x { //flrh:orderfree every member must match; the answer is the same in any order
			f, ok := y[k]
			if !ok || !equal(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}
