package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/testidp"
	"flrh.dev/flrh/runner"
)

// idToken is a token the provider p signs with s for a person (the
// preferred_username claim) in groups (Keycloak's realm_access.roles),
// valid from a minute ago for life.
func idToken(p *testidp.Server, s *testidp.Signer, person string, life time.Duration, groups ...string) string {
	now := time.Now()
	return s.Token(map[string]any{
		"iss": p.URL, "aud": "flrh", "sub": "id-" + person, "preferred_username": person,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(life).Unix(),
		"realm_access": map[string]any{"roles": groups},
	}, nil)
}

// identityConfig is the provider p's configuration for the tests: the
// person's name from preferred_username, groups mapped to roles.
func identityConfig(t *testing.T, p *testidp.Server, extra string) *IdentityConfig {
	t.Helper()
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"`+p.URL+`","audience":"flrh","actor_claim":"preferred_username",
 "roles_claim":"/realm_access/roles","roles":{"payments-approvers":["approver"],"sre":["operator","viewer"]}`+extra+`}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newIdentity(t *testing.T, cfg *IdentityConfig) *Identity {
	t.Helper()
	id, err := NewIdentity(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func withIdentity(id *Identity) fixtureOption {
	return func(_ *runner.Config, c *Config) { c.Identity = id }
}

func TestParseIdentityConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, says string
	}{
		{"no issuer", `{"audience":"flrh"}`, "issuer"},
		{"no audience", `{"issuer":"https://idp.example.com"}`, "audience"},
		{"an unknown member", `{"issuer":"https://idp.example.com","audience":"flrh","jwks":"x"}`, "jwks"},
		{"both key sources", `{"issuer":"https://idp.example.com","audience":"flrh","jwks_uri":"https://idp.example.com/k","jwks_file":"k.json"}`, "/jwks_file: give the key set's address"},
		{"discovery over http", `{"issuer":"http://idp.example.com","audience":"flrh"}`, "/issuer: \"http://idp.example.com\": keys are fetched over https"},
		{"keys over http", `{"issuer":"https://idp.example.com","audience":"flrh","jwks_uri":"http://10.0.0.1/keys"}`, "/jwks_uri"},
		{"issuer not a URL", `{"issuer":"idp","audience":"flrh"}`, "not an absolute URL"},
		{"a role flrh lacks", `{"issuer":"https://idp.example.com","audience":"flrh","roles":{"admins":["admin"]}}`, "/roles/admins/0"},
		{"a group granting nothing", `{"issuer":"https://idp.example.com","audience":"flrh","roles":{"admins":[]}}`, "/roles/admins"},
		{"leeway of ten minutes", `{"issuer":"https://idp.example.com","audience":"flrh","leeway_seconds":600}`, "/leeway_seconds"},
		{"refresh every second", `{"issuer":"https://idp.example.com","audience":"flrh","refresh_seconds":1}`, "/refresh_seconds"},
		{"HS256", `{"issuer":"https://idp.example.com","audience":"flrh","algorithms":["HS256"]}`, "/algorithms/0"},
		{"an empty pointer step", `{"issuer":"https://idp.example.com","audience":"flrh","roles_claim":"/realm_access//roles"}`, "/roles_claim"},
		{"an empty pointer step among actor claims", `{"issuer":"https://idp.example.com","audience":"flrh","actor_claim":["preferred_username","/a//b"]}`, "/actor_claim/1"},
		{"no actor claim", `{"issuer":"https://idp.example.com","audience":"flrh","actor_claim":[]}`, "/actor_claim"},
		{"introspection over http", `{"issuer":"https://idp.example.com","audience":"flrh","introspection":{"endpoint":"http://idp.example.com/i","client_id":"c","client_secret_env":"S"}}`, "/introspection/endpoint"},
		{"introspection without a client", `{"issuer":"https://idp.example.com","audience":"flrh","introspection":{"endpoint":"https://idp.example.com/i","client_secret_env":"S"}}`, "/introspection"},
		{"an actor claim twice", `{"issuer":"https://idp.example.com","audience":"flrh","actor_claim":["sub","sub"]}`, "/actor_claim"},
		{"not JSON", `{"issuer":`, "identity provider"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseIdentityConfig([]byte(c.text), dir)
			if err == nil || cfg != nil || !strings.Contains(err.Error(), c.says) || !strings.HasPrefix(err.Error(), "identity provider: ") {
				t.Fatalf("got %v, want an error saying %q", err, c.says)
			}
		})
	}
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"flrh","jwks_file":"keys/jwks.json","leeway_seconds":0}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.JWKSFile != filepath.Join(dir, "keys/jwks.json") || fmt.Sprint(cfg.ActorClaim) != "[sub]" || cfg.RolesClaim != "roles" || cfg.RefreshEvery() != time.Hour || cfg.verifier().Leeway != 0 {
		t.Fatalf("defaults: %+v", cfg)
	}
	cfg, _ = ParseIdentityConfig([]byte(`{"issuer":"http://127.0.0.1:9/realm","audience":"flrh"}`), dir)
	if cfg == nil || cfg.verifier().Leeway != time.Minute {
		t.Fatalf("a loopback issuer over http, the default leeway: %+v", cfg)
	}
}

