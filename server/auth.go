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
)

// grants says which permissions each role carries. Nothing grants an agent
// approve, reconcile, cancel, choose or steer: those are a person's acts.
var grants = map[string][]permission{
	RoleViewer:     {permRead},
	RoleAgent:      {permRead, permStart, permSubmit},
	RoleOperator:   {permRead, permStart, permSubmit, permCancel, permChoose, permSteer, permRelease},
	RoleApprover:   {permRead, permApprove, permChoose, permSteer},
	RoleReconciler: {permRead, permReconcile, permRelease},
}

// Principal is an authenticated caller.
type Principal struct {
	Actor string   // the name acts are recorded under
	Roles []string // sorted
}

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
	byDigest map[[32]byte]Principal
}

// tokenFile is the token file's layout (schema/tokens.json).
type tokenFile struct {
	Tokens []struct {
		Actor       string   `json:"actor"`
		Roles       []string `json:"roles"`
		Token       string   `json:"token,omitempty"`
		TokenSHA256 string   `json:"token_sha256,omitempty"`
	} `json:"tokens"`
}

// ParseTokens reads a token file:
//
//	{"tokens": [
//	  {"actor": "alice", "roles": ["approver"], "token": "…at least 16 characters…"},
//	  {"actor": "ci-bot", "roles": ["agent"], "token_sha256": "<64 hex digits>"}
//	]}
//
// A token is given in clear or as the hex SHA-256 of its bytes. Errors name
// the offending value by JSON pointer.
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
	t := &Tokens{byDigest: map[[32]byte]Principal{}}
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
		roles := slices.Clone(e.Roles)
		slices.Sort(roles)
		t.byDigest[d] = Principal{Actor: e.Actor, Roles: slices.Compact(roles)}
	}
	return t, nil
}

// Len reports how many tokens are configured.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.byDigest)
}

// lookup finds the principal of a presented token. Comparing digests keeps
// the time taken independent of how much of a guess was right.
func (t *Tokens) lookup(token string) (Principal, bool) {
	d := sha256.Sum256([]byte(token))
	for k, p := range t.byDigest {
		if subtle.ConstantTimeCompare(k[:], d[:]) == 1 {
			return p, true
		}
	}
	return Principal{}, false
}

// authenticate finds who is calling. With tokens configured, a valid
// bearer token is required; without, only loopback callers are served.
func (s *Server) authenticate(r *http.Request) (Principal, *Error) {
	tokens := s.tokens.Load()
	if tokens == nil {
		if !loopbackRequest(r) {
			return Principal{}, apiErr(http.StatusForbidden, TypeForbidden, "", "this server has no tokens configured and serves loopback clients only")
		}
		return localPrincipal, nil
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "an Authorization: Bearer token is required")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "the Authorization header must be: Bearer TOKEN")
	}
	p, found := tokens.lookup(strings.TrimSpace(token))
	if !found {
		return Principal{}, apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "unknown token")
	}
	return p, nil
}

// SetTokens puts t in place of the tokens callers are authenticated
// with: a token file read again (flrh serve on SIGHUP). Requests from then
// on are authenticated by t, and an open event stream whose token t no
// longer grants reading ends at its next turn, so that revoking a leaked
// token closes what it opened. Whether the server authenticates at all is
// fixed when it starts (it listens beyond loopback only with tokens), so
// a server started without tokens is not given any, nor one started with
// them left without.
func (s *Server) SetTokens(t *Tokens) error {
	if (t == nil) != (s.tokens.Load() == nil) {
		return fmt.Errorf("server: tokens are replaced, never given to a server started without them nor taken from one started with them")
	}
	s.swappedMu.Lock()
	defer s.swappedMu.Unlock()
	s.tokens.Store(t)
	close(s.swapped)
	s.swapped = make(chan struct{})
	return nil
}

// ErrTokenRevoked is the cause a streaming request's context is
// cancelled with when the tokens put in place no longer grant what its
// token was granted as it came in.
var ErrTokenRevoked = errors.New("server: the request's token was revoked")

// swappedChan is the channel SetTokens closes when it next puts tokens in
// place.
func (s *Server) swappedChan() <-chan struct{} {
	s.swappedMu.Lock()
	defer s.swappedMu.Unlock()
	return s.swapped
}

// watchRevocation cancels a streaming request (cancel, with
// ErrTokenRevoked) once the tokens in place no longer grant its token
// perm, until the request ends (ctx). The channel to wait on next is
// taken before the tokens are checked, so a swap after the check is not
// missed.
func (s *Server) watchRevocation(ctx context.Context, cancel context.CancelCauseFunc, r *http.Request, perm permission) {
	swapped := s.swappedChan()
	for {
		select {
		case <-ctx.Done():
			return
		case <-swapped:
		}
		swapped = s.swappedChan()
		if p, err := s.authenticate(r); err != nil || !p.may(perm) {
			cancel(ErrTokenRevoked)
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

// ListenCheck refuses to serve addr without tokens unless it is a loopback
// address. An empty host (":7700") means every interface and is refused too.
func ListenCheck(addr string, tokens *Tokens) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %v", addr, err)
	}
	if tokens.Len() > 0 || (host != "" && loopbackHost(host)) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q without a token file: only loopback addresses may be served unauthenticated", addr)
}
