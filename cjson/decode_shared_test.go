package cjson

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestDecodeSharedIsDecodeCopied holds Decode with its strings cut from one
// copy of the text to the decoder copying each string on its own: the same
// value or the same error, over documents drawn whole and then damaged
// byte by byte (escapes, control bytes, broken UTF-8, bad numbers), and a
// decoded value does not change when the caller's bytes do.
func TestDecodeSharedIsDecodeCopied(t *testing.T) {
	strs := rapid.SampledFrom([]string{"", "a", "refund_id", "payee-3", "é", "e\u0301", "東", "\"q\"", "back\\slash", "tab\t", "\U0001F600", "x\u2028y"})
	var val func(depth int) *rapid.Generator[any]
	val = func(depth int) *rapid.Generator[any] {
		leaves := []*rapid.Generator[any]{
			rapid.Map(strs, func(s string) any { return s }),
			rapid.Map(rapid.Int64(), func(n int64) any { return n }),
			rapid.Just[any](true), rapid.Just[any](nil),
		}
		if depth > 2 {
			return rapid.OneOf(leaves...)
		}
		return rapid.OneOf(append(leaves,
			rapid.Map(rapid.MapOfN(strs, val(depth+1), 0, 4), func(m map[string]any) any { return m }),
			rapid.Map(rapid.SliceOfN(val(depth+1), 0, 4), func(s []any) any { return s }))...)
	}
	damage := []string{"\\", "\"", "\\u00e9", "\\ud800", "\x01", "\xff", "\xe2\x82", "0", "-0", "01", "1.5", "99999999999999999999", ",", "}", "]", " "}
	rapid.Check(t, func(t *rapid.T) {
		v := val(0).Draw(t, "value")
		src, err := Marshal(v)
		if err != nil {
			t.Skip(err)
		}
		for range rapid.IntRange(0, 2).Draw(t, "damages") {
			at := rapid.IntRange(0, len(src)).Draw(t, "at")
			d := rapid.SampledFrom(damage).Draw(t, "damage")
			src = append(src[:at:at], append([]byte(d), src[at:]...)...)
		}
		shared, serr := decode(src, true)
		copied, cerr := decode(src, false)
		if (serr == nil) != (cerr == nil) || (serr != nil && serr.Error() != cerr.Error()) || !reflect.DeepEqual(shared, copied) {
			t.Fatalf("%q: shared %#v %v, copied %#v %v", src, shared, serr, copied, cerr)
		}
		for i := range src {
			src[i] = 'x'
		}
		if !reflect.DeepEqual(shared, copied) {
			t.Fatalf("the shared value changed with the text: %#v, %#v", shared, copied)
		}
	})
}
