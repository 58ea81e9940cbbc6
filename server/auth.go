package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/ratelimit"
)

// Roles a token can hold.
const (
	RoleOperator   = "operator"   // starts runs, submits inputs, cancels
	RoleApprover   = "approver"   // approves and denies what a run waits for
	RoleReconciler = "reconciler" // settles effects whose outcome is unknown
	RoleViewer     = "viewer"     // reads
	RoleAgent      = "agent"      // reads and proposes: starts runs, submits inputs
)

// Roles lists every role, in a fixed order.
var Roles = []string{RoleOperator, RoleApprover, RoleReconciler, RoleViewer, RoleAgent}

// permission is what a route requires of the caller.
type permission string

const (
	permPublic    permission = "public"    // no token needed (the API description, health)
	permRead      permission = "read"      // any authenticated caller
	permStart     permission = "start"     // operator, agent
	permSubmit    permission = "submit"    // operator, agent
	permCancel    permission = "cancel"    // operator
	permApprove   permission = "approve"   // approver (approve and deny)
	permReconcile permission = "reconcile" // reconciler
	permRelease   permission = "release"   // operator, reconciler: a person releases a parked run
	permChoose    permission = "choose"    // operator, approver: choose among the options H offered
	permSteer     permission = "steer"     // operator, approver: a person's MRP transition (pause, resume, …)
	permSchedule  permission = "schedule"  // operator: trigger or backfill a schedule
	permHooks     permission = "hooks"     // operator: see, take again or drop parked webhook deliveries
)

// grants says which permissions each role carries. Nothing grants an agent
// approve, reconcile, cancel, choose or steer: those are a person's acts.
var grants = map[string][]permission{
	RoleViewer:     {permRead},
	RoleAgent:      {permRead, permStart, permSubmit},
	RoleOperator:   {permRead, permStart, permSubmit, permCancel, permChoose, permSteer, permRelease, permSchedule, permHooks},
	RoleApprover:   {permRead, permApprove, permChoose, permSteer},
	RoleReconciler: {permRead, permReconcile, permRelease},
}

// Principal is an authenticated caller.
type Principal struct {
	Actor string   // the name acts are recorded under
	Roles []string // sorted
	// Workflows, when not nil, are the only workflows whose runs the
	// principal sees and acts on (sorted; empty: none): a team's token on
	// a server several teams share. Nil is every workflow.
	Workflows []string
	// Rate, when not nil, is the principal's own rate (its token's
	// "rate"): the zero Limit holds it to none. Nil is the server's
	// (Config.RateLimit).
	Rate *ratelimit.Limit
}

// sees reports whether the principal may see and act on the runs of
// workflow wf.
func (p Principal) sees(wf string) bool {
	return p.Workflows == nil || slices.Contains(p.Workflows, wf)
}

// scoped reports whether the principal sees only some workflows.
func (p Principal) scoped() bool { return p.Workflows != nil }

// may reports whether the principal holds a role that grants p.
func (p Principal) may(perm permission) bool {
	if perm == permPublic {
		return true
	}
	for _, r := range p.Roles {
		if slices.Contains(grants[r], perm) {
			return true
		}
	}
	return false
}

// isAgentOnly reports whether every role the principal holds is agent:
// its inputs are recorded as an agent's proposals.
func (p Principal) isAgentOnly() bool {
	return len(p.Roles) > 0 && !slices.ContainsFunc(p.Roles, func(r string) bool { return r != RoleAgent })
}

// localPrincipal acts for every loopback caller when no token file is
// configured: whoever can reach a loopback port already holds the store.
var localPrincipal = Principal{Actor: "local", Roles: []string{RoleApprover, RoleOperator, RoleReconciler, RoleViewer}}

// Tokens maps bearer tokens to principals. Tokens are kept only as SHA-256
// digests, so a heap dump or a log line never holds one in clear.
type Tokens struct {
	byDigest map[[32]byte]grant
}

// grant is what a token grants: a principal, until a time (none when
// zero).
type grant struct {
	p       Principal
	expires time.Time
}

