package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
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
