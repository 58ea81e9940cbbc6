package cjson

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// A Members writer writes what Marshal writes for the same object, and is
// refused exactly where Marshal is, at the member Marshal names.
func TestMembersMatchesMarshal(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.StringMatching(`[ -~]{0,20}`),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
		rapid.SampledFrom([]string{"e\u0301", "\xff", "\xed\xa0\x80", "a\"b\\c\n"}))
	rapid.Check(t, func(t *rapid.T) {
		a, c := str.Draw(t, "a"), str.Draw(t, "c")
		b := rapid.Bool().Draw(t, "b")
		n := rapid.Int64().Draw(t, "n")
		inner := str.Draw(t, "inner")
		want, werr := Marshal(map[string]any{"a": a, "b": b, "c": c, "n": n, "o": map[string]any{"x": inner}})

		var w Members
		w.Open()
		w.Str("a", a)
		w.Bool("b", b)
		w.Key("c")
		w.Quote(c, "c")
		w.Int("n", n)
		w.Key("o")
		w.Open()
		w.Str("x", inner)
		w.Close()
		w.Close()

		if (werr == nil) != (w.Err == nil) {
			t.Fatalf("Marshal error %v, Members error %v", werr, w.Err)
		}
		if werr != nil {
			var me, we *Error
			if !errors.As(werr, &me) || !errors.As(w.Err, &we) || me.Code != we.Code {
				t.Fatalf("Marshal error %v, Members error %v", werr, w.Err)
			}
			return
		}
		if string(w.B) != string(want) {
			t.Fatalf("Members wrote %s, Marshal %s", w.B, want)
		}
	})
}

// The first refusal is the one kept, pointed at its member.
func TestMembersKeepsTheFirstRefusal(t *testing.T) {
	var w Members
	w.Open()
	w.Str("a", "\xff")
	w.Str("b", "e\u0301")
	w.Close()
	var e *Error
	if !errors.As(w.Err, &e) || e.Code != CodeInvalidUTF8 || e.Pointer != "/a" {
		t.Fatalf("err = %#v", w.Err)
	}
	if string(w.B) != "{\"a\":\"\xff\",\"b\":\"e\u0301\"}" {
		t.Fatalf("bytes %q", w.B)
	}
}
