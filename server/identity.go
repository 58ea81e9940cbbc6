package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/idtoken"
	"flrh.dev/flrh/ratelimit"
)

// Defaults and bounds of an identity provider's configuration.
const (
	defaultLeeway  = 60 * time.Second
	defaultRefresh = time.Hour
	// minRefetch is how soon after one fetch of the key set a token naming
	// an unknown key may fetch it again: a provider that rotated its keys
	// is caught up with at once, a caller presenting made-up key ids
	// cannot make the server hammer the provider.
	minRefetch = 30 * time.Second
	// fetchTimeout bounds one fetch of the discovery document or the key
	// set.
	fetchTimeout = 10 * time.Second
)

// IdentityConfig is an identity provider's configuration (schema
// identity.json): the file `flrh serve --identity` reads.
//
//	{"issuer": "https://login.example.com/realms/ops",
//	 "audience": "flrh",
//	 "actor_claim": "preferred_username",
//	 "roles_claim": "/realm_access/roles",
//	 "roles": {"payments-approvers": ["approver"], "sre": ["operator", "reconciler"]}}
type IdentityConfig struct {
	Issuer     string   `json:"issuer"`
	Audience   string   `json:"audience"`
	JWKSURI    string   `json:"jwks_uri,omitempty"`
	JWKSFile   string   `json:"jwks_file,omitempty"`
	ActorClaim NameList `json:"actor_claim,omitempty"`
	// ActorDomain, when set, lets an actor claim hold an e-mail address
	// of this domain (Azure's and Google's usual names): the actor is
	// its local part, in lower case; an address of another domain is
	// refused.
	ActorDomain string              `json:"actor_domain,omitempty"`
	RolesClaim  string              `json:"roles_claim,omitempty"`
	Roles       map[string][]string `json:"roles,omitempty"`
	// Workflows, when set, scopes each caller to the workflows its roles
	// claim's values map to ("*": every workflow); a caller whose values
	// map to none sees none (Principal.Workflows).
	Workflows          map[string][]string `json:"workflows,omitempty"`
	Algorithms         []string            `json:"algorithms,omitempty"`
	LeewaySeconds      *int                `json:"leeway_seconds,omitempty"`
	MaxLifetimeSeconds int                 `json:"max_lifetime_seconds,omitempty"`
	RefreshSeconds     int                 `json:"refresh_seconds,omitempty"`
	Login              *LoginConfig        `json:"login,omitempty"`
	// TokenFileRoles, when set, are the only roles the token file may
	// grant beside the provider (checkTokenRoles).
	TokenFileRoles []string `json:"token_file_roles,omitempty"`
	// Introspection, when set, asks the provider whether a token is still
	// active (introspect.go).
	Introspection *IntrospectionConfig `json:"introspection,omitempty"`
	// Rates, when set, holds a caller to the rate its roles claim's values
	// map to rather than the server's (Principal.Rate): the fastest of
	// its values', none when one of them is "none".
	Rates map[string]RateConfig `json:"rates,omitempty"`
}

// RateConfig is a rate an identity provider's group is held to.
type RateConfig struct {
	Rate  string `json:"rate"`
	Burst int    `json:"burst,omitempty"`
}

// NameList is names written as one name or a list of them: claims tried
// in order (an identity provider's actor_claim), a secret's variables.
type NameList []string

// UnmarshalJSON reads one name or a list of them.
func (c *NameList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*c = NameList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*c = many
	return nil
}

