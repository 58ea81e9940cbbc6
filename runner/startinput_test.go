package runner

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// checkStartInput holds startInput to decoding: the same body (never the
// caller's bytes), the same error, and the decoded value whenever a usage
// report needs it.
func checkStartInput(t interface{ Fatalf(string, ...any) }, text []byte, u Usage) {
	body, v, err := startInput(text, u)
	want, wantV, wantErr := decodedInput(text)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%q: error %v, decoding gives %v", text, err, wantErr)
	}
	if !bytes.Equal(body, want) {
		t.Fatalf("%q: body %q, decoding gives %q", text, body, want)
	}
	if len(body) > 0 && len(text) > 0 && &body[0] == &text[0] {
		t.Fatalf("the body of %q shares the caller's bytes", text)
	}
	if !u.zero() && err == nil && !reflect.DeepEqual(v, wantV) {
		t.Fatalf("%q with usage: value %#v, decoding gives %#v", text, v, wantV)
	}
}

func TestStartInputMatchesDecoding(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		v := genJSON(4).Draw(rt, "v")
		if m, ok := v.(map[string]any); ok && rapid.IntRange(0, 5).Draw(rt, "wrap") == 0 {
			m["format"] = rapid.SampledFrom([]string{ReportedInputFormat, "other"}).Draw(rt, "format")
		}
		text := writeMessy(rt, nil, v)
		if rapid.IntRange(0, 3).Draw(rt, "damage") == 0 {
			text = damaged(rt, text)
		}
		var u Usage
		if rapid.Bool().Draw(rt, "usage") {
			u = Usage{Tokens: rapid.Int64Range(0, 100).Draw(rt, "tokens"), CostMicros: rapid.Int64Range(0, 100).Draw(rt, "cost")}
		}
		checkStartInput(rt, text, u)
	})
	for _, c := range []string{
		unsortedRefundInput,
		`{"a":1}`, `{"b":1,"a":1.0}`, `{"b":1,"a":"\u0041"}`, `{"b":1,"a":2,"b":3}`,
		`{"input":{},"format":` + string(reportedFormatText) + `}`, `{"format":"x","input":1}`, `[1,2]`, `"s"`, ``, `{`,
	} {
		checkStartInput(t, []byte(c), Usage{})
		checkStartInput(t, []byte(c), Usage{Tokens: 3})
	}
}

// The governed step's first input, its members out of order, is made its
// body in the one allocation of the body itself: not decoded.
func TestStartInputAllocatesItsBytes(t *testing.T) {
	in := []byte(unsortedRefundInput)
	wantOneAllocation(t, func() {
		if _, _, err := startInput(in, Usage{}); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkStartInput is the governed step's first input, its members out
// of order, made its body as StartWithUsage made it before (canonicalized
// and decoded again) and as it does now.
func BenchmarkStartInput(b *testing.B) {
	in := []byte(unsortedRefundInput)
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := decodedInput(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sorted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := startInput(in, Usage{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
