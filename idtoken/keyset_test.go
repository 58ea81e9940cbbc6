package idtoken_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
)

// jwkWith is signer s's key with changes (nil removes a member).
func jwkWith(s *testidp.Signer, changes map[string]any) map[string]any {
	return edited(s.JWK(), changes)
}

func setOf(keys ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

func TestParseKeySet(t *testing.T) {
	rs := testidp.MustSigner(t, "RS256", "rsa")
	es := testidp.MustSigner(t, "ES256", "ec")
	ed := testidp.MustSigner(t, "EdDSA", "ed")
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	ecX := es.JWK()["x"].(string)

	cases := []struct {
		name    string
		data    []byte
		keys    []string // key ids read
		skipped int
		says    string // the refusal, when not empty
	}{
		{"three keys", testidp.KeySet(rs, es, ed), []string{"rsa", "ec", "ed"}, 0, ""},
		{"no keys", []byte(`{"keys":[]}`), nil, 0, ""},
		{"without alg", setOf(jwkWith(rs, map[string]any{"alg": nil}), jwkWith(es, map[string]any{"use": nil})), []string{"rsa", "ec"}, 0, ""},
		{"an encryption key skipped", setOf(jwkWith(rs, map[string]any{"use": "enc"}), ed.JWK()), []string{"ed"}, 1, ""},
		{"key_ops without verify skipped", setOf(jwkWith(es, map[string]any{"key_ops": []string{"encrypt"}}), jwkWith(ed, map[string]any{"key_ops": []string{"verify"}})), []string{"ed"}, 1, ""},
		{"X25519 skipped", setOf(map[string]any{"kty": "OKP", "crv": "X25519", "x": enc(make([]byte, 32)), "kid": "x"}), nil, 1, ""},
		{"an unknown type skipped", setOf(map[string]any{"kty": "PQC", "kid": "q"}), nil, 1, ""},
		{"an algorithm not accepted skipped", setOf(jwkWith(rs, map[string]any{"alg": "RSA-OAEP"})), nil, 1, ""},
		{"not JSON", []byte(`{"keys":`), nil, 0, "the key set: not JSON"},
		{"no keys member", []byte(`{"kys":[]}`), nil, 0, `no "keys" member`},
		{"keys not an array", []byte(`{"keys":{}}`), nil, 0, "/keys: not an array"},
		{"keys null", []byte(`{"keys":null}`), nil, 0, "/keys: not an array"},
		{"keys named twice", []byte(`{"keys":[],"keys":[]}`), nil, 0, `"keys" is named twice`},
		{"a key not an object", []byte(`{"keys":[1]}`), nil, 0, "/keys/0: not a JSON object"},
		{"no kty", setOf(jwkWith(es, map[string]any{"kty": nil})), nil, 0, `/keys/0: no "kty"`},
		{"kty a number", setOf(jwkWith(es, map[string]any{"kty": 2})), nil, 0, `"kty" is not a string`},
		{"a private RSA key", setOf(jwkWith(rs, map[string]any{"d": "AQAB"})), nil, 0, `private or secret key material ("d")`},
		{"a secret", setOf(map[string]any{"kty": "oct", "k": "c2VjcmV0"}), nil, 0, `("k")`},
		{"RSA of 1024 bits", setOf(map[string]any{"kty": "RSA", "kid": "s", "n": enc(small.N.Bytes()), "e": "AQAB"}), nil, 0, "an RSA modulus of 1024 bits"},
		{"RSA exponent even", setOf(jwkWith(rs, map[string]any{"e": enc([]byte{0, 2})})), nil, 0, "RSA exponent 2"},
		{"RSA exponent too long", setOf(jwkWith(rs, map[string]any{"e": enc([]byte{1, 0, 0, 0, 1})})), nil, 0, `RSA "e"`},
		{"RSA n padded", setOf(jwkWith(rs, map[string]any{"n": rs.JWK()["n"].(string) + "=="})), nil, 0, `RSA "n"`},
		{"EC off its curve", setOf(jwkWith(es, map[string]any{"y": ecX})), nil, 0, "not on P-256"},
		{"EC x short", setOf(jwkWith(es, map[string]any{"x": enc(make([]byte, 31))})), nil, 0, `"x" is not 32 bytes`},
		{"EC curve unknown", setOf(jwkWith(es, map[string]any{"crv": "secp256k1"})), nil, 0, `"secp256k1"`},
		{"Ed25519 x short", setOf(jwkWith(ed, map[string]any{"x": enc(make([]byte, 31))})), nil, 0, `"x" is not 32 bytes`},
		{"an RSA key said to be for ES256", setOf(jwkWith(rs, map[string]any{"alg": "ES256"})), nil, 0, `"alg" ES256 does not fit the key (RSA)`},
		{"a P-256 key said to be for ES384", setOf(jwkWith(es, map[string]any{"alg": "ES384"})), nil, 0, `"alg" ES384 does not fit the key (EC P-256)`},
		{"key_ops a string", setOf(jwkWith(es, map[string]any{"key_ops": "verify"})), nil, 0, `"key_ops" is not an array`},
		{"too many keys", setOf(manyKeys(ed, idtoken.MaxKeys+1)...), nil, 0, "more than 256"},
		{"too many bytes", append(testidp.KeySet(ed), make([]byte, idtoken.MaxKeySetBytes)...), nil, 0, "bytes, more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ks, err := idtoken.ParseKeySet(c.data)
			if c.says != "" {
				var e *idtoken.Error
				if !errors.As(err, &e) || e.Reason != idtoken.BadKeySet || !strings.Contains(err.Error(), c.says) || ks != nil {
					t.Fatalf("got %v, want a bad key set saying %q", err, c.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, k := range ks.Keys() {
				ids = append(ids, k.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.keys) || ks.Skipped() != c.skipped {
				t.Fatalf("keys %v skipped %d, want %v and %d", ids, ks.Skipped(), c.keys, c.skipped)
			}
		})
	}
}

func manyKeys(s *testidp.Signer, n int) []map[string]any {
	keys := make([]map[string]any, n)
	for i := range keys {
		keys[i] = jwkWith(s, map[string]any{"kid": fmt.Sprint(i)})
	}
	return keys
}

// TestZeroKeySet: a nil or empty key set verifies nothing, saying the key
// is unknown (so that a caller knows to fetch the set again).
func TestZeroKeySet(t *testing.T) {
	s := testidp.MustSigner(t, "EdDSA", "ed")
	for _, ks := range []*idtoken.KeySet{nil, {}} {
		if _, err := v.Verify(s.Token(claims(nil), nil), ks, now); !errors.Is(err, &idtoken.Error{Reason: idtoken.UnknownKey}) {
			t.Fatalf("%v", err)
		}
	}
}