// LoginConfig lets people sign in to the web UI through the provider
// (see login.go).
type LoginConfig struct {
	ClientID              string `json:"client_id"`
	ClientSecretEnv       string `json:"client_secret_env,omitempty"`
	Scope                 string `json:"scope,omitempty"`
	Token                 string `json:"token,omitempty"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint         string `json:"token_endpoint,omitempty"`
	EndSessionEndpoint    string `json:"end_session_endpoint,omitempty"`
}

// ParseIdentityConfig reads an identity provider's configuration. dir is
// the directory a relative jwks_file is taken from (the configuration
// file's own). Errors name the offending member by JSON pointer.
func ParseIdentityConfig(data []byte, dir string) (*IdentityConfig, error) {
	var c IdentityConfig
	if err := decodeStrict(data, "identity", &c); err != nil {
		return nil, fmt.Errorf("identity provider: %w", err)
	}
	bad := func(ptr, format string, args ...any) error {
		return fmt.Errorf("identity provider: %s: %s", ptr, fmt.Sprintf(format, args...))
	}
	if c.JWKSURI != "" && c.JWKSFile != "" {
		return nil, bad("/jwks_file", "give the key set's address (jwks_uri) or its file, not both")
	}
	if c.JWKSFile == "" {
		at, where := c.Issuer, "/issuer"
		if c.JWKSURI != "" {
			at, where = c.JWKSURI, "/jwks_uri"
		}
		if err := fetchable(at); err != nil {
			return nil, bad(where, "%v", err)
		}
	} else if !filepath.IsAbs(c.JWKSFile) {
		c.JWKSFile = filepath.Join(dir, c.JWKSFile)
	}
	claims := []struct{ ptr, v string }{{"/roles_claim", c.RolesClaim}}
	for i, name := range c.ActorClaim {
		ptr := "/actor_claim"
		if len(c.ActorClaim) > 1 {
			ptr = fmt.Sprintf("/actor_claim/%d", i)
		}
		claims = append(claims, struct{ ptr, v string }{ptr, name})
	}
	for _, claim := range claims {
		if strings.HasPrefix(claim.v, "/") && slices.Contains(strings.Split(claim.v[1:], "/"), "") {
			return nil, bad(claim.ptr, "%q is not a JSON pointer to a claim: an empty step", claim.v)
		}
	}
	if _, err := c.compileRates(); err != nil {
		return nil, fmt.Errorf("identity provider: %w", err)
	}
	if l := c.Login; l != nil {
		if l.EndSessionEndpoint != "" {
			if err := fetchable(l.EndSessionEndpoint); err != nil {
				return nil, bad("/login/end_session_endpoint", "%v", err)
			}
		}
		for _, e := range []struct{ ptr, v string }{{"/login/authorization_endpoint", l.AuthorizationEndpoint}, {"/login/token_endpoint", l.TokenEndpoint}} {
			if e.v == "" {
				if c.JWKSURI != "" || c.JWKSFile != "" {
					return nil, bad(e.ptr, "needed when the keys are not found by discovery")
				}
			} else if err := fetchable(e.v); err != nil {
				return nil, bad(e.ptr, "%v", err)
			}
		}
		l.Scope = cmp.Or(l.Scope, "openid")
		l.Token = cmp.Or(l.Token, "id_token")
	}
	if in := c.Introspection; in != nil {
		if err := fetchable(in.Endpoint); err != nil {
			return nil, bad("/introspection/endpoint", "%v", err)
		}
	}
	if len(c.ActorClaim) == 0 {
		c.ActorClaim = NameList{"sub"}
	}
	if c.RolesClaim == "" {
		c.RolesClaim = "roles"
	}
	return &c, nil
}

// fetchable checks that a key set may be fetched from u: over https, or
// over http to a loopback address (a provider's sidecar, a test).
func fetchable(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil || p.Host == "":
		return fmt.Errorf("%q is not an absolute URL", u)
	case p.Scheme == "https":
		return nil
	case p.Scheme == "http" && loopbackHost(p.Host):
		return nil
	}
	return fmt.Errorf("%q: keys are fetched over https (http only from a loopback address)", u)
}

func (c *IdentityConfig) verifier() idtoken.Verifier {
	leeway := defaultLeeway
	if c.LeewaySeconds != nil {
		leeway = time.Duration(*c.LeewaySeconds) * time.Second
	}
	return idtoken.Verifier{Issuer: c.Issuer, Audience: c.Audience, Algorithms: c.Algorithms, Leeway: leeway,
		MaxLifetime: time.Duration(c.MaxLifetimeSeconds) * time.Second}
}

// RefreshEvery is how often the key set is fetched again.
func (c *IdentityConfig) RefreshEvery() time.Duration {
	if c.RefreshSeconds > 0 {
		return time.Duration(c.RefreshSeconds) * time.Second
	}
	return defaultRefresh
}

// Identity authenticates callers by the tokens an identity provider
// signs: it holds the provider's key set, fetched again on a schedule the
// caller keeps (Refresh) and at once, at most every minRefetch, when a
// token names a key it does not hold.
type Identity struct {
	cfg      IdentityConfig
	verifier idtoken.Verifier
	rates    map[string]*ratelimit.Limit // cfg.Rates read
	client   *http.Client
	log      *slog.Logger

	keys atomic.Pointer[idtoken.KeySet]
	// fetchMu serialises fetches; lastFetch is when the latest began,
	// lastKeySet what the latest that succeeded read.
	fetchMu    sync.Mutex
	lastFetch  time.Time
	lastKeySet []byte
	// refetchAfter is minRefetch (tests shorten it).
	refetchAfter time.Duration
	// changed is told when a fetch puts a different key set in place, so
	// that open streams are checked again (a key withdrawn ends what its
	// tokens opened).
	hooks atomic.Pointer[identityHooks]

	// login is where people sign in (nil without cfg.Login): the
	// configuration's endpoints, else the discovery document's as last
	// fetched; clientSecret is read from cfg.Login.ClientSecretEnv.
	login        atomic.Pointer[loginEndpoints]
	clientSecret string
	// introspection asks the provider whether tokens are still active;
	// nil without cfg.Introspection.
	introspection *introspector

	// verified remembers tokens verified, by their SHA-256, so that a
	// person's many requests with one token pay for its signature once
	// (60–120 µs; the lookup is a map's). An entry holds only while the key
	// set it was verified with is in place and the token has not expired.
	verifiedMu sync.Mutex
	verified   map[[sha256.Size]byte]verifiedToken
}

// verifiedCap bounds the tokens remembered as verified; past it, the
// expired are dropped, and then any.
const verifiedCap = 4096

// verifiedToken is a token verify passed: its grant (which lapses at
// the token's expiry, or at the next introspection), the key set that
// verified it, and the token's own expiry.
type verifiedToken struct {
	g    grant
	keys *idtoken.KeySet
	exp  time.Time
}

// identityHooks are what the server that uses an Identity is told.
type identityHooks struct {
	changed func()              // a fetch put a different key set in place
	fetched func(ok bool)       // a fetch of the key set ended
	refused func(reason string) // a token was refused (idtoken's reason, or "actor")
}

func (id *Identity) hook() *identityHooks {
	if h := id.hooks.Load(); h != nil {
		return h
	}
	return &identityHooks{changed: func() {}, fetched: func(bool) {}, refused: func(string) {}}
}

// NewIdentity makes an Identity for cfg and fetches the provider's key
// set once: a provider that cannot be reached, or publishes no usable
// key, is reported now rather than at the first caller. client may be nil
// (http.DefaultClient).
func NewIdentity(ctx context.Context, cfg *IdentityConfig, client *http.Client, log *slog.Logger) (*Identity, error) {
	if client == nil {
		client = http.DefaultClient
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	id := &Identity{cfg: *cfg, verifier: cfg.verifier(), client: client, log: log, refetchAfter: minRefetch}
	if err := id.verifier.Check(); err != nil {
		return nil, fmt.Errorf("identity provider: %w", err)
	}
	var err error
	if id.rates, err = cfg.compileRates(); err != nil {
		return nil, fmt.Errorf("identity provider: %w", err)
	}
	if err := id.Refresh(ctx); err != nil {
		return nil, err
	}
	if len(id.keys.Load().Keys()) == 0 {
		return nil, fmt.Errorf("identity provider %s: its key set holds no key that verifies tokens", cfg.Issuer)
	}
	if err := id.prepareLogin(); err != nil {
		return nil, err
	}
	if cfg.Introspection != nil {
		in, err := newIntrospector(cfg.Introspection, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		id.introspection = in
	}
	return id, nil
}

// Config returns the configuration the Identity was made with.
func (id *Identity) Config() IdentityConfig { return id.cfg }

// Keys returns the key set in use.
func (id *Identity) Keys() *idtoken.KeySet { return id.keys.Load() }

// Refresh fetches the provider's key set and puts it in place. On
// failure the keys in use are kept, and the error says why.
func (id *Identity) Refresh(ctx context.Context) error {
	id.fetchMu.Lock()
	defer id.fetchMu.Unlock()
	return id.fetchLocked(ctx)
}

func (id *Identity) fetchLocked(ctx context.Context) error {
	id.lastFetch = time.Now()
	data, err := id.keySetBytes(ctx)
	var ks *idtoken.KeySet
	if err == nil {
		ks, err = idtoken.ParseKeySet(data)
	}
	id.hook().fetched(err == nil)
	if err != nil {
		return fmt.Errorf("identity provider %s: %w", id.cfg.Issuer, err)
	}
	if bytes.Equal(data, id.lastKeySet) {
		return nil // the same keys: the tokens verified with them stand
	}
	old := id.keys.Swap(ks)
	id.lastKeySet = data
	if old != nil {
		id.log.Info("identity provider keys changed", "issuer", id.cfg.Issuer, "keys", keyIDs(ks))
		id.hook().changed()
	}
	return nil
}

// refetchForUnknownKey fetches the key set again when a token named a key
// not in it, unless a fetch began less than minRefetch ago. It reports
// whether a fetch put keys in place.
func (id *Identity) refetchForUnknownKey(ctx context.Context) bool {
	id.fetchMu.Lock()
	defer id.fetchMu.Unlock()
	if time.Since(id.lastFetch) < id.refetchAfter {
		return false
	}
	if err := id.fetchLocked(ctx); err != nil {
		id.log.Warn("identity provider key set not fetched", "err", err.Error())
		return false
	}
	return true
}

// keySetBytes reads the key set: from its file, from jwks_uri, or from the
// jwks_uri the provider's discovery document names.
func (id *Identity) keySetBytes(ctx context.Context) ([]byte, error) {
	if id.cfg.JWKSFile != "" {
		data, err := os.ReadFile(id.cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("the key set file: %w", err)
		}
		return data, nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	uri := id.cfg.JWKSURI
	if uri == "" {
		disc := strings.TrimSuffix(id.cfg.Issuer, "/") + "/.well-known/openid-configuration"
		data, err := id.get(ctx, disc)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Issuer                string `json:"issuer"`
			JWKSURI               string `json:"jwks_uri"`
			AuthorizationEndpoint string `json:"authorization_endpoint"`
			TokenEndpoint         string `json:"token_endpoint"`
			EndSessionEndpoint    string `json:"end_session_endpoint"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: not a discovery document", disc)
		}
		// OpenID Connect Discovery 1.0 §4.3: the document is the
		// issuer's own only if it says so.
		if doc.Issuer != id.cfg.Issuer {
			return nil, fmt.Errorf("%s names the issuer %q, not %q", disc, doc.Issuer, id.cfg.Issuer)
		}
		if err := fetchable(doc.JWKSURI); err != nil {
			return nil, fmt.Errorf("%s: jwks_uri %w", disc, err)
		}
		uri = doc.JWKSURI
		if err := id.learnEndpoints(doc.AuthorizationEndpoint, doc.TokenEndpoint, doc.EndSessionEndpoint, disc); err != nil {
			return nil, err
		}
	}
	return id.get(ctx, uri)
}

