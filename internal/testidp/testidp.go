// Package testidp is an identity provider for tests: signing keys of
// every algorithm package idtoken accepts, tokens signed on demand, and
// an HTTP server publishing the keys as a JSON Web Key Set behind
// OpenID Connect discovery.
package testidp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

var b64 = base64.RawURLEncoding

// Signer is one signing key of a provider.
type Signer struct {
	Alg  string // the JWS algorithm it signs with
	Kid  string // its key id; empty leaves "kid" out of the key and the tokens
	priv crypto.Signer
	hash crypto.Hash
	// NoAlgInJWK leaves "alg" out of the published key (many providers
	// publish keys without it).
	NoAlgInJWK bool
}

// rsaKeys caches RSA keys by size: generating one takes a tenth of a
// second or more, and tests want many signers.
var (
	rsaMu   sync.Mutex
	rsaKeys = map[string]*rsa.PrivateKey{}
)

// NewSigner makes a key for alg (RS256…PS512, ES256/384/512, EdDSA).
// RSA keys are 2048 bits and shared between signers of the same kid.
func NewSigner(alg, kid string) (*Signer, error) {
	s := &Signer{Alg: alg, Kid: kid}
	var err error
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		rsaMu.Lock()
		k, ok := rsaKeys[kid]
		if !ok {
			k, err = rsa.GenerateKey(rand.Reader, 2048)
			rsaKeys[kid] = k
		}
		rsaMu.Unlock()
		s.priv = k
	case "ES256":
		s.priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		s.priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ES512":
		s.priv, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "EdDSA":
		_, s.priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("testidp: no algorithm %q", alg)
	}
	if err != nil {
		return nil, err
	}
	switch alg[2:] {
	case "256":
		s.hash = crypto.SHA256
	case "384":
		s.hash = crypto.SHA384
	case "512":
		s.hash = crypto.SHA512
	}
	return s, nil
}

// MustSigner is NewSigner for tests.
func MustSigner(t testing.TB, alg, kid string) *Signer {
	t.Helper()
	s, err := NewSigner(alg, kid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// JWK is the signer's public key as a JSON Web Key.
func (s *Signer) JWK() map[string]any {
	k := map[string]any{"use": "sig"}
	if s.Kid != "" {
		k["kid"] = s.Kid
	}
	if !s.NoAlgInJWK {
		k["alg"] = s.Alg
	}
	switch pub := s.priv.Public().(type) {
	case *rsa.PublicKey:
		k["kty"], k["n"], k["e"] = "RSA", b64.EncodeToString(pub.N.Bytes()), b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		raw, _ := pub.Bytes()
		k["kty"], k["crv"] = "EC", pub.Curve.Params().Name
		k["x"], k["y"] = b64.EncodeToString(raw[1:1+size]), b64.EncodeToString(raw[1+size:])
	case ed25519.PublicKey:
		k["kty"], k["crv"], k["x"] = "OKP", "Ed25519", b64.EncodeToString(pub)
	}
	return k
}

// KeySet is the signers' public keys as a JSON Web Key Set.
func KeySet(signers ...*Signer) []byte {
	keys := make([]map[string]any, len(signers))
	for i, s := range signers {
		keys[i] = s.JWK()
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// Token signs claims with a header naming the signer's algorithm and key
// id, with extra header members added (or, set to nil, removed).
func (s *Signer) Token(claims map[string]any, extra map[string]any) string {
	h := map[string]any{"alg": s.Alg, "typ": "JWT"}
	if s.Kid != "" {
		h["kid"] = s.Kid
	}
	for k, v := range extra {
		if v == nil {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	return s.SignRaw(hb, cb)
}

// SignRaw signs a header and claims given as bytes, whatever they hold.
func (s *Signer) SignRaw(header, claims []byte) string {
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(claims)
	return input + "." + b64.EncodeToString(s.Sign([]byte(input)))
}

// Sign signs a JWS signing input as the signer's algorithm says.
func (s *Signer) Sign(input []byte) []byte {
	if k, ok := s.priv.(ed25519.PrivateKey); ok {
		return ed25519.Sign(k, input)
	}
	h := s.hash.New()
	h.Write(input)
	digest := h.Sum(nil)
	switch k := s.priv.(type) {
	case *rsa.PrivateKey:
		if s.Alg[0] == 'P' {
			sig, err := rsa.SignPSS(rand.Reader, k, s.hash, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
			must(err)
			return sig
		}
		sig, err := rsa.SignPKCS1v15(nil, k, s.hash, digest)
		must(err)
		return sig
	case *ecdsa.PrivateKey:
		r, sv, err := ecdsa.Sign(rand.Reader, k, digest)
		must(err)
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		sv.FillBytes(out[size:])
		return out
	}
	panic("testidp: no key")
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Server publishes signers' keys over HTTP: the key set at /jwks and
// OpenID Connect discovery at /.well-known/openid-configuration, whose
// issuer is the server's URL.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	keySet  []byte
	status  int
	fetches atomic.Int64
}

// NewServer starts a provider publishing signers' keys; it stops with
// the test.
func NewServer(t testing.TB, signers ...*Signer) *Server {
	s := &Server{keySet: KeySet(signers...), status: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": s.URL, "jwks_uri": s.URL + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		body, status := s.keySet, s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Publish replaces the keys the server publishes (a key rotated in or
// out).
func (s *Server) Publish(signers ...*Signer) { s.PublishRaw(KeySet(signers...), http.StatusOK) }

// PublishRaw makes the key set endpoint answer status with body.
func (s *Server) PublishRaw(body []byte, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keySet, s.status = body, status
}

// Fetches counts the requests for the key set.
func (s *Server) Fetches() int { return int(s.fetches.Load()) }
