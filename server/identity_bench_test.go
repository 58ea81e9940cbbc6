package server

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"flrh.dev/flrh/internal/testidp"
)

// BenchmarkAuthenticate: what authenticating a request costs, through
// the whole of grantOf: a token of the token file; an identity provider's
// ES256 token already verified (the memory's lookup); and one seen for
// the first time (its signature verified and its claims mapped).
func BenchmarkAuthenticate(b *testing.B) {
	tokens, err := ParseTokens([]byte(tokenFileText))
	if err != nil {
		b.Fatal(err)
	}
	k1 := testidp.MustSigner(b, "ES256", "k1")
	p := testidp.NewServer(b, k1)
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"`+p.URL+`","audience":"flrh","actor_claim":"preferred_username",
 "roles_claim":"/realm_access/roles","roles":{"sre":["operator","viewer"]}}`), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	id, err := NewIdentity(context.Background(), cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{}
	s.tokens.Store(tokens)
	s.identity.Store(id)
	jwt := idToken(p, k1, "alice", time.Hour, "sre")
	for _, c := range []struct {
		name, token string
		forget      bool
	}{{"token-file", tokOperator, false}, {"identity-remembered", jwt, false}, {"identity-first-sight", jwt, true}} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/v1/whoami", nil)
			r.Header.Set("Authorization", "Bearer "+c.token)
			b.ReportAllocs()
			for b.Loop() {
				if c.forget {
					id.verified = nil
				}
				if _, aerr := s.grantOf(r, time.Now()); aerr != nil {
					b.Fatal(aerr)
				}
			}
		})
	}
}
