package bundle

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"flrh.dev/flrh/workflow"
)

// tlsFor builds an adapter's TLS configuration from its tls object, each
// PEM value read through getenv. Nil when the adapter has none (the
// system's roots, no client certificate). Errors name the variables,
// never what they hold: a client key is a secret.
func tlsFor(et string, spec *workflow.TLSSpec, getenv func(string) string) (*tls.Config, error) {
	if spec == nil {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: spec.ServerName}
	read := func(env, what string) ([]byte, error) {
		v := getenv(env)
		if v == "" {
			return nil, fmt.Errorf("bundle: effect type %s: %s (%s) is not set", et, env, what)
		}
		return []byte(v), nil
	}
	if spec.CAEnv != "" {
		pem, err := read(spec.CAEnv, "the destination's CA")
		if err != nil {
			return nil, err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("bundle: effect type %s: %s holds no PEM certificate", et, spec.CAEnv)
		}
		c.RootCAs = roots
	}
	if spec.CertEnv != "" {
		certPEM, err := read(spec.CertEnv, "the client certificate")
		if err != nil {
			return nil, err
		}
		keyPEM, err := read(spec.KeyEnv, "the client key")
		if err != nil {
			return nil, err
		}
		// X509KeyPair's errors describe the PEM blocks, never their bytes.
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("bundle: effect type %s: %s and %s are not a client certificate and its key: %v", et, spec.CertEnv, spec.KeyEnv, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
