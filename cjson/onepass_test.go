package cjson

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// agree checks the one-pass encoder against the two-pass reference: the
// same values succeed, with the same bytes, and Encode reports exactly
// the reference's error.
func agree(t interface {
	Fatalf(string, ...any)
}, v any) {
	ref, refErr := encodeTwoPass(v)
	got, ok := onePass(v)
	if ok != (refErr == nil) {
		t.Fatalf("one-pass ok=%v, two-pass err=%v, for %#v", ok, refErr, v)
	}
	if ok && string(got) != string(ref) {
		t.Fatalf("bytes differ for %#v:\none-pass %s\ntwo-pass %s", v, got, ref)
	}
	enc, err := Encode(v)
	d, derr := DigestOf(v)
	if refErr != nil {
		var a, b *Error
		if !errors.As(err, &a) || !errors.As(refErr, &b) || *a != *b {
			t.Fatalf("Encode error %v, reference %v", err, refErr)
		}
		if !errors.As(derr, &a) || *a != *b {
			t.Fatalf("DigestOf error %v, reference %v", derr, refErr)
		}
		out, aerr := AppendMarshal([]byte("prefix:"), v)
		if !errors.As(aerr, &a) || *a != *b || string(out) != "prefix:" {
			t.Fatalf("AppendMarshal = %q, %v; want the prefix alone and %v", out, aerr, refErr)
		}
		if s, serr := MarshalString(v); !errors.As(serr, &a) || *a != *b || s != "" {
			t.Fatalf("MarshalString = %q, %v; want %v", s, serr, refErr)
		}
		return
	}
	// MarshalString is the reference's bytes as a string, which a later
	// encoding (through the recycled buffer) does not change.
	if s, serr := MarshalString(v); serr != nil || s != string(ref) {
		t.Fatalf("MarshalString = %q, %v; reference %s", s, serr, ref)
	} else if _, err := Encode(map[string]any{"overwrite": strings.Repeat("x", len(s)+1)}); err != nil || s != string(ref) {
		t.Fatalf("MarshalString's string changed by a later encoding: %q, was %s (%v)", s, ref, err)
	}
	if err != nil || string(enc) != string(ref) {
		t.Fatalf("Encode = %s, %v; reference %s", enc, err, ref)
	}
	if derr != nil || d != Digest(ref) {
		t.Fatalf("DigestOf = %s, %v; reference %s", d, derr, Digest(ref))
	}
	// The bytes Encode returned are the caller's: encoding again (through
	// the recycled buffer) changes none of them.
	kept := string(enc)
	if _, err := Encode(map[string]any{"overwrite": strings.Repeat("x", len(enc)+1)}); err != nil || string(enc) != kept {
		t.Fatalf("encoded bytes changed by a later encoding: %s, was %s (%v)", enc, kept, err)
	}
	// AppendMarshal writes the same bytes after what dst holds, into its
	// spare capacity or not, and leaves the prefix alone.
	for _, dst := range [][]byte{nil, []byte("prefix:"), append(make([]byte, 0, 4096), "p"...)} {
		prefix := string(dst)
		out, err := AppendMarshal(dst, v)
		if err != nil || string(out) != prefix+string(ref) {
			t.Fatalf("AppendMarshal(%q) = %s, %v; want the prefix and %s", prefix, out, err, ref)
		}
	}
}

