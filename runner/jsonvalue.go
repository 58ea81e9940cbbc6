package runner

import (
	"bytes"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/protocol"
)

// intentReader reads an effect intent as decodeInto does, without
// reflection over its plain members: the intents the runner reads are its
// own canonical bytes, which it reads entirely, its strings cut from one
// copy of them.
var intentReader = jsonread.NewReader(protocol.EffectIntent{}).Strict().OneCopy()

// decodeIntent is decodeInto for an effect intent: read by intentReader,
// or, where it cannot vouch for what it read, by decodeInto, whose result
// and error stand.
func decodeIntent(b []byte) (protocol.EffectIntent, error) {
	var pi protocol.EffectIntent
	if intentReader.Read(b, &pi) {
		return pi, nil
	}
	pi = protocol.EffectIntent{}
	return pi, decodeInto(b, &pi)
}

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

// keptValue is canonValue(b) for a value that is only ever encoded again,
// never read: when b is canonical it is kept as its bytes (a copy, as a
// canonJSON) instead of decoded. cjson writes such bytes exactly as it
// writes what they decode to — copied where they are canonical at their
// depth, decoded and encoded anywhere else — and so does the checkpoint's
// own writer, so every encoding of a document holding it is unchanged,
// and canonBytes of it is b.
func keptValue(b []byte) (any, error) {
	if k, ok := checkedJSON(b); ok {
		return k, nil
	}
	return canonValue(b)
}

// keptBytes is canonBytes(v), taking v's own bytes when v is kept as
// bytes proved canonical (a canonJSON: keptValue, close). The bytes are
// shared, not copied. Bytes of any other kind are encoded, and so checked.
func keptBytes(v any) ([]byte, error) {
	if k, ok := asKept(v); ok {
		return k.b, nil
	}
	return canonBytes(v)
}
