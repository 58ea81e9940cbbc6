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

// preparingEcho is echo that also prepares its requests, recording the
// preparation it was handed.
type preparingEcho struct {
	echo
	got *effect.Prepared
}

func (e preparingEcho) ContentDigest(in effect.Intent) (string, error) {
	p, err := e.Prepare(in)
	return p.ContentDigest, err
}

func (e preparingEcho) Prepare(in effect.Intent) (effect.Prepared, error) {
	b := append([]byte(`{"payload":`), in.Payload...)
	b = append(b, '}')
	return effect.Prepared{Body: b, ContentDigest: cjson.Digest(b)}, nil
}

func (e preparingEcho) ExecutePrepared(ctx context.Context, in effect.Intent, p effect.Prepared) (effect.Receipt, error) {
	*e.got = p
	return e.Execute(ctx, in)
}

// TestScrubbedKeepsPreparer holds that scrubbing an adapter that prepares
// its requests keeps it a Preparer, hands the caller's preparation through
// unchanged, and scrubs what ExecutePrepared reports as Execute's answer
// is scrubbed; an adapter that does not prepare stays one that does not.
func TestScrubbedKeepsPreparer(t *testing.T) {
	const secret = "Bearer tok-prepared-77a1"
	s, err := redact.NewScrubber(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scrub(echo{secret}, s).(effect.Preparer); ok {
		t.Fatal("a scrubbed adapter that does not prepare claims to")
	}
	var got effect.Prepared
	a, ok := scrub(preparingEcho{echo{secret}, &got}, s).(effect.Preparer)
	if !ok {
		t.Fatal("scrubbing dropped the adapter's Preparer")
	}
	in := effect.Intent{Payload: []byte(`{"amount":5}`)}
	p, err := a.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.ContentDigest(in)
	if err != nil || d != p.ContentDigest {
		t.Fatalf("ContentDigest %q, %v; the preparation's %q", d, err, p.ContentDigest)
	}
	rc, err := a.ExecutePrepared(context.Background(), in, p)
	if &got.Body[0] != &p.Body[0] || got.ContentDigest != p.ContentDigest {
		t.Fatalf("the adapter was handed %+v, not the caller's preparation %+v", got, p)
	}
	want, wantErr := scrubbed{echo{secret}, s}.Execute(context.Background(), in)
	if rc.Code != want.Code || rc.Detail != want.Detail || string(rc.Evidence) != string(want.Evidence) ||
		rc.EvidenceDigest != want.EvidenceDigest || err.Error() != wantErr.Error() {
		t.Fatalf("ExecutePrepared reported %+v, %v; Execute %+v, %v", rc, err, want, wantErr)
	}
	if strings.Contains(rc.Detail+rc.Code+string(rc.Evidence)+err.Error(), secret) {
		t.Fatalf("the receipt repeats the secret: %+v, %v", rc, err)
	}
}

// TestRegistryAdaptersPrepare holds that the HTTP adapters a bundle
// registers prepare their requests, with secrets configured and without,
// so the runner sends the request it bound each intent's content to.
func TestRegistryAdaptersPrepare(t *testing.T) {
	for _, secrets := range []bool{false, true} {
		spec := workflow.AdapterSpec{Kind: "http", URLEnv: "URL"}
		if secrets {
			spec.Secrets = []redact.Member{{Name: "api_key", Env: "KEY"}}
		}
		a := &Adapters{tool: "http/1", specs: map[string]workflow.AdapterSpec{"refund.pay": spec}}
		env := map[string]string{"URL": "http://127.0.0.1:9/v1/effects", "KEY": "key-value-456"}
		reg, err := a.Registry(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		ad, ok := reg.Adapter("refund.pay", "http/1")
		if !ok {
			t.Fatalf("secrets %v: no adapter registered", secrets)
		}
		if _, ok := ad.(effect.Preparer); !ok {
			t.Fatalf("secrets %v: the registered adapter %T does not prepare its requests", secrets, ad)
		}
	}
}