// expired reports whether the grant has lapsed at now.
func (g grant) expired(now time.Time) bool { return !g.expires.IsZero() && !now.Before(g.expires) }

// tokenFile is the token file's layout (schema/tokens.json).
type tokenFile struct {
	Tokens []struct {
		Actor       string   `json:"actor"`
		Roles       []string `json:"roles"`
		Token       string   `json:"token,omitempty"`
		TokenSHA256 string   `json:"token_sha256,omitempty"`
		ExpiresAt   string   `json:"expires_at,omitempty"`
		Workflows   []string `json:"workflows,omitempty"`
		Rate        string   `json:"rate,omitempty"`
		Burst       int      `json:"burst,omitempty"`
	} `json:"tokens"`
}

// ParseTokens reads a token file:
//
//	{"tokens": [
//	  {"actor": "alice", "roles": ["approver"], "token": "…at least 16 characters…"},
//	  {"actor": "ci-bot", "roles": ["agent"], "token_sha256": "<64 hex digits>"},
//	  {"actor": "carol", "roles": ["approver"], "token_sha256": "…", "expires_at": "2027-03-01T00:00:00Z"},
//	  {"actor": "support-bot", "roles": ["agent"], "token": "…", "workflows": ["refund-agent"]},
//	  {"actor": "sweeper", "roles": ["agent"], "token": "…", "rate": "2/s", "burst": 10}
//	]}
//
// A token is given in clear or as the hex SHA-256 of its bytes; with
// expires_at (RFC 3339) it is refused from that instant on; with
// workflows, it sees and acts on the runs of those workflows alone; with
// rate (and burst), its actor is held to that rate rather than the
// server's ("none": to none). Errors name the offending value by JSON
// pointer.
func ParseTokens(data []byte) (*Tokens, error) {
	var f tokenFile
	if err := decodeStrict(data, "tokens", &f); err != nil {
		// What is wrong with a token is said without the token: the error
		// reaches a terminal, and a log when the file is read again.
		var ae *Error
		if errors.As(err, &ae) && strings.HasSuffix(ae.Field, "/token") {
			ae.Message = "a token is 16 to 512 printable ASCII characters, no spaces (the value is not shown)"
		}
		return nil, fmt.Errorf("token file: %w", err)
	}
	t := &Tokens{byDigest: map[[32]byte]grant{}}
	for i, e := range f.Tokens {
		var d [32]byte
		if e.Token != "" {
			d = sha256.Sum256([]byte(e.Token))
		} else {
			b, err := hex.DecodeString(e.TokenSHA256)
			if err != nil || len(b) != 32 {
				return nil, fmt.Errorf("token file: /tokens/%d/token_sha256: not 64 hex digits", i)
			}
			copy(d[:], b)
		}
		if _, dup := t.byDigest[d]; dup {
			return nil, fmt.Errorf("token file: /tokens/%d: the same token is listed twice", i)
		}
		var expires time.Time
		if e.ExpiresAt != "" {
			var err error
			if expires, err = time.Parse(time.RFC3339, e.ExpiresAt); err != nil {
				return nil, fmt.Errorf("token file: /tokens/%d/expires_at: not an RFC 3339 time (2027-03-01T00:00:00Z)", i)
			}
		}
		rate, err := rateOf(e.Rate, e.Burst)
		if err != nil {
			return nil, fmt.Errorf("token file: /tokens/%d/%w", i, err)
		}
		roles := slices.Clone(e.Roles)
		slices.Sort(roles)
		t.byDigest[d] = grant{p: Principal{Actor: e.Actor, Roles: slices.Compact(roles), Workflows: sortedScope(e.Workflows), Rate: rate}, expires: expires}
	}
	return t, nil
}

