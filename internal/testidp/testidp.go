// Package testidp is an identity provider for tests: signing keys of
// every algorithm package idtoken accepts, tokens signed on demand, and
// an HTTP server publishing the keys as a JSON Web Key Set behind
// OpenID Connect discovery.
package testidp

import (
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

	// Sign-in (/authorize, /token): the client it knows, the person who
	// signs in (no page asks), and the codes handed out.
	signer       *Signer
	ClientID     string
	ClientSecret string // when set, /token requires it (HTTP basic)
	person       string
	groups       []string
	refuseWith   string
	codes        map[string]grantedCode
	refresh      map[string]grantedCode // refresh tokens given, each good once
	exchanges    atomic.Int64
	refreshes    atomic.Int64
	logouts      []url.Values    // the queries signing out came with
	disabled     map[string]bool // people whose tokens introspection calls inactive
	introDown    bool
	introspected atomic.Int64
	tokenLife    time.Duration
	sameRefresh  bool
}

type grantedCode struct {
	challenge, redirect, person string
	groups                      []string
}

// NewServer starts a provider publishing signers' keys; it stops with
// the test.
func NewServer(t testing.TB, signers ...*Signer) *Server {
	s := &Server{keySet: KeySet(signers...), status: http.StatusOK, ClientID: "flrh-ui", codes: map[string]grantedCode{}, refresh: map[string]grantedCode{}}
	if len(signers) > 0 {
		s.signer = signers[0]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": s.URL, "jwks_uri": s.URL + "/jwks",
			"authorization_endpoint": s.URL + "/authorize", "token_endpoint": s.URL + "/token", "end_session_endpoint": s.URL + "/logout"})
	})
	mux.HandleFunc("GET /logout", s.logout)
	mux.HandleFunc("POST /introspect", s.introspect)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
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

// SignInAs makes the next sign-ins be person's, a member of groups.
func (s *Server) SignInAs(person string, groups ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.person, s.groups = person, groups
}

// RefuseWith makes the next sign-ins be refused with the error code
// (access_denied, say); "" lets them through again.
func (s *Server) RefuseWith(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseWith = code
}

// Exchanges counts the codes exchanged at /token.
func (s *Server) Exchanges() int { return int(s.exchanges.Load()) }

// SetTokenLife makes the tokens /token issues live d (5 minutes by
// default).
func (s *Server) SetTokenLife(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenLife = d
}

// KeepRefreshTokens makes a refresh token good after use, and a refresh
// answered with no new one, as providers that do not rotate them do.
func (s *Server) KeepRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sameRefresh = true
}

// Refreshes counts the refresh tokens traded at /token.
func (s *Server) Refreshes() int { return int(s.refreshes.Load()) }

// authorize signs the person in at once and sends them back with a code
// (RFC 6749 §4.1.2), or with an error when the request is not one a
// provider would take.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || back.Host == "" || q.Get("client_id") != s.ClientID {
		http.Error(w, "unknown client or redirect", http.StatusBadRequest)
		return
	}
	v := url.Values{"state": {q.Get("state")}}
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		v.Set("error", "invalid_request")
		v.Set("error_description", "PKCE with S256 is required")
	case !strings.Contains(" "+q.Get("scope")+" ", " openid "):
		v.Set("error", "invalid_scope")
	case s.refusal() != "":
		v.Set("error", s.refusal())
		v.Set("error_description", "the person said no")
	default:
		s.mu.Lock()
		code := fmt.Sprintf("code-%d-%s", len(s.codes), q.Get("state"))
		s.codes[code] = grantedCode{challenge: q.Get("code_challenge"), redirect: back.String(), person: s.person, groups: s.groups}
		s.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token exchanges a code once (RFC 6749 §4.1.3, RFC 7636 §4.6), answering
