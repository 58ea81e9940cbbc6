package cjson

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestMarshalerBytesAgree holds the one-pass encoder's copy of canonical
// marshaled bytes to the two-pass reference, which always decodes and
// encodes them: raw messages of every kind of text (canonical, with
// whitespace, unsorted or repeated keys, non-canonical numbers and
// escapes, non-NFC or invalid strings, nesting near MaxDepth), at the
// root, as a member of a root whose kind makes it a set, and nested at
// every depth.
func TestMarshalerBytesAgree(t *testing.T) {
	raw := rapid.Custom(func(t *rapid.T) []byte {
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0:
			b, err := json.Marshal(genAny(2).Draw(t, "v"))
			if err != nil {
				return []byte(`null`)
			}
			if c, err := Canonicalize(b); err == nil && rapid.Bool().Draw(t, "canonical") {
				return c
			}
			return b
		case 1:
			return []byte(rapid.SampledFrom([]string{`["b","a"]`, `["a","b"]`, `["a","a"]`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
				`{ "a":1}`, `[1.0]`, `[01]`, `-0`, `1e3`, `"\u0041"`, `"e\u0301"`, "\"\xff\"", `"\u00e9"`, `{"é":1}`,
				`9223372036854775808`, `-9223372036854775808`, `{"kind":"EffectProposal","preconditions":["b","a"]}`,
				`true `, ``, `{`, `[]`, `{}`, `""`, `"a\"b"`, `"\n"`, `"\u000a"`,
				`["a","b","c"]`, `["a","c","b"]`, `["a","b","b"]`, `["a", "b"]`, `[1,10,2]`, `[1,2,10]`, `[-1,1]`, `[1,-1]`,
				`[[],{}]`, `[{},[]]`, `[["b","a"],["c"]]`, `[{"a":1},{"b":1}]`, `[{"b":1,"a":2}]`, `[null,true]`, `[true,null]`,
				`["\u0041","B"]`, `["A","B"]`, `["é","z"]`, `["z","é"]`, `["e\u0301"]`, `[0,-0]`, `[1.5]`, `["a",]`, `["a"]x`,
				`["sha256:0000000000000000000000000000000000000000000000000000000000000001","sha256:0000000000000000000000000000000000000000000000000000000000000002"]`,
			}).Draw(t, "text"))
		default:
			n := rapid.IntRange(MaxDepth-4, MaxDepth+1).Draw(t, "deep")
			return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		var v any = json.RawMessage(raw.Draw(t, "raw"))
		switch rapid.IntRange(0, 2).Draw(t, "where") {
		case 1:
			v = map[string]any{"kind": rapid.SampledFrom([]string{"EffectProposal", "Other"}).Draw(t, "kind"), "preconditions": v}
		case 2:
			for range rapid.IntRange(1, MaxDepth).Draw(t, "depth") {
				if rapid.Bool().Draw(t, "array") {
					v = []any{v}
				} else {
					v = struct {
						M any `json:"m"`
					}{v}
				}
			}
		}
		agree(t, v)
	})
}

// TestMarshaledSetsAgree holds the copy of a set's marshaled array that is
// already canonical and in the set's order to the two-pass reference:
// arrays of canonical elements, sorted or not, with repeats or not, at a
// set-like path and elsewhere, near the depth limit.
func TestMarshaledSetsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var elems []string
		for range rapid.IntRange(0, 5).Draw(t, "n") {
			b, err := Encode(genAny(2).Draw(t, "elem"))
			if err != nil {
				continue
			}
			elems = append(elems, string(b))
		}
		switch rapid.IntRange(0, 3).Draw(t, "order") {
		case 0, 1:
			slices.Sort(elems)
			elems = slices.Compact(elems)
		case 2:
			slices.Sort(elems)
		}
		raw := json.RawMessage("[" + strings.Join(elems, ",") + "]")
		var v any = map[string]any{"kind": rapid.SampledFrom([]string{"EffectProposal", "Other"}).Draw(t, "kind"), "preconditions": raw}
		if rapid.Bool().Draw(t, "deep") {
			for range rapid.IntRange(1, MaxDepth).Draw(t, "depth") {
				v = []any{v}
			}
		}
		agree(t, v)
	})
}
