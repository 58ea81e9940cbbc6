package idtoken_test

import (
	"strings"
	"testing"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
)

// FuzzVerify: whatever the bearer header holds, Verify returns a typed
// error or a token whose registered claims hold; it never panics, and
// never repeats the token in its error.
func FuzzVerify(f *testing.F) {
	ed := testidp.MustSigner(f, "EdDSA", "ed")
	es := testidp.MustSigner(f, "ES256", "ec")
	keys, err := idtoken.ParseKeySet(testidp.KeySet(ed, es))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ed.Token(claims(nil), nil))
	f.Add(es.Token(claims(map[string]any{"aud": []string{"a", "flrh"}}), nil))
	f.Add(ed.SignRaw([]byte(`{"alg":"EdDSA","kid":"ed"}`), []byte(`{"iss":"`+issuer+`","aud":"flrh","exp":1e10}`)))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		tok, err := v.Verify(token, keys, now)
		if err != nil {
			if _, ok := err.(*idtoken.Error); !ok {
				t.Fatalf("untyped error %T %v", err, err)
			}
			if len(token) > 8 && strings.Contains(err.Error(), token) {
				t.Fatalf("the error repeats the token")
			}
			return
		}
		if tok.Issuer != issuer || !now.Before(tok.Expires.Add(v.Leeway)) || (tok.KeyID != "ed" && tok.KeyID != "ec") {
			t.Fatalf("accepted %+v", tok)
		}
	})
}

// FuzzParseKeySet: a key set parses into keys that each fit an accepted
// algorithm, or is refused with a typed error; never a panic.
func FuzzParseKeySet(f *testing.F) {
	f.Add(testidp.KeySet(testidp.MustSigner(f, "RS256", "rs"), testidp.MustSigner(f, "ES384", "ec"), testidp.MustSigner(f, "EdDSA", "ed")))
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"X25519","x":"AAAA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"","y":""}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := idtoken.ParseKeySet(data)
		if err != nil {
			if e, ok := err.(*idtoken.Error); !ok || e.Reason != idtoken.BadKeySet {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		for _, k := range ks.Keys() {
			fit := false
			for _, alg := range idtoken.Algorithms() {
				fit = fit || idtoken.Fits(k, alg)
			}
			if !fit {
				t.Fatalf("key %+v fits no algorithm", k)
			}
		}
	})
}
