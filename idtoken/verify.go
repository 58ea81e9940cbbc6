package idtoken

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	_ "crypto/sha256" // the hashes the algorithms name, registered for crypto.Hash
	_ "crypto/sha512"
	"encoding/json"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

// MaxTokenBytes bounds a token. Providers' tokens run to a few KB; a
// bearer header of more is refused before anything is decoded.
const MaxTokenBytes = 16 << 10

// algorithm is one JWS signature algorithm the verifier accepts.
type algorithm struct {
	kty  string // the key type it needs
	crv  string // an EC or OKP key's curve
	hash crypto.Hash
	pss  bool // RSASSA-PSS rather than PKCS #1 v1.5
}

// algorithms are the accepted JWS algorithms (RFC 7518 §3, RFC 8037).
var algorithms = map[string]algorithm{
	"RS256": {kty: "RSA", hash: crypto.SHA256},
	"RS384": {kty: "RSA", hash: crypto.SHA384},
	"RS512": {kty: "RSA", hash: crypto.SHA512},
	"PS256": {kty: "RSA", hash: crypto.SHA256, pss: true},
	"PS384": {kty: "RSA", hash: crypto.SHA384, pss: true},
	"PS512": {kty: "RSA", hash: crypto.SHA512, pss: true},
	"ES256": {kty: "EC", crv: "P-256", hash: crypto.SHA256},
	"ES384": {kty: "EC", crv: "P-384", hash: crypto.SHA384},
	"ES512": {kty: "EC", crv: "P-521", hash: crypto.SHA512},
	"EdDSA": {kty: "OKP", crv: "Ed25519"},
}