// get fetches u, refusing an answer other than 200 or larger than a key
// set may be.
func (id *Identity) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := id.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("GET %s: no answer within %s", u, fetchTimeout)
		}
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, idtoken.MaxKeySetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(data) > idtoken.MaxKeySetBytes {
		return nil, fmt.Errorf("GET %s: more than %d bytes", u, idtoken.MaxKeySetBytes)
	}
	return data, nil
}

// grant verifies token at now and maps its claims to a principal, or
// finds it verified already (remember).
func (id *Identity) grant(ctx context.Context, token string, now time.Time) (grant, *Error) {
	digest := sha256.Sum256([]byte(token))
	id.verifiedMu.Lock()
	e, ok := id.verified[digest]
	id.verifiedMu.Unlock()
	if ok && e.keys == id.keys.Load() && !e.g.expired(now) {
		return e.g, nil
	}
	v, aerr := id.verify(ctx, token, now)
	if aerr == nil {
		id.remember(digest, v, now)
	}
	return v.g, aerr
}

// remember keeps a verified token, within verifiedCap.
func (id *Identity) remember(digest [sha256.Size]byte, e verifiedToken, now time.Time) {
	id.verifiedMu.Lock()
	defer id.verifiedMu.Unlock()
	if id.verified == nil {
		id.verified = map[[sha256.Size]byte]verifiedToken{}
	}
	if len(id.verified) >= verifiedCap {
		for d, old := range id.verified {
			if old.g.expired(now) || old.keys != e.keys {
				delete(id.verified, d)
			}
		}
		for d := range id.verified {
			if len(id.verified) < verifiedCap {
				break
			}
			delete(id.verified, d)
		}
	}
	id.verified[digest] = e
}

