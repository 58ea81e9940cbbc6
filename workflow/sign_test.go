package workflow

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/internal/testpki"
	"flrh.dev/flrh/yamljson"
)

// bareCapabilities is a capabilities file's chains with every signature
// taken off and every parent left out: what an operator writes.
func bareCapabilities(t testing.TB, signed []byte) []byte {
	t.Helper()
	v, err := cjson.Decode(signed)
	if err != nil {
		t.Fatal(err)
	}
	var chains []any
	for _, chain := range v.(map[string]any)["chains"].([]any) {
		var links []any
		for _, l := range chain.([]any) {
			c := maps.Clone(l.(map[string]any)["capability"].(map[string]any))
			delete(c, "parent")
			links = append(links, c)
		}
		chains = append(chains, links)
	}
	b, err := cjson.Marshal(map[string]any{"chains": chains})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Signing the examples' capabilities written bare, or as committed, with
// their operator key gives the committed files byte for byte: what the
// examples ship is what the signing tool writes.
func TestSignCapabilitiesMakesTheExamples(t *testing.T) {
	for _, name := range []string{"refund-agent", "ops-agent", "support-agent"} {
		files := readBundle(t, "../examples/"+name)
		want := files["capabilities.json"]
		for _, src := range []struct {
			what  string
			bytes []byte
		}{{"bare", bareCapabilities(t, want)}, {"signed", want}} {
			in := maps.Clone(files)
			in["capabilities.json"] = src.bytes
			if src.what == "bare" {
				_, err := Compile(in)
				var we *Error
				if !errors.As(err, &we) || we.Code != CodeBadCapability || we.Pointer != "/chains/0/0" || !strings.Contains(we.Detail, "flrh bundle sign") {
					t.Fatalf("%s: a bundle of capabilities not signed yet compiled to %v", name, err)
				}
			}
			s, err := SignCapabilities(in, "", nil, testpki.ExampleOperator())
			if err != nil {
				t.Fatalf("%s %s: %v", name, src.what, err)
			}
			if s.File != "capabilities.json" || !bytes.Equal(s.Bytes, want) {
				t.Fatalf("%s %s: signed %s as\n%s\nwant\n%s", name, src.what, s.File, s.Bytes, want)
			}
			if s.KeyID != authority.KeyID(testpki.ExampleOperator().Public().(ed25519.PublicKey)) || s.Links < 1 || s.Chains != s.Links {
				t.Fatalf("%s: %+v", name, s)
			}
		}
	}
}

// A chain of a root and a narrower child, written bare in YAML with
// comments: signed, the child names its root's digest, the file stays
// YAML (headed by a comment saying how it was made) and the bundle
// compiles; signing what was written again gives the same bytes.
func TestSignCapabilitiesInYAML(t *testing.T) {
	src := `# who may pay refunds
chains:
  - - id: capability:refund.pay
      effect_type: refund.pay
      destination: dest:payments
      scopes: [scope:refunds]
      limits: {amount: 10000}
      expiry: 1099511627776
    - id: capability:refund.pay.small   # the agent's share
      effect_type: refund.pay
      destination: dest:payments
      scopes: [scope:refunds]
      limits: {amount: 500}
      not_before: 0
      expiry: 1000000
`
	files := editBundle(t, func(m map[string]any) { m["capabilities"] = "capabilities.yaml" },
		map[string]string{"capabilities.yaml": src}, "capabilities.json")
	s, err := SignCapabilities(files, "", nil, testpki.ExampleOperator())
	if err != nil {
		t.Fatal(err)
	}
	if s.File != "capabilities.yaml" || s.Chains != 1 || s.Links != 2 || !bytes.HasPrefix(s.Bytes, []byte("# Signed by the bundle's operator key")) {
		t.Fatalf("%+v\n%s", s, s.Bytes)
	}
	files["capabilities.yaml"] = s.Bytes
	w, err := Compile(files)
	if err != nil {
		t.Fatalf("the signed bundle does not compile: %v\n%s", err, s.Bytes)
	}
	if len(w.chains) != 1 || len(w.chains[0]) != 2 || w.chains[0][1].Capability.Parent != w.chains[0][0].Capability.Digest() {
		t.Fatalf("chains %+v", w.chains)
	}
	if got := w.verified[0].Capability(); got.ID != "capability:refund.pay.small" || got.Limits["amount"] != 500 {
		t.Fatalf("effective capability %+v", got)
	}
	again, err := SignCapabilities(files, "", nil, testpki.ExampleOperator())
	if err != nil || !bytes.Equal(again.Bytes, s.Bytes) {
		t.Fatalf("signed again: %v\n%s", err, again.Bytes)
	}
	// The chains may come from a file of their own, outside the bundle.
	from, err := SignCapabilities(files, "staging.yaml", []byte(src), testpki.ExampleOperator())
	if err != nil || !bytes.Equal(from.Bytes, s.Bytes) || from.File != "capabilities.yaml" {
		t.Fatalf("from a file of its own: %v\n%s", err, from.Bytes)
	}
}

// What cannot be signed is refused with where and why, and nothing is
// returned to write.
func TestSignCapabilitiesRefuses(t *testing.T) {
	root := `{"id": "capability:refund.pay", "effect_type": "refund.pay", "destination": "dest:payments", "scopes": ["scope:refunds"], "limits": {"amount": 100}, "expiry": 1000}`
	wide := `{"id": "capability:wide", "effect_type": "refund.pay", "destination": "dest:payments", "scopes": ["scope:refunds"], "limits": {"amount": 101}, "expiry": 1000}`
	other := testKeyFromSeed(9)
	cases := []struct {
		name     string
		src      string
		yaml     bool
		key      ed25519.PrivateKey
		code     string
		file     string
		pointer  string
		line     int
		contains string
	}{
		{"another key", `{"chains": [[` + root + `]]}`, false, other, CodeKeyMismatch, ManifestFile, "/operator_key", 0,
			"the bundle trusts " + hex.EncodeToString(testpki.ExampleOperator().Public().(ed25519.PublicKey)) + ", and the signing key is " + hex.EncodeToString(other.Public().(ed25519.PublicKey))},
		{"a widening child", `{"chains": [[` + root + `, ` + wide + `]]}`, false, nil, CodeBadCapability, "capabilities.json", "/chains/0", 0, "ATTENUATION_WIDENS"},
		{"a missing member", `{"chains": [[{"id": "capability:x", "effect_type": "refund.pay", "destination": "dest:payments", "scopes": ["scope:refunds"]}]]}`, false, nil, CodeMalformed, "capabilities.json", "/chains/0/0/expiry", 0, "missing"},
		{"a child missing a member", `{"chains": [[` + root + `, {"id": "capability:y", "effect_type": "refund.pay", "destination": "dest:payments", "expiry": 5}]]}`, false, nil, CodeMalformed, "capabilities.json", "/chains/0/1/scopes", 0, "missing"},
		{"an unknown member", `{"chains": [[{"id": "capability:x", "effect_type": "refund.pay", "destination": "dest:payments", "scopes": ["scope:refunds"], "expiry": 5, "colour": "red"}]]}`, false, nil, CodeMalformed, "capabilities.json", "/chains/0/0", 0, "colour"},
		{"a malformed capability", `{"chains": [[{"id": "capability:x", "effect_type": "refund.pay", "destination": "dest:payments", "scopes": [], "expiry": 5}]]}`, false, nil, CodeBadCapability, "capabilities.json", "/chains/0", 0, "at least one scope"},
		{"a link not an object", `{"chains": [[1]]}`, false, nil, CodeMalformed, "capabilities.json", "/chains/0/0", 0, "must be a capability"},
		{"a signed link tampered into shape", `{"chains": [[{"capability": ` + root + `, "key_id": "x", "signature": "y", "extra": 1}]]}`, false, nil, CodeMalformed, "capabilities.json", "/chains/0/0", 0, "extra"},
		{"an empty chain", `{"chains": [[]]}`, false, nil, CodeMalformed, "capabilities.json", "/chains/0", 0, "non-empty"},
		{"not chains", `{"links": []}`, false, nil, CodeMalformed, "capabilities.json", "/", 0, "chains"},
		{"not JSON", `{"chains": [[`, false, nil, CodeMalformed, "capabilities.json", "", 0, "not flrh-cjson"},
		{"YAML, a missing member on its line", "chains:\n  - - id: capability:x\n      effect_type: refund.pay\n      destination: dest:payments\n      scopes: [scope:refunds]\n", true, nil, CodeMalformed, "capabilities.yaml", "/chains/0/0/expiry", 0, "missing"},
		{"YAML, a widening child on its line", "chains:\n  - - " + root + "\n    - " + wide + "\n", true, nil, CodeBadCapability, "capabilities.yaml", "/chains/0", 2, "ATTENUATION_WIDENS"},
		{"YAML that does not parse", "chains: [[\n", true, nil, CodeMalformed, "capabilities.yaml", "", 0, "not YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, edit := "capabilities.json", func(map[string]any) {}
			if tc.yaml {
				name, edit = "capabilities.yaml", func(m map[string]any) { m["capabilities"] = "capabilities.yaml" }
			}
			files := editBundle(t, edit, map[string]string{name: tc.src})
			key := tc.key
			if key == nil {
				key = testpki.ExampleOperator()
			}
			s, err := SignCapabilities(files, "", nil, key)
			var we *Error
			if !errors.As(err, &we) || s != nil {
				t.Fatalf("signed %+v, err %v", s, err)
			}
			if we.Code != tc.code || we.File != tc.file || we.Pointer != tc.pointer || !strings.Contains(we.Detail, tc.contains) || (tc.line > 0 && we.Line != tc.line) {
				t.Fatalf("got %s (%+v), want %s %s at %q line %d containing %q", we, *we, tc.code, tc.file, tc.pointer, tc.line, tc.contains)
			}
		})
	}
	// No key, or a short one, is refused, not a panic.
	for _, k := range []ed25519.PrivateKey{nil, make(ed25519.PrivateKey, 10)} {
		if _, err := SignCapabilities(editBundle(t, nil, nil), "", nil, k); err == nil || !strings.Contains(err.Error(), "no usable Ed25519 signing key") {
			t.Fatalf("a key of %d bytes: %v", len(k), err)
		}
	}
	// A bundle whose manifest is broken is refused as Compile refuses it.
	files := editBundle(t, func(m map[string]any) { m["operator_key"] = "zz" }, nil)
	if _, err := SignCapabilities(files, "", nil, testpki.ExampleOperator()); err == nil || !strings.Contains(err.Error(), "/operator_key") {
		t.Fatalf("a bad operator_key: %v", err)
	}
}

