package httpadapter_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/testpki"
)

// Mutations over mutual TLS with a private CA: with the client
// certificate the destination takes the request, once; without it, or
// with one its CA did not sign, nothing is applied and the attempt is
// not reported as success but as a transient failure: a handshake the
// client gave up (the server's certificate not trusted) sent nothing, and
// a handshake the server refused (the client's certificate), which TLS 1.3
// reports only once the client may have written its request, processed
// nothing.
func TestMutualTLS(t *testing.T) {
	servers, clients, other := testpki.New(t, "payments CA"), testpki.New(t, "runner CA"), testpki.New(t, "someone else's CA")
	serverCert := servers.Issue(t, "payments", false, "payments.internal")
	runner := clients.Issue(t, "runner-1", true)
	intruder := other.Issue(t, "intruder", true)
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(sb)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients.Pool()}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + sandbox.EffectsPath
	adapter := func(c *tls.Config) *httpadapter.Adapter {
		t.Helper()
		a, err := httpadapter.New(httpadapter.Config{URL: url, Timeout: 5 * time.Second, TLS: c})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	good := &tls.Config{RootCAs: servers.Pool(), ServerName: "payments.internal", Certificates: []tls.Certificate{runner}}
	in := fixture.Intent("effect:mtls", payload)
	if r := execute(t, adapter(good), in); r.Outcome != effect.Succeeded || len(sb.Mutations()) != 1 {
		t.Fatalf("with the client certificate: %+v, %d mutations", r, len(sb.Mutations()))
	}
	if r := execute(t, adapter(good), in); r.Outcome != effect.Succeeded || !r.Replayed || len(sb.Mutations()) != 1 {
		t.Fatalf("again with the same key: %+v, %d mutations", r, len(sb.Mutations()))
	}
	i := 0
	for name, c := range map[string]struct {
		tls  *tls.Config
		code string
	}{
		"no client certificate":            {&tls.Config{RootCAs: servers.Pool(), ServerName: "payments.internal"}, "TLS_HANDSHAKE_REFUSED"},
		"a certificate another CA signed":  {&tls.Config{RootCAs: servers.Pool(), ServerName: "payments.internal", Certificates: []tls.Certificate{intruder}}, "TLS_HANDSHAKE_REFUSED"},
		"the system's roots":               {&tls.Config{ServerName: "payments.internal", Certificates: []tls.Certificate{runner}}, "TRANSPORT_BEFORE_SEND"},
		"the address, not the server name": {&tls.Config{RootCAs: servers.Pool(), Certificates: []tls.Certificate{runner}}, "TRANSPORT_BEFORE_SEND"},
	} {
		i++
		key := "effect:mtls-" + strconv.Itoa(i)
		r := execute(t, adapter(c.tls), fixture.Intent(key, payload))
		if r.Outcome != effect.FailedTransient || r.Code != c.code || len(sb.Mutations()) != 1 {
			t.Errorf("%s: %+v, %d mutations; want a transient %s", name, r, len(sb.Mutations()), c.code)
		}
	}
}

// TLS settings need an https endpoint and the adapter's own transport.
func TestTLSConfigRefused(t *testing.T) {
	for _, c := range []httpadapter.Config{
		{URL: "http://127.0.0.1:1/v1/effects", TLS: &tls.Config{}},
		{URL: "https://127.0.0.1:1/v1/effects", TLS: &tls.Config{}, Transport: &http.Transport{}},
	} {
		if _, err := httpadapter.New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
