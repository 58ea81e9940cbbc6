package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Object is a free-form JSON object carried inside a wire object (an event
// payload, a fact tuple, a provenance record). Its values are restricted to
// the flrh-cjson/1 data model: map[string]any, []any, string, int64, bool
// and nil. Decoding an Object rejects floating-point numbers and integers
// outside int64 instead of silently rounding them, which encoding/json's
// default float64 decoding would do.
type Object map[string]any

// UnmarshalJSON decodes a JSON object into the flrh-cjson/1 data model.
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := decodeValue(data)
	if err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			*o = nil
			return nil
		}
		return fmt.Errorf("protocol: expected a JSON object, got %T", v)
	}
	*o = Object(m)
	return nil
}

// decodeValue decodes one JSON value into map[string]any, []any, string,
// int64, bool or nil. Numbers must be integers within int64.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("protocol: trailing data after JSON value")
	}
	return intsOnly(raw)
}

func intsOnly(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(t), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("protocol: number %s is not an int64 integer", t)
		}
		return n, nil
	case map[string]any:
		for k, e := range t {
			c, err := intsOnly(e)
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
		return t, nil
	case []any:
		for i, e := range t {
			c, err := intsOnly(e)
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	default:
		return v, nil
	}
}

// NullableID is an identifier member that may be absent, null, or a value.
// The zero value is absent; with the omitzero option it is left out.
type NullableID struct {
	// Set reports whether the member is present at all.
	Set bool
	// Value is the identifier, or nil when the member is present as null.
	Value *string
}

// IsZero reports whether the member is absent.
func (n NullableID) IsZero() bool { return !n.Set }

// MarshalJSON encodes null or the identifier string.
func (n NullableID) MarshalJSON() ([]byte, error) {
	if n.Value == nil {
		return []byte("null"), nil
	}
	return json.Marshal(*n.Value)
}

// UnmarshalJSON records presence and decodes null or a string.
func (n *NullableID) UnmarshalJSON(data []byte) error {
	n.Set = true
	if string(bytes.TrimSpace(data)) == "null" {
		n.Value = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	n.Value = &s
	return nil
}
