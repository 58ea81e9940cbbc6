package idtoken_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
)

const issuer = "https://idp.example.com/realms/ops"

var (
	now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	v   = idtoken.Verifier{Issuer: issuer, Audience: "flrh", Leeway: 30 * time.Second}
)

// claims are a valid token's claims at now, with changes (nil removes).
func claims(changes map[string]any) map[string]any {
	return edited(map[string]any{
		"iss": issuer, "aud": "flrh", "sub": "alice",
		"iat": now.Unix() - 60, "nbf": now.Unix() - 60, "exp": now.Unix() + 300,
		"roles": []string{"approver"},
	}, changes)
}

// edited is m with changes made: a member set, or removed where its
// change is nil.
func edited(m, changes map[string]any) map[string]any {
	for k, val := range changes {
		if val == nil {
			delete(m, k)
		} else {
			m[k] = val
		}
	}
	return m
}

func keySet(t *testing.T, signers ...*testidp.Signer) *idtoken.KeySet {
	t.Helper()
	ks, err := idtoken.ParseKeySet(testidp.KeySet(signers...))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestEveryAlgorithmVerifies(t *testing.T) {
	for _, alg := range idtoken.Algorithms() {
		t.Run(alg, func(t *testing.T) {
			s := testidp.MustSigner(t, alg, "k-"+alg)
			tok, err := v.Verify(s.Token(claims(nil), nil), keySet(t, s), now)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Alg != alg || tok.KeyID != "k-"+alg || tok.Subject != "alice" || tok.Issuer != issuer {
				t.Fatalf("token %+v", tok)
			}
			if !tok.Expires.Equal(now.Add(300*time.Second)) || !tok.IssuedAt.Equal(now.Add(-time.Minute)) {
				t.Fatalf("dates %v %v", tok.Expires, tok.IssuedAt)
			}
			// Signed by another key of the same algorithm, under the
			// same key id, it is refused.
			other := testidp.MustSigner(t, alg, "other-"+alg)
			other.Kid = s.Kid
			if _, err := v.Verify(other.Token(claims(nil), nil), keySet(t, s), now); !errors.Is(err, &idtoken.Error{Reason: idtoken.BadSignature}) {
				t.Fatalf("another key's signature: %v", err)
			}
		})
	}
}

// b64 encodes a part as a token writes it.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestVerifyRefuses(t *testing.T) {
	rs := testidp.MustSigner(t, "RS256", "rsa-1")
	es := testidp.MustSigner(t, "ES256", "ec-1")
	es384 := testidp.MustSigner(t, "ES384", "ec-384")
	ed := testidp.MustSigner(t, "EdDSA", "ed-1")
	attacker := testidp.MustSigner(t, "ES256", "ec-1") // the provider's key id, another key
	keys := keySet(t, rs, es, es384, ed)

	valid := es.Token(claims(nil), nil)
	parts := strings.Split(valid, ".")
	validHeader := `{"alg":"ES256","kid":"ec-1","typ":"JWT"}`
	validClaims, _ := json.Marshal(claims(nil))

	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	hmac := b64(`{"alg":"HS256","kid":"ec-1"}`) + "." + parts[1] + ".c2lnbmF0dXJl"
	none := b64(`{"alg":"none"}`) + "." + parts[1] + "."

	cases := []struct {
		name   string
		token  string
		v      *idtoken.Verifier
		reason idtoken.Reason
		says   string
	}{
		{"empty", "", nil, idtoken.Malformed, "three base64url parts"},
		{"two parts", parts[0] + "." + parts[1], nil, idtoken.Malformed, "three base64url parts"},
		{"encrypted", "a.b.c.d.e", nil, idtoken.Unsupported, "JWE"},
		{"too long", strings.Repeat("a", idtoken.MaxTokenBytes+1), nil, idtoken.Malformed, "more than"},
		{"padded header", parts[0] + "=." + parts[1] + "." + parts[2], nil, idtoken.Malformed, "header is not unpadded"},
		{"header not JSON", b64("{alg") + "." + parts[1] + "." + parts[2], nil, idtoken.Malformed, "the header: not JSON"},
		{"header an array", b64(`["ES256"]`) + "." + parts[1] + "." + parts[2], nil, idtoken.Malformed, "not a JSON object"},
		{"alg named twice", es.SignRaw([]byte(`{"alg":"ES256","kid":"ec-1","alg":"ES256"}`), validClaims), nil, idtoken.Malformed, `"alg" is named twice`},
		{"something after the header", es.SignRaw([]byte(validHeader+`{}`), validClaims), nil, idtoken.Malformed, "more than one JSON value"},
		{"sub named twice", es.SignRaw([]byte(validHeader), []byte(`{"sub":"alice","sub":"mallory"}`)), nil, idtoken.Malformed, `"sub" is named twice`},
		{"no alg", es.SignRaw([]byte(`{"kid":"ec-1"}`), validClaims), nil, idtoken.Malformed, `no "alg"`},
		{"alg a number", es.SignRaw([]byte(`{"alg":256}`), validClaims), nil, idtoken.Malformed, `"alg" is not a string`},
		{"alg none", none, nil, idtoken.Unsupported, `"none" is not accepted`},
		{"HMAC", hmac, nil, idtoken.Unsupported, `"HS256" is not accepted`},
		{"alg the verifier leaves out", valid, &idtoken.Verifier{Issuer: issuer, Audience: "flrh", Algorithms: []string{"RS256"}}, idtoken.Unsupported, "(accepted: RS256)"},
		{"crit", es.Token(claims(nil), map[string]any{"crit": []string{"exp"}}), nil, idtoken.Unsupported, "crit"},
		{"typ JOSE+JSON", es.Token(claims(nil), map[string]any{"typ": "JOSE+JSON"}), nil, idtoken.Unsupported, `"typ"`},
		{"kid not in the set", es.Token(claims(nil), map[string]any{"kid": "ec-2"}), nil, idtoken.UnknownKey, `no key "ec-2"`},
		{"no kid, the one RSA key", testidp.MustSigner(t, "RS256", "rsa-1").Token(claims(nil), map[string]any{"kid": nil}), &idtoken.Verifier{Issuer: issuer, Audience: "flrh"}, "", ""},
		{"no kid, no key of the type", es384.Token(claims(nil), map[string]any{"kid": nil, "alg": "ES512"}), nil, idtoken.UnknownKey, "no key for ES512"},
		{"a key of another type", es.Token(claims(nil), map[string]any{"kid": "rsa-1"}), nil, idtoken.KeyMismatch, `key "rsa-1" (RSA) cannot verify ES256`},
		{"a key of another curve", es.Token(claims(nil), map[string]any{"kid": "ec-384"}), nil, idtoken.KeyMismatch, "(EC P-384) cannot verify ES256"},
		{"RS256 key for PS256", rs.Token(claims(nil), map[string]any{"alg": "PS256"}), nil, idtoken.KeyMismatch, "cannot verify PS256"},
		{"the attacker's key under the provider's kid", attacker.Token(claims(nil), nil), nil, idtoken.BadSignature, "does not verify"},
		{"the attacker's key in the header", attacker.Token(claims(nil), map[string]any{"jwk": attacker.JWK(), "jku": "https://evil.example/jwks"}), nil, idtoken.BadSignature, "does not verify"},
		{"a claim changed", parts[0] + "." + b64(strings.Replace(string(validClaims), "alice", "admin", 1)) + "." + parts[2], nil, idtoken.BadSignature, ""},
		{"the signature changed", parts[0] + "." + parts[1] + "." + flip(parts[2], 5), nil, idtoken.BadSignature, ""},
		{"the signature empty", parts[0] + "." + parts[1] + ".", nil, idtoken.BadSignature, ""},
		{"the signature padded", parts[0] + "." + parts[1] + "." + parts[2] + "=", nil, idtoken.Malformed, "signature is not unpadded"},
		{"wrong issuer", es.Token(claims(map[string]any{"iss": "https://idp.example.com/realms/other"}), nil), nil, idtoken.WrongIssuer, "realms/other"},
		{"issuer with a trailing slash", es.Token(claims(map[string]any{"iss": issuer + "/"}), nil), nil, idtoken.WrongIssuer, ""},
		{"no issuer", es.Token(claims(map[string]any{"iss": nil}), nil), nil, idtoken.WrongIssuer, ""},
		{"issuer a number", es.Token(claims(map[string]any{"iss": 7}), nil), nil, idtoken.BadClaim, `"iss" is not a string`},
		{"wrong audience", es.Token(claims(map[string]any{"aud": "grafana"}), nil), nil, idtoken.WrongAudience, `for "grafana"`},
		{"audience left out of an array", es.Token(claims(map[string]any{"aud": []string{"grafana", "argo"}}), nil), nil, idtoken.WrongAudience, ""},
		{"no audience", es.Token(claims(map[string]any{"aud": nil}), nil), nil, idtoken.WrongAudience, `no "aud"`},
		{"audience a number", es.Token(claims(map[string]any{"aud": 3}), nil), nil, idtoken.BadClaim, `"aud"`},
		{"no exp", es.Token(claims(map[string]any{"exp": nil}), nil), nil, idtoken.BadClaim, `no "exp"`},
		{"exp a string", es.Token(claims(map[string]any{"exp": "tomorrow"}), nil), nil, idtoken.BadClaim, `"exp" is not a number`},
		{"exp past 9999", es.Token(claims(map[string]any{"exp": 1e12}), nil), nil, idtoken.BadClaim, "between 1970 and 9999"},
		{"expired beyond the leeway", es.Token(claims(map[string]any{"exp": now.Unix() - 31}), nil), nil, idtoken.Expired, "expired at 2026-12-07T11:59:29Z"},
		{"expires at the leeway's end", es.Token(claims(map[string]any{"exp": now.Unix() - 30}), nil), nil, idtoken.Expired, ""},
		{"not valid yet", es.Token(claims(map[string]any{"nbf": now.Unix() + 31}), nil), nil, idtoken.NotYetValid, "not valid before"},
		{"issued in the future", es.Token(claims(map[string]any{"iat": now.Unix() + 31}), nil), nil, idtoken.NotYetValid, "in the future"},
		{"lives too long", es.Token(claims(map[string]any{"exp": now.Unix() + 86400}), nil), &idtoken.Verifier{Issuer: issuer, Audience: "flrh", MaxLifetime: time.Hour}, idtoken.TooLong, "longer than the 1h0m0s allowed"},
		{"sub a number", es.Token(claims(map[string]any{"sub": 12}), nil), nil, idtoken.BadClaim, `"sub" is not a string`},
		{"a verifier without issuer", valid, &idtoken.Verifier{Audience: "flrh"}, idtoken.BadVerifierArgs, "no issuer"},
		{"a verifier naming HS256", valid, &idtoken.Verifier{Issuer: issuer, Audience: "flrh", Algorithms: []string{"HS256"}}, idtoken.BadVerifierArgs, "HS256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vv := v
			if c.v != nil {
				vv = *c.v
			}
			tok, err := vv.Verify(c.token, keys, now)
			if c.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *idtoken.Error
			if !errors.As(err, &e) || e.Reason != c.reason || tok != nil {
				t.Fatalf("got %v (%#v), want reason %s", err, err, c.reason)
			}
			if !strings.Contains(err.Error(), c.says) || !strings.HasPrefix(err.Error(), "identity token: ") {
				t.Fatalf("error %q does not say %q", err, c.says)
			}
		})
	}
}