// rateOf reads a rate and its burst as a token file or an identity
// provider's configuration gives them: nil for none given (the server's
// applies), the zero Limit for "none". Its error starts with the member
// at fault ("rate: …", "burst: …").
func rateOf(rate string, burst int) (*ratelimit.Limit, error) {
	switch {
	case rate == "none" && burst != 0:
		return nil, errors.New("burst: a caller held to no rate has no burst")
	case rate == "none":
		return &ratelimit.Limit{}, nil
	case rate != "":
		l, err := ratelimit.Parse(rate, burst)
		if err != nil {
			return nil, fmt.Errorf("rate: %w", err)
		}
		return &l, nil
	case burst != 0:
		return nil, errors.New("burst: a burst is of a rate: give the rate too")
	}
	return nil, nil
}

// sortedScope is a scope's workflows sorted, nil for none given (every
// workflow).
func sortedScope(wfs []string) []string {
	if wfs == nil {
		return nil
	}
	out := slices.Clone(wfs)
	slices.Sort(out)
	return slices.Compact(out)
}

// Len reports how many tokens are configured.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.byDigest)
}

// lookup finds what a presented token grants. Comparing digests keeps
// the time taken independent of how much of a guess was right.
func (t *Tokens) lookup(token string) (grant, bool) {
	if t == nil {
		return grant{}, false
	}
	d := sha256.Sum256([]byte(token))
	for k, g := range t.byDigest {
		if subtle.ConstantTimeCompare(k[:], d[:]) == 1 {
			return g, true
		}
	}
	return grant{}, false
}

// authenticate finds who is calling. With tokens configured, a valid
// bearer token is required; without, only loopback callers are served.
func (s *Server) authenticate(r *http.Request) (Principal, *Error) {
	g, err := s.grantOf(r, time.Now())
	return g.p, err
}

// grantOf is what the request's token grants at now: its principal and
// when the grant lapses. A token that expired is refused with its grant,
// so that the caller can tell why.
func (s *Server) grantOf(r *http.Request, now time.Time) (grant, *Error) {
	tokens, identity := s.tokens.Load(), s.identity.Load()
	if tokens == nil && identity == nil {
		if !loopbackRequest(r) {
			return grant{}, apiErr(http.StatusForbidden, TypeForbidden, "", "this server has no tokens configured and serves loopback clients only")
		}
		return grant{p: localPrincipal}, nil
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return grant{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "an Authorization: Bearer token is required")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return grant{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "the Authorization header must be: Bearer TOKEN")
	}
	token = strings.TrimSpace(token)
	g, found := tokens.lookup(token)
	if !found && identity != nil && strings.Count(token, ".") >= 2 {
		// Not a token of the file, and shaped like a JWT: the identity
		// provider's, if its keys say so.
		return identity.grant(r.Context(), token, now)
	}
	if !found {
		return grant{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "unknown token")
	}
	if g.expired(now) {
		// The lapsed grant goes back with the error: it says why.
		return g, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "the token expired at %s", g.expires.UTC().Format(time.RFC3339))
	}
	return g, nil
}

// SetTokens puts t in place of the tokens callers are authenticated
// with: a token file read again (flrh serve on SIGHUP). Requests from then
// on are authenticated by t, and an open streaming request whose token t
// no longer grants its route ends at once (watchRevocation), so that
// revoking a leaked token closes what it opened. Whether the server authenticates at all is
// fixed when it starts (it listens beyond loopback only with tokens), so
// a server started without tokens is not given any, nor one started with
// them left without.
func (s *Server) SetTokens(t *Tokens) error {
	if (t == nil) != (s.tokens.Load() == nil) {
		return fmt.Errorf("server: tokens are replaced, never given to a server started without them nor taken from one started with them")
	}
	if err := checkTokenRoles(t, s.identity.Load()); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.tokens.Store(t)
	s.credentialsChanged()
	return nil
}

// SetIdentity puts id in place of the identity provider callers'
// tokens are verified by (its configuration read again, flrh serve on
// SIGHUP); open streams are checked against it as by SetTokens. Like
// tokens, an identity provider is replaced, never given to a server
// started without one nor taken from one started with it.
func (s *Server) SetIdentity(id *Identity) error {
	if (id == nil) != (s.identity.Load() == nil) {
		return fmt.Errorf("server: an identity provider is replaced, never given to a server started without one nor taken from one started with it")
	}
	if err := checkTokenRoles(s.tokens.Load(), id); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.attach(id)
	s.identity.Store(id)
	s.credentialsChanged()
	return nil
}

