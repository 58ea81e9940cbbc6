package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/internal/testpki"
)

var update = flag.Bool("update", false, "rewrite the examples' signed capabilities and operator keys")

var exampleOperator = testpki.ExampleOperator

// exampleCapabilities are the operator-issued capability chains of each
// example bundle, root first.
var exampleCapabilities = map[string][]authority.Capability{
	"refund-agent": {
		{ID: "capability:refund.pay", EffectType: "refund.pay", Destination: "dest:payments", Scopes: []string{"scope:refunds"},
			Limits: map[string]int64{"amount": 10000}, NotBefore: 0, Expiry: 1 << 40},
	},
	"support-agent": {
		{ID: "capability:refund.pay", EffectType: "refund.pay", Destination: "dest:payments", Scopes: []string{"scope:refunds"},
			Limits: map[string]int64{"amount": 10000}, NotBefore: 0, Expiry: 1 << 40},
	},
	"ops-agent": {
		{ID: "capability:diag.read", EffectType: "diag.read", Destination: "dest:ops-*", Scopes: []string{"scope:ops"},
			Limits: map[string]int64{}, NotBefore: 0, Expiry: 1 << 40},
		{ID: "capability:service.restart", EffectType: "service.restart", Destination: "dest:ops-*", Scopes: []string{"scope:ops"},
			Limits: map[string]int64{}, NotBefore: 0, Expiry: 1 << 40},
	},
}

func signedCapabilities(t *testing.T, name string) []byte {
	t.Helper()
	var chains []any
	for _, c := range exampleCapabilities[name] {
		sc, err := authority.SignCapability(c, exampleOperator())
		if err != nil {
			t.Fatal(err)
		}
		chains = append(chains, []any{sc})
	}
	b, err := cjson.Marshal(map[string]any{"chains": chains})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// The examples ship capability chains signed by the example operator key:
// the committed files are exactly what the key signs, and the bundles
// name that key.
func TestExampleCapabilitiesAreSigned(t *testing.T) {
	pub := hex.EncodeToString(exampleOperator().Public().(ed25519.PublicKey))
	for name := range exampleCapabilities {
		dir := filepath.Join("..", "examples", name)
		want := signedCapabilities(t, name)
		path := filepath.Join(dir, "capabilities.json")
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			wf, err := os.ReadFile(filepath.Join(dir, "workflow.json"))
			if err != nil {
				t.Fatal(err)
			}
			wf = bytes.ReplaceAll(wf, []byte(`"OPERATOR_KEY"`), []byte(`"`+pub+`"`))
			if err := os.WriteFile(filepath.Join(dir, "workflow.json"), wf, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: capabilities.json is not what the example operator key signs (run with -update)", name)
		}
		wf, err := os.ReadFile(filepath.Join(dir, "workflow.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(wf, []byte(`"operator_key": "`+pub+`"`)) {
			t.Errorf("%s: workflow.json does not name the example operator key %s", name, pub)
		}
		// And every chain verifies under that key.
		keyring := authority.NewKeyring(exampleOperator().Public().(ed25519.PublicKey))
		v, err := cjson.Decode(got)
		if err != nil {
			t.Fatal(err)
		}
		for i, chain := range v.(map[string]any)["chains"].([]any) {
			var links []authority.SignedCapability
			for _, l := range chain.([]any) {
				var sc authority.SignedCapability
				if err := strictDecodeForTest(l, &sc); err != nil {
					t.Fatal(err)
				}
				links = append(links, sc)
			}
			if _, err := keyring.VerifyChain(links, 1); err != nil {
				t.Errorf("%s: chain %d: %v", name, i, err)
			}
		}
	}
}

// Sign writes a YAML bundle's capabilities in YAML, keeps the file's mode,
// and leaves a file that already holds what it would write untouched.
func TestSignWritesTheBundlesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "yaml")
	if _, err := WriteYAML(filepath.Join("..", "examples", "refund-agent"), dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "capabilities.yaml")
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Sign(dir, "", exampleOperator())
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != path || s.Unchanged || s.Chains != 1 || s.Links != 1 {
		t.Fatalf("%+v", s)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, s.Bytes) || !bytes.HasPrefix(b, []byte("# Signed by the bundle's operator key")) {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	after, _, err := Load(dir)
	if err != nil || after.ID() != before.ID() || after.Digest() == before.Digest() {
		t.Fatalf("loaded after signing: %v (digest %s, before %s)", err, after.Digest(), before.Digest())
	}
	// Nothing else was left in the directory.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
	fi, _ := os.Stat(path)
	again, err := Sign(dir, "", exampleOperator())
	if err != nil || !again.Unchanged {
		t.Fatalf("signed again: %+v, %v", again, err)
	}
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) || !os.SameFile(fi, fi2) {
		t.Fatal("a file that held the signed bytes was written again")
	}
}

// Init writes each example as a bundle of its own: every file as the
// example has it but the manifest's operator_key (the one line) and the
// capabilities, signed with the new key, and the bundle loads. A directory
// that exists, a name that is no example and a signer with another key
// are refused, and no directory is left.
func TestInitFromEveryExample(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	oldHex := hex.EncodeToString(exampleOperator().Public().(ed25519.PublicKey))
	for _, name := range examples.Names() {
		dir := filepath.Join(t.TempDir(), "mine")
		names, err := Init(name, dir, pub, key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, _, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: the new bundle does not load: %v", name, err)
		}
		ex, _, _ := LoadExample(name)
		if w.ID() != ex.ID() || w.Digest() == ex.Digest() {
			t.Fatalf("%s: %s %s", name, w.ID(), w.Digest())
		}
		for _, n := range names {
			got, _ := os.ReadFile(filepath.Join(dir, n))
			want, _ := os.ReadFile(filepath.Join("..", "examples", name, n))
			switch n {
			case "workflow.json":
				want = bytes.Replace(want, []byte(oldHex), []byte(hex.EncodeToString(pub)), 1)
			case "capabilities.json":
				if bytes.Contains(got, []byte(oldHex)) || !bytes.Contains(got, []byte(hex.EncodeToString(pub))) {
					t.Fatalf("%s: capabilities not signed with the new key:\n%s", name, got)
				}
				continue
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %s differs from the example's", name, n)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "mine")
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	for what, err := range map[string]error{
		"no example":  func() error { _, err := Init("nope", dir, pub, key); return err }(),
		"another key": func() error { _, err := Init("refund-agent", dir, pub, other); return err }(),
		"a short key": func() error { _, err := Init("refund-agent", dir, pub[:5], key); return err }(),
	} {
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Fatalf("%s: left %s", what, dir)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Init("refund-agent", dir, pub, key); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("into a directory that exists: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatal("wrote into a directory that exists")
	}
}
