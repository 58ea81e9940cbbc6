package cjson

import (
	"testing"

	"pgregory.net/rapid"
)

// Whenever AppendPlain answers, its bytes are the encoder's for the same
// value below a root without a kind; the plain shapes are answered.
func TestAppendPlainIsTheEncoder(t *testing.T) {
	str := rapid.OneOf(
		rapid.StringMatching(`[a-z_:0-9]{0,12}`),
		rapid.SampledFrom([]string{"", "a\"b", "back\\slash", "tab\t", "é", "e\u0301", "\x7f", "\x00"}),
	)
	var value func(rt *rapid.T, depth int) any
	value = func(rt *rapid.T, depth int) any {
		top := 6
		if depth > 4 {
			top = 3
		}
		switch rapid.IntRange(0, top).Draw(rt, "kind") {
		case 0:
			return rapid.Int64().Draw(rt, "i64")
		case 1:
			return rapid.Int().Draw(rt, "int")
		case 2:
			return str.Draw(rt, "s")
		case 3:
			return rapid.SliceOfN(str, 0, 3).Draw(rt, "strs")
		case 4:
			n := rapid.IntRange(0, 3).Draw(rt, "n")
			items := make([]any, n)
			for i := range items {
				items[i] = value(rt, depth+1)
			}
			return items
		case 5:
			m := map[string]any{}
			for range rapid.IntRange(0, 10).Draw(rt, "n") {
				m[str.Draw(rt, "key")] = value(rt, depth+1)
			}
			return m
		default:
			return 1.5
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		v := value(rt, 0)
		got, ok := AppendPlain([]byte(`{"value":`), v)
		if !ok {
			return
		}
		want, err := Marshal(map[string]any{"value": v})
		if err != nil || string(append(got, '}')) != string(want) {
			rt.Fatalf("%#v: written %s}, encoder %s (%v)", v, got, want, err)
		}
	})
	for _, v := range []any{int64(3), 4, "authorized", []string{"intent:a"}, []string{},
		map[string]any{"b": []any{int64(1), "x"}, "a": map[string]any{}, "c": "z", "ab": 2}} {
		got, ok := AppendPlain([]byte(`{"value":`), v)
		want, err := Marshal(map[string]any{"value": v})
		if !ok || err != nil || string(append(got, '}')) != string(want) {
			t.Errorf("%#v: written %s} (%v), encoder %s (%v)", v, got, ok, want, err)
		}
	}
}