// Algorithms lists the accepted algorithms, sorted.
func Algorithms() []string {
	names := make([]string, 0, len(algorithms))
	for n := range algorithms {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// fits reports whether key k can verify a signature of algorithm alg.
func fits(k Key, alg string) bool {
	a, ok := algorithms[alg]
	return ok && k.Kty == a.kty && (a.crv == "" || k.Crv == a.crv) && (k.Alg == "" || k.Alg == alg)
}

// Verifier checks tokens of one provider for one audience.
type Verifier struct {
	// Issuer is the provider: a token's "iss" must be exactly this.
	Issuer string
	// Audience is who the tokens are for: a token's "aud" (a string, or
	// an array of them) must hold it.
	Audience string
	// Algorithms narrows the accepted algorithms; empty accepts all of
	// Algorithms().
	Algorithms []string
	// Leeway is how far apart the provider's clock and this one may be
	// when "exp", "nbf" and "iat" are judged.
	Leeway time.Duration
	// MaxLifetime, when set, refuses a token whose "exp" lies more than
	// this after its "iat" (or after now, without "iat"): a long-lived
	// token stolen stays useful long.
	MaxLifetime time.Duration
}

// Token is a verified token.
type Token struct {
	Alg       string
	KeyID     string // the "kid" of the key that verified it
	Issuer    string
	Subject   string // "sub"; may be empty
	Audience  []string
	Expires   time.Time
	NotBefore time.Time // zero without "nbf"
	IssuedAt  time.Time // zero without "iat"
	// Claims holds every claim, numbers as json.Number.
	Claims map[string]any
}

// Check reports what is wrong with the verifier itself, before any
// token is judged by it.
func (v Verifier) Check() error {
	switch {
	case v.Issuer == "":
		return refuse(BadVerifierArgs, "no issuer")
	case v.Audience == "":
		return refuse(BadVerifierArgs, "no audience")
	case v.Leeway < 0 || v.MaxLifetime < 0:
		return refuse(BadVerifierArgs, "a negative leeway or lifetime")
	}
	for _, a := range v.Algorithms {
		if _, ok := algorithms[a]; !ok {
			return refuse(BadVerifierArgs, "algorithm %s is not one of %s", quote(a), strings.Join(Algorithms(), ", "))
		}
	}
	return nil
}

// Verify checks token against keys at now and returns it verified, or an
// *Error saying why not. Verify never uses a key the token itself carries
// or points to.
func (v Verifier) Verify(token string, keys *KeySet, now time.Time) (*Token, error) {
	if err := v.Check(); err != nil {
		return nil, err
	}
	if len(token) > MaxTokenBytes {
		return nil, refuse(Malformed, "%d bytes, more than %d", len(token), MaxTokenBytes)
	}
	parts := strings.Split(token, ".")
	switch {
	case len(parts) == 5:
		return nil, refuse(Unsupported, "an encrypted token (JWE) is not accepted: a signed JWT is")
	case len(parts) != 3:
		return nil, refuse(Malformed, "not a JWT: three base64url parts joined by dots are expected")
	}
	header, err := decodePart(parts[0], "header")
	if err != nil {
		return nil, err
	}
	alg, kid, err := v.readHeader(header)
	if err != nil {
		return nil, err
	}
	payload, err := decodePart(parts[1], "claims")
	if err != nil {
		return nil, err
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, refuse(Malformed, "the signature is not unpadded base64url")
	}
	key, err := choose(keys, alg, kid)
	if err != nil {
		return nil, err
	}
	if !verifySignature(key, alg, []byte(token[:len(parts[0])+1+len(parts[1])]), sig) {
		return nil, refuse(BadSignature, "the %s signature does not verify with key %s", alg, quote(key.ID))
	}
	t, err := v.readClaims(payload, now)
	if err != nil {
		return nil, err
	}
	t.Alg, t.KeyID = alg, key.ID
	return t, nil
}

// decodePart decodes a base64url part that holds a JSON object.
func decodePart(part, what string) (map[string]json.RawMessage, error) {
	b, err := b64.DecodeString(part)
	if err != nil {
		return nil, refuse(Malformed, "the %s is not unpadded base64url", what)
	}
	m, err := object(b)
	if err != nil {
		return nil, refuse(Malformed, "the %s: %v", what, err)
	}
	return m, nil
}

// readHeader checks the JOSE header and returns its algorithm and key id.
func (v Verifier) readHeader(h map[string]json.RawMessage) (alg, kid string, err error) {
	alg, ok, e := stringMember(h, "alg")
	switch {
	case e != nil:
		return "", "", refuse(Malformed, "the header: %v", e)
	case !ok:
		return "", "", refuse(Malformed, `the header names no "alg"`)
	}
	if _, known := algorithms[alg]; !known || (len(v.Algorithms) > 0 && !slices.Contains(v.Algorithms, alg)) {
		accepted := v.Algorithms
		if len(accepted) == 0 {
			accepted = Algorithms()
		}
		return "", "", refuse(Unsupported, "algorithm %s is not accepted (accepted: %s)", quote(alg), strings.Join(accepted, ", "))
	}
	if _, ok := h["crit"]; ok {
		return "", "", refuse(Unsupported, `the header marks extensions critical ("crit"); none is understood`)
	}
	typ, ok, e := stringMember(h, "typ")
	if e != nil {
		return "", "", refuse(Malformed, "the header: %v", e)
	}
	if ok {
		switch strings.TrimPrefix(strings.ToLower(typ), "application/") {
		case "jwt", "at+jwt":
		default:
			return "", "", refuse(Unsupported, `"typ" %s: a JWT or an access token (at+jwt) is expected`, quote(typ))
		}
	}
	kid, _, e = stringMember(h, "kid")
	if e != nil {
		return "", "", refuse(Malformed, "the header: %v", e)
	}
	return alg, kid, nil
}

// choose finds the key that verifies a token of algorithm alg naming key
// id kid: the one key of that id, or without an id the one key fitting
// the algorithm.
func choose(keys *KeySet, alg, kid string) (Key, error) {
	var named, fitting []Key
	var all []Key
	if keys != nil {
		all = keys.keys
	}
	for _, k := range all {
		if kid != "" && k.ID != kid {
			continue
		}
		named = append(named, k)
		if fits(k, alg) {
			fitting = append(fitting, k)
		}
	}
	switch {
	case len(named) == 0 && kid != "":
		return Key{}, refuse(UnknownKey, "no key %s in the provider's key set", quote(kid))
	case len(fitting) == 1:
		return fitting[0], nil
	case kid == "" && len(fitting) == 0:
		return Key{}, refuse(UnknownKey, "the token names no key (\"kid\") and the key set has no key for %s", alg)
	case kid == "":
		return Key{}, refuse(UnknownKey, "the token names no key (\"kid\") and the key set has %d keys for %s", len(fitting), alg)
	case len(fitting) == 0:
		return Key{}, refuse(KeyMismatch, "key %s (%s) cannot verify %s", quote(kid), describe(named[0]), alg)
	default:
		return Key{}, refuse(KeyMismatch, "the key set has %d keys %s for %s", len(fitting), quote(kid), alg)
	}
}

// verifySignature checks sig over signed with key by algorithm alg.
func verifySignature(key Key, alg string, signed, sig []byte) bool {
	a := algorithms[alg]
	if a.kty == "OKP" {
		return ed25519.Verify(key.pub.(ed25519.PublicKey), signed, sig)
	}
	h := a.hash.New()
	h.Write(signed)
	digest := h.Sum(nil)
	switch pub := key.pub.(type) {
	case *rsa.PublicKey:
		if a.pss {
			return rsa.VerifyPSS(pub, a.hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: a.hash}) == nil
		}
		return rsa.VerifyPKCS1v15(pub, a.hash, digest, sig) == nil
	case *ecdsa.PublicKey:
		// JWS writes R and S as two fixed-size big-endian integers, not DER.
		size := (pub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:size])
		s := new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(pub, digest, r, s)
	}
	return false
}

