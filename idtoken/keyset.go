package idtoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
)

// Limits on what ParseKeySet reads. A provider publishes a handful of
// keys; a set far beyond these is a mistake or an attack.
const (
	MaxKeySetBytes = 1 << 20
	MaxKeys        = 256
	minRSABits     = 2048
	maxRSABits     = 8192
)

// b64 is unpadded base64url that refuses stray bits in the last
// character, so that one value has one encoding.
var b64 = base64.RawURLEncoding.Strict()

// Key is one public key of a provider's key set.
type Key struct {
	ID  string // "kid"; may be empty
	Alg string // "alg": the one algorithm the provider says the key is for, or empty
	Kty string // "RSA", "EC" or "OKP"
	Crv string // the curve of an EC or OKP key
	pub crypto.PublicKey
}

// KeySet is the keys a provider publishes that can verify a signature.
// The zero value holds none.
type KeySet struct {
	keys    []Key
	skipped int
}

// Keys returns the set's keys in the order the provider listed them.
func (s *KeySet) Keys() []Key {
	if s == nil {
		return nil
	}
	return slices.Clone(s.keys)
}

// Skipped is how many of the provider's keys were left out: keys for
// encryption ("use": "enc"), of a type or curve no accepted algorithm
// uses, or whose "key_ops" leave out verify.
func (s *KeySet) Skipped() int {
	if s == nil {
		return 0
	}
	return s.skipped
}

// jwk is the members of a JSON Web Key that ParseKeySet reads, each read
// by its exact name (encoding/json would match "KTY" to "kty").
type jwk struct {
	Kty    string
	Kid    string
	Use    string
	Alg    string
	KeyOps []string
	N      string
	E      string
	Crv    string
	X      string
	Y      string
}

// privateMembers are the members that carry private or secret key
// material: a key set holding one has been published by mistake, and
// every token signed with that key is suspect.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// ParseKeySet reads a JSON Web Key Set ({"keys": [...]}). Keys that can
// verify none of the accepted algorithms are skipped and counted; a key
// of a usable type that is malformed, too weak, or carries private
// material is refused with the whole set, naming it by JSON pointer.
func ParseKeySet(data []byte) (*KeySet, error) {
	if len(data) > MaxKeySetBytes {
		return nil, refuse(BadKeySet, "the key set is %d bytes, more than %d", len(data), MaxKeySetBytes)
	}
	top, err := object(data)
	if err != nil {
		return nil, refuse(BadKeySet, "the key set: %v", err)
	}
	raw, ok := top["keys"]
	if !ok {
		return nil, refuse(BadKeySet, `the key set has no "keys" member`)
	}
	var entries []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &entries) != nil {
		return nil, refuse(BadKeySet, `/keys: not an array`)
	}
	if len(entries) > MaxKeys {
		return nil, refuse(BadKeySet, "/keys: %d keys, more than %d", len(entries), MaxKeys)
	}
	set := &KeySet{}
	for i, e := range entries {
		k, usable, err := parseKey(e)
		if err != nil {
			return nil, refuse(BadKeySet, "/keys/%d: %v", i, err)
		}
		if !usable {
			set.skipped++
			continue
		}
		set.keys = append(set.keys, k)
	}
	return set, nil
}

