package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"flrh.dev/flrh/server/webui"
)

// Sign-in to the web UI through the identity provider: the OAuth 2.0
// authorization code flow with PKCE (RFC 7636), the code (and later the
// refresh token) exchanged by the server. The UI asks GET /v1/login where to send the person, sends them
// there with an S256 challenge of a verifier it keeps, and is sent back
// to /ui/ with a code; POST /v1/login/token exchanges the code and the
// verifier at the provider's token endpoint (with the client's secret, for
// a confidential client) and answers the token, verified as any bearer
// token is. The exchange is the server's so that the UI's connections stay
// on its own origin (its Content-Security-Policy admits no other) and a
// client secret never reaches a browser.

// loginEndpoints are where people sign in and where codes are exchanged.
type loginEndpoints struct {
	authorization, token string
	// endSession, when the provider has one, is where a person signing
	// out is sent to end their sign-in at the provider too (OpenID
	// Connect RP-Initiated Logout).
	endSession string
}

// learnEndpoints puts the sign-in endpoints in place: the configuration's
// where it names them, else those a discovery document (at disc)
// published.
func (id *Identity) learnEndpoints(authorization, token, endSession, disc string) error {
	l := id.cfg.Login
	if l == nil {
		return nil
	}
	ep := loginEndpoints{cmp.Or(l.AuthorizationEndpoint, authorization), cmp.Or(l.TokenEndpoint, token), cmp.Or(l.EndSessionEndpoint, endSession)}
	for _, e := range []struct{ name, v string }{{"authorization_endpoint", ep.authorization}, {"token_endpoint", ep.token}, {"end_session_endpoint", ep.endSession}} {
		if e.v == "" && e.name == "end_session_endpoint" {
			continue // optional: signing out then forgets the tokens here only
		}
		if e.v == "" {
			return fmt.Errorf("%s names no %s, which sign-in needs", disc, e.name)
		}
		if err := fetchable(e.v); err != nil {
			return fmt.Errorf("%s: %s %w", disc, e.name, err)
		}
	}
	id.login.Store(&ep)
	return nil
}

// prepareLogin completes sign-in's set-up once the keys are fetched: the
// endpoints the configuration names when no discovery gave them, and the
// client's secret.
func (id *Identity) prepareLogin() error {
	l := id.cfg.Login
	if l == nil {
		return nil
	}
	if id.login.Load() == nil {
		if err := id.learnEndpoints("", "", "", "the configuration"); err != nil {
			return fmt.Errorf("identity provider %s: %w", id.cfg.Issuer, err)
		}
	}
	if l.ClientSecretEnv != "" {
		if id.clientSecret = os.Getenv(l.ClientSecretEnv); id.clientSecret == "" {
			return fmt.Errorf("identity provider %s: login.client_secret_env: %s is not set", id.cfg.Issuer, l.ClientSecretEnv)
		}
	}
	return nil
}

// LoginInfo is GET /v1/login's answer: where the web UI sends a person to
// sign in.
type LoginInfo struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	ClientID              string `json:"client_id"`
	Scope                 string `json:"scope"`
	// RedirectPath is where the provider must send the person back to on
	// this server: the web UI.
	RedirectPath string `json:"redirect_path"`
	// EndSessionEndpoint, when the provider has one, is where signing out
	// sends the person, to end their sign-in there too; Token says which
	// of the provider's tokens the UI holds (id_token or access_token):
	// an ID token goes with them as the logout's hint.
	EndSessionEndpoint string `json:"end_session_endpoint,omitempty"`
	Token              string `json:"token"`
}

// LoginToken is the body of POST /v1/login/token.
type LoginToken struct {
	Code         string `json:"code"`
	CodeVerifier string `json:"code_verifier"`
	RedirectURI  string `json:"redirect_uri"`
}

// SignedIn is POST /v1/login/token's answer: the token to present, and
// who it says the person is.
type SignedIn struct {
	Token string `json:"token"`
	// RefreshToken, when the provider gave one, gets a new token before
	// this one expires (POST /v1/login/refresh).
	RefreshToken string   `json:"refresh_token,omitempty"`
	Actor        string   `json:"actor"`
	Roles        []string `json:"roles"`
	ExpiresAt    string   `json:"expires_at"`
}

// signIn returns the identity provider people sign in through, or the
// 404 a server without one answers.
func (s *Server) signIn() (*Identity, *loginEndpoints, error) {
	if id := s.identity.Load(); id != nil && id.cfg.Login != nil {
		if ep := id.login.Load(); ep != nil {
			return id, ep, nil
		}
	}
	return nil, nil, apiErr(http.StatusNotFound, TypeNotFound, "", "this server has no sign-in through an identity provider: present a token")
}

