package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/cjson"
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
	v, err := cjson.Decode(data)
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

// IDSet is a set-like array of identifiers. Canonical form sorts it and
// rejects duplicates; a nil IDSet encodes as the empty array, never null.
type IDSet []string

// MarshalJSON encodes the set, nil as [].
func (s IDSet) MarshalJSON() ([]byte, error) { return marshalStrings(s) }

// DigestSet is a set-like array of digests, encoded like IDSet.
type DigestSet []string

// MarshalJSON encodes the set, nil as [].
func (s DigestSet) MarshalJSON() ([]byte, error) { return marshalStrings(s) }

func marshalStrings(s []string) ([]byte, error) {
	if s == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s)
}