// TestLeewayAccepts: clocks a little apart do not refuse a token.
func TestLeewayAccepts(t *testing.T) {
	s := testidp.MustSigner(t, "EdDSA", "ed")
	keys := keySet(t, s)
	for name, c := range map[string]map[string]any{
		"expired 29 s ago":       {"exp": now.Unix() - 29},
		"valid in 29 s":          {"nbf": now.Unix() + 29},
		"issued 29 s from now":   {"iat": now.Unix() + 29},
		"fractional dates":       {"exp": float64(now.Unix()) + 0.5, "iat": float64(now.Unix()) - 0.25},
		"audience in an array":   {"aud": []string{"grafana", "flrh"}},
		"no nbf, no iat, no sub": {"nbf": nil, "iat": nil, "sub": nil},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(s.Token(claims(c), nil), keys, now); err != nil {
				t.Fatal(err)
			}
		})
	}
	for name, typ := range map[string]any{"at+jwt": "at+jwt", "application/at+JWT": "application/at+JWT", "no typ": nil} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(s.Token(claims(nil), map[string]any{"typ": typ}), keys, now); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestClaimsKeepLargeNumbers(t *testing.T) {
	s := testidp.MustSigner(t, "EdDSA", "ed")
	tok, err := v.Verify(s.SignRaw([]byte(`{"alg":"EdDSA","kid":"ed"}`),
		[]byte(`{"iss":"`+issuer+`","aud":"flrh","exp":`+json.Number(itoa(now.Unix()+60))+`,"uid":9007199254740993,"org":{"id":12345678901234567890}}`)), keySet(t, s), now)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Claims["uid"]; got != json.Number("9007199254740993") {
		t.Fatalf("uid %#v", got)
	}
	if got := tok.Claims["org"].(map[string]any)["id"]; got != json.Number("12345678901234567890") {
		t.Fatalf("org.id %#v", got)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestNoKidOneKey: a token without "kid" is verified by the one key of
// its algorithm's type; with two such keys it names neither.
func TestNoKidOneKey(t *testing.T) {
	a := testidp.MustSigner(t, "ES256", "a")
	b := testidp.MustSigner(t, "ES256", "b")
	ed := testidp.MustSigner(t, "EdDSA", "ed")
	tok := a.Token(claims(nil), map[string]any{"kid": nil})
	if got, err := v.Verify(tok, keySet(t, a, ed), now); err != nil || got.KeyID != "a" {
		t.Fatalf("one EC key: %v %v", got, err)
	}
	if _, err := v.Verify(tok, keySet(t, a, b), now); !errors.Is(err, &idtoken.Error{Reason: idtoken.UnknownKey}) || !strings.Contains(err.Error(), "has 2 keys for ES256") {
		t.Fatalf("two EC keys: %v", err)
	}
}
