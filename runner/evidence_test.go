package runner

import (
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// plainEvidenceDigest writes exactly the bytes cjson.Marshal writes for an
// evidence item, or declines: whenever it answers, its digest is the
// encoder's.
func TestPlainEvidenceDigestMatchesTheEncoder(t *testing.T) {
	str := rapid.OneOf(
		rapid.StringMatching(`[a-z_]{0,20}`),
		rapid.String(),
		rapid.SampledFrom([]string{"", "a\"b", "back\\slash", "tab\t", "é", "e\u0301", "sha256:" + cjson.HexDigest(nil), "\x7f", "\x00"}),
	)
	rapid.Check(t, func(rt *rapid.T) {
		name := str.Draw(rt, "name")
		var v any
		switch rapid.IntRange(0, 4).Draw(rt, "type") {
		case 0:
			v = rapid.Int64().Draw(rt, "int64")
		case 1:
			v = rapid.Int().Draw(rt, "int")
		case 2:
			v = str.Draw(rt, "string")
		case 3:
			v = rapid.SliceOf(str).Draw(rt, "strings")
			if rapid.Bool().Draw(rt, "nil") {
				v = []string(nil)
			}
		case 4:
			v = map[string]any{"accepted": rapid.Int64().Draw(rt, "cursor")}
		}
		got, ok := plainEvidenceDigest(name, v)
		want, err := cjson.DigestOf(map[string]any{"evidence": name, "value": v})
		if ok && (err != nil || got != want) {
			rt.Fatalf("evidence %q = %#v: written %s, encoder %s (%v)", name, v, got, want, err)
		}
	})
	// The shapes the runner fires with most are written directly.
	for _, v := range []any{int64(3), 4, "authorized", []string{"intent:a"}, []string{}} {
		if _, ok := plainEvidenceDigest("attempt_id", v); !ok {
			t.Errorf("%#v is not written directly", v)
		}
	}
}