// TestIdentityAuthenticates: the provider's tokens authenticate callers
// beside the token file's, their actor and roles read from the claims;
// every refusal says why without the token; a key rotated in is fetched
// when a token first names it, and a made-up key id cannot make the
// server fetch again and again.
func TestIdentityAuthenticates(t *testing.T) {
	k1 := testidp.MustSigner(t, "ES256", "k1")
	k2 := testidp.MustSigner(t, "EdDSA", "k2")
	stranger := testidp.MustSigner(t, "ES256", "k9")
	p := testidp.NewServer(t, k1)
	id := newIdentity(t, identityConfig(t, p, ""))
	f := newFixture(t, tokenFileText, withIdentity(id))
	if p.Fetches() != 1 {
		t.Fatalf("%d fetches at start", p.Fetches())
	}

	whoami := func(token string) (int, map[string]any, string) {
		t.Helper()
		a := f.get("/v1/whoami", token)
		if a.status != 200 {
			var e struct{ Error struct{ Message string } }
			json.Unmarshal(a.body, &e)
			if strings.Contains(string(a.body), token) {
				t.Fatalf("the answer repeats the token: %s", a.body)
			}
			return a.status, nil, e.Error.Message
		}
		return a.status, a.json(t), string(a.body)
	}
	hour := time.Hour
	for _, c := range []struct {
		name   string
		token  string
		status int
		actor  string
		roles  string
		says   string
	}{
		{"an approver", idToken(p, k1, "alice", hour, "payments-approvers", "offline_access"), 200, "alice", "[approver]", ""},
		{"two groups", idToken(p, k1, "sam", hour, "sre", "payments-approvers"), 200, "sam", "[approver operator viewer]", ""},
		{"the token file's still", tokOperator, 200, "oscar", "[operator]", ""},
		{"expired", idToken(p, k1, "alice", -2*time.Minute, "payments-approvers"), 401, "", "", "identity token: the token expired at"},
		{"no group flrh knows", idToken(p, k1, "eve", hour, "staff"), 403, "", "", "actor eve (roles ) may not read"},
		{"an e-mail for a name", idToken(p, k1, "alice@example.com", hour, "sre"), 401, "", "", `the claim "preferred_username" is an e-mail address: set actor_domain`},
		{"another audience", k1.Token(map[string]any{"iss": p.URL, "aud": "grafana", "preferred_username": "alice", "exp": time.Now().Add(hour).Unix()}, nil), 401, "", "", `for "grafana", not for "flrh"`},
		{"another provider", k1.Token(map[string]any{"iss": "https://evil.example", "aud": "flrh", "preferred_username": "alice", "exp": time.Now().Add(hour).Unix()}, nil), 401, "", "", "issued by"},
		{"signed by a stranger under k1", func() string { s := *stranger; s.Kid = "k1"; return idToken(p, &s, "alice", hour, "sre") }(), 401, "", "", "does not verify"},
		{"HS256", testidp.MustSigner(t, "EdDSA", "k1").SignRaw([]byte(`{"alg":"HS256","kid":"k1"}`), []byte(`{}`)), 401, "", "", `"HS256" is not accepted`},
		{"dots, not a JWT", "not.a.jwt", 401, "", "", "header is not unpadded base64url"},
		{"neither", tokUnknown, 401, "", "", "unknown token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, who, body := whoami(c.token)
			if status != c.status {
				t.Fatalf("%d %s", status, body)
			}
			if status == 200 {
				if who["actor"] != c.actor || fmt.Sprint(who["roles"]) != c.roles {
					t.Fatalf("whoami %s, want %s %s", body, c.actor, c.roles)
				}
				return
			}
			if !strings.Contains(body, c.says) {
				t.Fatalf("%s does not say %q", body, c.says)
			}
		})
	}

	// A key rotated in: the first token naming it fetches the key set
	// again, and is accepted. (The fetch at start was moments ago: the
	// wait between fetches is shortened here, and restored below.)
	id.refetchAfter = 0
	p.Publish(k1, k2)
	if status, who, body := whoami(idToken(p, k2, "bob", hour, "payments-approvers")); status != 200 || who["actor"] != "bob" {
		t.Fatalf("a rotated key: %d %s", status, body)
	}
	if p.Fetches() != 2 {
		t.Fatalf("%d fetches after a new key", p.Fetches())
	}
	// A made-up key id, right after: refused, and no fetch.
	id.refetchAfter = minRefetch
	if status, _, body := whoami(idToken(p, stranger, "mallory", hour, "sre")); status != 401 || !strings.Contains(body, `no key "k9"`) {
		t.Fatalf("an unknown key: %d %s", status, body)
	}
	if p.Fetches() != 2 {
		t.Fatalf("%d fetches after an unknown key within %s", p.Fetches(), minRefetch)
	}
	metrics := string(f.get("/metrics", tokViewer).body)
	for _, want := range []string{
		`flrh_identity_tokens_refused_total{reason="expired"} 1`,
		`flrh_identity_tokens_refused_total{reason="actor"} 1`,
		`flrh_identity_tokens_refused_total{reason="unknown_key"} 1`,
		`flrh_identity_tokens_refused_total{reason="bad_signature"} 1`,
		`flrh_identity_key_set_fetches_total{outcome="ok"} 1`, // the one after start
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestIdentityStreamsEnd: a stream opened with a provider's token ends
// when the token expires ("event: expired"), and when the provider
// withdraws the key that signed it ("event: revoked"), at the next fetch
// of its key set.
func TestIdentityStreamsEnd(t *testing.T) {
	k1 := testidp.MustSigner(t, "ES256", "k1")
	k2 := testidp.MustSigner(t, "ES256", "k2")
	p := testidp.NewServer(t, k1, k2)
	id := newIdentity(t, identityConfig(t, p, `,"leeway_seconds":0`))
	f := newFixture(t, tokenFileText, withIdentity(id))
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	f.waitFor("held", tokViewer, "an approval wait", waiting)

	// exp has a second's grain: the token lapses at the second after next.
	exp := time.Now().Truncate(time.Second).Add(2 * time.Second)
	short := k2.Token(map[string]any{"iss": p.URL, "aud": "flrh", "preferred_username": "vera", "exp": exp.Unix(), "realm_access": map[string]any{"roles": []string{"sre"}}}, nil)
	expiring := f.openStream("held", short)
	if last := f.streamEnd(expiring, 30*time.Second, "the stream of an expired token"); last.event != "expired" || last.at.Before(exp) {
		t.Fatalf("the stream ended with %q at %v, the token expiring at %v", last.event, last.at, exp)
	}

	long := idToken(p, k1, "vera", time.Hour, "sre")
	withdrawn := f.openStream("held", long)
	kept := f.openStream("held", idToken(p, k2, "walt", time.Hour, "sre"))
	p.Publish(k2)
	if err := f.server.RefreshIdentity(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last := f.streamEnd(withdrawn, 30*time.Second, "the stream of a withdrawn key's token"); last.event != "revoked" {
		t.Fatalf("the stream ended with %q", last.event)
	}
	if a := f.get("/v1/runs/held", long); a.status != 401 {
		t.Fatalf("a withdrawn key's token: %d", a.status)
	}
	select {
	case msgs := <-kept:
		t.Fatalf("the stream of a kept key's token ended: %v", msgs)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestIdentityKeySetSources: keys from a file; a provider that cannot be
// reached, answers an error, or whose discovery names another issuer is
// refused at start; a failed fetch later keeps the keys in use.
func TestIdentityKeySetSources(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testidp.KeySet(k1), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"flrh","jwks_file":"jwks.json"}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := NewIdentity(context.Background(), fromFile, nil, nil); err != nil || len(id.Keys().Keys()) != 1 || p.Fetches() != 0 {
		t.Fatalf("keys from a file: %v", err)
	}

	refuse := func(name string, cfg *IdentityConfig, says string) {
		t.Helper()
		if id, err := NewIdentity(context.Background(), cfg, nil, nil); err == nil || id != nil || !strings.Contains(err.Error(), says) {
			t.Fatalf("%s: %v, want %q", name, err, says)
		}
	}
	other := *fromFile
	other.JWKSFile = filepath.Join(dir, "missing.json")
	refuse("a missing file", &other, "the key set file")
	mismatch := *identityConfig(t, p, "")
	mismatch.Issuer += "/"
	refuse("discovery naming another issuer", &mismatch, "names the issuer")
	p.PublishRaw([]byte(`{"keys":[{"kty":"RSA","d":"x"}]}`), 200)
	refuse("a private key published", identityConfig(t, p, ""), "private or secret key material")
	p.PublishRaw([]byte(`{"keys":[{"kty":"OKP","crv":"X25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}`), 200)
	refuse("no key that verifies", identityConfig(t, p, ""), "holds no key that verifies tokens")
	p.PublishRaw([]byte(`{}`), http.StatusServiceUnavailable)
	refuse("an error answered", identityConfig(t, p, ""), "503 Service Unavailable")
	gone := testidp.NewServer(t, k1)
	cfgGone := identityConfig(t, gone, "")
	gone.Close()
	refuse("nobody answering", cfgGone, "GET "+gone.URL+"/.well-known/openid-configuration")

	p.Publish(k1)
	id := newIdentity(t, identityConfig(t, p, ""))
	f := newFixture(t, tokenFileText, withIdentity(id))
	p.PublishRaw([]byte(`oops`), 200)
	if err := f.server.RefreshIdentity(context.Background()); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("a broken key set: %v", err)
	}
	if a := f.get("/v1/whoami", idToken(p, k1, "alice", time.Hour, "sre")); a.status != 200 {
		t.Fatalf("the keys in use are kept: %d %s", a.status, a.body)
	}
	if m := string(f.get("/metrics", tokViewer).body); !strings.Contains(m, `flrh_identity_key_set_fetches_total{outcome="failed"} 1`) {
		t.Fatal("the failed fetch is not counted")
	}
}

// TestSetIdentity: a provider is replaced, never given to a server
// started without one nor taken from one started with it.
func TestSetIdentity(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	id := newIdentity(t, identityConfig(t, p, ""))
	without := newFixture(t, tokenFileText)
	if err := without.server.SetIdentity(id); err == nil {
		t.Fatal("an identity provider given to a server started without one")
	}
	// A provider alone, no token file: its tokens authenticate, and a
	// loopback caller without one is refused, not served as "local".
	only := newFixture(t, "", withIdentity(id))
	if a := only.get("/v1/whoami", idToken(p, k1, "alice", time.Hour, "sre")); a.status != 200 || !strings.Contains(string(a.body), `"actor":"alice"`) {
		t.Fatalf("a provider's token, no token file: %d %s", a.status, a.body)
	}
	for _, tok := range []string{"", tokOperator} {
		if a := only.get("/v1/whoami", tok); a.status != 401 {
			t.Fatalf("token %q, no token file: %d %s", tok, a.status, a.body)
		}
	}
	with := newFixture(t, tokenFileText, withIdentity(id))
	if err := with.server.SetIdentity(nil); err == nil {
		t.Fatal("the identity provider taken away")
	}
	// Replaced by one that maps no group: the same token reads no more.
	tok := idToken(p, k1, "alice", time.Hour, "sre")
	if a := with.get("/v1/whoami", tok); a.status != 200 {
		t.Fatalf("%d", a.status)
	}
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"`+p.URL+`","audience":"flrh","actor_claim":"preferred_username"}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := with.server.SetIdentity(newIdentity(t, cfg)); err != nil {
		t.Fatal(err)
	}
	if a := with.get("/v1/whoami", tok); a.status != 403 {
		t.Fatalf("after replacement: %d %s", a.status, a.body)
	}
}

// TestIdentityRemembersVerifiedTokens: a token verified once is taken
// from memory after (the verifier, changed behind its back here, is not
// asked again) until the key set changes or the token expires; the
// memory is bounded.
func TestIdentityRemembersVerifiedTokens(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	k2 := testidp.MustSigner(t, "EdDSA", "k2")
	p := testidp.NewServer(t, k1)
	id := newIdentity(t, identityConfig(t, p, `,"leeway_seconds":0`))
	ctx := context.Background()
	tok := idToken(p, k1, "alice", time.Hour, "sre")
	now := time.Now()
	if g, err := id.grant(ctx, tok, now); err != nil || g.p.Actor != "alice" {
		t.Fatalf("%v %v", g, err)
	}
	id.verifier.Audience = "someone-else"
	if g, err := id.grant(ctx, tok, now); err != nil || g.p.Actor != "alice" {
		t.Fatalf("remembered: %v %v", g, err)
	}
	if _, err := id.grant(ctx, tok, now.Add(2*time.Hour)); err == nil {
		t.Fatal("a remembered token past its expiry")
	}
	id.verifier.Audience = "flrh"
	// The same keys fetched again: still remembered.
	if err := id.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	id.verifier.Audience = "someone-else"
	if _, err := id.grant(ctx, tok, now); err != nil {
		t.Fatalf("the same key set fetched again forgot the token: %v", err)
	}
	// Other keys: verified afresh.
	p.Publish(k1, k2)
	if err := id.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := id.grant(ctx, tok, now); err == nil {
		t.Fatal("a new key set, yet the token was taken from memory")
	}
	id.verifier.Audience = "flrh"
	for i := range verifiedCap + 10 {
		if _, err := id.grant(ctx, k1.Token(map[string]any{"iss": p.URL, "aud": "flrh", "preferred_username": fmt.Sprint("p", i), "exp": now.Add(time.Hour).Unix()}, nil), now); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(id.verified); n > verifiedCap {
		t.Fatalf("%d tokens remembered", n)
	}
}

// TestTokenFileRolesUnderAProvider: with token_file_roles, a token file
// granting a role the provider keeps for its people is refused at start,
// and a token file or a provider put in place later that would allow it
// is refused, the ones in use kept.
func TestTokenFileRolesUnderAProvider(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	strict := newIdentity(t, identityConfig(t, p, `,"token_file_roles":["agent","viewer"]`))
	lenient := newIdentity(t, identityConfig(t, p, ""))
	machines := `{"tokens":[{"actor":"ci-bot","roles":["agent"],"token":"` + tokAgent + `"},{"actor":"vera","roles":["viewer"],"token":"` + tokViewer + `"}]}`
	people, err := ParseTokens([]byte(tokenFileText))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, machines, withIdentity(strict))
	cfg := f.server.cfg
	cfg.Tokens = people
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "alice holds approver, oscar holds operator, rita holds reconciler, which beside the identity provider only it grants (token_file_roles: agent, viewer)") {
		t.Fatalf("a server started with people in the token file: %v", err)
	}
	if err := f.server.SetTokens(people); err == nil {
		t.Fatal("people's tokens put in place")
	}
	if a := f.get("/v1/whoami", tokApprover); a.status != 401 {
		t.Fatalf("a refused token file's approver: %d", a.status)
	}
	if a := f.get("/v1/whoami", tokAgent); a.status != 200 {
		t.Fatalf("the kept token file's agent: %d", a.status)
	}
	// A lenient provider in place, then the people's tokens, then the
	// strict provider again: refused while the people's tokens stand.
	if err := f.server.SetIdentity(lenient); err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetTokens(people); err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetIdentity(strict); err == nil || f.server.Identity() != lenient {
		t.Fatalf("a strict provider put in place over people's tokens: %v", err)
	}
}