// RefreshIdentity fetches the identity provider's key set again (flrh
// serve does it every refresh_seconds). Without a provider it does
// nothing.
func (s *Server) RefreshIdentity(ctx context.Context) error {
	if id := s.identity.Load(); id != nil {
		return id.Refresh(ctx)
	}
	return nil
}

// attach tells the server what id does: a key set that changes makes
// open streams be checked again, and fetches and refusals are counted.
func (s *Server) attach(id *Identity) {
	id.hooks.Store(&identityHooks{
		changed: s.credentialsChanged,
		fetched: func(ok bool) {
			s.metrics.keySetFetches.WithLabelValues(map[bool]string{true: "ok", false: "failed"}[ok]).Inc()
		},
		refused: func(reason string) { s.metrics.identityRefused.WithLabelValues(reason).Inc() },
	})
}

// Identity returns the identity provider callers may authenticate
// with, or nil.
func (s *Server) Identity() *Identity { return s.identity.Load() }

// authenticates reports whether the server authenticates callers (a
// token file or an identity provider), rather than serving loopback
// callers as "local".
func (s *Server) authenticates() bool { return s.tokens.Load() != nil || s.identity.Load() != nil }

// credentialsChanged wakes every streaming request to check its token
// again (watchRevocation).
func (s *Server) credentialsChanged() {
	s.swappedMu.Lock()
	defer s.swappedMu.Unlock()
	close(s.swapped)
	s.swapped = make(chan struct{})
}

// ErrTokenRevoked is the cause a streaming request's context is
// cancelled with when the tokens put in place no longer grant what its
// token was granted as it came in; ErrTokenExpired, when its token's
// expires_at is reached.
var (
	ErrTokenRevoked = errors.New("server: the request's token was revoked")
	ErrTokenExpired = errors.New("server: the request's token expired")
)

// swappedChan is the channel SetTokens closes when it next puts tokens in
// place.
func (s *Server) swappedChan() <-chan struct{} {
	s.swappedMu.Lock()
	defer s.swappedMu.Unlock()
	return s.swapped
}

// watchRevocation cancels a streaming request once its token no longer
// grants the route's permission or holds its scope (a run's workflow
// taken out of it), until the request ends (ctx): with ErrTokenRevoked
// when the tokens put in place lack it, ErrTokenExpired when its expires_at comes.
// The channel to wait on next is taken before the tokens are checked, so
// a swap after the check is not missed.
func (s *Server) watchRevocation(ctx context.Context, cancel context.CancelCauseFunc, r *http.Request, rt route) {
	for {
		swapped := s.swappedChan()
		now := time.Now()
		g, err := s.grantOf(r, now)
		switch {
		case err != nil && g.expired(now):
			cancel(ErrTokenExpired)
			return
		case err != nil || !g.p.may(rt.Perm) || s.checkScope(r, rt.scope, g.p) != nil:
			// Revoked, or no longer allowed this: a role taken away, or the
			// run's workflow taken out of the token's scope.
			cancel(ErrTokenRevoked)
			return
		}
		var lapse <-chan time.Time
		var t *time.Timer
		if !g.expires.IsZero() {
			t = time.NewTimer(g.expires.Sub(now))
			lapse = t.C
		}
		select {
		case <-ctx.Done():
		case <-swapped:
		case <-lapse:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// loopbackRequest checks both the peer address and the Host header, so a
// web page on another origin cannot reach a token-less server through DNS
// rebinding.
func loopbackRequest(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return false
	}
	return loopbackHost(r.Host)
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ListenCheck refuses to serve addr unauthenticated (authenticates
// false: neither a token file nor an identity provider) unless it is a
// loopback address. An empty host (":7700") means every interface and is
// refused too.
func ListenCheck(addr string, authenticates bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %v", addr, err)
	}
	if authenticates || (host != "" && loopbackHost(host)) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q without a token file or an identity provider: only loopback addresses may be served unauthenticated", addr)
}
