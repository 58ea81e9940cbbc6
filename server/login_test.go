package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/testidp"
)

// signInConfig is provider p's configuration with sign-in for its client
// (the ID token's audience), login members added.
func signInConfig(t *testing.T, p *testidp.Server, login string) *IdentityConfig {
	t.Helper()
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"`+p.URL+`","audience":"flrh-ui","actor_claim":"preferred_username",
 "roles_claim":"/realm_access/roles","roles":{"payments-approvers":["approver"]},"login":{"client_id":"flrh-ui"`+login+`}}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// signInRig serves a provider signing alice (a payments approver) in,
// and a server offering sign-in through it; redirect is the server's UI.
func signInRig(t *testing.T) (p *testidp.Server, f *fixture, redirect string) {
	t.Helper()
	p = testidp.NewServer(t, testidp.MustSigner(t, "ES256", "k1"))
	p.SignInAs("alice", "payments-approvers")
	f = newFixture(t, tokenFileText, withIdentity(newIdentity(t, signInConfig(t, p, ""))))
	return p, f, f.ts.URL + "/ui/"
}

// authorize does what the web UI and the person's browser do before the
// exchange: a verifier, its S256 challenge, a visit to the provider's
// authorization endpoint; it returns the code the provider sent back.
func authorize(t *testing.T, info map[string]any, redirect string) (code, verifier string) {
	t.Helper()
	verifier = strings.Repeat("v", 20) + fmt.Sprint(len(redirect)) + strings.Repeat("w", 30)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {info["client_id"].(string)}, "redirect_uri": {redirect},
		"scope": {info["scope"].(string)}, "state": {"st-1"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(info["authorization_endpoint"].(string) + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Query().Get("code") == "" || back.Query().Get("state") != "st-1" {
		t.Fatalf("the provider sent back %q (%d)", resp.Header.Get("Location"), resp.StatusCode)
	}
	return back.Query().Get("code"), verifier
}

func exchangeBody(code, verifier, redirect string) string {
	b, _ := json.Marshal(LoginToken{Code: code, CodeVerifier: verifier, RedirectURI: redirect})
	return string(b)
}

// TestSignIn: the web UI's sign-in, as the browser drives it: where to
// go, the code exchanged with its PKCE verifier for a token that then
// authenticates; a code used twice, a wrong verifier, another address,
// a token this server would not accept, and a provider that does not
// answer, each refused saying why.
func TestSignIn(t *testing.T) {
	p, f, redirect := signInRig(t)

	a := f.get("/v1/login", "")
	if a.status != 200 {
		t.Fatalf("login: %d %s", a.status, a.body)
	}
	info := a.json(t)
	if info["authorization_endpoint"] != p.URL+"/authorize" || info["client_id"] != "flrh-ui" || info["scope"] != "openid" || info["redirect_path"] != "/ui/" || info["issuer"] != p.URL ||
		info["end_session_endpoint"] != p.URL+"/logout" || info["token"] != "id_token" {
		t.Fatalf("login: %v", info)
	}
	code, verifier := authorize(t, info, redirect)
	a = f.post("/v1/login/token", "", exchangeBody(code, verifier, redirect))
	if a.status != 200 {
		t.Fatalf("exchange: %d %s", a.status, a.body)
	}
	var in SignedIn
	json.Unmarshal(a.body, &in)
	if in.Actor != "alice" || fmt.Sprint(in.Roles) != "[approver]" || in.ExpiresAt == "" {
		t.Fatalf("signed in: %+v", in)
	}
	if w := f.get("/v1/whoami", in.Token); w.status != 200 || w.json(t)["actor"] != "alice" {
		t.Fatalf("the token signed in with: %d %s", w.status, w.body)
	}

	refused := func(name string, status int, typ, body, says string) {
		t.Helper()
		a := f.post("/v1/login/token", "", body)
		var e struct {
			Error struct{ Type, Message, Field string }
		}
		json.Unmarshal(a.body, &e)
		if a.status != status || e.Error.Type != typ || !strings.Contains(e.Error.Message+" "+e.Error.Field, says) {
			t.Fatalf("%s: %d %s, want %d %s saying %q", name, a.status, a.body, status, typ, says)
		}
	}
	refused("the code again", 401, TypeUnauthenticated, exchangeBody(code, verifier, redirect), "the identity provider refused the sign-in: invalid_grant: unknown or used code")
	code, verifier = authorize(t, info, redirect)
	refused("another verifier", 401, TypeUnauthenticated, exchangeBody(code, verifier+"x", redirect), "PKCE verification failed")
	code, verifier = authorize(t, info, redirect) // the provider spent the code on the refusal
	refused("another server's address", 422, TypeInvalid, exchangeBody(code, verifier, "https://evil.example/ui/"), "/redirect_uri")
	refused("an address with a query", 422, TypeInvalid, exchangeBody(code, verifier, redirect+"?next=x"), "/redirect_uri")
	refused("the API's address", 422, TypeInvalid, exchangeBody(code, verifier, f.ts.URL+"/v1/runs"), "/redirect_uri")
	refused("a short verifier", 422, TypeInvalid, exchangeBody(code, "abc", redirect), "/code_verifier")
	refused("no code", 422, TypeInvalid, `{"code_verifier":"`+verifier+`","redirect_uri":"`+redirect+`"}`, "")
	refused("not JSON", 400, TypeMalformed, `{"code":`, "")
	// The code was not spent by the refusals above.
	if a := f.post("/v1/login/token", "", exchangeBody(code, verifier, redirect)); a.status != 200 {
		t.Fatalf("the code after refusals that never reached the provider: %d %s", a.status, a.body)
	}
	if p.Exchanges() != 2 { // the two that succeeded
		t.Fatalf("%d exchanges at the provider", p.Exchanges())
	}

	// A configuration asking for the access token, whose audience is not
	// this server's: refused at sign-in, saying so.
	acc := newFixture(t, tokenFileText, withIdentity(newIdentity(t, signInConfig(t, p, `,"token":"access_token"`))))
	code, verifier = authorize(t, info, acc.ts.URL+"/ui/")
	if a := acc.post("/v1/login/token", "", exchangeBody(code, verifier, acc.ts.URL+"/ui/")); a.status != 401 ||
		!strings.Contains(string(a.body), `the identity provider's token is not one this server accepts: identity token: for \"account\", not for \"flrh-ui\"`) {
		t.Fatalf("an access token for another audience: %d %s", a.status, a.body)
	}

	// A server without sign-in: 404 on both.
	plain := newFixture(t, tokenFileText, withIdentity(newIdentity(t, identityConfig(t, p, ""))))
	for _, g := range []*fixture{plain, newFixture(t, tokenFileText)} {
		if a := g.get("/v1/login", ""); a.status != 404 || !strings.Contains(string(a.body), "no sign-in") {
			t.Fatalf("login without sign-in: %d %s", a.status, a.body)
		}
		if a := g.post("/v1/login/token", "", exchangeBody("c", verifier, g.ts.URL+"/ui/")); a.status != 404 {
			t.Fatalf("exchange without sign-in: %d %s", a.status, a.body)
		}
	}

	// The provider gone: 502.
	gone := testidp.NewServer(t, testidp.MustSigner(t, "ES256", "k1"))
	goneCfg := signInConfig(t, gone, "")
	goneID := newIdentity(t, goneCfg)
	gone.Close()
	g := newFixture(t, tokenFileText, withIdentity(goneID))
	if a := g.post("/v1/login/token", "", exchangeBody("c", verifier, g.ts.URL+"/ui/")); a.status != 502 || !strings.Contains(string(a.body), `"upstream"`) {
		t.Fatalf("a provider gone: %d %s", a.status, a.body)
	}
}

// TestSignInConfidentialClient: with client_secret_env, the exchange
// authenticates the client; a wrong secret is the provider's refusal, an
// unset variable refused at start.
func TestSignInConfidentialClient(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	p.ClientSecret = "s3cret/with:odd&chars"
	p.SignInAs("bob", "payments-approvers")
	cfg := signInConfig(t, p, `,"client_secret_env":"FLRH_TEST_CLIENT_SECRET"`)
	if _, err := NewIdentity(context.Background(), cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "FLRH_TEST_CLIENT_SECRET is not set") {
		t.Fatalf("an unset secret: %v", err)
	}
	for _, c := range []struct {
		secret string
		status int
	}{{"wrong", 401}, {p.ClientSecret, 200}} {
		t.Setenv("FLRH_TEST_CLIENT_SECRET", c.secret)
		f := newFixture(t, tokenFileText, withIdentity(newIdentity(t, cfg)))
		info := f.get("/v1/login", "").json(t)
		code, verifier := authorize(t, info, f.ts.URL+"/ui/")
		a := f.post("/v1/login/token", "", exchangeBody(code, verifier, f.ts.URL+"/ui/"))
		if a.status != c.status || (c.status == 401 && !strings.Contains(string(a.body), "invalid_client")) {
			t.Fatalf("secret %q: %d %s", c.secret, a.status, a.body)
		}
	}
}

// TestSignInConfiguration: sign-in's endpoints come from discovery or the
// configuration; without discovery the configuration must name them.
func TestSignInConfiguration(t *testing.T) {
	for _, c := range []struct{ name, text, says string }{
		{"no client", `{"issuer":"https://idp.example.com","audience":"a","login":{}}`, "/login"},
		{"keys from a file, no endpoints", `{"issuer":"https://idp.example.com","audience":"a","jwks_file":"k.json","login":{"client_id":"c"}}`, "/login/authorization_endpoint: needed when the keys are not found by discovery"},
		{"an endpoint over http", `{"issuer":"https://idp.example.com","audience":"a","login":{"client_id":"c","token_endpoint":"http://idp.example.com/token"}}`, "/login/token_endpoint"},
		{"a token kind unknown", `{"issuer":"https://idp.example.com","audience":"a","login":{"client_id":"c","token":"refresh_token"}}`, "/login/token"},
		{"a secret variable not a name", `{"issuer":"https://idp.example.com","audience":"a","login":{"client_id":"c","client_secret_env":"A B"}}`, "/login/client_secret_env"},
	} {
		if cfg, err := ParseIdentityConfig([]byte(c.text), t.TempDir()); err == nil || cfg != nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.name, err, c.says)
		}
	}
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"a","jwks_file":"k.json",
 "login":{"client_id":"c","authorization_endpoint":"https://idp.example.com/auth","token_endpoint":"https://idp.example.com/token"}}`), t.TempDir())
	if err != nil || cfg.Login.Scope != "openid" || cfg.Login.Token != "id_token" {
		t.Fatalf("named endpoints: %v %+v", err, cfg)
	}
	if _, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"a","login":{"client_id":"c","end_session_endpoint":"http://idp.example.com/logout"}}`), t.TempDir()); err == nil || !strings.Contains(err.Error(), "/login/end_session_endpoint") {
		t.Fatalf("an end-session endpoint over http: %v", err)
	}
	// Without an end-session endpoint, sign-in is offered without one.
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	named := signInConfig(t, p, `,"authorization_endpoint":"`+p.URL+`/authorize","token_endpoint":"`+p.URL+`/token"`)
	named.JWKSURI = p.URL + "/jwks"
	f := newFixture(t, tokenFileText, withIdentity(newIdentity(t, named)))
	if info := f.get("/v1/login", "").json(t); info["authorization_endpoint"] != p.URL+"/authorize" || info["end_session_endpoint"] != nil {
		t.Fatalf("sign-in without an end-session endpoint: %v", info)
	}
}

