package redact

import (
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// Any schema: SecretMembers never panics, answers the same twice, refuses
// with a *Error whose pointer starts with "/" or is empty, and every member
// it accepts is a direct, header-safe member with a variable.
func FuzzSecretMembers(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"k":{"writeOnly":true,"x-flrh-secret-env":"K"}}}`,
		`{"properties":{"a":{"properties":{"b":{"x-flrh-secret":true}}}}}`,
		`{"properties":{"k":{"writeOnly":"yes"}}}`, `{"items":[{"writeOnly":true}]}`, `[]`, `null`, `{}`,
		`{"properties":{"a_b":{"writeOnly":true,"x-flrh-secret-env":"X"},"a-b":{"writeOnly":true,"x-flrh-secret-env":"Y"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := cjson.Decode(b)
		if err != nil {
			return
		}
		got, err := SecretMembers(v)
		again, err2 := SecretMembers(v)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || len(got) != len(again) {
			t.Fatalf("two answers: %v %v / %v %v", got, err, again, err2)
		}
		if err != nil {
			var re *Error
			if !errors.As(err, &re) || re.Pointer != "" && !strings.HasPrefix(re.Pointer, "/") {
				t.Fatalf("refusal %#v", err)
			}
			return
		}
		props, _ := v.(map[string]any)["properties"].(map[string]any)
		for i, m := range got {
			node, ok := props[m.Name].(map[string]any)
			if !ok || !memberName().MatchString(m.Name) || !envName().MatchString(m.Env) || node[AnnotationEnv] != m.Env {
				t.Fatalf("accepted member %+v of %s", m, b)
			}
			if i > 0 && got[i-1].Name >= m.Name {
				t.Fatalf("members not sorted: %v", got)
			}
		}
	})
}