// TestActorClaimsInOrder: with several actor claims, the first a token
// holds names the actor — a person's preferred_username, a service's
// client_id — and one it holds that is no actor name refuses the token
// rather than fall through to the next.
func TestActorClaimsInOrder(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	cfg, err := ParseIdentityConfig([]byte(`{"issuer":"`+p.URL+`","audience":"flrh","actor_claim":["preferred_username","client_id"],"roles_claim":"roles"}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := newIdentity(t, cfg)
	exp := time.Now().Add(time.Hour).Unix()
	for _, c := range []struct {
		name   string
		claims map[string]any
		actor  string
		says   string
	}{
		{"a person", map[string]any{"preferred_username": "alice", "client_id": "flrh-ui", "roles": []string{"approver"}}, "alice", ""},
		{"a service", map[string]any{"client_id": "ci-runner", "roles": []string{"agent"}}, "ci-runner", ""},
		{"neither", map[string]any{"sub": "u-1"}, "", `no claim "preferred_username" or "client_id" to name the actor by`},
		{"a person's name that is no actor name", map[string]any{"preferred_username": "alice smith", "client_id": "flrh-ui"}, "", `the claim "preferred_username" is not an actor name`},
		{"a person's address", map[string]any{"preferred_username": "alice@example.com", "client_id": "flrh-ui"}, "", `the claim "preferred_username" is an e-mail address`},
	} {
		c.claims["iss"], c.claims["aud"], c.claims["exp"] = p.URL, "flrh", exp
		g, aerr := id.grant(context.Background(), k1.Token(c.claims, nil), time.Now())
		if c.says != "" {
			if aerr == nil || !strings.Contains(aerr.Message, c.says) {
				t.Errorf("%s: %v %v", c.name, g, aerr)
			}
			continue
		}
		if aerr != nil || g.p.Actor != c.actor {
			t.Errorf("%s: %+v %v", c.name, g.p, aerr)
		}
	}
}

// TestIntrospection: with introspection, a token is asked about when
// first seen and again once the answer is recheck old; a person the
// provider disables is refused within that time, and the stream their
// token opened ends; a provider that cannot answer refuses what it
// cannot check; the client's secret is required at start.
func TestIntrospection(t *testing.T) {
	k1 := testidp.MustSigner(t, "ES256", "k1")
	p := testidp.NewServer(t, k1)
	extra := `,"introspection":{"endpoint":"` + p.URL + `/introspect","client_id":"flrh-ui","client_secret_env":"FLRH_TEST_INTROSPECT"}`
	if _, err := NewIdentity(context.Background(), identityConfig(t, p, extra), nil, nil); err == nil || !strings.Contains(err.Error(), "FLRH_TEST_INTROSPECT is not set") {
		t.Fatalf("no secret: %v", err)
	}
	t.Setenv("FLRH_TEST_INTROSPECT", testidp.IntrospectionSecret)
	id := newIdentity(t, identityConfig(t, p, extra))
	id.introspection.recheck = 300 * time.Millisecond // a minute by default
	f := newFixture(t, tokenFileText, withIdentity(id))
	alice := idToken(p, k1, "alice", time.Hour, "sre")
	for range 3 {
		if a := f.get("/v1/whoami", alice); a.status != 200 {
			t.Fatalf("alice: %d %s", a.status, a.body)
		}
	}
	if n := p.Introspections(); n != 1 {
		t.Fatalf("%d introspections for three requests within the recheck", n)
	}
	if a := f.post("/v1/runs", tokOperator, startBody("held", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d", a.status)
	}
	f.waitFor("held", tokViewer, "an approval wait", waiting)
	stream := f.openStream("held", alice)

	p.Disable("alice")
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := f.get("/v1/whoami", alice)
		if a.status == 401 {
			if !strings.Contains(string(a.body), "no longer active") {
				t.Fatalf("a disabled person: %s", a.body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a disabled person is still let in: %d", a.status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if last := f.streamEnd(stream, 10*time.Second, "the disabled person's stream"); last.event != "revoked" {
		t.Fatalf("the disabled person's stream ended with %q", last.event)
	}
	if a := f.get("/v1/whoami", idToken(p, k1, "bob", time.Hour, "sre")); a.status != 200 {
		t.Fatalf("bob: %d %s", a.status, a.body)
	}
	p.IntrospectionDown(true)
	if a := f.get("/v1/whoami", idToken(p, k1, "carol", time.Hour, "sre")); a.status != 503 || !strings.Contains(string(a.body), "cannot be checked") {
		t.Fatalf("the provider down: %d %s", a.status, a.body)
	}
	if m := string(f.get("/metrics", tokViewer).body); !strings.Contains(m, `flrh_identity_tokens_refused_total{reason="inactive"}`) || !strings.Contains(m, `flrh_identity_tokens_refused_total{reason="introspection_failed"} 1`) {
		t.Fatal("the refusals are not counted")
	}
}

// An actor claim holding e-mail addresses (Azure's upn, Google's email)
// names people of the actor_domain by their local part in lower case;
// another domain's address, one whose local part is no actor name, and
// any address without actor_domain are refused, saying why.
func TestIdentityActorDomain(t *testing.T) {
	k1 := testidp.MustSigner(t, "EdDSA", "k1")
	p := testidp.NewServer(t, k1)
	withDomain := newIdentity(t, identityConfig(t, p, `,"actor_domain":"example.com"`))
	without := newIdentity(t, identityConfig(t, p, ""))
	for _, c := range []struct {
		name   string
		id     *Identity
		person string
		want   string
	}{
		{"an address of the domain", withDomain, "alice@example.com", "alice"},
		{"in another case", withDomain, "Alice.Smith@EXAMPLE.com", "alice.smith"},
		{"a plain name still", withDomain, "bob", "bob"},
		{"another domain", withDomain, "mallory@example.org", "names an address outside example.com"},
		{"a subdomain", withDomain, "eve@mail.example.com", "names an address outside example.com"},
		{"a local part that is no actor name", withDomain, "al+ops@example.com", "is not an actor name"},
		{"two at signs", withDomain, "a@b@example.com", "names an address outside example.com"},
		{"no local part", withDomain, "@example.com", "is not an actor name"},
		{"without actor_domain", without, "alice@example.com", "is an e-mail address: set actor_domain"},
	} {
		g, aerr := c.id.grant(context.Background(), idToken(p, k1, c.person, time.Hour, "sre"), time.Now())
		got := ""
		if aerr != nil {
			got = aerr.Message
		} else {
			got = g.p.Actor
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s (%s): %q, want %q", c.name, c.person, got, c.want)
		}
	}
	if _, err := ParseIdentityConfig([]byte(`{"issuer":"https://idp.example.com","audience":"flrh","actor_domain":"not a domain"}`), t.TempDir()); err == nil || !strings.Contains(err.Error(), "/actor_domain") {
		t.Fatalf("a domain that is none: %v", err)
	}
}
