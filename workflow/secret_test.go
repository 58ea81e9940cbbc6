package workflow

import (
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/redact"
)

// withParameters gives the refund tool a parameter schema.
func withParameters(params any) func(map[string]any) {
	return func(m map[string]any) {
		m["tools"].([]any)[0].(map[string]any)["parameters"] = params
	}
}

func secretMember(env string) map[string]any {
	return map[string]any{"type": "string", "writeOnly": true, "x-flrh-secret-env": env}
}

func TestSecretParametersAndHeadersCompile(t *testing.T) {
	files := editBundle(t, func(m map[string]any) {
		withParameters(map[string]any{"type": "object", "properties": map[string]any{
			"amount": map[string]any{"type": "integer"}, "api_key": secretMember("PAY_KEY")}})(m)
		m["adapters"].(map[string]any)["refund.pay"].(map[string]any)["headers"] = map[string]any{"Authorization": map[string]any{"env": "PAY_AUTH"}}
	}, nil)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	spec := w.Adapters()["refund.pay"]
	if len(spec.Secrets) != 1 || spec.Secrets[0] != (redact.Member{Name: "api_key", Env: "PAY_KEY"}) || spec.Headers["Authorization"].Env != "PAY_AUTH" {
		t.Fatalf("adapter spec %+v", spec)
	}
	// The schema is the bundle's, not H's: the manifest is unchanged.
	if m := w.Manifests()["refund.pay"]; len(m.RequiredParameters) != 3 {
		t.Fatalf("manifest %+v", m)
	}
}

func TestSecretCompileErrors(t *testing.T) {
	header := func(name string, v any) func(map[string]any) {
		return func(m map[string]any) {
			m["adapters"].(map[string]any)["refund.pay"].(map[string]any)["headers"] = map[string]any{name: v}
		}
	}
	for _, c := range []struct {
		name    string
		edit    func(map[string]any)
		pointer string
		text    string
	}{
		{"secret without env", withParameters(map[string]any{"properties": map[string]any{"k": map[string]any{"writeOnly": true}}}),
			"/tools/0/parameters/properties/k/x-flrh-secret-env", "environment variable"},
		{"nested secret", withParameters(map[string]any{"properties": map[string]any{"card": map[string]any{"properties": map[string]any{"pan": secretMember("PAN")}}}}),
			"/tools/0/parameters/properties/card/properties/pan/writeOnly", "direct members"},
		{"required secret", withParameters(map[string]any{"properties": map[string]any{"payee": secretMember("PAYEE")}}),
			"/tools/0/required_parameters", "payee is secret"},
		{"parameters not a schema", withParameters([]any{int64(1)}), "/tools/0/parameters", "object schema"},
		{"protocol header", header("Idempotency-Key", map[string]any{"env": "X"}), "/adapters/refund.pay/headers/Idempotency-Key", "protocol"},
		{"secret-parameter header", header("Flrh-Secret-x", map[string]any{"env": "X"}), "/adapters/refund.pay/headers/Flrh-Secret-x", "protocol"},
		{"header value in the bundle", header("Authorization", map[string]any{"value": "Bearer abc"}), "/adapters/refund.pay", "unknown field"},
		{"header without env", header("Authorization", map[string]any{"env": ""}), "/adapters/refund.pay/headers/Authorization/env", "environment variable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(editBundle(t, c.edit, nil))
			var be *Error
			if !errors.As(err, &be) || be.Code != CodeMalformed || be.Pointer != c.pointer || !strings.Contains(be.Error(), c.text) {
				t.Fatalf("error %v (pointer %q), want MALFORMED at %s saying %q", err, pointerOf(be), c.pointer, c.text)
			}
		})
	}
}

func pointerOf(e *Error) string {
	if e == nil {
		return ""
	}
	return e.Pointer
}

// A domain that emits a secret member is refused before the action is
// digested: nothing of it reaches a ticket, preview, trace or effect, and
// the state does not change.
func TestSecretInActionIsRefused(t *testing.T) {
	files := editBundle(t, func(m map[string]any) {
		tool := m["tools"].([]any)[0].(map[string]any)
		tool["required_parameters"] = []any{"amount", "refund_id"}
		withParameters(map[string]any{"properties": map[string]any{"payee": secretMember("PAYEE")}})(m)
	}, nil)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.Init("run-1")
	if err != nil {
		t.Fatal(err)
	}
	const payee = "payee-that-is-secret-77"
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, payee, "damaged")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Refusal, "SECRET_IN_ACTION: ") || !strings.Contains(r.Refusal, "PAYEE") || strings.Contains(r.Refusal, payee) {
		t.Fatalf("refusal %q", r.Refusal)
	}
	if string(r.State) != string(st) || len(r.Effects) != 0 {
		t.Fatalf("a refused input changed the state or planned effects")
	}
	for _, n := range r.Trace {
		if strings.Contains(string(n.Body), payee) {
			t.Fatalf("trace record %s holds the secret", n.Kind)
		}
	}
}
