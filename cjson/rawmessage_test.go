package cjson

import (
	"encoding/json"
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
				`true `, ``, `{`, `[]`, `{}`, `""`, `"a\"b"`, `"\n"`, `"\u000a"`}).Draw(t, "text"))
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