func (s *Server) loginInfo(w http.ResponseWriter, r *http.Request, _ Principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	id, ep, err := s.signIn()
	if err != nil {
		return err
	}
	l := id.cfg.Login
	writeJSON(w, http.StatusOK, LoginInfo{Issuer: id.cfg.Issuer, AuthorizationEndpoint: ep.authorization, ClientID: l.ClientID, Scope: l.Scope,
		RedirectPath: webui.Prefix, EndSessionEndpoint: ep.endSession, Token: l.Token})
	return nil
}

func (s *Server) loginToken(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, ep, err := s.signIn()
	if err != nil {
		return err
	}
	var req LoginToken
	if err := s.decode(w, r, "login_token", &req); err != nil {
		return err
	}
	// The code was sent to the web UI of this server, as the browser
	// reached it; the provider checks that the address is the registered
	// one, and that it is the one the sign-in began with.
	if u, err := url.Parse(req.RedirectURI); err != nil || u.Host != r.Host || u.Path != webui.Prefix || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "http" && u.Scheme != "https") {
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/redirect_uri", "the web UI's own address is expected: SCHEME://%s%s", r.Host, webui.Prefix)
	}
	return id.signedIn(w, r, ep.token, url.Values{"grant_type": {"authorization_code"}, "code": {req.Code}, "redirect_uri": {req.RedirectURI},
		"code_verifier": {req.CodeVerifier}}, "")
}

// LoginRefresh is the body of POST /v1/login/refresh.
type LoginRefresh struct {
	RefreshToken string `json:"refresh_token"`
}

// loginRefresh trades the refresh token a sign-in answered for a new
// token before the one in use expires (RFC 6749 §6), so that a person
// stays signed in for as long as the provider lets them.
func (s *Server) loginRefresh(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, ep, err := s.signIn()
	if err != nil {
		return err
	}
	var req LoginRefresh
	if err := s.decode(w, r, "login_refresh", &req); err != nil {
		return err
	}
	return id.signedIn(w, r, ep.token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {req.RefreshToken}}, req.RefreshToken)
}

// signedIn asks the token endpoint for tokens with form (the client
// named, and authenticated with its secret when it has one), verifies
// the token the configuration names as every bearer token is — so that a
// provider whose tokens this server would refuse says so now, at sign-in
// — and answers it, with the refresh token the provider gave (or, when
// it gave none, kept: the one the request presented).
func (id *Identity) signedIn(w http.ResponseWriter, r *http.Request, endpoint string, form url.Values, kept string) error {
	token, refresh, aerr := id.exchange(r.Context(), endpoint, form)
	if aerr != nil {
		return aerr
	}
	v, aerr := id.verify(r.Context(), token, time.Now())
	if aerr != nil {
		aerr.Message = "the identity provider's token is not one this server accepts: " + aerr.Message
		return aerr
	}
	writeJSON(w, http.StatusOK, SignedIn{Token: token, RefreshToken: cmp.Or(refresh, kept), Actor: v.g.p.Actor, Roles: nonNilStrings(v.g.p.Roles),
		ExpiresAt: v.exp.UTC().Format(time.RFC3339)})
	return nil
}

// exchange posts form to the token endpoint (RFC 6749 §4.1.3, with RFC
// 7636's code_verifier, or §6) and returns the token the configuration
// names and the refresh token, if the provider gave one.
func (id *Identity) exchange(ctx context.Context, endpoint string, form url.Values) (token, refresh string, aerr *Error) {
	l := id.cfg.Login
	form.Set("client_id", l.ClientID)
	status, body, err := id.postForm(ctx, endpoint, form, l.ClientID, id.clientSecret)
	if err != nil {
		return "", "", apiErr(http.StatusBadGateway, TypeUpstream, "", "the identity provider's token endpoint did not answer: %v", err)
	}
	var answer struct {
		IDToken      string `json:"id_token"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	json.Unmarshal(body, &answer)
	if status != http.StatusOK {
		// RFC 6749 §5.2: a refused code or refresh token is a 400 with an
		// error code.
		if answer.Error != "" {
			return "", "", apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "the identity provider refused the sign-in: %s", strings.TrimSuffix(answer.Error+": "+answer.Description, ": "))
		}
		return "", "", apiErr(http.StatusBadGateway, TypeUpstream, "", "the identity provider's token endpoint answered %d %s", status, http.StatusText(status))
	}
	token = answer.IDToken
	if l.Token == "access_token" {
		token = answer.AccessToken
	}
	if token == "" {
		return "", "", apiErr(http.StatusBadGateway, TypeUpstream, "", "the identity provider answered no %s", l.Token)
	}
	return token, answer.RefreshToken, nil
}

// postForm posts form to one of the provider's endpoints, the client
// authenticated with HTTP basic when it has a secret (each part
// form-encoded first, RFC 6749 §2.3.1), within fetchTimeout, and returns
// the status and at most 1 MiB of the answer.
func (id *Identity) postForm(ctx context.Context, endpoint string, form url.Values, clientID, secret string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := id.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}
