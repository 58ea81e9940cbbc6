package ground

import (
	"math/big"
	"testing"
)

func TestDecode(t *testing.T) {
	good := []struct {
		in   string
		want string
	}{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`"\ud83d\ude00"`, "\"\U0001F600\""},
		{` [ ] `, `[]`},
	}
	for _, c := range good {
		v, err := Decode([]byte(c.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", c.in, err)
			continue
		}
		if got := string(mustCanonical(v)); got != c.want {
			t.Errorf("Decode(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, in := range []string{`{`, `[1,]`, `{"a":1} x`, "\xff", `"\ud800"`, `"\udc00x"`, `{1:2}`, ``} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) accepted", in)
		}
	}
	// Out-of-domain numbers decode, so the kernel can point at them.
	v, err := Decode([]byte(`[1.5, 1e3, 9223372036854775808]`))
	if err != nil {
		t.Fatal(err)
	}
	xs := v.([]any)
	if _, ok := xs[0].(float64); !ok {
		t.Errorf("1.5 decoded as %T", xs[0])
	}
	if _, ok := xs[2].(*big.Int); !ok {
		t.Errorf("2^63 decoded as %T", xs[2])
	}
	for i, code := range []string{canonFloat, canonFloat, canonIntRange} {
		if _, cerr := canonical(xs[i]); cerr == nil || cerr.code != code {
			t.Errorf("item %d: %v, want %s", i, cerr, code)
		}
	}
}

// A float inside a delta input is a CANONICALIZATION_VIOLATION at its exact
// pointer, not a decode failure.
func TestCanonicalizationViolationPointer(t *testing.T) {
	b := buildBundle(m2, "empty", false)
	in := buildDelta(m2, "a_positive", 1, b)
	in["delta"].(map[string]any)["provenance_delta"].(map[string]any)["weight"] = 0.5
	_, rej := Solve(nil, b, []any{in}, 1)
	if rej == nil || rej.Code != CodeCanonicalizationViolation || rej.Path != "/fact_delta_inputs/0/delta/provenance_delta/weight" ||
		rej.Context["invariant"] != canonFloat {
		t.Fatalf("got %v", rej)
	}
	// Non-NFC text ("e" + combining acute) in an atom.
	in = buildDelta(m2, "a_positive", 1, b)
	in["delta"].(map[string]any)["tuple"].(map[string]any)["subject"] = "e\u0301"
	_, rej = Solve(nil, b, []any{in}, 1)
	if rej == nil || rej.Code != CodeCanonicalizationViolation || rej.Path != "/fact_delta_inputs/0/delta/tuple/subject" ||
		rej.Context["invariant"] != canonNonNFC {
		t.Fatalf("got %v", rej)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1.5,"x",null]`, `"\ud800"`, `{"kind":"LRuleBundle"}`, `[[[[]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		// Whatever decodes can be canonicalized or is rejected with a code,
		// and canonical bytes decode back to the same canonical bytes.
		b, cerr := canonical(v)
		if cerr != nil {
			if cerr.code == "" {
				t.Fatal("empty canonicalization code")
			}
			return
		}
		v2, err := Decode(b)
		if err != nil {
			t.Fatalf("canonical bytes do not decode: %v", err)
		}
		if b2 := mustCanonical(v2); string(b2) != string(b) {
			t.Fatalf("canonical form not stable: %s vs %s", b, b2)
		}
	})
}

// FuzzSolve feeds decoded arbitrary text in every argument position: the
// kernel must return a result or a typed rejection, never panic, and never
// answer differently for the same input.
func FuzzSolve(f *testing.F) {
	b := buildBundle(m2, "two_supports", false)
	bb := mustCanonical(b)
	ins := mustCanonical(buildDeltas(m2, []string{"a_positive", "b_positive"}, 1, b))
	res, _ := Solve(nil, b, buildDeltas(m2, []string{"a_positive"}, 1, b), 1)
	mat := mustCanonical(res["next_materialization"])
	f.Add([]byte("null"), bb, ins, int64(1))
	f.Add(mat, bb, mustCanonical(buildDeltas(m2, []string{"a_positive_retract"}, 2, b)), int64(2))
	f.Add([]byte(`{}`), []byte(`{"kind":"LRuleBundle"}`), []byte(`[{}]`), int64(0))
	f.Fuzz(func(t *testing.T, prior, bundle, inputs []byte, lt int64) {
		p, err1 := Decode(prior)
		bv, err2 := Decode(bundle)
		iv, err3 := Decode(inputs)
		if err1 != nil || err2 != nil || err3 != nil {
			return
		}
		r1, rej1 := Solve(p, bv, iv, lt)
		r2, rej2 := Solve(p, bv, iv, lt)
		if (rej1 == nil) != (rej2 == nil) {
			t.Fatal("nondeterministic acceptance")
		}
		if rej1 != nil {
			if rej1.Code == CodeInvariantViolation {
				t.Fatalf("internal failure: %v", rej1.Wire())
			}
			if string(mustCanonical(rej1.Wire())) != string(mustCanonical(rej2.Wire())) {
				t.Fatal("nondeterministic rejection")
			}
			return
		}
		if string(mustCanonical(r1)) != string(mustCanonical(r2)) {
			t.Fatal("nondeterministic result")
		}
	})
}