// verify checks token against the keys in use and maps it to a grant
// (and, with introspection, asks the provider whether it is still
// active). A token naming a key the set does not hold fetches the set
// again (refetchForUnknownKey) and is verified once more. An expired
// token's refusal carries a grant lapsed at now: what a stream it opened
// ends with.
func (id *Identity) verify(ctx context.Context, token string, now time.Time) (verifiedToken, *Error) {
	keys := id.keys.Load()
	t, err := id.verifier.Verify(token, keys, now)
	if errors.Is(err, &idtoken.Error{Reason: idtoken.UnknownKey}) && id.refetchForUnknownKey(ctx) {
		keys = id.keys.Load()
		t, err = id.verifier.Verify(token, keys, now)
	}
	if err != nil {
		var e *idtoken.Error
		errors.As(err, &e)
		id.hook().refused(string(e.Reason))
		var v verifiedToken
		if e.Reason == idtoken.Expired {
			v.g.expires = now
		}
		return v, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "%s", e.Error())
	}
	p, aerr := id.principal(t)
	if aerr != nil {
		id.hook().refused("actor")
		return verifiedToken{}, aerr
	}
	lapses := t.Expires.Add(id.verifier.Leeway)
	if id.introspection != nil {
		if aerr := id.introspect(ctx, token); aerr != nil {
			return verifiedToken{}, aerr
		}
		// Asked again once the answer is this old: the grant lapses then.
		if next := now.Add(id.introspection.recheck); next.Before(lapses) {
			lapses = next
		}
	}
	return verifiedToken{g: grant{p: p, expires: lapses}, keys: keys, exp: t.Expires}, nil
}

