package runner

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// stateText draws a state's text as Init may return it: cjson's encoding
// of a value, or text edited into what decodes otherwise, is refused, or
// nests near the limit.
func stateText(rt *rapid.T) []byte {
	b, err := cjson.Encode(genJSON(4).Draw(rt, "state"))
	if err != nil {
		b = []byte(`{"a":1}`)
	}
	switch rapid.IntRange(0, 12).Draw(rt, "edit") {
	case 1:
		return append([]byte(" "), b...)
	case 2:
		return []byte(`{"kind":"EffectIntent","preconditions":["b","a"]}`)
	case 3:
		return []byte(`{"kind":"EffectIntent","preconditions":["a","b"]}`)
	case 4:
		return []byte(`{"kind":"Effect\u0049ntent","preconditions":["a","b"]}`)
	case 5:
		return []byte(`{"Kind":"x","a":1}`)
	case 6:
		return []byte(`{"kind":1,"a":[1]}`)
	case 7:
		return []byte(`{"a":1,"a":2}`)
	case 8:
		return b[:rapid.IntRange(0, len(b)).Draw(rt, "cut")]
	case 9:
		n := rapid.IntRange(cjson.MaxDepth-4, cjson.MaxDepth+1).Draw(rt, "depth")
		return []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}")
	case 10:
		return []byte(`{"é":1,"kind":"flrh.workflow.state"}`)
	case 11:
		return []byte(`{"b":"x","kind":"flrh.workflow.state"}`)
	}
	return b
}

// setInitial keeps the same state as decoding it (setState of canonValue)
// does: the same checkpoint, the same state bytes alone and embedded, the
// same errors, and never the caller's bytes.
func TestSetInitialMatchesDecoding(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := stateText(rt)
		fresh := func() *checkpoint {
			return &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, Open: []openEffect{}, Ingest: []pendingReceipt{}}
		}
		ref := fresh()
		sv, rerr := canonValue(b)
		if rerr == nil {
			ref.setState(sv)
		}
		got := fresh()
		gerr := got.setInitial(b)
		if (rerr == nil) != (gerr == nil) || (rerr != nil && rerr.Error() != gerr.Error()) {
			rt.Fatalf("setInitial(%s) = %v; decoding = %v", b, gerr, rerr)
		}
		if rerr != nil {
			return
		}
		want, werr := ref.encode()
		enc, eerr := got.encode()
		if (werr == nil) != (eerr == nil) || !bytes.Equal(enc, want) {
			rt.Fatalf("encode = %s, %v; want %s, %v", enc, eerr, want, werr)
		}
		checkForms(rt, ref)
		wa, waerr := ref.stateBytes()
		ga, gaerr := got.stateBytes()
		if (waerr == nil) != (gaerr == nil) || !bytes.Equal(ga, wa) {
			rt.Fatalf("stateBytes = %s, %v; want %s, %v", ga, gaerr, wa, waerr)
		}
		we, weerr := ref.stateEmbedded()
		ge, geerr := got.stateEmbedded()
		if (weerr == nil) != (geerr == nil) || !bytes.Equal(ge, we) {
			rt.Fatalf("stateEmbedded = %s, %v; want %s, %v", ge, geerr, we, weerr)
		}
		if got.alone != nil && len(b) > 0 && &got.alone[0] == &b[0] {
			rt.Fatal("the state shares the caller's bytes")
		}
	})
}

// A workflow's own initial state is kept as its bytes, not decoded.
func TestSetInitialKeepsCanonicalState(t *testing.T) {
	for _, s := range []string{`{"a":[1,"x"],"kind":"flrh.workflow.state"}`, `{}`, `{"b":{"kind":"EffectIntent","preconditions":["b","a"]}}`} {
		cp := &checkpoint{}
		if err := cp.setInitial([]byte(s)); err != nil || cp.State != nil || string(cp.alone) != s {
			t.Errorf("setInitial(%s): State %v, alone %s, %v", s, cp.State, cp.alone, err)
		}
	}
	for _, s := range []string{`{"kind":"EffectIntent","preconditions":["a","b"]}`, `[1]`, `{"a": 1}`} {
		cp := &checkpoint{}
		if err := cp.setInitial([]byte(s)); err != nil || cp.State == nil {
			t.Errorf("setInitial(%s) kept the bytes: %v", s, err)
		}
	}
}

// canonicalPlainInput vouches only for inputs that decode, pass
// plainInput, and encode back to themselves.
func TestCanonicalPlainInputMatchesDecoding(t *testing.T) {
	wrapper := string(reportedFormatText)
	rapid.Check(t, func(rt *rapid.T) {
		var b []byte
		switch rapid.IntRange(0, 5).Draw(rt, "form") {
		case 0:
			b = stateText(rt)
		case 1:
			b = []byte(rapid.SampledFrom([]string{
				`{"format":` + wrapper + `,"input":{}}`,
				`{"format":` + wrapper + `}`,
				`{"format":"x","input":{}}`,
				`{"format":1}`,
				`{"Format":` + wrapper + `}`,
				`{"a":{"format":` + wrapper + `}}`,
				`[{"format":` + wrapper + `}]`,
				`"` + ReportedInputFormat + `"`,
				`{"format":` + wrapper + `,"format":1}`,
				`{"f\u006frmat":` + wrapper + `}`,
				`{"é":1,"format":` + wrapper + `}`,
			}).Draw(rt, "text"))
		default:
			v := genJSON(3).Draw(rt, "v")
			if m, ok := v.(map[string]any); ok && rapid.Bool().Draw(rt, "wrap") {
				m["format"] = rapid.SampledFrom([]string{ReportedInputFormat, "other"}).Draw(rt, "format")
			}
			var err error
			if b, err = cjson.Encode(v); err != nil {
				rt.Skip("not encodable")
			}
		}
		if !canonicalPlainInput(b) {
			return
		}
		v, err := cjson.Decode(b)
		if err != nil {
			rt.Fatalf("vouched for %s, which does not decode: %v", b, err)
		}
		if err := plainInput(v); err != nil {
			rt.Fatalf("vouched for %s, which plainInput refuses: %v", b, err)
		}
		out, err := inputBytes(b, v)
		if err != nil || !bytes.Equal(out, b) {
			rt.Fatalf("vouched for %s, which encodes as %s, %v", b, out, err)
		}
	})
	if canonicalPlainInput([]byte(`{"format":` + wrapper + `,"x":1}`)) {
		t.Fatal("vouched for a usage report's wrapper")
	}
	if !canonicalPlainInput([]byte(`{"amount":5,"format":"x"}`)) {
		t.Fatal("declined an ordinary canonical input")
	}
}