// an ID token for the client and an access token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	fail := func(code, why string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": why})
	}
	if err := r.ParseForm(); err != nil {
		fail("invalid_request", "not a form")
		return
	}
	if s.ClientSecret != "" {
		// RFC 6749 §2.3.1: each form-urlencoded, then HTTP basic.
		id, secret, ok := r.BasicAuth()
		id, err1 := url.QueryUnescape(id)
		secret, err2 := url.QueryUnescape(secret)
		if !ok || err1 != nil || err2 != nil || id != s.ClientID || secret != s.ClientSecret {
			fail("invalid_client", "client authentication failed")
			return
		}
	}
	if r.PostForm.Get("grant_type") == "refresh_token" {
		s.mu.Lock()
		g, ok := s.refresh[r.PostForm.Get("refresh_token")]
		rotate := !s.sameRefresh
		if rotate {
			delete(s.refresh, r.PostForm.Get("refresh_token")) // good once
		}
		s.mu.Unlock()
		if !ok || r.PostForm.Get("client_id") != s.ClientID {
			fail("invalid_grant", "unknown or used refresh token")
			return
		}
		s.refreshes.Add(1)
		s.issue(w, g, rotate)
		return
	}
	s.mu.Lock()
	g, ok := s.codes[r.PostForm.Get("code")]
	delete(s.codes, r.PostForm.Get("code"))
	s.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code":
		fail("unsupported_grant_type", "")
	case !ok:
		fail("invalid_grant", "unknown or used code")
	case r.PostForm.Get("client_id") != s.ClientID || r.PostForm.Get("redirect_uri") != g.redirect:
		fail("invalid_grant", "the client or redirect_uri differ")
	case b64.EncodeToString(sum[:]) != g.challenge:
		fail("invalid_grant", "PKCE verification failed")
	default:
		s.exchanges.Add(1)
		s.issue(w, g, true)
	}
}

// issue answers tokens for g's person: an ID token for the client, an
// access token, and with newRefresh a refresh token.
func (s *Server) issue(w http.ResponseWriter, g grantedCode, newRefresh bool) {
	now := time.Now()
	s.mu.Lock()
	life := cmp.Or(s.tokenLife, 5*time.Minute)
	s.mu.Unlock()
	claims := map[string]any{"iss": s.URL, "aud": s.ClientID, "sub": "u-" + g.person, "preferred_username": g.person,
		"iat": now.Unix(), "exp": now.Add(life).Unix(), "realm_access": map[string]any{"roles": g.groups}}
	access := maps.Clone(claims)
	access["aud"] = "account"
	answer := map[string]any{"token_type": "Bearer", "expires_in": int(life.Seconds()),
		"id_token": s.signer.Token(claims, nil), "access_token": s.signer.Token(access, map[string]any{"typ": "at+jwt"})}
	if newRefresh {
		s.mu.Lock()
		rt := fmt.Sprintf("rt-%d-%d", len(s.refresh), s.refreshes.Load()+s.exchanges.Load())
		s.refresh[rt] = g
		s.mu.Unlock()
		answer["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

func (s *Server) refusal() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refuseWith
}

// logout ends a person's sign-in (OpenID Connect RP-Initiated Logout)
// and sends them back where the client asks.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("post_logout_redirect_uri"))
	if err != nil || back.Host == "" || q.Get("client_id") != s.ClientID {
		http.Error(w, "unknown client or redirect", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.logouts = append(s.logouts, q)
	s.mu.Unlock()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// Logouts are the queries people signed out with, in order.
func (s *Server) Logouts() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.logouts)
}

// IntrospectionSecret is the secret the client ClientID gives
// /introspect.
const IntrospectionSecret = "introspect-s3cret"

// Disable makes introspection call person's tokens inactive from now on
// (the person left, or their account was locked).
func (s *Server) Disable(person string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disabled == nil {
		s.disabled = map[string]bool{}
	}
	s.disabled[person] = true
}

// IntrospectionDown makes /introspect answer 503 (down) or work again.
func (s *Server) IntrospectionDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.introDown = down
}

// Introspections counts the tokens asked about at /introspect.
func (s *Server) Introspections() int { return int(s.introspected.Load()) }

// introspect answers whether a token is active (RFC 7662): one whose
// person is disabled is not. The client must authenticate.
func (s *Server) introspect(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	s.mu.Lock()
	down := s.introDown
	s.mu.Unlock()
	switch {
	case down:
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	case !ok || id != s.ClientID || secret != IntrospectionSecret:
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	s.introspected.Add(1)
	r.ParseForm()
	person := ""
	if parts := strings.Split(r.PostForm.Get("token"), "."); len(parts) == 3 {
		if b, err := b64.DecodeString(parts[1]); err == nil {
			var c struct {
				Person string `json:"preferred_username"`
			}
			json.Unmarshal(b, &c)
			person = c.Person
		}
	}
	s.mu.Lock()
	active := person != "" && !s.disabled[person]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"active": active})
}