// principal maps a verified token's claims to the actor and roles.
func (id *Identity) principal(t *idtoken.Token) (Principal, *Error) {
	// The first of the actor claims the token holds names the actor; one
	// it holds that is no actor name refuses the token, rather than let
	// a later claim name someone else.
	var v any
	var name string
	for _, name = range id.cfg.ActorClaim {
		var ok bool
		if v, ok = claim(t.Claims, name); ok {
			break
		}
		v = nil
	}
	actor, isString := v.(string)
	if local, domain, ok := strings.Cut(actor, "@"); ok && isString && id.cfg.ActorDomain != "" {
		if !strings.EqualFold(domain, id.cfg.ActorDomain) {
			return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "identity token: the claim %q names an address outside %s, the only domain whose people act here", name, id.cfg.ActorDomain)
		}
		actor = strings.ToLower(local)
	}
	switch {
	case v == nil:
		return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "identity token: no claim %s to name the actor by", quotedList(id.cfg.ActorClaim))
	case isString && id.cfg.ActorDomain == "" && strings.Contains(actor, "@"):
		return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "identity token: the claim %q is an e-mail address: set actor_domain to name people by their addresses of one domain, or choose another actor_claim", name)
	case !isString || !cjson.ValidID(actor):
		return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "identity token: the claim %q is not an actor name (a letter or digit, then letters, digits and . _ : / -, at most %d): choose another actor_claim", name, cjson.MaxIDLength)
	}
	var values []string
	if v, ok := claim(t.Claims, id.cfg.RolesClaim); ok {
		switch v := v.(type) {
		case string:
			values = strings.Fields(v)
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					values = append(values, s)
				}
			}
		}
	}
	var roles []string
	for _, val := range values {
		switch {
		case id.cfg.Roles != nil:
			roles = append(roles, id.cfg.Roles[val]...)
		case slices.Contains(Roles, val):
			roles = append(roles, val)
		}
	}
	slices.Sort(roles)
	return Principal{Actor: actor, Roles: slices.Compact(roles), Workflows: id.scope(values), Rate: id.rate(values)}, nil
}

