package runner

import (
	"bytes"
	"encoding/json"
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
)

// canonJSON is a document's bytes the runner has proved canonical on
// their own (cjson.IsCanonical, or cjson's own encoding), with how deep
// their containers nest. It is what a kept intent, payload or pending
// receipt is held as, and only the constructors below make one: bytes
// from anywhere else (a json.RawMessage, a value read from the store) are
// checked again wherever they are written. What holds a canonJSON writes
// its bytes without scanning them again (appendKept); cjson, handed one,
// asks MarshalJSON and checks the bytes where it embeds them, exactly as
// for a json.RawMessage, so the two write the same bytes.
type canonJSON struct {
	b     []byte
	depth int // nesting(b)
}

// MarshalJSON returns the bytes (null for the zero value, which no
// constructor makes).
func (k canonJSON) MarshalJSON() ([]byte, error) {
	if k.b == nil {
		return []byte("null"), nil
	}
	return k.b, nil
}

// String prints the bytes as a json.RawMessage of them prints (a list of
// byte values): what evidence digests when cjson refuses an item.
func (k canonJSON) String() string { return fmt.Sprint(k.b) }

// vouches reports whether k is the proof of b: the very same bytes (not
// a copy, which may have changed since).
func (k canonJSON) vouches(b []byte) bool {
	return len(b) > 0 && len(b) == len(k.b) && &b[0] == &k.b[0]
}

// kept reports whether k holds bytes.
func (k canonJSON) kept() bool { return k.b != nil }

// fitsAt reports whether k, written depth containers deep, stays within
// cjson's nesting limit. Where it does, cjson writes the bytes as they
// are (canonical at the root, they are canonical at any depth below it,
// where no array is a set); where it does not, cjson refuses them.
func (k canonJSON) fitsAt(depth int) bool { return k.b != nil && depth+k.depth <= cjson.MaxDepth }

// checkedJSON keeps a copy of b when b is canonical on its own.
func checkedJSON(b []byte) (canonJSON, bool) {
	if !cjson.IsCanonical(b) {
		return canonJSON{}, false
	}
	c := bytes.Clone(b)
	return canonJSON{b: c, depth: nesting(c)}, true
}

// encodedJSON is cjson's encoding of v, canonical by construction.
func encodedJSON(v any) (canonJSON, error) {
	b, err := cjson.Marshal(v)
	if err != nil {
		return canonJSON{}, err
	}
	return canonJSON{b: b, depth: nesting(b)}, nil
}

// receiptJSON is a checked receipt's canonical bytes (cjson.Marshal's,
// validated).
func receiptJSON(r effect.CheckedReceipt) canonJSON {
	return canonJSON{b: r.Canonical, depth: nesting(r.Canonical)}
}

// asKept returns v's proved bytes when v is held as a canonJSON.
func asKept(v any) (canonJSON, bool) {
	k, ok := v.(canonJSON)
	return k, ok && k.kept()
}

// rawOf is v's bytes when v is held as bytes (proved or not), for code
// that decodes them: a canonJSON's, or a json.RawMessage's.
func rawOf(v any) ([]byte, bool) {
	switch x := v.(type) {
	case canonJSON:
		return x.b, x.b != nil
	case json.RawMessage:
		return x, true
	}
	return nil, false
}
