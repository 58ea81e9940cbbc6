package redact

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

func schema(t *testing.T, text string) any {
	t.Helper()
	v, err := cjson.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSecretMembers(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		want         []Member
		errPtr       string // "" when valid
	}{
		{"no secrets", `{"type":"object","properties":{"amount":{"type":"integer"}}}`, nil, ""},
		{"writeOnly", `{"type":"object","properties":{"api_key":{"type":"string","writeOnly":true,"x-flrh-secret-env":"API_KEY"},"n":{}}}`,
			[]Member{{"api_key", "API_KEY"}}, ""},
		{"x-flrh-secret, sorted", `{"properties":{"z":{"x-flrh-secret":true,"x-flrh-secret-env":"Z"},"a":{"x-flrh-secret":true,"writeOnly":false,"x-flrh-secret-env":"A"}}}`,
			[]Member{{"a", "A"}, {"z", "Z"}}, ""},
		{"false marks nothing", `{"properties":{"a":{"writeOnly":false}}}`, nil, ""},
		{"boolean member schema", `{"properties":{"a":true}}`, nil, ""},
		{"secret without env", `{"properties":{"k":{"writeOnly":true}}}`, nil, "/properties/k/x-flrh-secret-env"},
		{"bad env name", `{"properties":{"k":{"writeOnly":true,"x-flrh-secret-env":"A=B"}}}`, nil, "/properties/k/x-flrh-secret-env"},
		{"env on a plain member", `{"properties":{"k":{"x-flrh-secret-env":"K"}}}`, nil, "/properties/k/x-flrh-secret-env"},
		{"annotation not boolean", `{"properties":{"k":{"writeOnly":"yes"}}}`, nil, "/properties/k/writeOnly"},
		{"nested secret", `{"properties":{"card":{"type":"object","properties":{"pan":{"writeOnly":true}}}}}`, nil, "/properties/card/properties/pan/writeOnly"},
		{"secret in items", `{"properties":{"l":{"items":{"x-flrh-secret":true}}}}`, nil, "/properties/l/items/x-flrh-secret"},
		{"secret in additionalProperties", `{"additionalProperties":{"writeOnly":true}}`, nil, "/additionalProperties/writeOnly"},
		{"whole object secret", `{"type":"object","writeOnly":true}`, nil, ""},
		{"not an object type", `{"type":"string"}`, nil, "/type"},
		{"not a schema", `[1]`, nil, ""},
		{"properties not an object", `{"properties":[1]}`, nil, "/properties"},
		{"header-unsafe name", `{"properties":{"a b":{"writeOnly":true,"x-flrh-secret-env":"AB"}}}`, nil, "/properties/a b"},
		{"two members, one header", `{"properties":{"a_b":{"writeOnly":true,"x-flrh-secret-env":"X"},"a-b":{"writeOnly":true,"x-flrh-secret-env":"Y"}}}`, nil, "/properties/a_b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := schema(t, c.schema)
			got, err := SecretMembers(v)
			valid := c.errPtr == "" && !strings.Contains(c.name, "whole") && !strings.Contains(c.name, "not a schema")
			if valid {
				if err != nil || !reflect.DeepEqual(got, c.want) {
					t.Fatalf("SecretMembers = %v, %v; want %v", got, err, c.want)
				}
				return
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("SecretMembers = %v, %v; want a *redact.Error", got, err)
			}
			if c.errPtr != "" && re.Pointer != c.errPtr {
				t.Fatalf("error at %q (%v), want %q", re.Pointer, err, c.errPtr)
			}
			// The same schema always gives the same answer, whatever the
			// map order.
			for i := 0; i < 50; i++ {
				determinism.Check(t, v, func(v any) string { _, err := SecretMembers(v); return err.Error() })
				if _, again := SecretMembers(v); again.Error() != err.Error() {
					t.Fatalf("two answers: %v, then %v", err, again)
				}
			}
		})
	}
}

func TestHeaderName(t *testing.T) {
	if got := HeaderName("api_key"); got != "Flrh-Secret-api-key" {
		t.Fatalf("HeaderName = %q", got)
	}
}

func TestScrubber(t *testing.T) {
	s, err := NewScrubber("hunter2-hunter2", "Bearer abcdefgh", "hunter2-hunter2")
	if err != nil || s.Len() != 2 {
		t.Fatalf("NewScrubber: %v, %d values", err, s.Len())
	}
	in := `auth "Bearer abcdefgh" failed; password hunter2-hunter2, hunter2-hunter2!`
	want := `auth "[redacted]" failed; password [redacted], [redacted]!`
	if got := s.String(in); got != want {
		t.Fatalf("String = %q", got)
	}
	if got := string(s.Bytes([]byte(in))); got != want {
		t.Fatalf("Bytes = %q", got)
	}
	clean := []byte("nothing to see")
	if got := s.Bytes(clean); &got[0] != &clean[0] {
		t.Fatal("Bytes copied text with nothing to scrub")
	}
	var none *Scrubber
	if none.String(in) != in || none.Len() != 0 {
		t.Fatal("a nil scrubber changed text")
	}
	_, err = NewScrubber("long-enough-1", "short")
	if err == nil || strings.Contains(err.Error(), "short") && !strings.Contains(err.Error(), "shorter") {
		t.Fatalf("a short secret: %v", err)
	}
	if strings.Contains(strings.ReplaceAll(err.Error(), "shorter", ""), "short") {
		t.Fatalf("the error quotes the value: %v", err)
	}
}
