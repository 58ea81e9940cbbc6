package runner

import (
	"bytes"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// jsonValue draws a value of cjson's model, nested at most depth deep.
func jsonValue(depth int) *rapid.Generator[any] {
	str := rapid.OneOf(
		rapid.StringMatching(`[a-z_]{0,8}`),
		rapid.String(), // any Unicode, NFC or not
		rapid.SampledFrom([]string{"e\u0301", "é", "\"\\", "\x00\x1f", "\u2028"}),
	)
	leaf := rapid.OneOf(
		rapid.Just[any](nil), rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int64(), func(n int64) any { return n }),
		rapid.Map(str, func(s string) any { return s }),
	)
	if depth == 0 {
		return leaf
	}
	return rapid.OneOf(leaf,
		rapid.Map(rapid.SliceOfN(jsonValue(depth-1), 0, 4), func(xs []any) any { return xs }),
		rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z_]{1,6}`), jsonValue(depth-1), 0, 4),
			func(m map[string]any) any { return m }),
	)
}

// nested is a body of n arrays, one inside the next.
func nested(n int) []byte {
	return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
}

// encodeAccepted writes the record member by member around the body's
// bytes; encodeAcceptedValue, through the value model, is its oracle: the
// same bytes for every input, or both refuse it.
func TestEncodeAcceptedMatchesTheValueModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var body []byte
		switch rapid.IntRange(0, 5).Draw(t, "shape") {
		case 0, 1, 2: // canonical, as every input the runner holds
			b, err := cjson.Encode(jsonValue(3).Draw(t, "value"))
			if err != nil {
				t.Skip("no canonical form")
			}
			body = b
		case 3: // canonical text of a kind with set-like members
			items := rapid.SliceOfNDistinct(rapid.StringMatching(`sha256:[a-f0-9]{4}`), 0, 4, rapid.ID[string]).Draw(t, "items")
			v := map[string]any{"kind": "ActionReceipt", "output_digests": anySlice(items)}
			if rapid.Bool().Draw(t, "unsorted") {
				// As written, in an order the set would not keep.
				var b bytes.Buffer
				b.WriteString(`{"kind":"ActionReceipt","output_digests":[`)
				for i, it := range items {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(`"` + it + `"`)
				}
				b.WriteString(`]}`)
				body = b.Bytes()
			} else {
				b, err := cjson.Encode(v)
				if err != nil {
					t.Fatal(err)
				}
				body = b
			}
		case 4: // not canonical, or not JSON
			body = []byte(rapid.SampledFrom([]string{`{"b":1, "a":2}`, `{"a":1.5}`, `[1,`, ``, `"\u00e9"`, `{"a":"x","a":"y"}`}).Draw(t, "text"))
		case 5: // at and around the depth limit once embedded
			body = nested(rapid.IntRange(cjson.MaxDepth-4, cjson.MaxDepth).Draw(t, "depth"))
		}
		in := Accepted{
			Seq:        rapid.Int64Range(1, 1<<40).Draw(t, "seq"),
			Kind:       rapid.SampledFrom([]string{"input", "receipt", "choice", "mrp", "ActionReceipt", "EffectIntent"}).Draw(t, "kind"),
			Body:       body,
			Digest:     cjson.Digest(body),
			Actor:      rapid.OneOf(rapid.Just(""), rapid.StringMatching(`[a-z]{1,8}`), rapid.String()).Draw(t, "actor"),
			ActorRole:  rapid.OneOf(rapid.Just(""), rapid.Just("agent"), rapid.String()).Draw(t, "role"),
			Capability: rapid.OneOf(rapid.Just(""), rapid.Just("run.input"), rapid.String()).Draw(t, "capability"),
		}
		if rapid.Bool().Draw(t, "usage") {
			in.Usage = &Usage{Tokens: rapid.Int64Range(0, 1<<50).Draw(t, "tokens"), CostMicros: rapid.Int64Range(0, 1<<50).Draw(t, "cost")}
		}
		// A body the runner proved canonical (as a pending receipt's) is
		// not checked again; a proof of other bytes is ignored.
		var proof canonJSON
		if k, ok := checkedJSON(body); ok && rapid.Bool().Draw(t, "proved") {
			proof = k
			if rapid.Bool().Draw(t, "proof of these bytes") {
				in.Body = k.b
			}
		}
		got, gotErr := encodeAccepted(in, proof)
		want, wantErr := encodeAcceptedValue(in)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("encodeAccepted error %v, the value model's %v", gotErr, wantErr)
		}
		if gotErr != nil {
			if gotErr.Error() != wantErr.Error() {
				t.Fatalf("encodeAccepted refused with %v, the value model with %v", gotErr, wantErr)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeAccepted\n%s\nthe value model\n%s", got, want)
		}
		// What is written reads back as what was accepted.
		back, err := DecodeAccepted(got)
		if err != nil {
			t.Fatal(err)
		}
		if back.Seq != in.Seq || back.Kind != in.Kind || back.Digest != in.Digest || back.Actor != in.Actor ||
			back.ActorRole != in.ActorRole || back.Capability != in.Capability || (back.Usage == nil) != (in.Usage == nil) {
			t.Fatalf("read back %+v from %+v", back, in)
		}
	})
}

func anySlice(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// nestingByteByByte is nesting as first written, one byte at a time: the
// oracle for the version that skips strings with IndexByte.
func nestingByteByByte(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func TestNestingMatchesByteByByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Text made of what nesting looks at, JSON or not: quotes,
		// backslashes (runs of them), brackets, and filler.
		b := rapid.SliceOf(rapid.SampledFrom([]byte(`"\[]{}a:,`))).Draw(t, "text")
		if got, want := nesting(b), nestingByteByByte(b); got != want {
			t.Fatalf("nesting(%q) = %d, byte by byte %d", b, got, want)
		}
	})
	for _, s := range []string{``, `"`, `\`, `"\"`, `"\\"[`, `["\\\"]"]`, `[[["a"]]]`, `{"a":[{"b":"[[["}]}`} {
		if got, want := nesting([]byte(s)), nestingByteByByte([]byte(s)); got != want {
			t.Fatalf("nesting(%q) = %d, byte by byte %d", s, got, want)
		}
	}
}

// nestsBelow tells what comparing nesting with the limit tells, for texts
// with few brackets and many, strings full of them, and limits around
// their depth and count.
func TestNestsBelowMatchesNesting(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.SampledFrom([]byte(`"\[]{}a:,`))).Draw(t, "text")
		if rapid.Bool().Draw(t, "deep") {
			n := rapid.IntRange(0, 140).Draw(t, "n")
			b = append(append(bytes.Repeat([]byte("["), n), b...), bytes.Repeat([]byte("]"), n)...)
		}
		n := nesting(b)
		limit := rapid.SampledFrom([]int{0, 1, n - 1, n, n + 1, bytes.Count(b, []byte("[")) + bytes.Count(b, []byte("{")), cjson.MaxDepth - 2}).Draw(t, "limit")
		if got, want := nestsBelow(b, limit), n < limit; got != want {
			t.Fatalf("nestsBelow(%q, %d) = %v; nesting is %d", b, limit, got, n)
		}
	})
}
