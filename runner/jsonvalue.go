package runner

import (
	"bytes"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/cjson"
)

// decodeInto decodes canonical JSON into a Go value strictly (unknown
// fields are an error) with integers kept exact.
func decodeInto(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// canonValue turns canonical JSON bytes into the cjson value model, so it
// can be embedded in another canonical document.
func canonValue(b []byte) (any, error) {
	v, err := cjson.Decode(b)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// canonBytes is the inverse of canonValue.
func canonBytes(v any) ([]byte, error) {
	b, err := cjson.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}
