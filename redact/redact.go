// Package redact keeps secrets out of everything flrh writes: it reads
// which values a JSON Schema marks secret, and scrubs known secret values
// from text, such as log records and error details, that might otherwise
// repeat them.
//
// A schema marks a value secret with "x-flrh-secret": true or with the
// standard annotation "writeOnly": true (a value that is sent and never
// read back). A secret never travels in the run's record: its value comes
// from the environment variable the schema names with
// "x-flrh-secret-env", read by the shell when it builds the adapter, and
// reaches the destination only at dispatch (see docs/security.md).
package redact

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"flrh.dev/flrh/cjson"
)

// Marker replaces a secret wherever one would otherwise be shown.
const Marker = "[redacted]"

// Annotation names.
const (
	AnnotationSecret    = "x-flrh-secret"
	AnnotationWriteOnly = "writeOnly"
	AnnotationEnv       = "x-flrh-secret-env"
)

// Member is a secret member of an object schema: its name and the
// environment variable its value is read from.
type Member struct {
	Name string
	Env  string
}

// Error is a schema whose secret annotations are malformed, at Pointer (an
// RFC 6901 pointer into the schema).
type Error struct {
	Pointer string
	Detail  string
}

func (e *Error) Error() string { return fmt.Sprintf("redact: schema at %s: %s", e.Pointer, e.Detail) }

// Compiled on first use: their bounded repetitions expand into programs of
// hundreds of instructions (160 KB of allocations together), which every
// command linking this package would otherwise build at start-up.
var (
	memberName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`) })
	envName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })
)

// IsSecret reports whether a schema node marks its value secret. A
// malformed annotation (not a boolean) is an error.
func IsSecret(node map[string]any, ptr string) (bool, error) {
	secret := false
	for _, a := range []string{AnnotationSecret, AnnotationWriteOnly} {
		v, ok := node[a]
		if !ok {
			continue
		}
		b, ok := v.(bool)
		if !ok {
			return false, &Error{ptr + "/" + a, "must be a boolean"}
		}
		secret = secret || b
	}
	return secret, nil
}

// SecretMembers returns the secret members of an object schema (the
// cjson value model: map[string]any), sorted by name. Only direct members
// may be secret: each becomes one request header at dispatch, so a secret
// nested deeper, or under items or additionalProperties, is an error, as is
// a secret member without "x-flrh-secret-env" or an environment variable
// on a member that is not secret.
func SecretMembers(schema any) ([]Member, error) {
	root, ok := schema.(map[string]any)
	if !ok {
		return nil, &Error{"", "must be an object schema"}
	}
	if t, ok := root["type"]; ok && t != "object" {
		return nil, &Error{"/type", `must be "object": an effect's parameters are an object`}
	}
	if s, err := IsSecret(root, ""); err != nil {
		return nil, err
	} else if s {
		return nil, &Error{"", "the parameters as a whole cannot be secret; mark members"}
	}
	var out []Member
	props, _ := root["properties"].(map[string]any)
	if p, ok := root["properties"]; ok && props == nil {
		return nil, &Error{"/properties", fmt.Sprintf("must be an object, not %T", p)}
	}
	for _, name := range sortedKeys(props) {
		v := props[name]
		ptr := "/properties/" + cjson.EscapePointer(name)
		node, ok := v.(map[string]any)
		if !ok {
			if _, isBool := v.(bool); isBool {
				continue
			}
			return nil, &Error{ptr, "must be a schema object or boolean"}
		}
		secret, err := IsSecret(node, ptr)
		if err != nil {
			return nil, err
		}
		env, hasEnv := node[AnnotationEnv]
		if !secret {
			if hasEnv {
				return nil, &Error{ptr + "/" + AnnotationEnv, "names an environment variable for a member that is not secret"}
			}
			if err := noNestedSecret(node, ptr); err != nil {
				return nil, err
			}
			continue
		}
		es, _ := env.(string)
		if !envName().MatchString(es) {
			return nil, &Error{ptr + "/" + AnnotationEnv, "a secret member names the environment variable its value is read from"}
		}
		if !memberName().MatchString(name) {
			return nil, &Error{ptr, "a secret member's name must be letters, digits, '_' or '-' (it names a request header)"}
		}
		for _, o := range out {
			if strings.EqualFold(HeaderName(o.Name), HeaderName(name)) {
				return nil, &Error{ptr, fmt.Sprintf("travels in the same header as %s", o.Name)}
			}
		}
		out = append(out, Member{Name: name, Env: es})
	}
	for _, k := range sortedKeys(root) {
		if k == "properties" {
			continue
		}
		if err := noNestedSecret(root[k], "/"+cjson.EscapePointer(k)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// noNestedSecret refuses a secret annotation anywhere below a node.
func noNestedSecret(v any, ptr string) error {
	switch n := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(n) {
			c := n[k]
			cp := ptr + "/" + cjson.EscapePointer(k)
			if k == AnnotationSecret || k == AnnotationWriteOnly || k == AnnotationEnv {
				if b, ok := c.(bool); ok && !b {
					continue
				}
				return &Error{cp, "only direct members of the parameters may be secret"}
			}
			if err := noNestedSecret(c, cp); err != nil {
				return err
			}
		}
	case []any:
		for i, c := range n {
			if err := noNestedSecret(c, fmt.Sprintf("%s/%d", ptr, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// HeaderName is the request header a secret member travels in:
// "Flrh-Secret-" and the member's name with '_' written '-'.
func HeaderName(member string) string { return "Flrh-Secret-" + strings.ReplaceAll(member, "_", "-") }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
