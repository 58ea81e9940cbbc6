package idtoken_test

import (
	"testing"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
)

// BenchmarkVerify: one token verified, per algorithm, against a key set
// of one key per algorithm (the key chosen by kid among ten).
func BenchmarkVerify(b *testing.B) {
	var signers []*testidp.Signer
	for _, alg := range idtoken.Algorithms() {
		signers = append(signers, testidp.MustSigner(b, alg, "k-"+alg))
	}
	keys, err := idtoken.ParseKeySet(testidp.KeySet(signers...))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range signers {
		token := s.Token(claims(map[string]any{"realm_access": map[string]any{"roles": []string{"approver", "offline_access"}}}), nil)
		b.Run(s.Alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(token, keys, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseKeySet: a provider's key set of three keys (RSA, EC,
// Ed25519), as fetched.
func BenchmarkParseKeySet(b *testing.B) {
	data := testidp.KeySet(testidp.MustSigner(b, "RS256", "rs"), testidp.MustSigner(b, "ES256", "ec"), testidp.MustSigner(b, "EdDSA", "ed"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := idtoken.ParseKeySet(data); err != nil {
			b.Fatal(err)
		}
	}
}
