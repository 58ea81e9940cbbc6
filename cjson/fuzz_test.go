package cjson

import (
	"errors"
	"testing"
)

// FuzzCanonicalize checks that arbitrary input never panics, that every
// failure is a typed *Error, and that accepted input reaches a fixed point:
// decode → encode → decode → encode gives the same bytes.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `{"kind":"GraphDelta","causal_parent_delta_ids":["b","a"]}`,
		`{"a":[1,-2,{"b":"\u00e9\n"}]}`, `"\ud83d\ude00"`, `{"x":1.5}`, `[[[[]]]]`, `-0`,
		`{"kind":"ActionReceipt","output_digests":[{"a":1},{"a":0}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := Canonicalize(in)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if ce.Pointer == "" || ce.Pointer[0] != '/' {
				t.Fatalf("bad pointer %q", ce.Pointer)
			}
			return
		}
		b2, err := Canonicalize(b)
		if err != nil {
			t.Fatalf("canonical bytes rejected: %v\n%s", err, b)
		}
		if string(b) != string(b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