// compileRates reads Rates, by value of the roles claim.
func (c *IdentityConfig) compileRates() (map[string]*ratelimit.Limit, error) {
	out := map[string]*ratelimit.Limit{}
	for value, r := range c.Rates { //flrh:orderfree at most one refusal, the same whichever is found
		l, err := rateOf(r.Rate, r.Burst)
		if err != nil {
			return nil, fmt.Errorf("/rates: %q: %w", value, err)
		}
		out[value] = l
	}
	return out, nil
}

// rate is the rate a caller whose roles claim holds values is held to:
// nil (the server's) when no value has one, none when one value's is
// "none", else the fastest (the larger burst between equals).
func (id *Identity) rate(values []string) *ratelimit.Limit {
	var best *ratelimit.Limit
	for _, v := range values {
		l, ok := id.rates[v]
		switch {
		case !ok:
		case l.Count == 0:
			return l
		case best == nil, l.Faster(*best):
			best = l
		}
	}
	return best
}

// scope is the workflows a caller whose roles claim holds values sees:
// nil (every one) without a workflows map, or when a value maps to "*".
func (id *Identity) scope(values []string) []string {
	if id.cfg.Workflows == nil {
		return nil
	}
	out := []string{}
	for _, v := range values {
		for _, wf := range id.cfg.Workflows[v] {
			if wf == "*" {
				return nil
			}
			out = append(out, wf)
		}
	}
	return sortedScope(out)
}

// quotedList names claims for an error: "sub", or "a" or "b".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " or ")
}

// claim finds a claim by name, or by JSON pointer when name starts with
// "/" (a claim in an object, as Keycloak's /realm_access/roles).
func claim(claims map[string]any, name string) (any, bool) {
	if !strings.HasPrefix(name, "/") {
		v, ok := claims[name]
		return v, ok
	}
	var cur any = claims
	for _, step := range strings.Split(name[1:], "/") {
		step = strings.ReplaceAll(strings.ReplaceAll(step, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[step]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// keyIDs names a key set's keys for the log.
func keyIDs(ks *idtoken.KeySet) []string {
	var ids []string
	for _, k := range ks.Keys() {
		ids = append(ids, k.ID)
	}
	return ids
}

// checkTokenRoles refuses a token file that grants a role the identity
// provider's token_file_roles keeps for the provider's people: with
// ["agent", "viewer"], no one approves or reconciles under a name the
// provider does not give.
func checkTokenRoles(t *Tokens, id *Identity) error {
	if t == nil || id == nil || id.cfg.TokenFileRoles == nil {
		return nil
	}
	var held []string
	for _, g := range t.byDigest {
		for _, r := range g.p.Roles {
			if !slices.Contains(id.cfg.TokenFileRoles, r) {
				held = append(held, fmt.Sprintf("%s holds %s", g.p.Actor, r))
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	slices.Sort(held)
	return fmt.Errorf("token file: %s, which beside the identity provider only it grants (token_file_roles: %s)",
		strings.Join(held, ", "), strings.Join(id.cfg.TokenFileRoles, ", "))
}