// TestScratchUnderConcurrency encodes and digests drawn values from four
// goroutines at once, each against its own sequential reference: the
// recycled buffers are shared by all callers and must change no byte.
func TestScratchUnderConcurrency(t *testing.T) {
	vals := []any{
		map[string]any{"kind": "x", "a": strings.Repeat("long ", 400), "b": []any{int64(1), "two", nil}},
		map[string]any{"z": map[string]any{"y": strings.Repeat("é", 300)}},
		[]any{"a", "b\n\"quoted\"", true, int64(-3)},
		strings.Repeat("w", 70000),
		struct {
			A string `json:"a"`
			B []int  `json:"b"`
		}{"s", []int{3, 1, 2}},
	}
	want := make([]string, len(vals))
	wantD := make([]string, len(vals))
	for i, v := range vals {
		b, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		want[i], wantD[i] = string(b), Digest(b)
	}
	done := make(chan string, 4)
	for g := range 4 {
		go func() {
			for n := range 300 {
				i := (n + g) % len(vals)
				b, err := Encode(vals[i])
				d, derr := DigestOf(vals[i])
				if err != nil || derr != nil || string(b) != want[i] || d != wantD[i] {
					done <- "value " + strconv.Itoa(i) + " differs under concurrency"
					return
				}
			}
			done <- ""
		}()
	}
	for range 4 {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
}

// genAny draws values of the model and beyond it: floats, non-NFC and
// invalid strings, non-ASCII keys, typed slices and maps, pointers,
// structs with tags and omitempty, json.Number, set-like roots with
// duplicates.
func genAny(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		max := 15
		if depth >= 4 {
			max = 6
		}
		switch rapid.IntRange(0, max).Draw(t, "k") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "b")
		case 2:
			return rapid.Int64().Draw(t, "i")
		case 3:
			return rapid.SampledFrom([]any{int(7), int32(-3), uint8(9), uint64(1 << 63), uint(5), json.Number("12"), json.Number("1.5")}).Draw(t, "n")
		case 4:
			return rapid.SampledFrom([]string{"", "a\"b\\c\n", "é", "e\u0301", "\xff", "\u2028", "x\x01"}).Draw(t, "s")
		case 5:
			return rapid.SampledFrom([]any{1.5, float32(0), []byte("x"), complex(1, 2)}).Draw(t, "bad")
		case 6:
			return rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "s")
		case 7, 8:
			return rapid.SliceOfN(genAny(depth+1), 0, 4).Draw(t, "a")
		case 9, 10:
			keys := rapid.SliceOfN(rapid.SampledFrom([]string{"kind", "preconditions", "a", "b/c", "é", "z", "proposal_ids"}), 0, 5).Draw(t, "keys")
			m := map[string]any{}
			for _, k := range keys {
				m[k] = genAny(depth+1).Draw(t, "v")
			}
			if rapid.Bool().Draw(t, "kinded") {
				m["kind"] = rapid.SampledFrom([]any{"EffectProposal", "StableProposalBatch", "Other", 3}).Draw(t, "kind")
			}
			return m
		case 11:
			return map[string]int{"b": 2, "a": rapid.IntRange(-2, 2).Draw(t, "x")}
		case 12:
			s := sample{Kind: rapid.SampledFrom([]string{"EffectProposal", "x", ""}).Draw(t, "kind"),
				Pre: rapid.SliceOfN(rapid.SampledFrom([]string{"p", "q", "r"}), 0, 3).Draw(t, "pre"),
				N:   rapid.IntRange(-1, 1).Draw(t, "n"), Note: rapid.SampledFrom([]string{"", "n", "e\u0301"}).Draw(t, "note")}
			if rapid.Bool().Draw(t, "inner") {
				s.Inner = &inner{Z: genAny(depth+1).Draw(t, "z")}
			}
			if rapid.Bool().Draw(t, "ptr") {
				return &s
			}
			return s
		case 13:
			return []string{"b", "a"}
		case 14:
			var p *sample
			return p
		default:
			return [2]any{genAny(depth+1).Draw(t, "x"), nil}
		}
	})
}

type inner struct {
	Z any `json:"z"`
}

type sample struct {
	Kind  string   `json:"kind"`
	Pre   []string `json:"preconditions"`
	N     int      `json:"n,omitempty"`
	Note  string   `json:"note,omitzero"`
	Inner *inner   `json:"inner,omitempty"`
	Plain int
	Skip  int `json:"-"`
	low   int
}

func TestOnePassMatchesTwoPass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		agree(t, genAny(0).Draw(t, "v"))
	})
}

func TestOnePassEdges(t *testing.T) {
	deep := any(int64(1))
	for i := 0; i < MaxDepth+1; i++ {
		deep = []any{deep}
	}
	deepMap := any("x")
	for i := 0; i < MaxDepth; i++ {
		deepMap = map[string]any{"a": deepMap}
	}
	var nilIface json.Marshaler
	cases := []any{
		deep, deepMap,
		map[string]any{"kind": "EffectProposal", "preconditions": []any{"b", "a", "b"}},
		map[string]any{"kind": "EffectProposal", "preconditions": []any{"b", "a"}, "x": []any{"b", "a"}},
		map[string]any{"kind": "EffectProposal", "nested": map[string]any{"preconditions": []any{"b", "a"}}},
		sample{Kind: "EffectProposal", Pre: []string{"q", "p"}},
		sample{Kind: "EffectProposal", Pre: []string{"q", "q"}},
		&sample{Kind: "StableProposalBatch"},
		map[string]any{"é": 1},
		map[string]any{"kind": 1.5},
		json.RawMessage(`{"b":1,"a":[2,1]}`),
		map[string]any{"m": json.RawMessage(`{"b":1.5}`)},
		struct{ M json.Marshaler }{nilIface},
		map[int]string{1: "a"},
		[]any{strings.Repeat("a", 3), int8(-1), uint16(3)},
	}
	for _, c := range cases {
		agree(t, c)
	}
	// A nil interface that could marshal itself is null, not a panic.
	if b, err := Encode(struct{ M json.Marshaler }{nilIface}); err != nil || string(b) != `{"M":null}` {
		t.Fatalf("nil json.Marshaler member: %s, %v", b, err)
	}
}

func FuzzOnePassMatchesTwoPass(f *testing.F) {
	f.Add([]byte(`{"kind":"EffectProposal","preconditions":["b","a"]}`))
	f.Add([]byte(`[1,{"a":null},"x"]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return
		}
		agree(t, v)
	})
}

func BenchmarkEncodeStruct(b *testing.B) {
	v := sample{Kind: "EffectProposal", Pre: []string{"q", "p", "r"}, N: 3, Note: "note", Inner: &inner{Z: map[string]any{"a": []any{int64(1), "x", true}}}}
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := onePass(v); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("two-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeTwoPass(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
