package idtoken_test

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/internal/testidp"
)

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// TestVerifyAgreesWithItsRules draws claims around the verifier's
// bounds and checks Verify's verdict against the rules written out
// plainly here; then changes one character of the accepted token, which
// must be refused wherever it falls.
func TestVerifyAgreesWithItsRules(t *testing.T) {
	signers := []*testidp.Signer{testidp.MustSigner(t, "EdDSA", "ed"), testidp.MustSigner(t, "ES256", "ec"), testidp.MustSigner(t, "RS256", "rs")}
	keys := keySet(t, signers...)
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.SampledFrom(signers).Draw(rt, "signer")
		leeway := time.Duration(rapid.IntRange(0, 120).Draw(rt, "leeway")) * time.Second
		maxLife := time.Duration(rapid.SampledFrom([]int{0, 600, 3600}).Draw(rt, "maxLife")) * time.Second
		vv := idtoken.Verifier{Issuer: issuer, Audience: "flrh", Leeway: leeway, MaxLifetime: maxLife}
		c := claims(nil)
		exp := now.Unix() + int64(rapid.IntRange(-300, 7200).Draw(rt, "exp"))
		c["exp"] = exp
		var nbf, iat int64
		if rapid.Bool().Draw(rt, "hasNbf") {
			nbf = now.Unix() + int64(rapid.IntRange(-300, 300).Draw(rt, "nbf"))
			c["nbf"] = nbf
		} else {
			delete(c, "nbf")
		}
		if rapid.Bool().Draw(rt, "hasIat") {
			iat = now.Unix() + int64(rapid.IntRange(-3600, 300).Draw(rt, "iat"))
			c["iat"] = iat
		} else {
			delete(c, "iat")
		}
		aud := rapid.SampledFrom([]any{"flrh", "grafana", []string{"grafana", "flrh"}, []string{"argo"}}).Draw(rt, "aud")
		c["aud"] = aud
		iss := rapid.SampledFrom([]string{issuer, issuer + "/", "https://evil.example"}).Draw(rt, "iss")
		c["iss"] = iss
		c["sub"] = rapid.StringMatching(`[a-z]{1,12}`).Draw(rt, "sub")

		l := int64(leeway / time.Second)
		n := now.Unix()
		audOK := aud == "flrh" || (func() bool { a, ok := aud.([]string); return ok && len(a) == 2 })()
		from := n
		if _, ok := c["iat"]; ok {
			from = iat
		}
		want := iss == issuer && audOK && n < exp+l &&
			(c["nbf"] == nil || n+l >= nbf) && (c["iat"] == nil || n+l >= iat) &&
			(maxLife == 0 || exp-from <= int64(maxLife/time.Second))

		token := s.Token(c, nil)
		got, err := vv.Verify(token, keys, now)
		if (err == nil) != want {
			rt.Fatalf("verdict %v, want accepted=%v (claims %v, leeway %v, max life %v)", err, want, c, leeway, maxLife)
		}
		if err != nil {
			return
		}
		if got.Subject != c["sub"] || got.Expires.Unix() != exp {
			rt.Fatalf("token %+v for claims %v", got, c)
		}
		// One character changed, anywhere but a dot: refused.
		i := rapid.IntRange(0, len(token)-1).Filter(func(i int) bool { return token[i] != '.' }).Draw(rt, "at")
		ch := rapid.SampledFrom([]byte(b64Alphabet)).Filter(func(b byte) bool { return b != token[i] }).Draw(rt, "char")
		changed := token[:i] + string(ch) + token[i+1:]
		_, err = vv.Verify(changed, keys, now)
		if err == nil {
			rt.Fatalf("accepted with byte %d changed to %q: %s", i, ch, changed)
		}
		if strings.Contains(err.Error(), changed) {
			rt.Fatalf("the error repeats the token")
		}
	})
}