// TestSignInRefresh: the refresh token a sign-in answered gets a new
// token that authenticates, and a new refresh token where the provider
// rotates them (the old one then refused, saying why), the same one where
// it does not; bad bodies and a server without sign-in refused.
func TestSignInRefresh(t *testing.T) {
	p, f, redirect := signInRig(t)
	info := f.get("/v1/login", "").json(t)
	signIn := func() SignedIn {
		t.Helper()
		code, verifier := authorize(t, info, redirect)
		a := f.post("/v1/login/token", "", exchangeBody(code, verifier, redirect))
		var in SignedIn
		if a.status != 200 || json.Unmarshal(a.body, &in) != nil || in.RefreshToken == "" {
			t.Fatalf("sign-in: %d %s", a.status, a.body)
		}
		return in
	}
	refresh := func(rt string) (int, SignedIn, string) {
		t.Helper()
		b, _ := json.Marshal(LoginRefresh{RefreshToken: rt})
		a := f.post("/v1/login/refresh", "", string(b))
		var in SignedIn
		json.Unmarshal(a.body, &in)
		return a.status, in, string(a.body)
	}
	first := signIn()
	status, next, body := refresh(first.RefreshToken)
	if status != 200 || next.Token == "" || next.RefreshToken == "" || next.RefreshToken == first.RefreshToken || next.Actor != "alice" || next.ExpiresAt == "" {
		t.Fatalf("refresh: %d %s", status, body)
	}
	if w := f.get("/v1/whoami", next.Token); w.status != 200 || w.json(t)["actor"] != "alice" {
		t.Fatalf("the refreshed token: %d %s", w.status, w.body)
	}
	if status, _, body := refresh(first.RefreshToken); status != 401 || !strings.Contains(body, "invalid_grant: unknown or used refresh token") {
		t.Fatalf("a used refresh token: %d %s", status, body)
	}
	if p.Refreshes() != 1 {
		t.Fatalf("%d refreshes", p.Refreshes())
	}
	// A provider that does not rotate: the refresh token presented is
	// kept, and good again.
	p.KeepRefreshTokens()
	kept := signIn()
	for range 2 {
		if status, again, body := refresh(kept.RefreshToken); status != 200 || again.RefreshToken != kept.RefreshToken {
			t.Fatalf("a refresh token not rotated: %d %s", status, body)
		}
	}
	for _, bad := range []string{`{}`, `{"refresh_token":""}`, `{"refresh_token":"a b"}`, `{"refresh_token":"x","code":"y"}`} {
		if a := f.post("/v1/login/refresh", "", bad); a.status != 422 {
			t.Fatalf("%s: %d %s", bad, a.status, a.body)
		}
	}
	if a := newFixture(t, tokenFileText).post("/v1/login/refresh", "", `{"refresh_token":"x"}`); a.status != 404 {
		t.Fatalf("refresh without sign-in: %d %s", a.status, a.body)
	}
}