// parseKey reads one key. usable is false for a well-formed key that
// verifies nothing the verifier accepts.
func parseKey(data json.RawMessage) (k Key, usable bool, err error) {
	m, err := object(data)
	if err != nil {
		return Key{}, false, err
	}
	for _, name := range privateMembers {
		if _, ok := m[name]; ok {
			return Key{}, false, fmt.Errorf("holds private or secret key material (%q): a key set publishes public keys only", name)
		}
	}
	var j jwk
	for _, f := range []struct {
		name string
		dst  *string
	}{{"kty", &j.Kty}, {"kid", &j.Kid}, {"use", &j.Use}, {"alg", &j.Alg}, {"n", &j.N}, {"e", &j.E}, {"crv", &j.Crv}, {"x", &j.X}, {"y", &j.Y}} {
		if *f.dst, _, err = stringMember(m, f.name); err != nil {
			return Key{}, false, err
		}
	}
	if raw, ok := m["key_ops"]; ok {
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &j.KeyOps) != nil {
			return Key{}, false, fmt.Errorf(`"key_ops" is not an array of strings`)
		}
	}
	if j.Kty == "" {
		return Key{}, false, fmt.Errorf(`no "kty"`)
	}
	if (j.Use != "" && j.Use != "sig") || (j.KeyOps != nil && !slices.Contains(j.KeyOps, "verify")) {
		return Key{}, false, nil
	}
	if j.Alg != "" {
		if _, ok := algorithms[j.Alg]; !ok {
			return Key{}, false, nil
		}
	}
	k = Key{ID: j.Kid, Alg: j.Alg, Kty: j.Kty, Crv: j.Crv}
	switch j.Kty {
	case "RSA":
		k.pub, err = rsaKey(j)
	case "EC":
		curve, ok := curves[j.Crv]
		if !ok {
			return Key{}, false, fmt.Errorf("EC curve %s is not P-256, P-384 or P-521", quote(j.Crv))
		}
		k.pub, err = ecKey(curve, j)
	case "OKP":
		if j.Crv != "Ed25519" {
			return Key{}, false, nil // X25519 and X448 agree keys; Ed448 is not accepted
		}
		var x []byte
		if x, err = coordinate("x", j.X, ed25519.PublicKeySize); err == nil {
			k.pub = ed25519.PublicKey(x)
		}
	default:
		return Key{}, false, nil // "oct" is refused above by its "k"; others are unknown
	}
	if err != nil {
		return Key{}, false, err
	}
	if k.Alg != "" && !fits(k, k.Alg) {
		return Key{}, false, fmt.Errorf("\"alg\" %s does not fit the key (%s)", k.Alg, describe(k))
	}
	return k, true, nil
}

func rsaKey(j jwk) (*rsa.PublicKey, error) {
	n, err := b64.DecodeString(j.N)
	if err != nil || len(n) == 0 {
		return nil, fmt.Errorf(`RSA "n" is not unpadded base64url`)
	}
	e, err := b64.DecodeString(j.E)
	if err != nil || len(e) == 0 || len(e) > 4 {
		return nil, fmt.Errorf(`RSA "e" is not an exponent of at most four bytes in unpadded base64url`)
	}
	nn := new(big.Int).SetBytes(n)
	if bits := nn.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("an RSA modulus of %d bits: from %d to %d are accepted", bits, minRSABits, maxRSABits)
	}
	ee := new(big.Int).SetBytes(e).Int64()
	if ee < 3 || ee%2 == 0 {
		return nil, fmt.Errorf("RSA exponent %d: an odd number of at least 3 is required", ee)
	}
	return &rsa.PublicKey{N: nn, E: int(ee)}, nil
}

var curves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

func ecKey(curve elliptic.Curve, j jwk) (*ecdsa.PublicKey, error) {
	size := (curve.Params().BitSize + 7) / 8
	x, err := coordinate("x", j.X, size)
	if err != nil {
		return nil, err
	}
	y, err := coordinate("y", j.Y, size)
	if err != nil {
		return nil, err
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, fmt.Errorf("the point is not on %s", j.Crv)
	}
	return pub, nil
}

// coordinate decodes a fixed-size member; RFC 7518 requires the full
// length, leading zeros included.
func coordinate(name, v string, size int) ([]byte, error) {
	b, err := b64.DecodeString(v)
	if err != nil || len(b) != size {
		return nil, fmt.Errorf("%q is not %d bytes in unpadded base64url", name, size)
	}
	return b, nil
}

// describe names a key's kind in errors: "RSA", "EC P-256", "OKP Ed25519".
func describe(k Key) string {
	if k.Crv == "" {
		return k.Kty
	}
	return k.Kty + " " + k.Crv
}