// maxNumericDate is the last second of year 9999: a date beyond it is
// not a date anyone means.
const maxNumericDate = 253402300799

// readClaims checks the registered claims at now.
func (v Verifier) readClaims(c map[string]json.RawMessage, now time.Time) (*Token, error) {
	t := &Token{}
	var ok bool
	var err error
	if t.Issuer, ok, err = stringMember(c, "iss"); err != nil {
		return nil, refuse(BadClaim, "%v", err)
	} else if !ok || t.Issuer != v.Issuer {
		return nil, refuse(WrongIssuer, "issued by %s, not by %s", quote(t.Issuer), quote(v.Issuer))
	}
	if t.Subject, _, err = stringMember(c, "sub"); err != nil {
		return nil, refuse(BadClaim, "%v", err)
	}
	if t.Audience, err = audience(c["aud"]); err != nil {
		return nil, err
	}
	if !slices.Contains(t.Audience, v.Audience) {
		return nil, refuse(WrongAudience, "for %s, not for %s", quote(strings.Join(t.Audience, " ")), quote(v.Audience))
	}
	dates := map[string]*time.Time{"exp": &t.Expires, "nbf": &t.NotBefore, "iat": &t.IssuedAt}
	for _, name := range []string{"exp", "nbf", "iat"} {
		if *dates[name], err = numericDate(c, name); err != nil {
			return nil, err
		}
	}
	utc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case t.Expires.IsZero():
		return nil, refuse(BadClaim, `no "exp": a token must say when it expires`)
	case !now.Before(t.Expires.Add(v.Leeway)):
		return nil, refuse(Expired, "the token expired at %s", utc(t.Expires))
	case !t.NotBefore.IsZero() && now.Add(v.Leeway).Before(t.NotBefore):
		return nil, refuse(NotYetValid, "the token is not valid before %s", utc(t.NotBefore))
	case !t.IssuedAt.IsZero() && now.Add(v.Leeway).Before(t.IssuedAt):
		return nil, refuse(NotYetValid, "the token was issued at %s, in the future", utc(t.IssuedAt))
	}
	if v.MaxLifetime > 0 {
		from := t.IssuedAt
		if from.IsZero() {
			from = now
		}
		if life := t.Expires.Sub(from); life > v.MaxLifetime {
			return nil, refuse(TooLong, "the token lives %s, longer than the %s allowed", life.Round(time.Second), v.MaxLifetime)
		}
	}
	if t.Claims, err = claims(c); err != nil {
		return nil, err
	}
	return t, nil
}

// claims decodes every claim, numbers as json.Number: float64 would round
// a large integer claim.
func claims(c map[string]json.RawMessage) (map[string]any, error) {
	out := make(map[string]any, len(c))
	for _, name := range slices.Sorted(maps.Keys(c)) {
		dec := json.NewDecoder(bytes.NewReader(c[name]))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			return nil, refuse(Malformed, "the claims: not JSON")
		}
		out[name] = val
	}
	return out, nil
}

// audience reads "aud": a string or an array of strings.
func audience(raw json.RawMessage) ([]string, error) {
	if raw == nil {
		return nil, refuse(WrongAudience, `no "aud"`)
	}
	var one string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &many) == nil && !slices.Contains(many, "") {
		return many, nil
	}
	return nil, refuse(BadClaim, `"aud" is neither a string nor an array of strings`)
}

// numericDate reads a NumericDate claim (seconds since 1970, possibly
// fractional); zero when absent.
func numericDate(c map[string]json.RawMessage, name string) (time.Time, error) {
	raw, ok := c[name]
	if !ok {
		return time.Time{}, nil
	}
	var n json.Number
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &n) != nil {
		return time.Time{}, refuse(BadClaim, "%q is not a number of seconds", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > maxNumericDate {
		return time.Time{}, refuse(BadClaim, "%q is not a date between 1970 and 9999", name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}
