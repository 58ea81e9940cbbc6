package runner

import (
	"bytes"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// writeMessy writes v as a client's encoder might: each object's members
// in an order drawn, whitespace drawn between tokens, everything else as
// cjson writes it.
func writeMessy(rt *rapid.T, b []byte, v any) []byte {
	space := func(b []byte) []byte {
		return append(b, rapid.SampledFrom([]string{"", "", "", " ", "\n", "\t", "\r\n  "}).Draw(rt, "space")...)
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		keys = rapid.Permutation(keys).Draw(rt, "order")
		b = space(append(b, '{'))
		for i, k := range keys {
			if i > 0 {
				b = space(append(b, ','))
			}
			b = space(space(cjson.AppendString(b, k)))
			b = writeMessy(rt, append(b, ':'), x[k])
			b = space(b)
		}
		return append(b, '}')
	case []any:
		b = space(append(b, '['))
		for i, el := range x {
			if i > 0 {
				b = space(append(b, ','))
			}
			b = space(writeMessy(rt, b, el))
		}
		return append(b, ']')
	}
	enc, err := cjson.Encode(v)
	if err != nil {
		rt.Fatal(err)
	}
	return append(b, enc...)
}

// checkSortedInput holds sortedPlainInput to the decoding path: what it
// vouches for decodes, passes plainInput and encodes to exactly its bytes,
// a copy.
func checkSortedInput(t interface{ Fatalf(string, ...any) }, text []byte) ([]byte, bool) {
	out, ok := sortedPlainInput(text)
	if !ok {
		return nil, false
	}
	v, err := cjson.Decode(text)
	if err != nil {
		t.Fatalf("sorted %q, which does not decode: %v", text, err)
	}
	if err := plainInput(v); err != nil {
		t.Fatalf("sorted %q, which plainInput refuses: %v", text, err)
	}
	want, err := inputBytes(text, v)
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("sorted %q into %q; decoding and encoding it gives %q, %v", text, out, want, err)
	}
	if len(out) > 0 && len(text) > 0 && &out[0] == &text[0] {
		t.Fatalf("the sorted bytes of %q share the caller's", text)
	}
	return out, true
}

func TestSortedInputMatchesDecoding(t *testing.T) {
	wrapper := string(reportedFormatText)
	rapid.Check(t, func(rt *rapid.T) {
		v := genJSON(4).Draw(rt, "v")
		if m, ok := v.(map[string]any); ok && rapid.IntRange(0, 5).Draw(rt, "wrap") == 0 {
			m["format"] = rapid.SampledFrom([]string{ReportedInputFormat, "other"}).Draw(rt, "format")
		}
		canon, err := cjson.Encode(v)
		if err != nil {
			rt.Skip("not encodable")
		}
		text := writeMessy(rt, nil, v)
		if rapid.IntRange(0, 3).Draw(rt, "damage") == 0 {
			text = damaged(rt, text)
			checkSortedInput(rt, text)
			return
		}
		out, ok := checkSortedInput(rt, text)
		m, isObject := v.(map[string]any)
		wrapped := isObject && m["format"] == ReportedInputFormat
		kind, _ := m["kind"].(string)
		if !wrapped && cjson.SetLikePaths(kind) == nil && (!ok || !bytes.Equal(out, canon)) {
			rt.Fatalf("%q: sorted %q %v, want %q", text, out, ok, canon)
		}
		if wrapped && ok {
			rt.Fatalf("%q: vouched for a usage report's wrapper", text)
		}
	})
	for _, c := range []struct{ in, want string }{
		{unsortedRefundInput,
			`{"payload":{"amount":10,"payee":"p1","reason":"damaged item","refund_id":"r-1-1"},"type":"refund.requested/1"}`},
		{" { \"b\" : 1 ,\n\"a\" : [ 1 , {\"d\":[],\"c\":{}} ] } \r\n", `{"a":[1,{"c":{},"d":[]}],"b":1}`},
		{`{"ab":1,"a":2,"a!":3}`, `{"a":2,"a!":3,"ab":1}`},
		{`[{"b":"x\"y","a":"\\"}]`, `[{"a":"\\","b":"x\"y"}]`},
		{`{"b":1,"a":2,"b":3}`, ""},
		{`{"b":1,"a":1.0}`, ""},
		{`{"b":1,"a":1e2}`, ""},
		{`{"b":1,"a":"\u0041"}`, ""},
		{`{"input":{},"format":` + wrapper + `}`, ""},
		{`{"b":1,"a":2}x`, ""},
		{`{"b":1,"a":2}}`, ""},
		{`{"b":1,"a":[2}]`, ""},
		{`{"b":1 2,"a":2}`, ""},
		{`{"b":1,"a":tru}`, ""},
		{"\xef\xbb\xbf{\"b\":1,\"a\":2}", ""},
		{`{"b":1,"a":2,}`, ""},
		{`{"b":1,,"a":2}`, ""},
		{`{b:1}`, ""},
		{``, ""},
	} {
		out, ok := checkSortedInput(t, []byte(c.in))
		if string(out) != c.want || ok != (c.want != "") {
			t.Errorf("%q: sorted %q %v, want %q", c.in, out, ok, c.want)
		}
	}
}

// The bench's input, unsorted, is made into its inbox body in the one
// allocation of the body itself.
func TestSortedInputAllocatesItsBytes(t *testing.T) {
	in := []byte(unsortedRefundInput)
	wantOneAllocation(t, func() {
		if _, ok := plainInputBytes(in, Usage{}); !ok {
			t.Fatal("declined")
		}
	})
}

// unsortedRefundInput is the governed step's input as the bench submits
// it, its members out of order.
const unsortedRefundInput = `{"type":"refund.requested/1","payload":{"amount":10,"payee":"p1","reason":"damaged item","refund_id":"r-1-1"}}`

// wantOneAllocation fails t unless f allocates once a call.
func wantOneAllocation(t *testing.T, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(100, f); n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}

// BenchmarkInputBody is the inbox body of the governed step's input, its
// members out of order: decoded, checked and encoded again, and sorted
// from its bytes.
func BenchmarkInputBody(b *testing.B) {
	in := []byte(unsortedRefundInput)
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := cjson.Decode(in)
			if err != nil || plainInput(v) != nil {
				b.Fatal(err)
			}
			if _, err := inputBytes(in, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sorted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := plainInputBytes(in, Usage{}); !ok {
				b.Fatal("declined")
			}
		}
	})
}

// damaged is text made anything at all near the shapes an input reader
// reads: cut, doubled in part, or with a byte put in.
func damaged(rt *rapid.T, text []byte) []byte {
	i := rapid.IntRange(0, len(text)).Draw(rt, "at")
	switch rapid.IntRange(0, 3).Draw(rt, "how") {
	case 0:
		return text[:i]
	case 1:
		text = append(slices.Clone(text[:i]), text[i:]...)
		return append(text, text[:i]...)
	default:
		c := rapid.SampledFrom([]byte(`{}[]",:\ 01-.eE`+"\x00\xef")).Draw(rt, "byte")
		return slices.Insert(slices.Clone(text), i, c)
	}
}
