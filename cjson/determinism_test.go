package cjson_test

import (
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

// Canonicalization is itself a pure step: the same input always gives the
// same bytes, and the input is never written to.
func TestDeterministic(t *testing.T) {
	in := []byte(`{"kind":"StableProposalBatch","proposal_ids":["b","a"],"x":{"z":1,"y":[true,null,"\u00e9"]}}`)
	out := determinism.Check(t, in, func(b []byte) string {
		c, err := cjson.Canonicalize(b)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(c)
	})
	if out != `{"kind":"StableProposalBatch","proposal_ids":["a","b"],"x":{"y":[true,null,"é"],"z":1}}` {
		t.Fatalf("got %s", out)
	}
	v := map[string]any{"b": []any{int64(1), "x"}, "a": map[string]any{"c": nil}}
	got := determinism.Check(t, v, func(v map[string]any) string {
		b, err := cjson.Encode(v)
		if err != nil {
			return err.Error()
		}
		return string(b)
	})
	if got != `{"a":{"c":null},"b":[1,"x"]}` {
		t.Fatalf("got %s", got)
	}
}
