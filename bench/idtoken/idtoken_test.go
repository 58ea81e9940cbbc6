// Package idtoken sets flrh's identity token verification (package
// idtoken) beside lestrrat-go/jwx, a widely used Go JWT library: a
// differential test over tokens drawn at random (the same verdict, or
// flrh the stricter where it means to be) and benchmarks of one
// verification each, side by side.
package idtoken

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
)

const issuer = "https://idp.example.com/realms/ops"

var (
	base64URL = base64.RawURLEncoding
	now       = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	leeway    = 30 * time.Second
	flrh      = idtoken.Verifier{Issuer: issuer, Audience: "flrh", Leeway: leeway}
)

// provider is a key set of one key per algorithm drawn from, parsed by
// both libraries.
type provider struct {
	signers []*testidp.Signer
	ours    *idtoken.KeySet
	theirs  jwk.Set
}

func newProvider(t testing.TB) provider {
	var p provider
	for _, alg := range []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"} {
		p.signers = append(p.signers, testidp.MustSigner(t, alg, "k-"+alg))
	}
	data := testidp.KeySet(p.signers...)
	var err error
	if p.ours, err = idtoken.ParseKeySet(data); err != nil {
		t.Fatal(err)
	}
	if p.theirs, err = jwk.Parse(data); err != nil {
		t.Fatal(err)
	}
	return p
}

// jwxVerify is the same check by jwx: the key set, the issuer, the
// audience, exp required, the same skew and clock.
func (p provider) jwxVerify(token string) error {
	_, err := jwt.Parse([]byte(token), jwt.WithKeySet(p.theirs), jwt.WithIssuer(issuer), jwt.WithAudience("flrh"),
		jwt.WithRequiredClaim("exp"), jwt.WithAcceptableSkew(leeway), jwt.WithClock(jwt.ClockFunc(func() time.Time { return now })))
	return err
}

// draw makes a token: claims around the bounds (never within two seconds
// of one, where the libraries round time differently), and one of the
// faults a token arrives with, or none.
func (p provider) draw(r *rand.Rand) (token, what string) {
	s := p.signers[r.IntN(len(p.signers))]
	secs := func(lo, hi int) int64 {
		for {
			d := int64(lo + r.IntN(hi-lo+1))
			if d < -32 || d > -28 && d < 28 || d > 32 { // away from ±leeway
				return d
			}
		}
	}
	c := map[string]any{"iss": issuer, "aud": "flrh", "sub": "alice", "exp": now.Unix() + secs(-600, 3600)}
	what = s.Alg
	switch r.IntN(5) {
	case 0:
		c["iss"] = []string{issuer + "/", "https://evil.example"}[r.IntN(2)]
		what += " another issuer"
	case 1:
		c["aud"] = [][]string{{"grafana"}, {"grafana", "flrh"}, {"argo"}}[r.IntN(3)]
		what += fmt.Sprint(" audience ", c["aud"])
	}
	if r.IntN(3) == 0 {
		c["nbf"] = now.Unix() + secs(-600, 600)
	}
	if r.IntN(3) == 0 {
		c["iat"] = now.Unix() + secs(-3600, 600)
	}
	token = s.Token(c, nil)
	parts := strings.Split(token, ".")
	switch r.IntN(6) {
	case 0:
		b := []byte(parts[2])
		i := r.IntN(len(b) - 1) // not the last character, whose low bits may be padding
		b[i] = "AB"[r.IntN(2)]
		if string(b) != parts[2] {
			parts[2], what = string(b), what+" signature changed"
		}
	case 1:
		other, _ := json.Marshal(map[string]any{"iss": issuer, "aud": "flrh", "sub": "admin", "exp": now.Unix() + 3600})
		parts[1], what = b64(other), what+" claims swapped"
	case 2:
		if stranger, err := testidp.NewSigner("ES256", s.Kid); err == nil && s.Alg == "ES256" {
			parts, what = strings.Split(stranger.Token(c, nil), "."), what+" a stranger's key"
		}
	}
	return strings.Join(parts, "."), what + fmt.Sprint(" ", c)
}

func b64(b []byte) string { return base64URL.EncodeToString(b) }

// TestAgreesWithJWX: over tokens drawn at random — five algorithms,
// issuers, audiences, dates on both sides of the leeway, signatures and
// claims tampered with, a stranger's key under the provider's key id —
// flrh and jwx give the same verdict on every one.
func TestAgreesWithJWX(t *testing.T) {
	p := newProvider(t)
	r := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for range 3000 {
		tok, what := p.draw(r)
		_, ours := flrh.Verify(tok, p.ours, now)
		theirs := p.jwxVerify(tok)
		if (ours == nil) != (theirs == nil) {
			t.Errorf("%s: flrh %v; jwx %v", what, ours, theirs)
		}
		if ours == nil {
			accepted++
		}
	}
	if accepted < 300 || accepted > 2700 {
		t.Fatalf("%d of 3000 accepted: the draw does not reach both verdicts", accepted)
	}
	t.Logf("%d of 3000 accepted by both", accepted)
}

// TestStricterThanJWX: what flrh refuses on purpose and jwx, as
// configured here, accepts — each a token that means one thing to one
// parser and another to the next, or one flrh cannot tell the meaning of.
func TestStricterThanJWX(t *testing.T) {
	p := newProvider(t)
	var ed *testidp.Signer
	for _, s := range p.signers {
		if s.Alg == "EdDSA" {
			ed = s
		}
	}
	exp := fmt.Sprint(now.Unix() + 3600)
	claims := `"iss":"` + issuer + `","aud":"flrh","exp":` + exp
	for _, c := range []struct{ name, token string }{
		{"a claim named twice", ed.SignRaw([]byte(`{"alg":"EdDSA","kid":"k-EdDSA"}`), []byte(`{`+claims+`,"sub":"alice","sub":"admin"}`))},
		{"a header member named twice", ed.SignRaw([]byte(`{"alg":"EdDSA","kid":"k-EdDSA","kid":"k-EdDSA"}`), []byte(`{`+claims+`}`))},
		{"typ of another kind of object", ed.SignRaw([]byte(`{"alg":"EdDSA","kid":"k-EdDSA","typ":"dpop+jwt"}`), []byte(`{`+claims+`}`))},
	} {
		_, ours := flrh.Verify(c.token, p.ours, now)
		theirs := p.jwxVerify(c.token)
		if ours == nil || theirs != nil {
			t.Errorf("%s: flrh %v, jwx %v; want flrh to refuse what jwx accepts", c.name, ours, theirs)
		}
	}
}

// BenchmarkVerify: one token verified by each library with the same key
// set, side by side in one run.
func BenchmarkVerify(b *testing.B) {
	p := newProvider(b)
	for _, s := range p.signers {
		tok := s.Token(map[string]any{"iss": issuer, "aud": "flrh", "sub": "alice", "exp": now.Unix() + 600, "iat": now.Unix() - 60,
			"realm_access": map[string]any{"roles": []string{"approver", "offline_access"}}}, nil)
		b.Run("flrh/"+s.Alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := flrh.Verify(tok, p.ours, now); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("jwx/"+s.Alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.jwxVerify(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
