package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Token introspection (RFC 7662): a token verified locally is valid until
// it expires, however soon after its issue the person was disabled or
// the token revoked at the provider. With introspection configured, the
// server also asks the provider whether a token is still active when it
// first sees it and again once the answer is recheck_seconds old, so that
// withdrawing a person takes effect within that time (event streams
// included: their grants lapse at the recheck and are taken again).

// IntrospectionConfig is an identity provider's introspection endpoint
// and the client the server asks it as.
type IntrospectionConfig struct {
	Endpoint        string `json:"endpoint"`
	ClientID        string `json:"client_id"`
	ClientSecretEnv string `json:"client_secret_env"`
	RecheckSeconds  int    `json:"recheck_seconds,omitempty"`
}

// defaultRecheck is how old an introspection's answer may be before a
// token is asked about again, unless the configuration says otherwise.
const defaultRecheck = time.Minute

// introspector asks the provider about tokens.
type introspector struct {
	endpoint, clientID, secret string
	recheck                    time.Duration
}

// newIntrospector reads the client's secret from its variable.
func newIntrospector(c *IntrospectionConfig, issuer string) (*introspector, error) {
	secret := os.Getenv(c.ClientSecretEnv)
	if secret == "" {
		return nil, fmt.Errorf("identity provider %s: introspection.client_secret_env: %s is not set", issuer, c.ClientSecretEnv)
	}
	recheck := defaultRecheck
	if c.RecheckSeconds > 0 {
		recheck = time.Duration(c.RecheckSeconds) * time.Second
	}
	return &introspector{endpoint: c.Endpoint, clientID: c.ClientID, secret: secret, recheck: recheck}, nil
}

// introspect asks whether token is still active. A token the provider
// says is not is refused (401); a provider that cannot answer refuses it
// too (503): a withdrawn person must not pass because the provider was
// down.
func (id *Identity) introspect(ctx context.Context, token string) *Error {
	in := id.introspection
	status, body, err := id.postForm(ctx, in.endpoint, url.Values{"token": {token}, "token_type_hint": {"access_token"}}, in.clientID, in.secret)
	if err != nil {
		id.hook().refused("introspection_failed")
		return apiErr(http.StatusServiceUnavailable, TypeUnavailable, "", "the identity provider's introspection endpoint did not answer, and the token cannot be checked")
	}
	var answer struct {
		Active *bool `json:"active"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &answer) != nil || answer.Active == nil {
		id.hook().refused("introspection_failed")
		return apiErr(http.StatusServiceUnavailable, TypeUnavailable, "", "the identity provider's introspection endpoint answered %d %s, and the token cannot be checked", status, http.StatusText(status))
	}
	if !*answer.Active {
		id.hook().refused("inactive")
		return apiErr(http.StatusUnauthorized, TypeUnauthenticated, "", "identity token: the identity provider says it is no longer active (revoked, or its holder disabled)")
	}
	return nil
}
