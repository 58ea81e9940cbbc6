package bundle

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/testpki"
	"flrh.dev/flrh/workflow"
)

// withTLS writes the refund-agent example with its adapter's tls member
// set to tlsObj (JSON), and loads it.
func withTLS(t *testing.T, tlsObj string) (*Workflow, *Adapters, error) {
	t.Helper()
	return withAdapterMember(t, "tls", tlsObj)
}

// withAdapterMember writes the refund-agent example with one member of
// its adapter set to obj (JSON), and loads it.
func withAdapterMember(t *testing.T, member, obj string) (*Workflow, *Adapters, error) {
	t.Helper()
	dir := copyExample(t, "refund-agent")
	path := filepath.Join(dir, "workflow.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(obj), &v); err != nil {
		t.Fatal(err)
	}
	m["adapters"].(map[string]any)["refund.pay"].(map[string]any)[member] = v
	out, _ := json.Marshal(m)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(dir)
}

// An adapter's tls object is checked when the bundle loads, and names
// variables the deployment must set.
func TestTLSObjectChecked(t *testing.T) {
	for _, c := range []struct{ tls, pointer, detail string }{
		{`{"cert_env":"CERT"}`, "/adapters/refund.pay/tls", "cert_env and key_env go together"},
		{`{"key_env":"KEY","ca_env":"CA"}`, "/adapters/refund.pay/tls", "cert_env and key_env go together"},
		{`{}`, "/adapters/refund.pay/tls", "nothing to configure"},
		{`{"server_name":"payments.internal"}`, "/adapters/refund.pay/tls", "nothing to configure"},
		{`{"ca_env":"A=B"}`, "/adapters/refund.pay/tls/ca_env", "must name an environment variable"},
		{`{"ca_env":"CA","server_name":"-bad-.example"}`, "/adapters/refund.pay/tls/server_name", "must be a host name"},
		{`{"ca_env":"CA","server_name":"a..b"}`, "/adapters/refund.pay/tls/server_name", "must be a host name"},
		{`{"ca_env":"CA","verify":false}`, "/adapters/refund.pay", "unknown field"},
		{`{"ca_env":7}`, "/adapters/refund.pay", "not an adapter"},
	} {
		_, _, err := withTLS(t, c.tls)
		var we *workflow.Error
		if !errors.As(err, &we) || we.Pointer != c.pointer || !strings.Contains(we.Detail, c.detail) {
			t.Errorf("tls %s: %v, want %s at %s", c.tls, err, c.detail, c.pointer)
		}
	}
	_, a, err := withTLS(t, `{"ca_env":"PAY_CA","cert_env":"PAY_CERT","key_env":"PAY_KEY","server_name":"payments.internal"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Variables(); !slices.Equal(got, []string{"FLRH_PAYMENTS_URL", "PAY_CA", "PAY_CERT", "PAY_KEY"}) {
		t.Fatalf("variables %v", got)
	}
}

// A destination behind mutual TLS with a private CA: the sandbox, whose
// certificate names payments.internal (not the address the endpoint
// gives) and which takes only clients its own CA signed. The bundle's
// adapter reaches it with the CA, a client certificate and the server
// name, all read from variables; without any one of them it is not
// reached. (effect/httpadapter holds mutations over mutual TLS.)
func TestMutualTLSDestination(t *testing.T) {
	servers, clients, other := testpki.New(t, "payments CA"), testpki.New(t, "runner CA"), testpki.New(t, "someone else's CA")
	serverCert := servers.Issue(t, "payments", false, "payments.internal")
	clients.Issue(t, "runner-1", true)
	other.Issue(t, "intruder", true)

	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(sb)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients.Pool(),
		MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + sandbox.EffectsPath
	if _, _, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://")); err != nil {
		t.Fatal(err)
	}

	_, a, err := withTLS(t, `{"ca_env":"PAY_CA","cert_env":"PAY_CERT","key_env":"PAY_KEY","server_name":"payments.internal"}`)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]string{"FLRH_PAYMENTS_URL": url, "PAY_CA": string(servers.CAPEM),
		"PAY_CERT": string(clients.Certs["runner-1"]), "PAY_KEY": string(clients.Keys["runner-1"])}
	// A lookup goes through the same client as a mutation and needs no
	// intent: answered "not applied", the connection was made.
	ask := func(t *testing.T, a *Adapters, env map[string]string, key string) effect.LookupResult {
		t.Helper()
		reg, err := a.Registry(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		ad, ok := reg.Adapter("refund.pay", a.tool)
		if !ok {
			t.Fatal("no adapter")
		}
		lr, err := ad.Lookup(context.Background(), key, "sha256:"+strings.Repeat("ab", 32))
		if err != nil {
			t.Fatal(err)
		}
		return lr
	}
	if lr := ask(t, a, full, "effect:mtls-ok"); lr.Status != effect.ConfirmedFailure {
		t.Fatalf("with the CA, a client certificate and the server name: %+v", lr)
	}

	// Each piece missing: the certificate does not name the address (no
	// server name), the system's roots do not know the private CA, the
	// sandbox takes no client it did not sign, or none at all.
	noName := `{"ca_env":"PAY_CA","cert_env":"PAY_CERT","key_env":"PAY_KEY"}`
	noCA := `{"cert_env":"PAY_CERT","key_env":"PAY_KEY","server_name":"payments.internal"}`
	noClient := `{"ca_env":"PAY_CA","server_name":"payments.internal"}`
	for i, c := range []struct {
		name, tls string
		env       map[string]string
	}{
		{"no server name", noName, full},
		{"no private CA", noCA, full},
		{"no client certificate", noClient, full},
		{"a client certificate another CA signed", `{"ca_env":"PAY_CA","cert_env":"PAY_CERT","key_env":"PAY_KEY","server_name":"payments.internal"}`,
			map[string]string{"FLRH_PAYMENTS_URL": url, "PAY_CA": string(servers.CAPEM), "PAY_CERT": string(other.Certs["intruder"]), "PAY_KEY": string(other.Keys["intruder"])}},
	} {
		_, a, err := withTLS(t, c.tls)
		if err != nil {
			t.Fatal(err)
		}
		if lr := ask(t, a, c.env, "effect:mtls-"+string(rune('a'+i))); lr.Status != effect.StillUnknown || lr.Code != "LOOKUP_TRANSPORT" {
			t.Errorf("%s: %+v", c.name, lr)
		}
	}

	// Material that is not what it should be is refused when the adapters
	// are built, naming the variables and quoting nothing.
	for _, c := range []struct {
		name, detail string
		edit         func(map[string]string)
	}{
		{"a CA that is no PEM", "PAY_CA holds no PEM certificate", func(e map[string]string) { e["PAY_CA"] = "not a certificate" }},
		{"a key for another certificate", "PAY_CERT and PAY_KEY are not a client certificate and its key", func(e map[string]string) { e["PAY_KEY"] = string(other.Keys["intruder"]) }},
		{"a key that is no PEM", "PAY_CERT and PAY_KEY are not a client certificate and its key", func(e map[string]string) { e["PAY_KEY"] = "secret-key-material-9d1c" }},
		{"the key unset", "PAY_KEY (the client key) is not set", func(e map[string]string) { delete(e, "PAY_KEY") }},
		{"an http endpoint", "TLS settings need an https URL", func(e map[string]string) { e["FLRH_PAYMENTS_URL"] = "http://127.0.0.1:1/v1/effects" }},
	} {
		env := map[string]string{}
		for k, v := range full {
			env[k] = v
		}
		c.edit(env)
		_, err := a.Registry(func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s: %v, want %q", c.name, err, c.detail)
			continue
		}
		for _, v := range []string{"PRIVATE KEY", "secret-key-material", "BEGIN"} {
			if strings.Contains(err.Error(), v) {
				t.Errorf("%s: the error quotes the material: %v", c.name, err)
			}
		}
	}
	// The client key is scrubbed from logs like any secret.
	if !slices.Contains(a.Secrets(func(k string) string { return full[k] }), string(clients.Keys["runner-1"])) {
		t.Error("the client key is not among the secrets a server scrubs")
	}
}
