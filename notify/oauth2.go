package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/smtp"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// OAuth2 makes an e-mail route authenticate to its mail server with an
// access token rather than a password: SMTP AUTH XOAUTH2 (or OAUTHBEARER,
// RFC 7628), the token obtained by the OAuth 2.0 client credentials grant
// (RFC 6749 §4.4) at TokenURL. Microsoft 365 turns basic authentication
// of SMTP AUTH off; this is how a service sends through it. The route's
// URL names the mailbox as its user, with no password.
type OAuth2 struct {
	TokenURL     string // https, or http to this machine
	ClientID     string
	ClientSecret string
	Scope        string // https://outlook.office365.com/.default for Microsoft 365
}

// checkOAuth2 checks an e-mail route's OAuth2 against its URL u.
func checkOAuth2(o *OAuth2, u *url.URL, where string) error {
	_, hasPass := u.User.Password()
	switch {
	case u.User == nil || u.User.Username() == "":
		return errors.New(where + "with oauth2, the URL names the mailbox as its user: smtp://MAILBOX@HOST")
	case hasPass:
		return errors.New(where + "with oauth2, the URL holds no password: the access token stands for it")
	case !tokenURL(o.TokenURL):
		return errors.New(where + "oauth2's token URL is https://… (http only to this machine)")
	case o.ClientID == "" || o.ClientSecret == "" || o.Scope == "":
		return errors.New(where + "oauth2 needs a client id, its secret and a scope")
	}
	return nil
}

// tokenURL reports whether s is a URL a token may be asked for at: https,
// or http to this machine.
func tokenURL(s string) bool {
	t, err := url.Parse(s)
	return err == nil && t.Host != "" && (t.Scheme == "https" || t.Scheme == "http" && loopback(t.Hostname()))
}

// tokenCache keeps the access tokens e-mail routes were given, until a
// minute before they expire. The zero value is empty.
type tokenCache struct {
	mu sync.Mutex
	m  map[OAuth2]cachedToken
}

type cachedToken struct {
	token   string
	renewAt time.Time
}

// tokenMargin is how long before its expiry a token is renewed: a
// delivery started with a token about to lapse would fail midway.
const tokenMargin = time.Minute

// accessToken returns a token for o, fetched when none is kept or the
// kept one is due; why says, without the secret, why none could be had.
func (n *Notifier) accessToken(ctx context.Context, o OAuth2) (token, why string) {
	now := n.cfg.Clock()
	n.tokens.mu.Lock()
	c, ok := n.tokens.m[o]
	n.tokens.mu.Unlock()
	if ok && now.Before(c.renewAt) {
		return c.token, ""
	}
	token, life, why := n.fetchToken(ctx, o)
	if why != "" {
		return "", why
	}
	n.tokens.mu.Lock()
	defer n.tokens.mu.Unlock()
	if n.tokens.m == nil {
		n.tokens.m = map[OAuth2]cachedToken{}
	}
	n.tokens.m[o] = cachedToken{token: token, renewAt: now.Add(life - tokenMargin)}
	return token, ""
}

// forgetToken drops o's kept token: the mail server refused it (revoked,
// or its rights changed), and the next delivery asks for a new one.
func (n *Notifier) forgetToken(o OAuth2) {
	n.tokens.mu.Lock()
	defer n.tokens.mu.Unlock()
	delete(n.tokens.m, o)
}

// fetchToken asks o's token endpoint for a token by the client
// credentials grant, the client authenticated with HTTP basic (RFC 6749
// §2.3.1, each part form-encoded).
func (n *Notifier) fetchToken(ctx context.Context, o OAuth2) (token string, life time.Duration, why string) {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {o.Scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, "the token endpoint's URL does not parse"
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(o.ClientID), url.QueryEscape(o.ClientSecret))
	resp, err := n.client.Do(req)
	if err != nil {
		return "", 0, "asking the token endpoint: " + sendError(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var a struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
		Error       string          `json:"error"`
		Description string          `json:"error_description"`
	}
	json.Unmarshal(body, &a)
	switch {
	case resp.StatusCode != http.StatusOK && a.Error != "":
		return "", 0, "the token endpoint refused the client: " + clip(strings.TrimSuffix(a.Error+": "+a.Description, ": "))
	case resp.StatusCode != http.StatusOK:
		return "", 0, "the token endpoint answered " + resp.Status
	case a.AccessToken == "":
		return "", 0, "the token endpoint answered no access_token"
	}
	// expires_in is a number, though some servers write it as a string.
	var secs int64
	if json.Unmarshal(a.ExpiresIn, &secs) != nil {
		var s string
		if json.Unmarshal(a.ExpiresIn, &s) == nil {
			fmt.Sscan(s, &secs)
		}
	}
	if secs <= 0 {
		secs = 300 // none said: kept five minutes, fetched again then
	}
	return a.AccessToken, time.Duration(secs) * time.Second, ""
}

// clip shortens a server's words for an error.
func clip(s string) string {
	const most = 200
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}

// chooseOAuth picks XOAUTH2, or OAUTHBEARER where the server offers only
// that, to log in to user's mailbox with token.
func chooseOAuth(c *smtp.Client, user, token, host string) (smtp.Auth, string) {
	mechs, offered, ok := authOffered(c)
	if !ok {
		return nil, "the mail server offers no AUTH, and the route logs in with oauth2"
	}
	switch {
	case slices.Contains(mechs, "XOAUTH2"):
		return &bearerAuth{mech: "XOAUTH2", user: user, token: token, host: host}, ""
	case slices.Contains(mechs, "OAUTHBEARER"):
		return &bearerAuth{mech: "OAUTHBEARER", user: user, token: token, host: host}, ""
	}
	return nil, "the mail server offers AUTH " + offered + ", neither XOAUTH2 nor OAUTHBEARER"
}

// bearerAuth sends an access token: XOAUTH2's initial response
// ("user=…^Aauth=Bearer …^A^A") or OAUTHBEARER's (RFC 7628, a GS2 header
// first). A server refusing the token answers 334 with an error in JSON
// and awaits an empty line before its 535.
type bearerAuth struct{ mech, user, token, host string }

func (a *bearerAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	// A token is a password for as long as it lives: only over TLS or to
	// this machine, and only to the host the route names.
	if !server.TLS && !loopback(a.host) {
		return "", nil, errors.New("an access token is not sent without TLS")
	}
	if server.Name != a.host {
		return "", nil, errors.New("wrong host name")
	}
	resp := "user=" + a.user + "\x01auth=Bearer " + a.token + "\x01\x01"
	if a.mech == "OAUTHBEARER" {
		resp = "n,a=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(a.user) + ",\x01auth=Bearer " + a.token + "\x01\x01"
	}
	return a.mech, []byte(resp), nil
}

func (a *bearerAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	if more {
		return []byte{}, nil // the server's error challenge: an empty answer ends the exchange
	}
	return nil, nil
}
