package bundle

import (
	"context"
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/redact"
	"flrh.dev/flrh/workflow"
)

// echo is a destination that repeats a credential in everything it says.
type echo struct{ secret string }

func (e echo) Execute(context.Context, effect.Intent) (effect.Receipt, error) {
	ev := []byte(`{"code":"UNAUTHORIZED","detail":"token ` + e.secret + ` refused"}`)
	return effect.Receipt{Outcome: effect.FailedPermanent, Code: "HTTP_401", Detail: "HTTP 401: token " + e.secret + " refused",
		Evidence: ev, EvidenceDigest: cjson.Digest(ev)}, errors.New("also in the error: " + e.secret)
}

func (e echo) Lookup(context.Context, string, string) (effect.LookupResult, error) {
	return effect.LookupResult{Status: effect.HumanRequired, Code: "X", Detail: "looked up with " + e.secret}, nil
}

func TestScrubbedAdapterReportsNoSecret(t *testing.T) {
	const secret = "Bearer tok-echoed-31c9e0"
	s, err := redact.NewScrubber(secret)
	if err != nil {
		t.Fatal(err)
	}
	a := scrubbed{echo{secret}, s}
	rc, err := a.Execute(context.Background(), effect.Intent{})
	if strings.Contains(rc.Detail+rc.Code+string(rc.Evidence)+err.Error(), secret) {
		t.Fatalf("the receipt repeats the secret: %+v, %v", rc, err)
	}
	if rc.Outcome != effect.FailedPermanent || rc.EvidenceDigest != cjson.Digest(rc.Evidence) || !strings.Contains(string(rc.Evidence), redact.Marker) {
		t.Fatalf("scrubbing changed the classification or left the evidence digest stale: %+v", rc)
	}
	lr, _ := a.Lookup(context.Background(), "k", "d")
	if strings.Contains(lr.Detail, secret) || lr.Status != effect.HumanRequired {
		t.Fatalf("lookup %+v", lr)
	}
}

func TestRegistryReadsSecretsFromTheEnvironment(t *testing.T) {
	a := &Adapters{tool: "http/1", specs: map[string]workflow.AdapterSpec{"refund.pay": {Kind: "http", URLEnv: "URL",
		Headers: map[string]workflow.HeaderSpec{"Authorization": {Env: "AUTH"}},
		Secrets: []redact.Member{{Name: "api_key", Env: "KEY"}}}}}
	env := map[string]string{"URL": "http://127.0.0.1:9/v1/effects", "AUTH": "Bearer auth-value-123", "KEY": "key-value-456"}
	getenv := func(k string) string { return env[k] }
	if _, err := a.Registry(getenv); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Secrets(getenv), ","); !strings.Contains(got, "Bearer auth-value-123") || !strings.Contains(got, "key-value-456") {
		t.Fatalf("Secrets = %q", got)
	}
	for _, unset := range []string{"AUTH", "KEY"} {
		v := env[unset]
		delete(env, unset)
		_, err := a.Registry(getenv)
		if err == nil || !strings.Contains(err.Error(), unset+" ") {
			t.Fatalf("%s unset: %v", unset, err)
		}
		env[unset] = v
	}
	env["KEY"] = "short"
	if _, err := a.Registry(getenv); err == nil || !strings.Contains(err.Error(), "KEY (for header Flrh-Secret-api-key) is shorter") || strings.Contains(err.Error(), "short\"") {
		t.Fatalf("a short secret: %v", err)
	}
}