func testKeyFromSeed(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

// Property: whatever chains an operator writes, signing either refuses
// them for a link that widens or does not validate, or writes a file the
// bundle compiles with, every chain verifying, that signing again leaves
// as it is; in JSON and in YAML alike.
func TestSignCapabilitiesRapid(t *testing.T) {
	base := readBundle(t, "../examples/refund-agent")
	dests := []string{"dest:payments", "dest:*", "dest:pay*", "dest:other"}
	scopes := []string{"scope:refunds", "scope:ops", "scope:all"}
	rapid.Check(t, func(rt *rapid.T) {
		var chains []any
		for i := rapid.IntRange(0, 3).Draw(rt, "chains"); i > 0; i-- {
			var links []any
			for j := rapid.IntRange(1, 3).Draw(rt, "links"); j > 0; j-- {
				l := map[string]any{
					"id":          fmt.Sprintf("capability:c%d-%d", len(chains), len(links)),
					"effect_type": "refund.pay",
					"destination": rapid.SampledFrom(dests).Draw(rt, "dest"),
					"scopes":      toAny(rapid.SliceOfNDistinct(rapid.SampledFrom(scopes), 1, 3, rapid.ID[string]).Draw(rt, "scopes")),
					"limits":      map[string]any{"amount": rapid.Int64Range(0, 20000).Draw(rt, "limit")},
					"expiry":      rapid.Int64Range(1, 1<<41).Draw(rt, "expiry"),
				}
				if rapid.Bool().Draw(rt, "not_before") {
					l["not_before"] = rapid.Int64Range(0, 1000).Draw(rt, "nb")
				}
				links = append(links, l)
			}
			chains = append(chains, links)
		}
		src, err := cjson.Marshal(map[string]any{"chains": chains})
		if err != nil {
			rt.Fatal(err)
		}
		files, name := maps.Clone(base), "capabilities.json"
		if rapid.Bool().Draw(rt, "yaml") {
			if src, err = yamljson.FromJSON(src, "", nil); err != nil {
				rt.Fatal(err)
			}
			name = "capabilities.yaml"
			v, _ := cjson.Decode(files[ManifestFile])
			v.(map[string]any)["capabilities"] = name
			files[ManifestFile], _ = cjson.Marshal(v)
			delete(files, "capabilities.json")
		}
		files[name] = src
		s, err := SignCapabilities(files, "", nil, testpki.ExampleOperator())
		if err != nil {
			var we *Error
			if !errors.As(err, &we) || we.Code != CodeBadCapability {
				rt.Fatalf("refused other than for a capability: %v", err)
			}
			return
		}
		files[name] = s.Bytes
		w, err := Compile(files)
		if err != nil {
			rt.Fatalf("a signed bundle does not compile: %v\n%s", err, s.Bytes)
		}
		if len(w.verified) != len(chains) || s.Chains != len(chains) {
			rt.Fatalf("%d chains verified, %d signed, %d written", len(w.verified), s.Chains, len(chains))
		}
		again, err := SignCapabilities(files, "", nil, testpki.ExampleOperator())
		if err != nil || !bytes.Equal(again.Bytes, s.Bytes) {
			rt.Fatalf("signed again: %v", err)
		}
	})
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// FuzzSignCapabilities: whatever an operator's capabilities file holds,
// in JSON or YAML, signing never panics, refuses with an *Error, or
// writes a file the bundle compiles with.
func FuzzSignCapabilities(f *testing.F) {
	base := readBundle(f, "../examples/refund-agent")
	f.Add(base["capabilities.json"], false)
	f.Add(bareCapabilities(f, base["capabilities.json"]), false)
	f.Add([]byte("chains:\n  - - id: capability:x\n      effect_type: refund.pay\n      destination: dest:*\n      scopes: [scope:refunds]\n      expiry: 9\n    - id: capability:y\n      effect_type: refund.pay\n      destination: dest:payments\n      scopes: [scope:refunds]\n      expiry: 8\n"), true)
	f.Add([]byte(`{"chains": [[{"id": "capability:x", "effect_type": "refund.pay", "destination": "dest:payments", "scopes": ["scope:refunds"], "limits": {"amount": -1}, "not_before": 3, "expiry": 4, "parent": ""}]]}`), false)
	f.Fuzz(func(t *testing.T, src []byte, asYAML bool) {
		files, name := maps.Clone(base), "capabilities.json"
		if asYAML {
			name = "capabilities.yml"
			v, _ := cjson.Decode(files[ManifestFile])
			v.(map[string]any)["capabilities"] = name
			files[ManifestFile], _ = cjson.Marshal(v)
		}
		files[name] = src
		s, err := SignCapabilities(files, "", nil, testpki.ExampleOperator())
		if err != nil {
			var we *Error
			if !errors.As(err, &we) || s != nil {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		files[name] = s.Bytes
		if _, err := Compile(files); err != nil {
			t.Fatalf("a signed bundle does not compile: %v\n%s", err, s.Bytes)
		}
	})
}

// A plan signed elsewhere: signatures made by the operator key give what
// SignCapabilities gives; one made by another key, or too few, are refused
// with nothing to write.
func TestSigningPlanFinish(t *testing.T) {
	files := readBundle(t, "../examples/ops-agent")
	files["capabilities.json"] = bareCapabilities(t, files["capabilities.json"])
	p, err := PlanSigning(files, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.OperatorKey().Equal(testpki.ExampleOperator().Public().(ed25519.PublicKey)) || len(p.Chains) != 2 {
		t.Fatalf("plan: %+v", p)
	}
	signAll := func(key ed25519.PrivateKey) [][][]byte {
		sigs := make([][][]byte, len(p.Chains))
		for i, caps := range p.Chains {
			for j := range caps {
				sigs[i] = append(sigs[i], ed25519.Sign(key, p.Message(i, j)))
			}
		}
		return sigs
	}
	want, err := SignCapabilities(files, "", nil, testpki.ExampleOperator())
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Finish(signAll(testpki.ExampleOperator()))
	if err != nil || !bytes.Equal(got.Bytes, want.Bytes) {
		t.Fatalf("finished: %v\n%s", err, got.Bytes)
	}
	other := testKeyFromSeed(3)
	if err := p.CheckKey(other.Public().(ed25519.PublicKey)); err == nil {
		t.Fatal("another key checked")
	}
	for name, sigs := range map[string][][][]byte{
		"another key":     signAll(other),
		"a chain short":   signAll(testpki.ExampleOperator())[:1],
		"a link short":    {signAll(testpki.ExampleOperator())[0][:0], signAll(testpki.ExampleOperator())[1]},
		"a signature cut": {{signAll(testpki.ExampleOperator())[0][0][:10]}, signAll(testpki.ExampleOperator())[1]},
	} {
		s, err := p.Finish(sigs)
		var we *Error
		if !errors.As(err, &we) || we.Code != CodeKeyMismatch || s != nil {
			t.Errorf("%s: %+v, %v", name, s, err)
		}
	}
}

// SetOperatorKey replaces the key's text where it stands, whatever the
// manifest's layout, case or comments, and refuses a manifest where that
// text is not found exactly once.
func TestSetOperatorKey(t *testing.T) {
	pub := testKeyFromSeed(5).Public().(ed25519.PublicKey)
	newHex := hex.EncodeToString(pub)
	files := readBundle(t, "../examples/refund-agent")
	oldHex := hex.EncodeToString(testpki.ExampleOperator().Public().(ed25519.PublicKey))
	got, err := SetOperatorKey(ManifestFile, files[ManifestFile], pub)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(files[ManifestFile]), oldHex, newHex, 1); string(got) != want {
		t.Fatalf("more than the key changed:\n%s", got)
	}
	yaml := "# Größe İİİ: a comment whose letters change length when lowered\n" +
		strings.Replace(string(mustYAML(t, files[ManifestFile])), oldHex, strings.ToUpper(oldHex), 1)
	got, err = SetOperatorKey(ManifestYAML, []byte(yaml), pub)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(yaml, strings.ToUpper(oldHex), newHex, 1); string(got) != want {
		t.Fatalf("YAML:\n%s", got)
	}
	twice := strings.Replace(string(files[ManifestFile]), `"schema_version"`, `"id_note_`+oldHex+`": 1, "schema_version"`, 1)
	for name, c := range map[string]struct {
		manifest string
		pub      ed25519.PublicKey
		want     string
	}{
		"the key twice": {twice, pub, "occurs 2 times"},
		"a bad key":     {strings.Replace(string(files[ManifestFile]), oldHex, "zz", 1), pub, "/operator_key"},
		"not JSON":      {"{", pub, "not flrh-cjson"},
		"no key to set": {string(files[ManifestFile]), nil, "no Ed25519 public key"},
	} {
		if _, err := SetOperatorKey(ManifestFile, []byte(c.manifest), c.pub); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustYAML(t *testing.T, b []byte) []byte {
	t.Helper()
	y, err := yamljson.FromJSON(b, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// BenchmarkSignCapabilities signs the ops agent's two capabilities, written
// bare, with a key in memory: the whole of flrh bundle sign but its I/O.
func BenchmarkSignCapabilities(b *testing.B) {
	files := readBundle(b, "../examples/ops-agent")
	files["capabilities.json"] = bareCapabilities(b, files["capabilities.json"])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SignCapabilities(files, "", nil, testpki.ExampleOperator()); err != nil {
			b.Fatal(err)
		}
	}
}
